#!/usr/bin/env bash
# Compare zkd with Apache ZooKeeper 3.8 (Debian's package) on this machine, in one run.
#
#   bench/compare.sh [--quick] [--out FILE] [--keep] [--no-failover] [--zk-tuning T] [--zk-log L]
#                    [--cfg KEY=VALUE]... [--zk-prop NAME=VALUE]...
#
# Builds zkd and zkbench, then for each server in turn: starts it on loopback with the same
# zoo.cfg (fsync on, tickTime 2000, maxClientCnxns 0, data under a temporary directory),
# warms it up, runs the workload matrix with zkbench (the same client for both), then on a
# fresh data directory creates the memory workload's znodes and times restarts (clean stop
# and kill -9) until the first read. Each also gets a 3-server ensemble whose leader is
# killed (kill -9) to time failover.
# Writes the comparison to bench/RESULTS.md (or --out) and a latency plot beside it; the
# method text comes from bench/RESULTS.method.md (edit it there, not in RESULTS.md).
#
#   --quick          under 3 minutes: 2 s runs, no reruns, 100k znodes, one failover each
#                    (default: ~10 minutes, 1M znodes)
#   --out FILE       markdown output (default bench/RESULTS.md)
#   --keep           keep the work directory (server logs, zoo.cfg, raw JSON lines)
#   --no-failover    skip the ensembles
#   --zk-tuning T    ZooKeeper's JVM: default (-Xmx2g, the JVM's own choices), g1 or parallel
#                    (fixed pre-touched heap and that collector); see bench/lib-bench.sh
#   --zk-log L       ZooKeeper's logging: warn (default), info, none (slf4j-nop)
#   --cfg K=V        a zoo.cfg line for both servers (globalOutstandingLimit, snapCount, ...)
#   --zk-prop N=V    a Java system property for ZooKeeper only (-DN=V), e.g.
#                    zookeeper.commitProcessor.numWorkerThreads=4
#
# Environment: JAVA_OPTS (replaces the --zk-tuning flags), ZKD_REFZK_CLASSPATH (class path
# of a ZooKeeper installed elsewhere), TMPDIR (where data directories go: the disk measured).
set -euo pipefail

cmdline="bench/compare.sh${*:+ $*}"
quick=0 keep=0 failover=1 tuning=default zklog=warn cfg_args=() prop_args=()
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$repo/bench/RESULTS.md"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    --no-failover) failover=0 ;;
    --zkd-failover) ;; # the default now; kept for old command lines
    --out) out=$(realpath -m "$2"); shift ;;
    --zk-tuning) tuning=$2; shift ;;
    --zk-log) zklog=$2; shift ;;
    --cfg) cfg_args+=("$2"); shift ;;
    --zk-prop) prop_args+=("-D$2"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

if [ $quick = 1 ]; then
  dur=2s warm=1s jvmwarm=4s znodes=100000 retries=0 failover_runs=1
else
  dur=10s warm=2s jvmwarm=15s znodes=1000000 retries=1 failover_runs=5
fi
tick=2000

work=$(mktemp -d "${TMPDIR:-/tmp}/zkbench-compare.XXXXXX")
bench_name=compare
# shellcheck source=bench/lib-bench.sh
. "$repo/bench/lib-bench.sh"
zk_set_tuning "$tuning"
zk_set_log "$zklog"
cfg_extra=("${cfg_args[@]+"${cfg_args[@]}"}")
zk_props=("${prop_args[@]+"${prop_args[@]}"}")
heap_fresh='' heap_full=''

# run_matrix KIND PORT PID JSON: the load workloads, each with its shape.
run_matrix() {
  local kind=$1 port=$2 pid=$3 json=$4
  local common=(--servers "127.0.0.1:$port" --server-pid "$pid" --label "$kind" --json "$json"
    --duration "$dur" --warmup "$warm" --progress 0 --contention-retries "$retries")
  log "$kind: warm-up ($jvmwarm of mixed load)"
  zkbench run "${common[@]}" --json "" --duration "$jvmwarm" --warmup 0s --contention-retries 0 mixed > /dev/null
  log "$kind: matrix"
  zkbench run "${common[@]}" --clients 64 --outstanding 32 --data-size 1024 set get exists mixed create
  zkbench run "${common[@]}" --clients 16 --outstanding 8 multi
  zkbench run "${common[@]}" --clients 16 --outstanding 4 large
  zkbench run "${common[@]}" --clients 64 watch
  zkbench run "${common[@]}" --clients 16 connect ephemeral
}

# live_heap PID: the JVM's used heap after a full GC, in KiB (empty without jcmd).
live_heap() {
  command -v jcmd > /dev/null || return 0
  timeout 60 jcmd "$1" GC.run > /dev/null 2>&1 || return 0
  timeout 60 jcmd "$1" GC.heap_info 2>/dev/null | sed -n 's/.* heap .*used \([0-9]*\)K.*/\1/p' | head -1
}

# run_server KIND: everything for one server; results go to $work/KIND.jsonl.
run_server() {
  local kind=$1 json="$work/$1.jsonl" dir port mode t0
  : > "$json"
  dir="$work/$kind/load"
  start_fresh "$kind" "$dir"
  log "$kind: serving on port $port ($mode), pid $server_pid"
  if [ "$kind" = zookeeper ]; then heap_fresh=$(live_heap "$server_pid"); fi
  run_matrix "$kind" "$port" "$server_pid" "$json"
  stop_pid "$server_pid" TERM

  dir="$work/$kind/mem"
  start_fresh "$kind" "$dir"
  log "$kind: creating $znodes znodes"
  zkbench run --servers "127.0.0.1:$port" --server-pid "$server_pid" --label "$kind" --json "$json" \
    --progress 5s --clients 8 --outstanding 8 --multi-size 10 --znodes "$znodes" znodes
  if [ "$kind" = zookeeper ]; then heap_full=$(live_heap "$server_pid"); fi

  log "$kind: restart after a clean stop"
  t0=$(date +%s%N)
  stop_pid "$server_pid" TERM
  # The stop is timed too: zkd writes a snapshot at a clean stop when the log since the last
  # one is long, which moves work from the next start to the stop.
  printf '{"kind":"wait","label":"%s","workload":"stop-clean","ops":1,"elapsed_s":%s}\n' "$kind" \
    "$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')" >> "$json"
  sync # flushing the page cache is not the next server's recovery time
  t0=$(date +%s%N)
  start "$kind" "$dir"
  zkbench wait --servers "127.0.0.1:$port" --since "$t0" --path /zkm/n0000000000 \
    --name recovery-clean --label "$kind" --json "$json"
  log "$kind: restart after kill -9"
  stop_pid "$server_pid" KILL
  sync
  t0=$(date +%s%N)
  start "$kind" "$dir"
  zkbench wait --servers "127.0.0.1:$port" --since "$t0" --path /zkm/n0000000000 \
    --name recovery-kill9 --label "$kind" --json "$json"
  stop_pid "$server_pid" TERM
}

# run_failover KIND: a 3-server ensemble; kill -9 the leader, time until a write commits.
run_failover() {
  local kind=$1 run=$2 json=$3 i ports=() dirs=() spids=() lines=() leader=-1 mode others=()
  for i in 1 2 3; do
    ports+=("$(free_port)")
    lines+=("server.$i=127.0.0.1:$(free_port):$(free_port)")
  done
  for i in 0 1 2; do
    dirs+=("$work/$kind/ensemble$run/s$((i + 1))")
    write_cfg "${dirs[$i]}" "${ports[$i]}" "${lines[@]}"
    echo $((i + 1)) > "${dirs[$i]}/data/myid"
  done
  log "$kind: starting a 3-server ensemble"
  for i in 0 1 2; do
    start "$kind" "${dirs[$i]}" 512m # three JVMs on one machine; the data is tiny
    spids+=("$server_pid")
  done
  for i in 0 1 2; do
    if ! mode=$(wait_mode "${ports[$i]}" "${spids[$i]}"); then
      # Most likely a port someone took between free_port and the bind: not a failover
      # this run can time. Stop the rest and leave the run out.
      log "$kind: a server did not start (server.$((i + 1)), $(tail -1 "${dirs[$i]}/server.log" 2>/dev/null)); run $run left out"
      for i in 0 1 2; do stop_pid "${spids[$i]}" TERM; done
      return 1
    fi
    if [ "$mode" = leader ]; then leader=$i; fi
  done
  if [ $leader -lt 0 ]; then log "$kind: no leader found"; for i in 0 1 2; do stop_pid "${spids[$i]}" TERM; done; return 1; fi
  for i in 0 1 2; do [ $i = $leader ] || others+=("127.0.0.1:${ports[$i]}"); done
  zkbench wait --servers "127.0.0.1:${ports[$leader]}" --op write --name failover-warmup > /dev/null
  log "$kind: killing the leader (server.$((leader + 1)))"
  t0=$(date +%s%N)
  stop_pid "${spids[$leader]}" KILL
  zkbench wait --servers "$(IFS=,; echo "${others[*]}")" --since "$t0" --op write --timeout 60s \
    --name failover --label "$kind" --json "$json" || true
  for i in 0 1 2; do [ $i = $leader ] || stop_pid "${spids[$i]}" TERM; done
}

# run_failovers KIND: run_failover $failover_runs times; the median run goes to KIND.jsonl.
run_failovers() {
  local kind=$1 tmp="$work/$1-failover.jsonl" r line n
  : > "$tmp"
  for r in $(seq 1 "$failover_runs"); do run_failover "$kind" "$r" "$tmp" || true; done
  # Only runs that reached a successful write count.
  grep '"ops":1,' "$tmp" > "$tmp.ok" || true
  mv "$tmp.ok" "$tmp"
  n=$(grep -c . "$tmp" || true)
  [ "$n" -gt 0 ] || return 0
  line=$(awk -F'"elapsed_s":' '{ split($2, a, /[,}]/); print a[1] "\t" $0 }' "$tmp" | sort -n |
    awk -v n="$n" 'NR == int((n + 1) / 2) { sub(/^[^\t]*\t/, ""); print }')
  echo "$line" >> "$work/$kind.jsonl"
  log "$kind: failover seconds in $n runs: $(grep -o '"elapsed_s":[0-9.]*' "$tmp" | cut -d: -f2 | sort -n | tr '\n' ' ')(the median is kept)"
}

cd "$repo"
bench_build

started=$(date +%s)
fsync_line=$(zkbench fsync --dir "$work" --count 200 | sed "s# in $work##")
run_server zkd
run_server zookeeper
if [ $failover = 1 ]; then
  run_failovers zookeeper
  run_failovers zkd
fi
elapsed=$(( $(date +%s) - started ))

mkdir -p "$(dirname "$out")"
plot="${out%.md}-latency.svg"
zkbench plot -o "$plot" "$work/zkd.jsonl" "$work/zookeeper.jsonl"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)
zkversion=$(dpkg-query -W -f '${Version}' zookeeper 2>/dev/null || echo "unknown version")
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- . ':!bench/RESULTS*' 2>/dev/null || rev="$rev (with uncommitted changes)"
{
  echo "# zkd vs Apache ZooKeeper"
  echo
  echo "Produced by \`$cmdline\` on $(date -u '+%Y-%m-%d %H:%M UTC') in ${elapsed}s; zkd at $rev."
  echo
  cfg_text="snapCount and preAllocSize at their defaults"
  [ ${#cfg_extra[@]} -eq 0 ] || cfg_text="and: $(printf '`%s` ' "${cfg_extra[@]}")"
  render_template "$repo/bench/RESULTS.method.md" \
    "nproc=$(nproc)" "cpu=$cpu" "mem=$mem" "kernel=$(uname -r)" \
    "disk=$(df -T "$work" | awk 'NR==2 {print $2 " on " $1}')" "fsync=$fsync_line" \
    "go=$(go env GOVERSION)" "java=$(java -version 2>&1 | head -1)" "zkversion=$zkversion" \
    "tick=$tick" "cfg=${cfg_text% }" "zk=$(zk_settings_text)" "jvmwarm=$jvmwarm" "warm=$warm" "dur=$dur" \
    "retries=$retries" "znodes=$znodes" "failover_runs=$failover_runs"
  echo
  echo "## Results"
  echo
  zkbench compare --a "$work/zkd.jsonl" --a-name zkd --b "$work/zookeeper.jsonl" --b-name ZooKeeper
  if [ -n "$heap_fresh" ] && [ -n "$heap_full" ]; then
    echo "### Live heap"
    echo
    echo "ZooKeeper's live heap after a full GC (jcmd GC.run, GC.heap_info) grew from ${heap_fresh} KiB on a"
    echo "fresh server to ${heap_full} KiB with the $znodes znodes: $(( (heap_full - heap_fresh) * 1024 / znodes ))"
    echo "bytes per znode of live Java objects, the floor under its RSS figure in the znodes table."
    echo
  fi
  echo "Latency percentiles per workload: [$(basename "$plot")]($(basename "$plot"))."
} > "$out"
log "wrote $out and $plot"
