#!/usr/bin/env bash
# 3-server ensembles side by side: zkd and Apache ZooKeeper 3.8 (Debian's package), each on
# loopback with fsync on. Measures write throughput (setData, 1 KB) through all three
# servers, then kills the leader with SIGKILL and times until a write commits again.
#   bench/ensemble.sh [--duration 5s] [--clients 24]
# Every process is stopped by its PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
duration=5s clients=24 outstanding=16
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift ;;
    --clients) clients=$2; shift ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
bench_name=ensemble
# shellcheck source=bench/lib-ensemble.sh
. bench/lib-ensemble.sh

run() {
  kind=$1
  start_ensemble "$kind" "$kind"
  all="127.0.0.1:${ports[1]},127.0.0.1:${ports[2]},127.0.0.1:${ports[3]}"
  "$work/bin/zkbench" run --servers "$all" --clients "$clients" --outstanding "$outstanding" --data-size 1024 --duration 3s set > /dev/null 2>&1   # warm-up
  "$work/bin/zkbench" run --servers "$all" --clients "$clients" --outstanding "$outstanding" --data-size 1024 --duration "$duration" --label "$kind" --json "$work/$kind.json" set > "$work/$kind.txt" 2>&1
  leader=0; for i in 1 2 3; do [ "$(mode "${ports[$i]}")" = leader ] && leader=$i; done
  survivors=""; for i in 1 2 3; do [ "$i" != "$leader" ] && survivors+="127.0.0.1:${ports[$i]},"; done
  "$work/bin/zkbench" wait --servers "127.0.0.1:${ports[$leader]}" --op write > /dev/null
  since=$(date +%s%N)
  kill -9 "${spid[$leader]}"
  "$work/bin/zkbench" wait --servers "${survivors%,}" --op write --since "$since" --label "$kind" --name failover --json "$work/$kind.json" > "$work/$kind-failover.txt" 2>&1
  for i in 1 2 3; do kill -9 "${spid[$i]}" 2>/dev/null || true; done
}

run zkd
run zookeeper
echo "3-server ensembles, fsync on, tickTime 2000, $clients sessions x $outstanding outstanding, 1 KB setData for $duration, spread over the three servers:"
"$work/bin/zkbench" compare --a "$work/zkd.json" --b "$work/zookeeper.json"
