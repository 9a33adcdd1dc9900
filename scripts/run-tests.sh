#!/usr/bin/env bash
# README command 2: install, build, and run the whole test suite through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
dir="${ACTRAIN_BUILD_DIR:-build}"
export ACTRAIN_ARTIFACTS="${ACTRAIN_ARTIFACTS:-$PWD/$dir/artifacts}"
ctest --test-dir "$dir" --output-on-failure -j 2 --timeout 300
