#!/usr/bin/env bash
# The longer chaos run (issue 13): the chaos test of test/integration/chaos_test.cpp (real
# `actrain node` processes on 127.0.0.1: 1 coordinator, 2 ps, 3 workers) with more faults over a
# longer job, once per seed. Each run first trains the job without faults, then with seeded
# random kill -9s (restarted), and 0.7 s SIGSTOPs, of every role. Prints one table row per fault
# (what was hit, how long until the cluster was whole again) and one per run (faults, wall time,
# train MSE against the fault-free run). Every process a run starts is stopped by the test.
#   scripts/bench-chaos.sh [--build build] [--seeds "1 2 3"] [--faults 10] [--epochs 30]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
seeds="1 2 3"
faults=10
epochs=30
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --faults) faults="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    *) echo "bench-chaos.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
test_bin="$build/test/integration/chaos_test"
[[ -x "$test_bin" ]] || { echo "bench-chaos.sh: no chaos test at $test_bin (build first)" >&2; exit 2; }
log="$(mktemp -t actrain-chaos.XXXXXX)"
trap 'rm -f "$log"' EXIT
status=0
echo "| seed | fault | what | whole again after |"
echo "| --- | --- | --- | --- |"
summary=()
for seed in $seeds; do
  if ! ACTRAIN_SOURCE_DIR="$root" ACTRAIN_CHAOS_SEED="$seed" ACTRAIN_CHAOS_FAULTS="$faults" \
      ACTRAIN_CHAOS_EPOCHS="$epochs" timeout 900 "$test_bin" > "$log" 2>&1; then
    status=1
    echo "bench-chaos.sh: seed $seed failed; its log:" >&2
    grep -v "^  with \|^traffic\|^node \|^-----" "$log" | tail -80 >&2
  fi
  sed -n 's/^chaos seed \([0-9]*\): fault \([0-9/]*\) at [0-9]* ms: \(.*\); whole again after \([0-9]*\) ms$/| \1 | \2 | \3 | \4 ms |/p' "$log"
  ref=$(sed -n 's/^chaos: fault-free run: train MSE \([^ ]*\) in \([0-9]*\) ms$/\1 in \2 ms/p' "$log")
  run=$(sed -n 's/^chaos seed [0-9]*: \([0-9]*\) faults, job completed in \([0-9]*\) ms, train MSE \([^ ]*\) (fault-free [^,]*, relative difference \([^)]*\))$/\1 | \2 ms | \3 | \4/p' "$log")
  summary+=("| $seed | ${ref:-?} | ${run:-did not complete} |")
done
echo
echo "| seed | fault-free run (train MSE in wall time) | faults | chaos run wall time | train MSE | relative difference |"
echo "| --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${summary[@]}"
exit "$status"
