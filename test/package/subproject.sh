#!/usr/bin/env bash
# add_subdirectory(actrain) from a parent project (test/package/subproject): configures (which
# checks the parent's cache and flags), builds the parent's default target, and checks that only
# the library the parent links (actrain::core, with the CUDA stub it needs) was built: no other
# actrain library, no actrain binary, no test. The build folder is temporary.
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake -S "$src/test/package/subproject" -B "$work/b" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DACTRAIN_SOURCE="$src" -DACTRAIN_CUDA=OFF | grep "parent:"
cmake --build "$work/b" -j 2 > "$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/b/parent_app"
built="$(cd "$work/b" && find . -name 'libactrain*' -o -name 'actrain' -type f -o -name '*_test' -type f | sort)"
echo "actrain files built: $(echo $built)"
expected="./actrain/libactrain_core.a
./actrain/tensor/cuda/libactrain_cuda.a"
if [ "$built" != "$expected" ]; then
  echo "expected only:"; echo "$expected"; exit 1
fi
echo "subproject: only actrain::core built; the parent's cache and flags untouched"
