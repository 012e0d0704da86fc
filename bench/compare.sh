#!/usr/bin/env bash
# Compare zkd with Apache ZooKeeper 3.8 (Debian's package) on this machine, in one run.
#
#   bench/compare.sh [--quick] [--out FILE] [--keep] [--no-failover]
#
# Builds zkd and zkbench, then for each server in turn: starts it on loopback with the same
# zoo.cfg (fsync on, tickTime 2000, maxClientCnxns 0, data under a temporary directory),
# warms it up, runs the workload matrix with zkbench (the same client for both), then on a
# fresh data directory creates the memory workload's znodes and times restarts (clean stop
# and kill -9) until the first read. Each also gets a 3-server ensemble whose leader is
# killed (kill -9) to time failover.
# Writes the comparison to bench/RESULTS.md (or --out) and a latency plot beside it.
#
#   --quick        ~2-3 minutes: shorter runs, 200k znodes (default: ~10 minutes, 1M znodes)
#   --out FILE     markdown output (default bench/RESULTS.md)
#   --keep         keep the work directory (server logs, zoo.cfg, raw JSON lines)
#   --no-failover  skip the ensembles
#
# Environment: JAVA_OPTS (default "-Xmx2g -XX:-UsePerfData"), ZKD_REFZK_CLASSPATH (class path
# of a ZooKeeper installed elsewhere), TMPDIR (where data directories go: the disk measured).
set -euo pipefail

cmdline="bench/compare.sh${*:+ $*}"
quick=0 keep=0 failover=1
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$repo/bench/RESULTS.md"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    --no-failover) failover=0 ;;
    --zkd-failover) ;; # the default now; kept for old command lines
    --out) out=$(realpath -m "$2"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

if [ $quick = 1 ]; then
  dur=3s warm=1s jvmwarm=5s znodes=200000 retries=2 failover_runs=3
else
  dur=10s warm=2s jvmwarm=15s znodes=1000000 retries=1 failover_runs=5
fi
tick=2000
java_opts=${JAVA_OPTS:--Xmx2g -XX:-UsePerfData}

work=$(mktemp -d "${TMPDIR:-/tmp}/zkbench-compare.XXXXXX")
pids=()
heap_fresh='' heap_full=''


log() { printf '%s compare: %s\n' "$(date +%T)" "$*" >&2; }

# stop_pid PID SIGNAL: signal one process we started and reap it.
stop_pid() {
  local pid=$1 sig=${2:-TERM}
  { # bash reports a job killed by a signal wherever it reaps it: keep that off the log
    if kill -0 "$pid"; then
      kill -"$sig" "$pid" || true
      for _ in $(seq 1 300); do kill -0 "$pid" || break; sleep 0.1; done
      if kill -0 "$pid"; then kill -KILL "$pid" || true; fi
    fi
    wait "$pid" || true
  } 2>/dev/null
  local keep_pids=()
  for p in "${pids[@]}"; do [ "$p" = "$pid" ] || keep_pids+=("$p"); done
  pids=("${keep_pids[@]+"${keep_pids[@]}"}")
}

cleanup() {
  local rc=$?
  for pid in "${pids[@]+"${pids[@]}"}"; do stop_pid "$pid" TERM; done
  if [ $keep = 1 ] || [ $rc != 0 ]; then
    log "work directory kept: $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { # a port nothing listens on, below the kernel's range for outgoing connections
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}

fourlw() { # fourlw PORT WORD: the answer, or nothing
  (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf '%s' "$2" >&3 && timeout 5 cat <&3) 2>/dev/null || true
}

wait_mode() { # wait_mode PORT PID: until srvr prints a Mode line; prints the mode
  local mode
  for _ in $(seq 1 1200); do
    mode=$(fourlw "$1" srvr | sed -n 's/^Mode: //p')
    if [ -n "$mode" ]; then echo "$mode"; return 0; fi
    if ! kill -0 "$2" 2>/dev/null; then log "server pid $2 for port $1 exited"; return 1; fi
    sleep 0.1
  done
  log "server on port $1 did not start"; return 1
}

# start_fresh KIND DIR: a server with a new zoo.cfg on a free port, retried on another port if
# it exits at once (someone took the port first); sets $server_pid and $port.
start_fresh() {
  local kind=$1 dir=$2 try
  for try in 1 2 3; do
    port=$(free_port)
    rm -rf "$dir"; write_cfg "$dir" "$port"
    start "$kind" "$dir"
    if mode=$(wait_mode "$port" "$server_pid"); then return 0; fi
    stop_pid "$server_pid" KILL
  done
  return 1
}

# write_cfg DIR PORT [extra lines...]: the zoo.cfg both servers read.
write_cfg() {
  local dir=$1 port=$2; shift 2
  mkdir -p "$dir/data"
  { echo "tickTime=$tick"; echo "initLimit=10"; echo "syncLimit=5"
    echo "dataDir=$dir/data"; echo "clientPort=$port"; echo "clientPortAddress=127.0.0.1"
    echo "maxClientCnxns=0"; echo "forceSync=yes"; echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=srvr,mntr,ruok"
    printf '%s\n' "$@"; } > "$dir/zoo.cfg"
  # ZooKeeper's log4j finds this on its class path (the directory comes first).
  printf '%s\n' 'log4j.rootLogger=WARN, CONSOLE' \
    'log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender' \
    'log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout' \
    'log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n' \
    > "$dir/log4j.properties"
}

zk_classpath() {
  if [ -n "${ZKD_REFZK_CLASSPATH:-}" ]; then echo "$1:$ZKD_REFZK_CLASSPATH"; return; fi
  local cp=$1 j
  for j in zookeeper.jar zookeeper-jute.jar slf4j-api.jar slf4j-log4j12.jar log4j-1.2.jar; do
    cp="$cp:/usr/share/java/$j"
  done
  echo "$cp"
}

# start KIND DIR: start a server on DIR/zoo.cfg; sets $server_pid.
start() {
  local kind=$1 dir=$2
  sync # the last server's dirty pages are not this one's fsync's to flush
  case $kind in
    zkd) "$work/bin/zkd" --config "$dir/zoo.cfg" --log-level warn >> "$dir/server.log" 2>&1 & ;;
    # shellcheck disable=SC2086 # java_opts is a list of flags
    zookeeper) java $java_opts -cp "$(zk_classpath "$dir")" \
      org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" >> "$dir/server.log" 2>&1 & ;;
  esac
  server_pid=$!
  pids+=("$server_pid")
}

zkbench() { "$work/bin/zkbench" "$@"; }

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
  local kind=$1 run=$2 json=$3 i ports=() dirs=() spids=() lines=() leader=-1 mode others=() saved=$java_opts
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
  java_opts="-Xmx512m -XX:-UsePerfData" # three JVMs on one machine; the data is tiny
  for i in 0 1 2; do
    start "$kind" "${dirs[$i]}"
    spids+=("$server_pid")
  done
  java_opts=$saved
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
log "building zkd and zkbench"
mkdir -p "$work/bin"
go build -o "$work/bin/zkd" ./cmd/zkd
go build -o "$work/bin/zkbench" ./cmd/zkbench
command -v java > /dev/null || { echo "compare.sh: java not found (apt-get install zookeeper)" >&2; exit 1; }
[ -n "${ZKD_REFZK_CLASSPATH:-}" ] || [ -f /usr/share/java/zookeeper.jar ] ||
  { echo "compare.sh: /usr/share/java/zookeeper.jar not found (apt-get install zookeeper)" >&2; exit 1; }

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
  echo "## Machine"
  echo
  echo "- CPU: $(nproc) × $cpu"
  echo "- memory: $mem; kernel $(uname -r)"
  echo "- disk: $(df -T "$work" | awk 'NR==2 {print $2 " on " $1}'); $fsync_line"
  echo "- Go: $(go env GOVERSION); Java: $(java -version 2>&1 | head -1); ZooKeeper: Debian package $zkversion"
  echo
  echo "## Settings"
  echo
  echo "- Both servers read the same zoo.cfg: tickTime=$tick, forceSync=yes (fsync on), maxClientCnxns=0,"
  echo "  snapCount and preAllocSize at their defaults; data on the disk above; loopback only."
  echo "- ZooKeeper: \`java $java_opts\` (JVM defaults otherwise), log4j at WARN; zkd: \`--log-level warn\`."
  echo "- Client: zkbench (its own pipelined client, the same for both), on the same machine: it"
  echo "  shares the $(nproc) cores with the server, so its CPU use is shown beside the server's."
  echo "- Each server first gets $jvmwarm of mixed load (JIT warm-up for ZooKeeper); each workload"
  echo "  then runs $warm unmeasured before $dur measured. Latency is from handing a request to the"
  echo "  connection to reading its reply (HDR histogram, µs resolution)."
  echo "- The machine is shared: a run during which other processes or virtual machines took more"
  echo "  than 10% of its CPU (/proc/stat, less the server, zkbench, interrupts and kernel threads)"
  echo "  is run again, up to $retries times, and the least disturbed run is kept."
  echo "- Server CPU per op: utime+stime from /proc/PID/stat over the measured window, divided by"
  echo "  the ops completed in it. RSS: VmRSS from /proc/PID/status."
  echo "- Memory per znode: RSS after creating $znodes znodes (16-byte paths, 10-byte data, in"
  echo "  multis of 10) minus RSS before, on a freshly started server, divided by $znodes. For"
  echo "  ZooKeeper it includes heap the JVM has touched but not returned (garbage, young"
  echo "  generation), so it is what the machine pays, not the live data size."
  echo "- Recovery: from starting the server on the data directory of the memory test to the first"
  echo "  successful getData, after a clean stop (SIGTERM) and after kill -9; for ZooKeeper it"
  echo "  includes JVM start-up. The page cache is flushed (sync) before each start, outside the"
  echo "  timed window. stop-clean is the SIGTERM until the process exits (0.1 s resolution): zkd"
  echo "  writes a snapshot there when the log since the last one is long, ZooKeeper does not."
  echo "- Failover: a 3-server ensemble of each on loopback (ZooKeeper with -Xmx512m), kill -9 of"
  echo "  the leader until a create through one of the other two succeeds; $failover_runs such runs,"
  echo "  the median is shown. Polls every 5 ms, each with a new session."
  echo "- Ratios are zkd / ZooKeeper: above 1 is better for throughput, below 1 for the rest."
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
