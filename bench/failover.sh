#!/usr/bin/env bash
# Leader failover of 3-server loopback ensembles: zkd with zkd.fastElection=true, zkd
# without it (ZooKeeper's election timing), and Apache ZooKeeper 3.8 (Debian's package).
# Each run kills the leader with SIGKILL while a client retries writes (a sequential create
# on a survivor, a fresh session per attempt, 5 ms apart) and reports the time from the kill
# to the first write that succeeds; the median of --runs runs per ensemble and tree size.
#   bench/failover.sh [--runs 5] [--znodes 100000] [--kinds "zkd-fast zkd zookeeper"]
# Tree sizes: empty, and --znodes znodes (default 100000 to keep a run short; issue 16's
# figure is for --znodes 1000000, which takes minutes per ensemble to build). The machine
# is shared: the figures are rough. Every process is stopped by its PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
runs=5 znodes=100000 kinds="zkd-fast zkd zookeeper"
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift ;;
    --znodes) znodes=$2; shift ;;
    --kinds) kinds=$2; shift ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
bench_name=failover
# shellcheck source=bench/lib-ensemble.sh
. bench/lib-ensemble.sh

median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else if (NR % 2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }

# one KIND SIZE: start an ensemble, fill it with SIZE znodes, kill the leader, print seconds.
one() {
  local kind=$1 size=$2 extra=() bin=zkd leader i survivors since
  [ "$kind" = zkd-fast ] && extra=(zkd.fastElection=true)
  [ "$kind" = zookeeper ] && bin=zookeeper
  start_ensemble "$kind-$size-$RANDOM" "$bin" "${extra[@]}"
  all="127.0.0.1:${ports[1]},127.0.0.1:${ports[2]},127.0.0.1:${ports[3]}"
  if [ "$size" -gt 0 ]; then
    "$work/bin/zkbench" run --servers "$all" --clients 8 --outstanding 8 --multi-size 100 --znodes "$size" znodes > /dev/null 2>&1
  fi
  leader=0; for i in 1 2 3; do [ "$(mode "${ports[$i]}")" = leader ] && leader=$i; done
  [ "$leader" = 0 ] && { echo "$kind: no leader" >&2; return 1; }
  survivors=""; for i in 1 2 3; do [ "$i" != "$leader" ] && survivors+="127.0.0.1:${ports[$i]},"; done
  "$work/bin/zkbench" wait --servers "127.0.0.1:${ports[$leader]}" --op write > /dev/null
  since=$(date +%s%N)
  kill -9 "${spid[$leader]}"
  "$work/bin/zkbench" wait --servers "${survivors%,}" --op write --since "$since" --attempt-timeout 1s --json - 2>/dev/null |
    python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["elapsed_s"])'
  for i in 1 2 3; do kill -9 "${spid[$i]}" 2>/dev/null || true; done
  rm -rf "$work/$kind-$size-"*
}

echo "3-server loopback ensembles, fsync on, tickTime 2000: seconds from kill -9 of the leader to the first successful write (median of $runs)"
printf '| ensemble | empty | %d znodes |\n| --- | --- | --- |\n' "$znodes"
for kind in $kinds; do
  row="| $kind"
  for size in 0 "$znodes"; do
    vals=""
    for _ in $(seq 1 "$runs"); do vals+="$(one "$kind" "$size")"$'\n'; done
    echo "$kind size $size: $(echo "$vals" | tr '\n' ' ')" >&2
    row+=" | $(printf '%s' "$vals" | median)"
  done
  echo "$row |"
done
