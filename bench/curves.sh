#!/usr/bin/env bash
# The whole curve: zkd and Apache ZooKeeper 3.8 swept along one parameter at a time, on the
# same machine, alternating (zkd, ZooKeeper, zkd, ZooKeeper ... one round each per sweep),
# each point a zkbench JSON line with throughput, latency percentiles and server CPU per op.
#
#   bench/curves.sh [--smoke] [--out DIR] [--sweeps LIST] [--rounds N] [--duration D] [--max-znodes N]
#                   [--zk-tuning T] [--zk-log L] [--cfg KEY=VALUE]... [--zk-prop NAME=VALUE]... [--keep]
#
# Sweeps (set and get unless said), 1 KB values and 64 sessions × 32 outstanding unless swept:
#   sessions     1 .. 1024 sessions
#   outstanding  1 .. 256 requests in flight per session
#   size         32 B .. 1 MiB values (16 sessions × 4 outstanding, key space <= 64 MiB)
#   znodes       1k .. --max-znodes znodes in the tree (10-byte znodes added between points)
#   mix          mixed workload, 0 .. 100% writes
#   servers      1, 3, 5 voters, and 3, 5 voters with 2 observers (sessions over all of them,
#                server CPU summed over all of them)
# For each sweep it writes DIR/SWEEP.jsonl (every run) and DIR/SWEEP.svg (zkbench curve: the
# median of the rounds at each point, the single runs as dots, log x where the sweep is
# geometric).
#
#   --smoke         2 points per sweep, 2 s runs, 1 round: proves the pipeline in a few
#                   minutes; writes to a temporary directory (kept), never to bench/plots
#   --out DIR       where the JSON lines and SVGs go (default bench/plots)
#   --sweeps LIST   comma-separated subset of the sweeps above (default: all)
#   --rounds N      rounds per server and sweep (default 2: zkd, ZooKeeper, zkd, ZooKeeper)
#   --duration D    measured time per point (default 10s, after 2 s of warm-up; 5s halves
#                   the run: about 45 minutes for all sweeps with --rounds 1)
#   --max-znodes N  largest tree of the znodes sweep (default 1000000; 10000000 for 10M)
#   --zk-tuning, --zk-log, --cfg, --zk-prop: as for compare.sh (bench/lib-bench.sh)
#   --keep          keep the work directory (server logs, zoo.cfg)
set -euo pipefail

cmdline="bench/curves.sh${*:+ $*}"
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
smoke=0 keep=0 out="" rounds=2 max_znodes=1000000 duration=10s tuning=default zklog=warn
sweeps="sessions,outstanding,size,znodes,mix,servers" cfg_args=() prop_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) smoke=1 ;;
    --keep) keep=1 ;;
    --out) out=$(realpath -m "$2"); shift ;;
    --sweeps) sweeps=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --duration) duration=$2; shift ;;
    --max-znodes) max_znodes=$2; shift ;;
    --zk-tuning) tuning=$2; shift ;;
    --zk-log) zklog=$2; shift ;;
    --cfg) cfg_args+=("$2"); shift ;;
    --zk-prop) prop_args+=("-D$2"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "curves.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "curves.sh: --rounds $rounds: want a positive number" >&2; exit 2; }
[[ $max_znodes =~ ^[1-9][0-9]*$ ]] || { echo "curves.sh: --max-znodes $max_znodes: want a positive number" >&2; exit 2; }

tick=2000
work=$(mktemp -d "${TMPDIR:-/tmp}/zkd-curves.XXXXXX")
bench_name=curves
# shellcheck source=bench/lib-bench.sh
. "$repo/bench/lib-bench.sh"
zk_set_tuning "$tuning"
zk_set_log "$zklog"
cfg_extra=("${cfg_args[@]+"${cfg_args[@]}"}")
zk_props=("${prop_args[@]+"${prop_args[@]}"}")

if [ $smoke = 1 ]; then
  dur=2s warm=1s jvmwarm=2s rounds=1
  x_sessions="1 64" x_outstanding="1 32" x_size="32 65536" x_znodes="1000 20000" x_mix="0 100"
  x_servers="1 3 3+2"
  [ -n "$out" ] || { out="$work/plots"; keep=1; }
else
  dur=$duration warm=2s jvmwarm=15s
  x_sessions="1 2 4 8 16 32 64 128 256 512 1024" x_outstanding="1 2 4 8 16 32 64 128 256"
  x_size="32 128 512 2048 8192 32768 131072 524288 1048576" x_mix="0 1 10 25 50 75 90 100"
  x_znodes=""
  for n in 1000 10000 100000 1000000 10000000; do [ "$n" -gt "$max_znodes" ] || x_znodes+="$n "; done
  x_servers="1 3 5 3+2 5+2"
  [ -n "$out" ] || out="$repo/bench/plots"
fi
mkdir -p "$out"

# load KIND SERVERS PIDS SWEEP X [zkbench run flags...] WORKLOAD...: one measured point.
load() {
  local kind=$1 servers=$2 spids=$3 sweep=$4 x=$5; shift 5
  # A point that fails (a server that died: its log is in the work directory, kept) is left
  # out of the curve; the sweep goes on.
  zkbench run --servers "$servers" --server-pid "$spids" --label "$kind" --json "$out/$sweep.jsonl" \
    --duration "$dur" --warmup "$warm" --progress 0 --param sweep="$sweep" --param "$sweep=$x" \
    --param round="$round" "$@" || { log "$kind: $sweep=$x failed; point left out"; keep=1; }
}

warm_up() { # warm_up SERVERS PIDS: the JIT's (and zkd's) warm-up, not measured: both paths
  # the sweeps measure, as compare.sh warms up (mixed load alone leaves the JIT compiling)
  zkbench run --servers "$1" --server-pid "$2" --duration "$jvmwarm" --warmup 0s --progress 0 \
    --clients 64 --outstanding 32 set get > /dev/null
}

# standalone KIND SWEEP: runs the sweep's points against one fresh server.
standalone() {
  local kind=$1 sweep=$2 x prev=0 keys saved_cfg=("${cfg_extra[@]+"${cfg_extra[@]}"}") saved_props=("${zk_props[@]+"${zk_props[@]}"}")
  if [ "$sweep" = size ]; then
    # A 1 MiB value and its request header exceed jute.maxbuffer's default (0xfffff): both
    # servers get 4 MiB (ZooKeeper reads it as a system property only).
    cfg_extra+=(jute.maxbuffer=4194304) zk_props+=(-Djute.maxbuffer=4194304)
  fi
  # ZooKeeper's heap: 10M znodes need about 4 GiB of live heap (compare.sh's memory phase
  # gives it 12 GiB too); the other sweeps keep compare.sh's 2 GiB.
  # The size sweep: at 1 MiB values ZooKeeper's 2 GiB heap runs out (OutOfMemoryError in
  # its SyncThread): the 500 txns its committed log keeps for follower syncs are 500 MiB on
  # their own, beside the key spaces of the smaller sizes; 8 GiB is what an operator storing
  # values that big would give it.
  local heap=2g
  [ "$sweep" != znodes ] || [ "$max_znodes" -le 1000000 ] || heap=12g
  [ "$sweep" != size ] || heap=8g
  start_fresh "$kind" "$work/$kind-$sweep-$round" "$heap"
  cfg_extra=("${saved_cfg[@]+"${saved_cfg[@]}"}") zk_props=("${saved_props[@]+"${saved_props[@]}"}")
  local s="127.0.0.1:$port" p=$server_pid
  log "$kind: $sweep, round $round (port $port, pid $p)"
  warm_up "$s" "$p"
  case $sweep in
    sessions) for x in $x_sessions; do load "$kind" "$s" "$p" sessions "$x" --clients "$x" --outstanding 32 set get; done ;;
    outstanding) for x in $x_outstanding; do load "$kind" "$s" "$p" outstanding "$x" --clients 64 --outstanding "$x" set get; done ;;
    size)
      for x in $x_size; do
        keys=$(( 64 * 1024 * 1024 / x )); [ "$keys" -le 10000 ] || keys=10000
        # Each size gets its own key space: a get must read values of the size swept.
        load "$kind" "$s" "$p" size "$x" --clients 16 --outstanding 4 --data-size "$x" --keys "$keys" \
          --root "/zkbench-$x" set get
      done ;;
    znodes)
      for x in $x_znodes; do
        # Grow the tree to x znodes (not measured as a point of the curve), then measure.
        zkbench run --servers "$s" --server-pid "$p" --label "$kind" --json "$out/znodes-fill.jsonl" \
          --progress 0 --clients 8 --outstanding 8 --multi-size 10 --znodes $((x - prev)) --znodes-from "$prev" \
          --param sweep=znodes --param znodes="$x" --param round="$round" znodes > /dev/null ||
          { log "$kind: growing the tree to $x znodes failed; the sweep stops there"; keep=1; break; }
        prev=$x
        load "$kind" "$s" "$p" znodes "$x" --clients 64 --outstanding 32 set get
      done ;;
    mix)
      for x in $x_mix; do
        load "$kind" "$s" "$p" mix "$x" --clients 64 --outstanding 32 \
          --read-ratio "$(awk -v w="$x" 'BEGIN { print 1 - w / 100 }')" mixed
      done ;;
  esac
  stop_pid "$p" TERM
}

# ensembles KIND: the servers sweep, a fresh ensemble per point.
ensembles() {
  local kind=$1 x voters observers pidlist
  for x in $x_servers; do
    voters=${x%+*} observers=0
    [ "$x" = "$voters" ] || observers=${x#*+}
    if [ "$voters" = 1 ] && [ "$observers" = 0 ]; then
      start_fresh "$kind" "$work/$kind-servers-$x-$round"
      ens_servers="127.0.0.1:$port" ens_pids=("$server_pid")
    elif ! start_ensemble "$kind" "$work/$kind-servers-$x-$round" "$voters" "$observers"; then
      log "$kind: no ensemble of $x; point left out"
      continue
    fi
    pidlist=$(IFS=,; echo "${ens_pids[*]}")
    log "$kind: servers $x, round $round"
    warm_up "$ens_servers" "$pidlist"
    load "$kind" "$ens_servers" "$pidlist" servers "$voters" --param observers="$observers observers" \
      --clients 64 --outstanding 32 set get
    if [ "$voters" = 1 ] && [ "$observers" = 0 ]; then stop_pid "$server_pid" TERM; else stop_ensemble; fi
  done
}

cd "$repo"
bench_build
started=$(date +%s)
IFS=, read -r -a sweep_list <<< "$sweeps"
for sweep in "${sweep_list[@]}"; do
  case $sweep in
    sessions|outstanding|size|znodes|mix|servers) ;;
    *) echo "curves.sh: unknown sweep $sweep" >&2; exit 2 ;;
  esac
  rm -f "$out/$sweep.jsonl"
  [ "$sweep" != znodes ] || rm -f "$out/znodes-fill.jsonl"
  for round in $(seq 1 "$rounds"); do
    for kind in zkd zookeeper; do
      if [ "$sweep" = servers ]; then ensembles "$kind"; else standalone "$kind" "$sweep"; fi
    done
  done
done

# The plots: one per sweep, every metric a column, set and get a row each.
ys=ops_per_sec,p99,server_cpu_us_per_op
for sweep in "${sweep_list[@]}"; do
  f="$out/$sweep.jsonl"
  [ -s "$f" ] || { log "$sweep: no results"; continue; }
  case $sweep in
    sessions) zkbench curve -x sessions -y "$ys" -title "Against sessions (32 outstanding each, 1 KiB values)" -o "$out/sessions.svg" "$f" ;;
    outstanding) zkbench curve -x outstanding -y "$ys" -title "Against requests in flight per session (64 sessions, 1 KiB values)" -o "$out/outstanding.svg" "$f" ;;
    size) zkbench curve -x data_size -y "$ys" -title "Against value size (16 sessions × 4 outstanding)" -o "$out/size.svg" "$f" ;;
    znodes) zkbench curve -x znodes -y "$ys" -title "Against znodes in the tree (64 sessions × 32 outstanding, 1 KiB values)" -o "$out/znodes.svg" "$f" ;;
    mix) zkbench curve -x mix -y "$ys" -title "Against the share of writes, % (64 sessions × 32 outstanding, 1 KiB values)" -o "$out/mix.svg" "$f" ;;
    servers) zkbench curve -x servers -series label,observers -y "$ys" -title "Against voting servers, with 0 or 2 observers (64 sessions × 32 outstanding, 1 KiB values)" -o "$out/servers.svg" "$f" ;;
  esac
done
# README.md says how each sweep's files were made: sweeps run at different times keep their
# own lines (in provenance.tsv: sweep, then the line).
prov="$out/provenance.tsv"
touch "$prov"
line="\`$cmdline\` on $(date -u '+%Y-%m-%d %H:%M UTC') (the whole run: $(( $(date +%s) - started ))s), zkd at $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) CPUs; ZooKeeper: $(zk_settings_text); runs of $dur after $warm of warm-up, $rounds round(s) per server, alternating."
for sweep in "${sweep_list[@]}"; do
  grep -v "^$sweep	" "$prov" > "$prov.new" || true
  extra=""
  [ "$sweep" != znodes ] || [ "$max_znodes" -le 1000000 ] || extra=" ZooKeeper's heap for this sweep: 12g instead of 2g."
  [ "$sweep" != size ] || extra=" ZooKeeper's heap for this sweep: 8g instead of 2g (with 2g it ran out of memory at 1 MiB values)."
  printf '%s\t%s%s\n' "$sweep" "$line" "$extra" >> "$prov.new"
  mv "$prov.new" "$prov"
done
{
  echo "# Curves"
  echo
  echo "Each SWEEP.jsonl holds every run (zkbench JSON lines; params.round numbers the rounds); each"
  echo "SWEEP.svg plots the median of the rounds at each point, with the single runs as dots."
  echo
  echo "How each was produced:"
  echo
  for s in sessions outstanding size znodes mix servers; do
    l=$(awk -F'\t' -v s="$s" '$1 == s { print $2 }' "$prov")
    [ -z "$l" ] || echo "- [$s]($s.svg): $l"
  done
  for s in sessions outstanding size znodes mix servers; do
    [ ! -f "$out/$s.svg" ] || printf '\n![%s](%s.svg)\n' "$s" "$s"
  done
} > "$out/README.md"
