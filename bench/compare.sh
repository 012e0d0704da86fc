#!/usr/bin/env bash
# Compare zkd with Apache ZooKeeper 3.8 (Debian's package) on this machine, in one run.
#
#   bench/compare.sh [--quick] [--out FILE] [--keep] [--no-failover] [--no-ensemble]
#                    [--no-scale] [--max-znodes N] [--idle-sessions N] [--zk-tuning T]
#                    [--zk-log L] [--cfg KEY=VALUE]... [--zk-prop NAME=VALUE]...
#
# Builds zkd and zkbench, then for each server in turn: starts it on loopback with the same
# zoo.cfg (fsync on, tickTime 2000, maxClientCnxns 0, data under a temporary directory),
# warms it up, runs the workload matrix with zkbench (the same client for both: 64 x 32
# set/get/exists/mixed/create/createdelete, multi, large, 1-session get and set, watch
# fan-out to 64 and to 1000 watchers, a connect storm, session churn), then on fresh data
# directories holds the idle sessions (RSS per session), creates the memory workload's
# znodes (1M, and 10M with --max-znodes 10000000) and times restarts (clean stop and
# kill -9) until the last write is readable, and on a fresh server issue 16's scale items: a
# value of nearly 1 MB (jute.maxbuffer) read by 1000 sessions, and getChildren of a node with
# 1M children. Each also gets 3-server ensembles: set/get throughput through all three, and
# the leader killed (kill -9) to time failover, empty and with 1M znodes (zkd with
# zkd.fastElection=true, and with ZooKeeper's election timing).
# Writes the comparison to bench/RESULTS.md (or --out) and a latency plot beside it; the
# method text comes from bench/RESULTS.method.md (edit it there, not in RESULTS.md).
#
#   --quick          under 3 minutes: 2 s runs, no reruns, 100k znodes, 2000 idle sessions,
#                    no scale phase, one failover of an empty ensemble each (default: ~30
#                    minutes, 1M znodes; ~45 with --max-znodes 10000000)
#   --out FILE       markdown output (default bench/RESULTS.md)
#   --keep           keep the work directory (server logs, zoo.cfg, raw JSON lines; not the
#                    servers' txn logs and snapshots) for --render-from
#   --no-failover    skip the failover ensembles
#   --no-ensemble    skip the ensemble throughput runs
#   --no-scale       skip the scale phase (children and bigread workloads)
#   --no-etcd        skip bench/etcd.sh (run by default when etcd is installed and not
#                    --quick; it writes RESULTS-etcd.md beside the output, summed up in it)
#   --max-znodes N   also the memory and restart figures at N znodes when N is larger than
#                    the 1M of the default run (10000000 for issue 16's 10M row; ZooKeeper then
#                    gets a 12 GiB heap, and each server takes minutes to fill)
#   --idle-sessions N  sessions held open for the RSS per session (default 19000: this
#                    container's hard limit of open files is 20000, for the server as for
#                    zkbench; issue 16 asks for 20000)
#   --zk-tuning T    ZooKeeper's JVM: default (-Xmx2g, the JVM's own choices), g1 or parallel
#                    (fixed pre-touched heap and that collector); see bench/lib-bench.sh
#   --zk-log L       ZooKeeper's logging: warn (default), info, none (slf4j-nop)
#   --cfg K=V        a zoo.cfg line for both servers (globalOutstandingLimit, snapCount, ...)
#   --zk-prop N=V    a Java system property for ZooKeeper only (-DN=V), e.g.
#                    zookeeper.commitProcessor.numWorkerThreads=4
#   --render-from DIR  run nothing: write --out again from the work directory a run kept
#                    (--keep), with today's RESULTS.method.md, RESULTS.notes and report code
#                    (the figures, date and command line are the run's, from DIR/render.env)
#
# Environment: JAVA_OPTS (replaces the --zk-tuning flags), ZKD_REFZK_CLASSPATH (class path
# of a ZooKeeper installed elsewhere), TMPDIR (where data directories go: the disk measured).
set -euo pipefail

cmdline="bench/compare.sh${*:+ $*}"
render_from='' quick=0 keep=0 failover=1 ensemble=1 scale=1 etcd=1 max_znodes=0 idle_sessions=19000 tuning=default zklog=warn cfg_args=() prop_args=()
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$repo/bench/RESULTS.md"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    --no-failover) failover=0 ;;
    --no-ensemble) ensemble=0 ;;
    --no-scale) scale=0 ;;
    --no-etcd) etcd=0 ;;
    --max-znodes) max_znodes=$2; shift ;;
    --idle-sessions) idle_sessions=$2; shift ;;
    --zkd-failover) ;; # the default now; kept for old command lines
    --out) out=$(realpath -m "$2"); shift ;;
    --zk-tuning) tuning=$2; shift ;;
    --zk-log) zklog=$2; shift ;;
    --cfg) cfg_args+=("$2"); shift ;;
    --zk-prop) prop_args+=("-D$2"); shift ;;
    --render-from) render_from=$(realpath -m "$2"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

if [ $quick = 1 ]; then
  dur=2s warm=500ms jvmwarm=3s znodes=100000 retries=0 failover_runs=1 failover_znodes=20000
  storm_sessions=500 scale=0
  [ "$idle_sessions" != 19000 ] || idle_sessions=2000
else
  dur=10s warm=2s jvmwarm=15s znodes=1000000 retries=1 failover_runs=5 failover_znodes=1000000
  storm_sessions=2000
fi
failover_big_runs=3
# The scale phase: getChildren of a node with scale_children children, by 4 sessions with 2
# requests each in flight (each reply is 12 MB: ZooKeeper builds it in its heap); the
# bigread workload's value (zkbench's default, just under jute.maxbuffer) read by
# bigread_sessions sessions with one request each in flight.
scale_children=1000000 bigread_sessions=1000
[[ $max_znodes =~ ^[0-9]+$ ]] || { echo "compare.sh: --max-znodes $max_znodes: want a number" >&2; exit 2; }
[[ $idle_sessions =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: --idle-sessions $idle_sessions: want a positive number" >&2; exit 2; }
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
  # The JIT compiles what it runs: after mixed load alone ZooKeeper's compiler threads
  # still took about 20 of the 47 µs it spent per set (bench/zktune.sh), so both paths of
  # the measured shape run first too.
  log "$kind: warm-up ($jvmwarm each of mixed load, set and get at 64 x 32)"
  zkbench run "${common[@]}" --json "" --duration "$jvmwarm" --warmup 0s --contention-retries 0 \
    --clients 64 --outstanding 32 --data-size 1024 mixed set get > /dev/null
  log "$kind: matrix"
  zkbench run "${common[@]}" --clients 64 --outstanding 32 --data-size 1024 set get exists mixed create createdelete
  zkbench run "${common[@]}" --clients 16 --outstanding 8 multi
  zkbench run "${common[@]}" --clients 16 --outstanding 4 large
  zkbench run "${common[@]}" --clients 1 --outstanding 1 --data-size 1024 --as get-1 get
  zkbench run "${common[@]}" --clients 1 --outstanding 1 --data-size 1024 --as set-1 set
  zkbench run "${common[@]}" --clients 64 watch
  zkbench run "${common[@]}" --clients 1000 --as watch-1000 watch
  zkbench run "${common[@]}" --clients 16 connect ephemeral
  zkbench run "${common[@]}" --clients 64 --sessions "$storm_sessions" storm
}

# live_heap PID: the JVM's used heap after a full GC, in KiB (empty without jcmd).
live_heap() {
  command -v jcmd > /dev/null || return 0
  timeout 60 jcmd "$1" GC.run > /dev/null 2>&1 || return 0
  # G1 prints one "heap total ..K, used ..K" line, Parallel a line per generation: the sum.
  timeout 60 jcmd "$1" GC.heap_info 2>/dev/null |
    awk 'match($0, /total [0-9]+K, used [0-9]+K/) { split(substr($0, RSTART, RLENGTH), f, /[ K,]+/); used += f[4]; n++ }
      END { if (n) print used }'
}

# elapsed_line KIND NAME T0: a wait line for a step timed here (0.1 s resolution).
elapsed_line() {
  printf '{"kind":"wait","label":"%s","workload":"%s","ops":1,"elapsed_s":%s}\n' "$1" "$2" \
    "$(awk -v a="$3" -v b="$(date +%s%N)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')"
}

# run_memory KIND N SUFFIX HEAP JSON: on a fresh data directory, create N znodes (RSS per
# znode), then time the clean stop and the restarts (clean and kill -9) until the last znode
# written is readable. Result names carry SUFFIX ("" for 1M, "-10m").
run_memory() {
  local kind=$1 n=$2 suffix=$3 heap=$4 json=$5 dir t0 last
  dir="$work/$kind/mem$suffix"
  port=$(free_port); rm -rf "$dir"; write_cfg "$dir" "$port"
  start "$kind" "$dir" "$heap"
  wait_mode "$port" "$server_pid" > /dev/null
  log "$kind: creating $n znodes"
  zkbench run --servers "127.0.0.1:$port" --server-pid "$server_pid" --label "$kind" --json "$json" \
    --progress 30s --clients 8 --outstanding 8 --multi-size 10 --znodes "$n" --as "znodes$suffix" znodes
  if [ "$kind" = zookeeper ] && [ -z "$suffix" ]; then heap_full=$(live_heap "$server_pid"); fi
  # The last znode written: zkbench hands out the names in order, in batches of 10.
  last=$(printf '/zkm/n%010d' $((n - 1)))
  log "$kind: restart after a clean stop"
  t0=$(date +%s%N)
  stop_pid "$server_pid" TERM
  # The stop is timed too: zkd writes a snapshot at a clean stop when the log since the last
  # one is long, which moves work from the next start to the stop.
  elapsed_line "$kind" "stop-clean$suffix" "$t0" >> "$json"
  sync # flushing the page cache is not the next server's recovery time
  t0=$(date +%s%N)
  start "$kind" "$dir" "$heap"
  zkbench wait --servers "127.0.0.1:$port" --since "$t0" --path "$last" --timeout 20m \
    --name "recovery-clean$suffix" --label "$kind" --json "$json"
  log "$kind: restart after kill -9"
  stop_pid "$server_pid" KILL
  sync
  t0=$(date +%s%N)
  start "$kind" "$dir" "$heap"
  zkbench wait --servers "127.0.0.1:$port" --since "$t0" --path "$last" --timeout 20m \
    --name "recovery-kill9$suffix" --label "$kind" --json "$json"
  stop_pid "$server_pid" TERM
  rm -rf "$dir"
}

# run_scale KIND JSON: issue 16's scale items on a fresh server. The children are made once
# (in multis of 100) and not removed: the server and its data directory go afterwards.
run_scale() {
  local kind=$1 json=$2 common
  start_fresh "$kind" "$work/$kind/scale"
  common=(--servers "127.0.0.1:$port" --server-pid "$server_pid" --label "$kind" --json "$json"
    --duration "$dur" --warmup "$warm" --progress 0 --contention-retries "$retries")
  log "$kind: a value of nearly 1 MB read by $bigread_sessions sessions"
  zkbench run "${common[@]}" --clients "$bigread_sessions" --outstanding 1 bigread
  log "$kind: getChildren of a node with $scale_children children"
  zkbench run "${common[@]}" --clients 4 --outstanding 2 --children "$scale_children" --multi-size 100 \
    --cleanup=false children
  stop_pid "$server_pid" TERM
  rm -rf "$work/$kind/scale"
}

# run_server KIND: everything for one server; results go to $work/KIND.jsonl.
run_server() {
  local kind=$1 json="$work/$1.jsonl" dir port mode
  : > "$json"
  dir="$work/$kind/load"
  start_fresh "$kind" "$dir"
  log "$kind: serving on port $port ($mode), pid $server_pid"
  if [ "$kind" = zookeeper ]; then heap_fresh=$(live_heap "$server_pid"); fi
  run_matrix "$kind" "$port" "$server_pid" "$json"
  stop_pid "$server_pid" TERM

  # Idle sessions on a fresh server: what holding them costs, not what a server that ran
  # the matrix has spare.
  # Memory and restarts: ZooKeeper's heap grows as it needs (no -Xms, no pre-touch).
  zk_grow_heap=1
  start_fresh "$kind" "$work/$kind/idle"
  log "$kind: holding $idle_sessions idle sessions"
  zkbench run --servers "127.0.0.1:$port" --server-pid "$server_pid" --label "$kind" --json "$json" \
    --progress 0 --clients 64 --sessions "$idle_sessions" idle
  stop_pid "$server_pid" TERM

  run_memory "$kind" "$znodes" "" 2g "$json"
  if [ "$max_znodes" -gt "$znodes" ]; then
    # ZooKeeper keeps about 350 bytes of live heap per znode: 2 GiB does not hold 10M.
    run_memory "$kind" "$max_znodes" "-$(znodes_suffix "$max_znodes")" 12g "$json"
  fi
  zk_grow_heap=0
  # Throughput again: ZooKeeper with the heap and tuning of the matrix.
  [ $scale = 0 ] || run_scale "$kind" "$json"
}

# znodes_suffix N: 10000000 -> 10m, 2000000 -> 2m, 500000 -> 500k.
znodes_suffix() {
  if [ $(($1 % 1000000)) = 0 ]; then echo "$(($1 / 1000000))m"; else echo "$(($1 / 1000))k"; fi
}

# ensemble_kind KIND: the server binary of an ensemble kind (zkd-fast is zkd).
ensemble_bin() { case $1 in zkd-fast) echo zkd ;; *) echo "$1" ;; esac; }

# with_kind_cfg KIND CMD...: CMD with the zoo.cfg lines of the ensemble kind.
with_kind_cfg() {
  local kind=$1 saved=("${cfg_extra[@]+"${cfg_extra[@]}"}") rc=0; shift
  [ "$kind" != zkd-fast ] || cfg_extra+=(zkd.fastElection=true)
  "$@" || rc=$?
  cfg_extra=("${saved[@]+"${saved[@]}"}")
  return $rc
}

# ensemble_leader: the index in ens_ports of the leader, or -1.
ensemble_leader() {
  local i
  for i in "${!ens_ports[@]}"; do
    if [ "$(fourlw "${ens_ports[$i]}" srvr | sed -n 's/^Mode: //p')" = leader ]; then echo "$i"; return; fi
  done
  echo -1
}

# run_ensemble_load KIND: set and get through a 3-server ensemble, sessions spread over all
# three, server CPU summed over the three.
run_ensemble_load() {
  local kind=$1 json="$work/$1.jsonl" common
  start_ensemble "$kind" "$work/$kind/ensemble-load" 3 0 || { log "$kind: no ensemble; throughput left out"; return 0; }
  common=(--servers "$ens_servers" --server-pid "$(IFS=,; echo "${ens_pids[*]}")" --label "$kind"
    --json "$json" --duration "$dur" --warmup "$warm" --progress 0 --contention-retries "$retries"
    --clients 64 --outstanding 32 --data-size 1024)
  log "$kind: 3-server ensemble, warm-up"
  # --quick keeps to its 3 minutes with the mixed warm-up alone here.
  local warm_wls=(mixed set get)
  [ $quick = 0 ] || warm_wls=(mixed)
  zkbench run "${common[@]}" --json "" --duration "$jvmwarm" --warmup 0s --contention-retries 0 "${warm_wls[@]}" > /dev/null
  zkbench run "${common[@]}" --as ensemble-set set
  zkbench run "${common[@]}" --as ensemble-get get
  stop_ensemble
}

# run_failover KIND RUN JSON ZNODES: a 3-server ensemble of KIND (zkd, zkd-fast, zookeeper)
# holding ZNODES znodes; kill -9 the leader, time until a write commits through the others.
run_failover() {
  local kind=$1 run=$2 json=$3 size=$4 bin leader i others=() t0 name=failover heap
  bin=$(ensemble_bin "$kind")
  heap=512m; [ "$size" = 0 ] || heap=1g # about 350 bytes of live heap per znode
  if ! with_kind_cfg "$kind" start_ensemble "$bin" "$work/$kind/failover-$size-$run" 3 0 "$heap"; then
    log "$kind: no ensemble; run $run left out"
    return 1
  fi
  if [ "$size" -gt 0 ]; then
    log "$kind: filling the ensemble with $size znodes"
    zkbench run --servers "$ens_servers" --progress 0 --clients 8 --outstanding 8 --multi-size 10 \
      --znodes "$size" znodes > /dev/null
    name="failover-$(znodes_suffix "$size")"
  fi
  leader=$(ensemble_leader)
  if [ "$leader" -lt 0 ]; then log "$kind: no leader found"; stop_ensemble; return 1; fi
  for i in "${!ens_ports[@]}"; do [ "$i" = "$leader" ] || others+=("127.0.0.1:${ens_ports[$i]}"); done
  zkbench wait --servers "127.0.0.1:${ens_ports[$leader]}" --op write --name failover-warmup > /dev/null
  log "$kind: killing the leader (server.$((leader + 1)))"
  t0=$(date +%s%N)
  stop_pid "${ens_pids[$leader]}" KILL
  zkbench wait --servers "$(IFS=,; echo "${others[*]}")" --since "$t0" --op write --timeout 60s \
    --name "$name" --label "$kind" --json "$json" || true
  stop_ensemble
  rm -rf "$work/$kind/failover-$size-$run"
}

# run_failovers KIND LABEL ZNODES RUNS: RUNS failovers; the median goes to LABEL.jsonl.
run_failovers() {
  local kind=$1 label=$2 size=$3 runs=$4 tmp="$work/$1-failover-$3.jsonl" r line n
  : > "$tmp"
  for r in $(seq 1 "$runs"); do run_failover "$kind" "$r" "$tmp" "$size" || true; done
  # Only runs that reached a successful write count.
  grep '"ops":1,' "$tmp" > "$tmp.ok" || true
  mv "$tmp.ok" "$tmp"
  n=$(grep -c . "$tmp" || true)
  [ "$n" -gt 0 ] || return 0
  line=$(awk -F'"elapsed_s":' '{ split($2, a, /[,}]/); print a[1] "\t" $0 }' "$tmp" | sort -n |
    awk -v n="$n" 'NR == int((n + 1) / 2) { sub(/^[^\t]*\t/, ""); print }')
  # The goal rows read zkd's figure under "zkd": the fast election's figure is zkd's, and
  # ZooKeeper's timing in zkd is kept as its own row.
  case $kind in
    zkd-fast) line=${line//\"label\":\"zkd-fast\"/\"label\":\"zkd\"} ;;
    zkd) line=$(sed 's/"workload":"\(failover[^"]*\)"/"workload":"\1-zk-timing"/' <<< "$line") ;;
  esac
  echo "$line" >> "$work/$label.jsonl"
  log "$kind: failover ($size znodes) seconds in $n runs: $(grep -o '"elapsed_s":[0-9.]*' "$tmp" | cut -d: -f2 | sort -n | tr '\n' ' ')(the median is kept)"
}

# render: writes $out (and the latency plot beside it) from $work's JSON lines and what the
# run recorded in $work/render.env.
render() {
mkdir -p "$(dirname "$out")"
plot="${out%.md}-latency.svg"
zkbench plot -o "$plot" "$work/zkd.jsonl" "$work/zookeeper.jsonl"
{
  echo "# zkd vs Apache ZooKeeper"
  echo
  echo "Produced by \`$cmdline\` on $produced_at in ${elapsed}s; zkd at $rev."
  echo
  cfg_text="snapCount and preAllocSize at their defaults"
  [ ${#cfg_extra[@]} -eq 0 ] || cfg_text="and: $(printf '`%s` ' "${cfg_extra[@]}")"
  render_template "$repo/bench/RESULTS.method.md" \
    "nproc=$nproc" "cpu=$cpu" "mem=$mem" "kernel=$kernel" \
    "disk=$disk" "fsync=$fsync_line" \
    "go=$goversion" "java=$javaversion" "zkversion=$zkversion" \
    "tick=$tick" "cfg=${cfg_text% }" "zk=$zk_text" "jvmwarm=$jvmwarm" "warm=$warm" "dur=$dur" \
    "retries=$retries" "znodes=$znodes" "failover_runs=$failover_runs" \
    "failover_znodes=$failover_znodes" "storm_sessions=$storm_sessions" "idle_sessions=$idle_sessions" \
    "bigtree=$bigtree"
  echo
  echo "## Results"
  echo
  notes=()
  # Why a goal is not met: goal key, then the explanation (the profile that limits it).
  [ ! -f "$repo/bench/RESULTS.notes" ] || notes=(--notes "$repo/bench/RESULTS.notes")
  zkbench compare --a "$work/zkd.jsonl" --a-name zkd --b "$work/zookeeper.jsonl" --b-name ZooKeeper "${notes[@]+"${notes[@]}"}"
  if [ -n "$heap_fresh" ] && [ -n "$heap_full" ]; then
    echo "### Live heap"
    echo
    echo "ZooKeeper's live heap after a full GC (jcmd GC.run, GC.heap_info) grew from ${heap_fresh} KiB on a"
    echo "fresh server to ${heap_full} KiB with the $znodes znodes: $(( (heap_full - heap_fresh) * 1024 / znodes ))"
    echo "bytes per znode of live Java objects, the floor under its RSS figure in the znodes table."
    echo
  fi
  echo "Latency percentiles per workload: [$(basename "$plot")]($(basename "$plot"))."
  if [ -f "$etcd_md" ]; then
    echo
    echo "### Beside etcd 3.4"
    echo
    echo "Writes of 1 KB with fsync on, zkd's setData against etcd's put: the best round of each, from"
    echo "[$(basename "$etcd_md")]($(basename "$etcd_md")) (bench/etcd.sh, run by this script after the rest):"
    echo
    echo "| shape | zkd (ops/s) | etcd (ops/s) | zkd / etcd |"
    echo "|---|---|---|---|"
    awk -F' *\\| *' '/^## Writes at / { shape = substr($0, 14) }
      /^\| throughput \(ops\/s\)/ && shape != "" { printf "| %s | %s | %s | %s |\n", shape, $3, $4, $5; shape = "" }' "$etcd_md"
  fi
  # Issue 28's rows (bench/treesize.sh and bench/snapsync.sh, run on their own: each file's
  # header line says how and when).
  for ts in "$(dirname "$out")"/RESULTS-treesize*.md; do
    [ -f "$ts" ] || continue
    echo
    echo "### Tree size: $(sed -n 's/^# //p' "$ts" | head -1)"
    echo
    echo "From [$(basename "$ts")]($(basename "$ts")):"
    sed -n '3,/^## Goals/p' "$ts" | sed '$d'
    sed -n '/^## Goals/,/^## Figures/p' "$ts" | sed '1d;$d'
    echo "The figures behind the goals, per tree size, are in [$(basename "$ts")]($(basename "$ts"))."
  done
  snapsync_md="$(dirname "$out")/RESULTS-snapsync.md"
  if [ -f "$snapsync_md" ]; then
    echo
    echo "### $(sed -n 's/^# //p' "$snapsync_md" | head -1)"
    sed '1,2d' "$snapsync_md"
  fi
  echo
  echo "Also: ZooKeeper's settings tried before this run chose its configuration,"
  echo "[RESULTS-zktuning.md](RESULTS-zktuning.md); zkd's profiles under set, get and watch fan-out,"
  echo "[RESULTS-profile.md](RESULTS-profile.md); the whole curve, [plots/](plots/README.md); zkbench's client"
  echo "cross-checked against go-zookeeper's (bench/crosscheck.sh), [RESULTS-crosscheck.md](RESULTS-crosscheck.md)."
  # The curves (bench/curves.sh, run on their own: how each was made is in plots/README.md).
  plots=$(dirname "$out")/plots
  if ls "$plots"/*.svg > /dev/null 2>&1; then
    echo
    echo "### The whole curve"
    echo
    echo "zkd and ZooKeeper on the same axes, throughput, p99 and server CPU per op against one"
    echo "parameter at a time (bench/curves.sh; commands, dates and commits in [plots/README.md](plots/README.md))."
    for sweep in sessions outstanding size znodes mix servers; do
      [ -f "$plots/$sweep.svg" ] || continue
      echo
      echo "![$sweep](plots/$sweep.svg)"
    done
  fi
} > "$out"
log "wrote $out and $plot"
}

# The variables render() reads that a run sets, saved to $work/render.env.
render_vars="cmdline elapsed rev produced_at nproc cpu mem kernel disk fsync_line goversion javaversion
  zkversion tick cfg_extra zk_text jvmwarm warm dur retries znodes failover_runs failover_znodes
  storm_sessions idle_sessions bigtree heap_fresh heap_full etcd_md"

if [ -n "$render_from" ]; then
  [ -f "$render_from/render.env" ] || { echo "compare.sh: --render-from $render_from: no render.env (not a work directory compare.sh kept)" >&2; exit 2; }
  rmdir "$work"
  work=$render_from keep=1
  out_arg=$out
  # shellcheck disable=SC1091 # written by an earlier run
  . "$work/render.env"
  out=$out_arg etcd_md="${out%.md}-etcd.md"
  cd "$repo"
  bench_build
  render
  exit 0
fi

cd "$repo"
# The revision measured is the one built, whatever is committed while the run goes on.
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- . ':!bench/RESULTS*' 2>/dev/null || rev="$rev (with uncommitted changes)"
bench_build

started=$(date +%s)
fsync_line=$(zkbench fsync --dir "$work" --count 200 | sed "s# in $work##")
run_server zkd
run_server zookeeper
if [ $ensemble = 1 ]; then
  run_ensemble_load zkd
  run_ensemble_load zookeeper
fi
if [ $failover = 1 ]; then
  # --quick: the empty ensembles only, and zkd with its fast election only (under 3 minutes).
  sizes="0 $failover_znodes" kinds="zookeeper zkd-fast zkd"
  [ $quick = 0 ] || sizes=0 kinds="zookeeper zkd-fast"
  for size in $sizes; do
    runs=$failover_runs; [ "$size" = 0 ] || runs=$failover_big_runs
    for kind in $kinds; do
      case $kind in zkd*) label=zkd ;; *) label=$kind ;; esac
      run_failovers "$kind" "$label" "$size" "$runs"
    done
  done
fi
etcd_md="${out%.md}-etcd.md"
if [ $etcd = 1 ] && [ $quick = 0 ] && command -v etcd > /dev/null; then
  log "etcd: bench/etcd.sh"
  bash "$repo/bench/etcd.sh" --out "$etcd_md" > /dev/null
fi
elapsed=$(( $(date +%s) - started ))
bigtree=""
[ "$max_znodes" -le "$znodes" ] || bigtree="; the same with $max_znodes znodes (\`-$(znodes_suffix "$max_znodes")\` rows, ZooKeeper with a 12 GiB heap)"
produced_at=$(date -u '+%Y-%m-%d %H:%M UTC')
nproc=$(nproc) kernel=$(uname -r) goversion=$(go env GOVERSION) zk_text=$(zk_settings_text)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)
disk=$(df -T "$work" | awk 'NR==2 {print $2 " on " $1}')
javaversion=$(java -version 2>&1 | head -1)
zkversion=$(dpkg-query -W -f '${Version}' zookeeper 2>/dev/null || echo "unknown version")
# What the report needs besides the JSON lines, kept with them for --render-from.
declare -p $render_vars > "$work/render.env"
# A kept work directory keeps the server logs, configurations and JSON lines, not the txn
# logs and snapshots: after a 10M-znode run they are tens of GB.
[ "$keep" = 0 ] || find "$work" -type d -name version-2 -prune -exec rm -rf {} +
render
