#!/usr/bin/env bash
# Recovery times of a local cluster (1 coordinator, 2 ps, 3 workers on 127.0.0.1; the linear job
# of config/cluster-linear.ini with checkpoints every 400 steps and [cluster] rejoin-timeout):
#   ps:          kill -9 of a ps node after the first checkpoint, restarted as soon as the
#                coordinator says it waits for it;
#   coordinator: kill -9 of the coordinator after the first checkpoint, restarted at once with
#                --resume.
#   replica:     kill -9 of a ps node after the first checkpoint with [cluster] replicas=1: the
#                replicas of its shards on the other ps node take over (nothing restarts).
# For each: detection (kill -> the coordinator's line, ps and replica), back (restart -> every node
# registered again; replica: the coordinator's own time from seeing the loss to the replica
# answering as the shard), total (kill -> every node registered again; replica: kill -> the
# coordinator's line that the replica took over), and the job's final train MSE.
# Times are from polling the logs every 10 ms. Every process it starts is stopped by PID.
#   scripts/bench-recovery.sh [--bin build/apps/actrain] [--runs N]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${ACTRAIN_BIN:-$root/build/apps/actrain}"
runs=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    *) echo "bench-recovery.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "bench-recovery.sh: no actrain binary at $bin (use --bin)" >&2; exit 2; }
work="$(mktemp -d -t actrain-recovery.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
now() { date +%s%N; }
# wait_line FILE TEXT COUNT: until FILE holds TEXT COUNT times (bounded: 60 s).
wait_line() {
  for _ in $(seq 6000); do
    [[ $(grep -c -- "$2" "$1" 2>/dev/null || true) -ge $3 ]] && return 0
    sleep 0.01
  done
  echo "bench-recovery.sh: no '$2' in $1; every node's log:" >&2
  for f in "$work"/*.log; do echo "--- $f" >&2; cat "$f" >&2; done
  exit 1
}
ms() { echo $(( ($2 - $1) / 1000000 )); }
start() {  # start NAME ROLE ARGS...: one node, its log in $work/NAME.log
  local name=$1; shift
  "$bin" node --role "$@" > "$work/$name.log" 2>&1 &
  pids+=($!)
  eval "pid_$name=$!"
}
echo "| fault | run | detection ms | back ms | total ms | train MSE |"
echo "| --- | --- | --- | --- | --- | --- |"
for fault in ps coordinator replica; do
  for run in $(seq "$runs"); do
    rm -rf "$work"/*
    port=$(( 21000 + (RANDOM % 8000) ))
    args=(--config "$root/config/cluster-linear.ini" --cluster.token=recovery
          --cluster.port="$port" --cluster.join-timeout=30000 --cluster.rejoin-timeout=30000
          --job.workers=3 --job.shards=2 --job.epochs=6 --data.rows=20000 --data.features=20
          --checkpoint.dir="$work/ckpt" --checkpoint.every-steps=400)
    [[ $fault == replica ]] && args+=(--cluster.replicas=1)
    start coord coordinator "${args[@]}"
    wait_line "$work/coord.log" "listening on port" 1
    start ps0 ps "${args[@]}"; start ps1 ps "${args[@]}"
    for w in 0 1 2; do start "w$w" worker "${args[@]}"; done
    wait_line "$work/coord.log" "checkpoint written" 1
    detect=-
    if [[ $fault == replica ]]; then
      t0=$(now); kill -KILL "$pid_ps0"
      wait_line "$work/coord.log" "took over at version" 1
      t2=$(now); t1=$t2; detect=$(ms "$t0" "$t2")
      log="$work/coord.log"
      wait_line "$log" "result: train loss" 1
      mse=$(sed -n 's/.*result: train loss \([^,]*\),.*/\1/p' "$log")
      took=$(sed -n 's/.*took over at version [0-9]* in \([0-9.]*\) ms.*/\1/p' "$log")
      ends=$(sed -n 's/.*replicated shards end at versions \(.*\)/\1/p' "$log")
      echo "| $fault | $run | $detect | $took | $detect | $mse |"
      echo "  (replica run $run: replicated shards end at versions $ends)" >&2
      for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
      pids=()
      continue
    elif [[ $fault == ps ]]; then
      t0=$(now); kill -KILL "$pid_ps0"
      wait_line "$work/coord.log" "once its ps node is back" 1
      t1=$(now); detect=$(ms "$t0" "$t1")
      start ps0b ps "${args[@]}"
      wait_line "$work/coord.log" "all nodes joined" 2
      log="$work/coord.log"
    else
      t0=$(now); kill -KILL "$pid_coord"
      t1=$(now)
      start coord2 coordinator "${args[@]}" --resume "$work/ckpt"
      wait_line "$work/coord2.log" "all nodes joined" 1
      log="$work/coord2.log"
    fi
    t2=$(now)
    wait_line "$log" "result: train loss" 1
    mse=$(sed -n 's/.*result: train loss \([^,]*\),.*/\1/p' "$log")
    echo "| $fault | $run | $detect | $(ms "$t1" "$t2") | $(ms "$t0" "$t2") | $mse |"
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    pids=()
  done
done
