#!/usr/bin/env bash
# Configures and builds actrain in Release into ${ACTRAIN_BUILD_DIR:-build}. Extra arguments go to
# CMake (e.g. -DACTRAIN_CUDA=OFF). Incremental: quick the second time.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${ACTRAIN_BUILD_DIR:-build}"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$dir" -j "$(nproc)"
