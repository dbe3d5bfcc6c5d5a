#!/usr/bin/env bash
# Tries replicas on one machine: a private redis-server and N headless
# Switchman replicas sharing marks through it, until Ctrl-C. They run with this
# user's data folder, so they share one usage ledger and with it the tenants'
# spend budgets (README, "Running several replicas").
#   packaging/replicas/run-replicas.sh CONFIG [N=2] [FIRST_PORT=4141]
# CONFIG is a normal configuration; this script adds the Redis marks store to a
# copy of it. Needs redis-server and python3 on PATH and switchman built or installed.
set -euo pipefail
config=${1:?usage: run-replicas.sh CONFIG [N] [FIRST_PORT]}
n=${2:-2}
first=${3:-4141}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${SWITCHMAN_BIN:-$root/build/dev/app/switchman}
[[ -x $bin ]] || bin=$(command -v switchman)
work=$(mktemp -d)
redis_port=$((first + 1000))
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM

redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/redis.log" &
pids+=($!)
python3 - "$config" "$work/config.json" "$redis_port" <<'PY'
import json, sys
src, dst, port = sys.argv[1], sys.argv[2], sys.argv[3]
cfg = json.load(open(src))
cfg["marks"] = {"store": "redis", "url": f"redis://127.0.0.1:{port}/0"}
json.dump(cfg, open(dst, "w"), indent=2)
PY
for ((i = 0; i < n; i++)); do
  port=$((first + i))
  "$bin" --headless --config "$work/config.json" --listen "127.0.0.1:$port" &
  pids+=($!)
  echo "replica $((i + 1)): http://127.0.0.1:$port"
done
echo "marks shared through redis://127.0.0.1:$redis_port/0; Ctrl-C stops everything"
wait
