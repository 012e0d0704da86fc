#!/usr/bin/env bash
# The cross-check of compare.sh's client (issue 16): set and get at 64 sessions x 32
# outstanding, 1 KB, against zkd and Apache ZooKeeper 3.8, once through zkbench's own
# pipelined client and once through github.com/go-zookeeper/zk (`zkbench run --driver
# go-zookeeper`: a client neither server's authors wrote, 32 goroutines per session making
# synchronous calls that go-zookeeper pipelines on the connection). If zkd's lead came from
# zkbench's way of talking to it, the ratios would differ between the two clients.
# Apache ZooKeeper ships no load generator of its own (Debian's packages have zkCli.sh,
# cli_mt, the server and its data tools; the source's GenerateLoad is a system-test harness,
# not packaged), so a second, independent client is the cross-check.
#
#   bench/crosscheck.sh [--quick] [--out FILE] [--keep] [--rounds N] [--zk-tuning T] [--zk-prop NAME=VALUE]...
#
#   --quick          3 s runs, one round (default: 10 s runs, two rounds, alternating
#                    zkd, ZooKeeper, zkd, ZooKeeper)
#   --out FILE       markdown output (default bench/RESULTS-crosscheck.md)
#   --keep           keep the work directory (server logs, JSON lines)
#   --rounds N       rounds (default 2; --quick 1)
#   --zk-tuning, --zk-prop: as for compare.sh (bench/lib-bench.sh)
set -euo pipefail

cmdline="bench/crosscheck.sh${*:+ $*}"
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quick=0 keep=0 rounds='' tuning=default prop_args=()
out="$repo/bench/RESULTS-crosscheck.md"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    --out) out=$(realpath -m "$2"); shift ;;
    --rounds) rounds=$2; shift ;;
    --zk-tuning) tuning=$2; shift ;;
    --zk-prop) prop_args+=("-D$2"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "crosscheck.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ $quick = 1 ]; then
  dur=3s warm=1s jvmwarm=4s rounds=${rounds:-1}
else
  dur=10s warm=2s jvmwarm=15s rounds=${rounds:-2}
fi
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "crosscheck.sh: --rounds $rounds: want a positive number" >&2; exit 2; }

tick=2000
work=$(mktemp -d "${TMPDIR:-/tmp}/zkbench-crosscheck.XXXXXX")
bench_name=crosscheck
# shellcheck source=bench/lib-bench.sh
. "$repo/bench/lib-bench.sh"
zk_set_tuning "$tuning"
zk_set_log warn
cfg_extra=()
zk_props=("${prop_args[@]+"${prop_args[@]}"}")

cd "$repo"
bench_build
started=$(date +%s)
for round in $(seq 1 "$rounds"); do
  for kind in zkd zookeeper; do
    start_fresh "$kind" "$work/$kind-$round"
    s="127.0.0.1:$port" p=$server_pid
    log "$kind: round $round (port $port, pid $p)"
    # compare.sh's warm-up: the JIT has compiled both paths before they are measured.
    for wl in mixed set get; do
      zkbench run --servers "$s" --server-pid "$p" --duration "$jvmwarm" --warmup 0s --progress 0 \
        --clients 64 --outstanding 32 "$wl" > /dev/null
    done
    for driver in zkbench go-zookeeper; do
      d=(); [ "$driver" = zkbench ] || d=(--driver "$driver")
      zkbench run "${d[@]+"${d[@]}"}" --servers "$s" --server-pid "$p" --label "$kind" \
        --json "$work/$kind-$driver-$round.jsonl" --duration "$dur" --warmup "$warm" --progress 0 \
        --clients 64 --outstanding 32 --param round="$round" set get
    done
    stop_pid "$p" TERM
  done
done

{
  echo "# Cross-check: zkbench's client against go-zookeeper's"
  echo
  echo "Produced by \`$cmdline\` on $(date -u '+%Y-%m-%d %H:%M UTC') in $(( $(date +%s) - started ))s; zkd at $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) CPUs."
  echo "ZooKeeper: $(zk_settings_text). Both servers: the zoo.cfg of compare.sh (fsync on)."
  echo
  sed -n '2,/^#$/p' "$0" | sed '$d; s/^# \{0,1\}//'
  echo
  echo "Set and get of 1 KB values at 64 sessions × 32 outstanding, $dur measured after $warm, $rounds round(s)"
  echo "per server and client, alternating; each server first warmed up $jvmwarm each of mixed, set and get."
  for driver in zkbench go-zookeeper; do
    for round in $(seq 1 "$rounds"); do
      echo
      echo "## Through $driver, round $round"
      echo
      zkbench compare --goals=false --a "$work/zkd-$driver-$round.jsonl" --a-name zkd \
        --b "$work/zookeeper-$driver-$round.jsonl" --b-name ZooKeeper | sed 's/^## /### /'
    done
  done
} > "$out"
log "wrote $out"
