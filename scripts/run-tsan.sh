#!/usr/bin/env bash
# Builds concurrency tests with ThreadSanitizer into ${ACTRAIN_TSAN_BUILD_DIR:-build-tsan} and runs
# them; fails on any ThreadSanitizer report.
# - Always: the CAF-free tests: tensor_test (buffers shared across threads and reclaimed),
#   observe_test (the HTTP endpoint's thread, the metrics hub, connection floods).
# - With ACTRAIN_TSAN_CAF=<prefix> (a CAF 0.17.6 built and installed with -fsanitize=thread, see
#   docs/testing.md, "ThreadSanitizer"): also the actor tests (test/actors) and the
#   simulated-node tests, compiled against that CAF. Debian's libcaf_core is not instrumented, so
#   without it TSan cannot see CAF's own synchronization and reports its scheduler queues.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${ACTRAIN_TSAN_BUILD_DIR:-build-tsan}"
caf="${ACTRAIN_TSAN_CAF:-}"
extra=()
tests=(test/unit/tensor/tensor_test test/unit/observe/observe_test)
if [ -n "$caf" ]; then
  [ -f "$caf/include/caf/all.hpp" ] || { echo "tsan: no CAF under ACTRAIN_TSAN_CAF=$caf"; exit 2; }
  extra=(-DCMAKE_PREFIX_PATH="$caf" -DCMAKE_BUILD_RPATH="$caf/lib")
  for t in shard worker engine checkpoint barrier barrier_train aggregator client coordinator \
    stall_clock config_defaults sparse compression; do
    tests+=("test/actors/${t}_test")
  done
  for t in training ps worker; do tests+=("test/integration/sim_cluster_${t}_test"); done
fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" \
  -DACTRAIN_CUDA=OFF -DACTRAIN_BUILD_APPS=OFF -DACTRAIN_INSTALL=OFF "${extra[@]}" \
  >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
mv "$dir.configure.log" "$dir/configure.log"
if [ -n "$caf" ] && ! grep -q "$caf" "$dir/CMakeCache.txt"; then
  echo "tsan: $dir was configured with another CAF: remove it, or set ACTRAIN_TSAN_BUILD_DIR"
  exit 2
fi
targets=()
for t in "${tests[@]}"; do targets+=("$(basename "$t")"); done
cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}" 2>&1 |
  grep -v "Wtsan\|atomic_thread_fence\|inlined from\|~~~\|^ *|" || true
# OpenBLAS's own thread pool hands work to its threads through spin flags TSan cannot see (the
# library is not instrumented): one BLAS thread keeps every sgemm on the calling thread, as
# actrain's workers and shards run it anyway (one BLAS thread each).
export OPENBLAS_NUM_THREADS=1
status=0
for t in "${tests[@]}"; do
  log="$dir/$(basename "$t").tsan.log"
  if TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}" "$dir/$t" >"$log" 2>&1; then
    echo "tsan: $(basename "$t"): $(tail -1 "$log")"
  else
    echo "tsan: $(basename "$t") FAILED:"
    grep -A30 "WARNING: ThreadSanitizer\|FAILED" "$log" | head -60
    status=1
  fi
done
exit $status
