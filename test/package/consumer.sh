#!/usr/bin/env bash
# Installs actrain from the build folder $1 into a temporary prefix, then builds the outside
# project examples/consumer against it twice (find_package(actrain), then pkg-config's flags)
# and runs its checks; then builds actrain's libraries shared (BUILD_SHARED_LIBS=ON), installs
# them and runs the consumer against those. Everything it makes lives under a temporary folder,
# removed at the end.
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

# 3. Shared libraries: only the libraries (no tests, apps or CUDA), installed, found as above.
cmake -S "$src" -B "$work/shared-build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
  -DACTRAIN_BUILD_TESTS=OFF -DACTRAIN_BUILD_APPS=OFF -DACTRAIN_CUDA=OFF > "$work/shared.log"
cmake --build "$work/shared-build" -j 2 >> "$work/shared.log" || { cat "$work/shared.log"; exit 1; }
cmake --install "$work/shared-build" --prefix "$work/shared-prefix" >> "$work/shared.log"
cmake -S "$src/examples/consumer" -B "$work/shared-consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/shared-prefix" > "$work/shared-configure.log"
cmake --build "$work/shared-consumer" -j 2 > "$work/shared-consumer.log" ||
  { cat "$work/shared-consumer.log"; exit 1; }
if ! ldd "$work/shared-consumer/consumer" | grep -q "libactrain_engine.so => $work/shared-prefix"; then
  echo "the consumer is not linked against the installed shared libactrain_engine.so"; exit 1
fi
ctest --test-dir "$work/shared-consumer" --output-on-failure -j 2
echo "consumer: built and passed with find_package, with pkg-config, and against shared libraries"
