#!/usr/bin/env bash
# Starts a local cluster on 127.0.0.1 from one deployment file: 1 coordinator, PS ps nodes and
# WORKERS worker nodes (defaults from the file: [cluster] ps-nodes, [job] workers), waits for the
# coordinator's result, and stops every process it started -- also on error and on Ctrl-C.
#   scripts/local-cluster.sh [--config config/cluster-linear.ini] [--bin build/apps/actrain]
#                            [--timeout SECONDS] [-- extra --group.key=value options]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
config="$root/config/cluster-linear.ini"
bin="${ACTRAIN_BIN:-$root/build/apps/actrain}"
timeout_s=600
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --config) config="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "local-cluster.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "local-cluster.sh: no actrain binary at $bin (use --bin)" >&2; exit 2; }
[[ -r "$config" ]] || { echo "local-cluster.sh: cannot read $config" >&2; exit 2; }
ini() {  # ini GROUP KEY DEFAULT: a value of the deployment file
  awk -v g="[$1]" -v k="$2" -v d="$3" '
    /^\[/ {in_g = ($0 == g)} in_g && $0 ~ "^"k"=" {sub("^"k"=", ""); gsub("\"", ""); print; f=1; exit}
    END {if (!f) print d}' "$config"
}
ps_nodes="$(ini cluster ps-nodes 1)"
workers="$(ini job workers 1)"
logs="$(mktemp -d -t actrain-cluster.XXXXXX)"
pids=()
cleanup() {
  local code=$?
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  # Give nodes a moment to stop cleanly, then kill whatever is left; reap everything.
  for _ in $(seq 20); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  echo "logs: $logs"
  exit $code
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$bin" node --role coordinator --config "$config" --cluster.port=0 \
  --cluster.port-file="$logs/port" "${extra[@]}" > >(tee "$logs/coordinator.log") 2>&1 &
coord=$!
pids+=("$coord")
for _ in $(seq 300); do [[ -s "$logs/port" ]] && break; kill -0 "$coord" || exit 1; sleep 0.1; done
[[ -s "$logs/port" ]] || { echo "local-cluster.sh: the coordinator did not listen" >&2; exit 1; }
port="$(cat "$logs/port")"
echo "coordinator on 127.0.0.1:$port; starting $ps_nodes ps and $workers worker node(s)"
for i in $(seq "$ps_nodes"); do
  "$bin" node --role ps --config "$config" --cluster.port="$port" --cluster.name="ps-$i" \
    "${extra[@]}" > "$logs/ps-$i.log" 2>&1 &
  pids+=("$!")
done
for i in $(seq "$workers"); do
  "$bin" node --role worker --config "$config" --cluster.port="$port" --cluster.name="worker-$i" \
    "${extra[@]}" > "$logs/worker-$i.log" 2>&1 &
  pids+=("$!")
done
# The coordinator's exit status is the job's; bounded by --timeout.
deadline=$((SECONDS + timeout_s))
while kill -0 "$coord" 2>/dev/null; do
  (( SECONDS < deadline )) || { echo "local-cluster.sh: timed out after $timeout_s s" >&2; exit 124; }
  sleep 0.2
done
wait "$coord"
