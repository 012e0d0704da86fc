#!/usr/bin/env bash
# Connect storm against 3-server ensembles, with and without local sessions
# (localSessionsEnabled): zkd and Apache ZooKeeper 3.8 (Debian's package), each on loopback
# with fsync on. zkbench's connect workload runs --clients loops of connect + closeSession
# spread over the three servers; without local sessions each cycle is two quorum txns.
#   bench/localsess.sh [--duration 5s] [--clients 24] [--only zkd|zookeeper]
# Every process is stopped by its PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
duration=5s clients=24 only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift ;;
    --clients) clients=$2; shift ;;
    --only) only=$2; shift ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
bench_name=localsess
# shellcheck source=bench/lib-ensemble.sh
. bench/lib-ensemble.sh

run() {
  kind=$1 local=$2
  start_ensemble "$kind-$local" "$kind" "localSessionsEnabled=$local"
  all="127.0.0.1:${ports[1]},127.0.0.1:${ports[2]},127.0.0.1:${ports[3]}"
  "$work/bin/zkbench" run --servers "$all" --clients "$clients" --duration 2s connect > /dev/null 2>&1 || { echo "warm-up failed:"; "$work/bin/zkbench" run --servers "$all" --clients 2 --duration 1s connect 2>&1 | tail -5; tail -20 "$work/$kind-$local/s1/out.log"; }   # warm-up
  "$work/bin/zkbench" run --servers "$all" --clients "$clients" --duration "$duration" --label "$kind local=$local" connect
  for i in 1 2 3; do kill -9 "${spid[$i]}" 2>/dev/null || true; done
}

for kind in zkd zookeeper; do
  [ -n "$only" ] && [ "$only" != "$kind" ] && continue
  run "$kind" false
  run "$kind" true
done
