#!/usr/bin/env bash
# README command 1: install, build, and run the main job, an embedded single-process cluster
# (MLP 784-256-10 on Fashion-MNIST, async, 2 workers, 2 shards). Extra arguments go to
# `actrain train` (e.g. --job.epochs=3).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec "${ACTRAIN_BUILD_DIR:-build}/apps/actrain" train --config config/mlp_fashion.ini "$@"
