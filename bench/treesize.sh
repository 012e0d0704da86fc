#!/usr/bin/env bash
# Issue 28's side-by-side rows: zkd and Apache ZooKeeper 3.8 as their trees grow, on this
# machine, one server at a time, the same client for both.
#
#   bench/treesize.sh [--znodes "1000000 10000000"] [--kinds "zkd zookeeper"]
#                     [--drivers "zkbench go-zookeeper"] [--duration 30s] [--heap 12g]
#                     [--zk-prop NAME=VALUE]... [--out FILE] [--keep] [--no-big] [--purge] [--smoke]
#
# For each kind, on a fresh server (fsync on, tickTime 2000, snapCount at its default, so
# snapshots of the big tree run during the load; ZooKeeper with -XX:+UseParallelGC and
# --heap, not touched at start-up, so that its RSS is what it used): the tree grows to each
# size in turn with zkbench's `znodes` workload (8 sessions x 8 outstanding, multis of 10,
# 16-byte paths, 10-byte data under /zkm), then at that size:
#   - 15 s of mixed load at 64 x 32, unmeasured (warm-up, as in compare.sh);
#   - set and get of 1 KB at 64 sessions x 32 outstanding on 10,000 other znodes, through
#     each driver (zkbench's own pipelined client; github.com/go-zookeeper/zk, 32 goroutines
#     per session); the sets' latencies are also split into requests in flight while the
#     server was writing a snapshot and the rest (zkbench run --snapshot-dir);
#   - a clean stop (SIGTERM, timed), a restart until the last znode written is readable,
#     then kill -9 and the same again;
#   - at the first size only, after the restarts (unless --no-big): set and get of 1,048,000-byte values (the largest both accept
#     under the default jute.maxbuffer), 16 sessions x 4 outstanding on 64 znodes.
# RSS per znode at a size is the server's RSS at the end of the fill less a fresh server's,
# over the size; the snapshot time is mntr's zk_max_snapshottime after the fill (the longest
# snapshot the server wrote since it last started, of the biggest tree it held).
# Writes the JSON lines beside FILE (FILE without .md, .jsonl) and the tables to FILE
# (default bench/RESULTS-treesize.md). Every process is stopped by its PID on exit.
#
#   --zk-prop a Java system property for ZooKeeper only (-DNAME=VALUE), as for compare.sh
#   --purge   every 20 s, delete all but the newest two snapshots and the logs only they
#             need (ZooKeeper's autopurge with snapRetainCount=2, which counts its interval
#             in hours): a tree of 100M znodes writes snapshots of ~10 GB while it grows
#   --smoke   10k and 30k znodes, 3 s runs, one driver: proves the pipeline in a few minutes;
#             writes to a temporary directory unless --out is given
set -euo pipefail

cmdline="bench/treesize.sh${*:+ $*}"
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sizes="1000000 10000000" kinds="zkd zookeeper" drivers="zkbench go-zookeeper" dur=30s heap=12g
out="" keep=0 smoke=0 big=1 purge=0 warm=15s zk_prop_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --znodes) sizes=$2; shift ;;
    --kinds) kinds=$2; shift ;;
    --drivers) drivers=$2; shift ;;
    --duration) dur=$2; shift ;;
    --heap) heap=$2; shift ;;
    --zk-prop) zk_prop_args+=("-D$2"); shift ;;
    --out) out=$(realpath -m "$2"); shift ;;
    --keep) keep=1 ;;
    --no-big) big=0 ;;
    --purge) purge=1 ;;
    --smoke) smoke=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "treesize.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ $smoke = 1 ]; then
  sizes="10000 30000" drivers=zkbench dur=3s heap=2g warm=2s
  [ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/zkd-treesize-smoke.XXXXXX")/RESULTS-treesize.md
fi
[ -n "$out" ] || out="$repo/bench/RESULTS-treesize.md"
jsonl="${out%.md}.jsonl"

tick=2000
work=$(mktemp -d "${TMPDIR:-/tmp}/zkd-treesize.XXXXXX")
bench_name=treesize
# shellcheck source=bench/lib-bench.sh
. "$repo/bench/lib-bench.sh"
zk_set_tuning parallel
zk_grow_heap=1
zk_props=("${zk_prop_args[@]+"${zk_prop_args[@]}"}")

cd "$repo"
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- . ':!bench/RESULTS*' 2>/dev/null || rev="$rev (with uncommitted changes)"
bench_build
mkdir -p "$(dirname "$out")"
: > "$jsonl"
started=$(date +%s)

rss() { awk '/VmRSS/{printf "%.0f\n", $2*1024}' "/proc/$1/status"; }
# note KIND NAME VALUE: a figure the shell measured, as a JSON line.
note() { printf '{"label":"%s","workload":"%s","value":%s}\n' "$1" "$2" "$3" >> "$jsonl"; }

# run KIND SIZE NAME ARGS...: one zkbench run against the server, its result recorded under NAME.
run() {
  local kind=$1 size=$2 name=$3; shift 3
  zkbench run --servers "127.0.0.1:$port" --server-pid "$server_pid" --label "$kind" --json "$jsonl" \
    --progress 0 --param "znodes=$size" --as "$name" "$@" > /dev/null
}

# restart KIND DIR SIZE HOW: start the server on DIR after a stop, until /zkm's last znode
# is readable.
restart() {
  local kind=$1 dir=$2 size=$3 how=$4 t0
  sync
  t0=$(date +%s%N)
  start "$kind" "$dir" "$heap"
  zkbench wait --servers "127.0.0.1:$port" --since "$t0" --path "$(printf '/zkm/n%010d' $((size - 1)))" \
    --timeout 30m --name "recovery-$how" --label "$kind" --json - |
    sed "s/}\$/,\"params\":{\"znodes\":\"$size\"}}/" >> "$jsonl"
  note "$kind" "rss-after-recovery-$how-$size" "$(rss "$server_pid")"
}

# purge_once DIR: the snapshots but the newest two, and the logs older than the newest log
# that starts at or before the older of them (it holds the txns after that snapshot).
purge_once() {
  python3 - "$1" << 'EOF'
import os, re, sys
d = sys.argv[1]
def zxid(name, prefix):
    m = re.fullmatch(prefix + r"\.([0-9a-f]+)(\.gz|\.snappy)?", name)
    return int(m.group(1), 16) if m else None
try:
    names = os.listdir(d)
except FileNotFoundError:
    sys.exit()
snaps = sorted((zxid(n, "snapshot"), n) for n in names if zxid(n, "snapshot") is not None)
if len(snaps) <= 2:
    sys.exit()
oldest = snaps[-2][0]
logs = sorted((zxid(n, "log"), n) for n in names if zxid(n, "log") is not None)
older = [n for z, n in logs if z <= oldest]
for n in [n for _, n in snaps[:-2]] + older[:-1]:
    try:
        os.remove(os.path.join(d, n))
    except FileNotFoundError:
        pass
EOF
}

for kind in $kinds; do
  dir="$work/$kind"
  start_fresh "$kind" "$dir" "$heap"
  if [ $purge = 1 ]; then
    ( while sleep 20; do purge_once "$dir/data/version-2"; done ) &
    purger=$!; pids+=("$purger")
  fi
  fresh=$(rss "$server_pid")
  log "$kind: started on port $port, RSS $fresh"
  have=0 first=1
  for size in $sizes; do
    log "$kind: growing the tree from $have to $size znodes"
    run "$kind" "$size" fill --clients 8 --outstanding 8 --multi-size 10 --znodes-from "$have" --znodes $((size - have)) znodes
    note "$kind" "rss-per-znode-$size" "$(( ($(rss "$server_pid") - fresh) / size ))"
    have=$size
    # As compare.sh does: 15 s of mixed load, unmeasured, before the measured runs (the
    # JVM's compiler; zkd, too, runs its first seconds after the fill slower).
    zkbench run --servers "127.0.0.1:$port" --progress 0 --duration "$warm" --warmup 0s --json /dev/null mixed > /dev/null
    for driver in $drivers; do
      d=(); [ "$driver" = zkbench ] || d=(--driver "$driver")
      log "$kind: set and get at $size znodes through $driver"
      run "$kind" "$size" "set-$driver" "${d[@]+"${d[@]}"}" --duration "$dur" --snapshot-dir "$dir/data/version-2" set
      run "$kind" "$size" "get-$driver" "${d[@]+"${d[@]}"}" --duration "$dur" get
    done
    log "$kind: restarts at $size znodes"
    t0=$(date +%s%N); stop_pid "$server_pid" TERM
    note "$kind" "stop-clean-$size" "$(( ($(date +%s%N) - t0) / 1000000 ))"
    restart "$kind" "$dir" "$size" clean
    stop_pid "$server_pid" KILL
    restart "$kind" "$dir" "$size" kill9
    # After the restarts: gigabytes of 1 MiB sets in the log would be most of a restart.
    if [ $first = 1 ] && [ $big = 1 ]; then
      log "$kind: 1 MiB values at $size znodes"
      bigargs=(--data-size 1048000 --keys 64 --clients 16 --outstanding 4 --root /zkbig --duration "$dur")
      run "$kind" "$size" set-1mib "${bigargs[@]}" set
      run "$kind" "$size" get-1mib "${bigargs[@]}" get
    fi
    first=0
  done
  stop_pid "$server_pid" TERM
  [ $purge = 0 ] || stop_pid "$purger" TERM
  rm -rf "$dir/data/version-2"
done
elapsed=$(( $(date +%s) - started ))

fsync_line=$(zkbench fsync --dir "$work" --count 200 | sed "s# in $work##")
{
  if [[ " $kinds " == *" zookeeper "* ]]; then echo "# zkd and ZooKeeper as the tree grows (issue 28)"; else echo "# $kinds as the tree grows (issue 28)"; fi
  echo
  echo "Produced by \`$cmdline\` on $(date -u '+%Y-%m-%d %H:%M UTC') in ${elapsed}s; zkd at $rev."
  echo "Machine: $(nproc) × $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1 | awk '{print $1, $2}'), $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo); $fsync_line."
  [[ " $kinds " != *" zookeeper "* ]] || echo "ZooKeeper: \`java $(zk_java_opts "$heap")${zk_props[*]:+ ${zk_props[*]}}\`, Debian's $(dpkg-query -W -f '${Version}' zookeeper 2>/dev/null || echo 3.8)."
  echo "Method: the header of bench/treesize.sh. Ratios are zkd / ZooKeeper."
  echo
  python3 "$repo/bench/treesize.py" "$jsonl"
} > "$out"
log "wrote $out and $jsonl"
