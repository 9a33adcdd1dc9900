#!/usr/bin/env bash
# Builds the CAF-free concurrency tests with ThreadSanitizer into ${ACTRAIN_TSAN_BUILD_DIR:-build-tsan}
# and runs them: tensor_test (buffers shared across threads and reclaimed), observe_test (the HTTP
# endpoint's thread, the metrics hub, connection floods). Fails on any ThreadSanitizer report.
# The actor tests are not run this way: Debian's libcaf_core is not instrumented, so TSan cannot
# see CAF's own synchronization and reports its scheduler queues (docs/testing.md,
# "ThreadSanitizer").
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${ACTRAIN_TSAN_BUILD_DIR:-build-tsan}"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" -DACTRAIN_CUDA=OFF -DACTRAIN_BUILD_APPS=OFF \
  -DACTRAIN_INSTALL=OFF >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
tests=(test/unit/tensor/tensor_test test/unit/observe/observe_test)
cmake --build "$dir" -j "$(nproc)" --target tensor_test observe_test 2>&1 | grep -v "Wtsan\|atomic_thread_fence\|inlined from\|~~~\|^ *|" || true
status=0
for t in "${tests[@]}"; do
  if TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$dir/$t" >"$dir/$(basename "$t").tsan.log" 2>&1; then
    echo "tsan: $(basename "$t"): $(tail -1 "$dir/$(basename "$t").tsan.log")"
  else
    echo "tsan: $(basename "$t") FAILED:"
    grep -A30 "WARNING: ThreadSanitizer\|FAILED" "$dir/$(basename "$t").tsan.log" | head -60
    status=1
  fi
done
exit $status
