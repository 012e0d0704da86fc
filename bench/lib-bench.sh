# Shared by bench/compare.sh and bench/curves.sh (sourced): starting zkd and Apache ZooKeeper
# 3.8 (Debian's package) on loopback with the same zoo.cfg, ZooKeeper's JVM and logging
# set-up (--zk-tuning, --zk-log), standalone servers and ensembles with observers, and
# stopping every process started by its PID.
#
# The caller sets: work (a directory), tick (tickTime), keep (1: keep $work on exit), and
# calls bench_build after cd to the repository. The caller may set cfg_extra (zoo.cfg lines
# for both servers) and zk_props (-D flags for ZooKeeper only) before starting servers.
# shellcheck shell=bash

pids=()
cfg_extra=()
zk_props=()
zk_tuning=default
zk_log=warn

log() { printf '%s %s: %s\n' "$(date +%T)" "${bench_name:-bench}" "$*" >&2; }

# stop_pid PID SIGNAL: signal one process we started and reap it.
stop_pid() {
  local pid=$1 sig=${2:-TERM}
  { # bash reports a job killed by a signal wherever it reaps it: keep that off the log
    if kill -0 "$pid"; then
      kill -"$sig" "$pid" || true
      for _ in $(seq 1 1200); do kill -0 "$pid" || break; sleep 0.1; done # a clean stop of a big tree writes a snapshot
      if kill -0 "$pid"; then kill -KILL "$pid" || true; fi
    fi
    wait "$pid" || true
  } 2>/dev/null
  local keep_pids=()
  for p in "${pids[@]}"; do [ "$p" = "$pid" ] || keep_pids+=("$p"); done
  pids=("${keep_pids[@]+"${keep_pids[@]}"}")
}

bench_cleanup() {
  local rc=$?
  for pid in "${pids[@]+"${pids[@]}"}"; do stop_pid "$pid" TERM; done
  if [ "${keep:-0}" = 1 ] || [ $rc != 0 ]; then
    log "work directory kept: $work"
  else
    rm -rf "$work"
  fi
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# bench_build: zkd and zkbench into $work/bin; checks that ZooKeeper is installed.
bench_build() {
  log "building zkd and zkbench"
  mkdir -p "$work/bin"
  go build -o "$work/bin/zkd" ./cmd/zkd
  go build -o "$work/bin/zkbench" ./cmd/zkbench
  command -v java > /dev/null || { echo "${bench_name:-bench}: java not found (apt-get install zookeeper)" >&2; exit 1; }
  [ -n "${ZKD_REFZK_CLASSPATH:-}" ] || [ -f /usr/share/java/zookeeper.jar ] ||
    { echo "${bench_name:-bench}: /usr/share/java/zookeeper.jar not found (apt-get install zookeeper)" >&2; exit 1; }
}

zkbench() { "$work/bin/zkbench" "$@"; }

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

# zk_set_tuning NAME: ZooKeeper's JVM flags. default is what compare.sh used before (the JVM
# picks its collector: G1 on a machine with 2 CPUs and 2 GiB); g1 and parallel are what an
# operator would run: a fixed heap (-Xms = -Xmx, no resizing), touched at start-up
# (AlwaysPreTouch: no page faults under load) and the collector named. JAVA_OPTS, when set,
# replaces the flags of any setting.
zk_set_tuning() {
  case $1 in
    default|g1|parallel) zk_tuning=$1 ;;
    *) echo "${bench_name:-bench}: --zk-tuning $1: want default, g1 or parallel" >&2; exit 2 ;;
  esac
}

# zk_java_opts HEAP: the JVM flags of the tuning, with HEAP (2g for one server, less for the
# servers of an ensemble).
zk_java_opts() {
  local heap=$1
  if [ -n "${JAVA_OPTS:-}" ]; then echo "$JAVA_OPTS"; return; fi
  if [ "${zk_grow_heap:-0}" = 1 ]; then
    # A heap fixed and touched at start-up is all RSS from the first second: memory
    # figures would measure the -Xms, and a restart would include touching it.
    zk_grow_heap=0 zk_java_opts "$heap" | sed 's/-Xms[^ ]* //; s/ -XX:+AlwaysPreTouch//'
    return
  fi
  case $zk_tuning in
    default) echo "-Xmx$heap -XX:-UsePerfData" ;;
    g1) echo "-Xms$heap -Xmx$heap -XX:+AlwaysPreTouch -XX:+UseG1GC -XX:MaxGCPauseMillis=50 -XX:+ParallelRefProcEnabled -XX:-UsePerfData" ;;
    parallel) echo "-Xms$heap -Xmx$heap -XX:+AlwaysPreTouch -XX:+UseParallelGC -XX:-UsePerfData" ;;
  esac
}

# zk_set_log LEVEL: warn (log4j 1.2, console, WARN: what compare.sh used), info (log4j at
# INFO, as Debian's packaged /etc/zookeeper/conf does: it logs each session's start and end,
# not each request), none (slf4j-nop instead of log4j: nothing is formatted at all).
zk_set_log() {
  case $1 in
    warn|info|none) zk_log=$1 ;;
    *) echo "${bench_name:-bench}: --zk-log $1: want warn, info or none" >&2; exit 2 ;;
  esac
}

# zk_classpath DIR: DIR first (its log4j.properties), then Debian's jars; zookeeper.jar's
# manifest names the rest (netty, jetty, jackson ...) but not netty-codec, without which
# the Netty connection factory (zookeeper.serverCnxnFactory) fails on the first request.
zk_classpath() {
  if [ -n "${ZKD_REFZK_CLASSPATH:-}" ]; then echo "$1:$ZKD_REFZK_CLASSPATH"; return; fi
  local cp=$1 j jars=(zookeeper.jar zookeeper-jute.jar slf4j-api.jar)
  if [ "$zk_log" = none ]; then jars+=(slf4j-nop.jar); else jars+=(slf4j-log4j12.jar log4j-1.2.jar); fi
  [ ! -f /usr/share/java/netty-codec.jar ] || jars+=(netty-codec.jar)
  for j in "${jars[@]}"; do cp="$cp:/usr/share/java/$j"; done
  echo "$cp"
}

# zk_settings_text: one line saying how ZooKeeper was run, for a results file.
zk_settings_text() {
  local props=""
  [ ${#zk_props[@]} -eq 0 ] || props=" ${zk_props[*]}"
  printf '`java %s%s` (--zk-tuning %s), logging: %s' "$(zk_java_opts 2g)" "$props" "$zk_tuning" "$zk_log"
}

# write_cfg DIR PORT [extra lines...]: the zoo.cfg both servers read, with $cfg_extra.
write_cfg() {
  local dir=$1 port=$2 level=WARN; shift 2
  mkdir -p "$dir/data"
  { echo "tickTime=$tick"; echo "initLimit=10"; echo "syncLimit=5"
    echo "dataDir=$dir/data"; echo "clientPort=$port"; echo "clientPortAddress=127.0.0.1"
    echo "maxClientCnxns=0"; echo "forceSync=yes"; echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=srvr,mntr,ruok"
    printf '%s\n' "${cfg_extra[@]+"${cfg_extra[@]}"}" "$@"; } > "$dir/zoo.cfg"
  # ZooKeeper's log4j finds this on its class path (the directory comes first).
  [ "$zk_log" = info ] && level=INFO
  printf '%s\n' "log4j.rootLogger=$level, CONSOLE" \
    'log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender' \
    'log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout' \
    'log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n' \
    > "$dir/log4j.properties"
}

# start KIND DIR [HEAP]: start a server on DIR/zoo.cfg; sets $server_pid.
start() {
  local kind=$1 dir=$2 heap=${3:-2g}
  sync # the last server's dirty pages are not this one's fsync's to flush
  case $kind in
    zkd) "$work/bin/zkd" --config "$dir/zoo.cfg" --log-level warn >> "$dir/server.log" 2>&1 & ;;
    # shellcheck disable=SC2046 # the JVM flags are a list
    zookeeper) java $(zk_java_opts "$heap") "${zk_props[@]+"${zk_props[@]}"}" -cp "$(zk_classpath "$dir")" \
      org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" >> "$dir/server.log" 2>&1 & ;;
    *) echo "start: unknown server kind $kind" >&2; return 1 ;;
  esac
  server_pid=$!
  pids+=("$server_pid")
}

# start_fresh KIND DIR [HEAP]: a server with a new zoo.cfg on a free port, retried on another port if
# it exits at once (someone took the port first); sets $server_pid, $port and $mode.
start_fresh() {
  local kind=$1 dir=$2 heap=${3:-2g} try
  for try in 1 2 3; do
    port=$(free_port)
    rm -rf "$dir"; write_cfg "$dir" "$port"
    start "$kind" "$dir" "$heap"
    if mode=$(wait_mode "$port" "$server_pid"); then return 0; fi
    stop_pid "$server_pid" KILL
  done
  return 1
}

# start_ensemble KIND DIR VOTERS OBSERVERS [HEAP]: an ensemble on loopback under DIR; sets
# ens_pids, ens_ports (client ports, voters first) and ens_servers (host:port,...). Returns 1,
# with everything stopped, when a server does not come up (most likely a port someone took
# between free_port and the bind).
start_ensemble() {
  local kind=$1 dir=$2 voters=$3 observers=$4 heap=${5:-512m} n i lines=() d role
  n=$((voters + observers))
  ens_pids=() ens_ports=()
  for i in $(seq 1 "$n"); do
    ens_ports+=("$(free_port)")
    role=participant; [ "$i" -le "$voters" ] || role=observer
    lines+=("server.$i=127.0.0.1:$(free_port):$(free_port):$role")
  done
  for i in $(seq 1 "$n"); do
    d="$dir/s$i"; rm -rf "$d"
    if [ "$i" -le "$voters" ]; then
      write_cfg "$d" "${ens_ports[$((i - 1))]}" "${lines[@]}"
    else
      write_cfg "$d" "${ens_ports[$((i - 1))]}" "${lines[@]}" "peerType=observer"
    fi
    echo "$i" > "$d/data/myid"
  done
  for i in $(seq 1 "$n"); do
    start "$kind" "$dir/s$i" "$heap"
    ens_pids+=("$server_pid")
  done
  for i in $(seq 1 "$n"); do
    if ! wait_mode "${ens_ports[$((i - 1))]}" "${ens_pids[$((i - 1))]}" > /dev/null; then
      log "$kind: server.$i of the ensemble did not start ($(tail -1 "$dir/s$i/server.log" 2>/dev/null))"
      stop_ensemble
      return 1
    fi
  done
  ens_servers=$(printf '127.0.0.1:%s,' "${ens_ports[@]}"); ens_servers=${ens_servers%,}
}

stop_ensemble() {
  local p
  for p in "${ens_pids[@]+"${ens_pids[@]}"}"; do stop_pid "$p" TERM; done
  ens_pids=()
}

# render_template FILE NAME=VALUE...: FILE with each {{NAME}} replaced by VALUE.
render_template() {
  local text kv
  text=$(cat "$1"); shift
  for kv in "$@"; do
    text=${text//"{{${kv%%=*}}}"/"${kv#*=}"}
  done
  if [[ $text =~ \{\{[A-Za-z_]+\}\} ]]; then
    echo "render_template: ${BASH_REMATCH[0]} has no value" >&2; return 1
  fi
  printf '%s\n' "$text"
}
