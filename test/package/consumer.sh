#!/usr/bin/env bash
# Installs actrain from the build folder $1 into a temporary prefix, then builds the outside
# project examples/consumer against it twice (find_package(actrain), then pkg-config's flags)
# and runs its checks. Everything it makes lives under a temporary folder, removed at the end.
set -euo pipefail
build="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
echo "installed into $work/prefix: $(find "$work/prefix" -type f | wc -l) files"

# 1. CMake: only find_package(actrain) and <actrain/...> headers.
cmake -S "$src/examples/consumer" -B "$work/cmake-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/cmake-build" -j 2 > "$work/build.log" || { cat "$work/build.log"; exit 1; }
ctest --test-dir "$work/cmake-build" --output-on-failure -j 2

# 2. pkg-config: the same sources with the flags actrain.pc gives.
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
flags="$(pkg-config --cflags --libs actrain)"
echo "pkg-config --cflags --libs actrain: $flags"
# shellcheck disable=SC2086
g++ -O2 -o "$work/consumer-pc" "$src/examples/consumer/main.cpp" $flags
"$work/consumer-pc" optimizer
"$work/consumer-pc" gradient
echo "consumer: built and passed with find_package and with pkg-config"
