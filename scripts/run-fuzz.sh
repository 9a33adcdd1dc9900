#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang-16 (ASan + UBSan) into
# ${ACTRAIN_FUZZ_BUILD_DIR:-build-fuzz}, only they and the libraries they link, and runs each for
# ${ACTRAIN_FUZZ_SECONDS:-15} seconds from its committed seeds and regression inputs. Fails when a
# target finds a crash, a hang (-timeout), a leak or a sanitizer report: the input that did it is
# written to <build dir>/artifacts/<target>/ and named in the output. Extra arguments go to every
# fuzzer (e.g. -jobs=2). docs/testing.md, "Fuzzing".
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${ACTRAIN_FUZZ_BUILD_DIR:-build-fuzz}"
seconds="${ACTRAIN_FUZZ_SECONDS:-15}"
cxx="${ACTRAIN_FUZZ_CXX:-clang++-16}"
targets=(job_ini csv libsvm idx checkpoint wire reassembly http)
start=$SECONDS
mkdir -p "$dir"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DACTRAIN_FUZZ=ON -DACTRAIN_BUILD_TESTS=OFF -DACTRAIN_BUILD_APPS=OFF -DACTRAIN_INSTALL=OFF \
  -DACTRAIN_CUDA=OFF >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; exit 1; }
cmake --build "$dir" -j "$(nproc)" --target actrain_fuzzers
echo "fuzz: built in $((SECONDS - start)) s"
# Debian's clang-16 packages bring no llvm-symbolizer; clang-14's (package llvm-14) reads its output.
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && [ -x /usr/bin/llvm-symbolizer-14 ]; then
  export ASAN_SYMBOLIZER_PATH=/usr/bin/llvm-symbolizer-14
fi
failed=()
for t in "${targets[@]}"; do
  work="$dir/corpus/$t"  # new inputs go here, never into the committed seeds
  artifacts="$dir/artifacts/$t"
  mkdir -p "$work" "$artifacts" fuzz/regressions/"$t"
  log="$dir/fuzz_$t.log"
  if "$dir/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "$@" \
      "$work" fuzz/corpus/"$t" fuzz/regressions/"$t" >"$log" 2>&1; then
    echo "fuzz: $t: $(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}') runs, nothing found"
  else
    echo "fuzz: $t FOUND A PROBLEM (input in $artifacts/; log $log):"
    grep -E -A30 '^==[0-9]+==ERROR|runtime error|fuzz check failed|Test unit written' "$log" | head -60 || tail -40 "$log"
    failed+=("$t")
  fi
done
echo "fuzz: ${#targets[@]} targets in $((SECONDS - start)) s"
if ((${#failed[@]})); then
  echo "fuzz: failed: ${failed[*]} (add the input to fuzz/regressions/<target>/ with the fix)"
  exit 1
fi
