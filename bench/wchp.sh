#!/usr/bin/env bash
# Four-letter words under load: zkd against Apache ZooKeeper 3.8 (Debian's package), the
# reported case. 20 kazoo sessions hold 100k data watches; flood workers loop four-letter
# words for 20 s while one kazoo client (10 s session timeout) does set+get every 20 ms.
#
#   bench/wchp.sh [--duration S] [--watches N] [--only zkd|zookeeper] [--keep]
#
# Two runs per server (one fresh server each, run after the other's has stopped): 4 workers
# looping wchp, then 8 workers looping dump, wchp, wchc, cons, mntr, stat. Each prints one JSON line from bench/wchp.py:
# worst/p99/p50 set+get latency (s), failed set+get pairs by error, answers per command.
# Before them a 5 s flood warms the JVM (and zkd alike); sessions of a run close after it.
#
# Environment: JAVA_OPTS (default "-Xmx2g -XX:-UsePerfData"), PYTHON (default
# /usr/bin/python3, which has Debian's python3-kazoo).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dur=20 watches=100000 only='' keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --duration) dur=$2; shift ;;
    --watches) watches=$2; shift ;;
    --only) only=$2; shift ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "wchp.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
py=${PYTHON:-/usr/bin/python3}
java_opts=${JAVA_OPTS:--Xmx2g -XX:-UsePerfData}
"$py" -c 'import kazoo' 2> /dev/null || { echo "wchp.sh: $py lacks kazoo (apt-get install python3-kazoo)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/zkd-wchp.XXXXXX")
server_pid=''
cleanup() {
  if [ -n "$server_pid" ]; then stop_server; fi
  if [ $keep = 1 ]; then echo "work directory kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
log() { printf '%s wchp: %s\n' "$(date +%T)" "$*" >&2; }

free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

stop_server() {
  { kill -TERM "$server_pid" || true
    for _ in $(seq 1 100); do kill -0 "$server_pid" || break; sleep 0.1; done
    if kill -0 "$server_pid"; then kill -KILL "$server_pid" || true; fi
    wait "$server_pid" || true
  } 2> /dev/null
  server_pid=''
}

# start KIND DIR PORT: a fresh server with the same zoo.cfg for both; sets $server_pid.
start() {
  local kind=$1 dir=$2 port=$3
  mkdir -p "$dir/data"
  { echo "tickTime=2000"; echo "initLimit=10"; echo "syncLimit=5"; echo "dataDir=$dir/data"
    echo "clientPort=$port"; echo "clientPortAddress=127.0.0.1"; echo "maxClientCnxns=0"
    echo "admin.enableServer=false"; echo "4lw.commands.whitelist=*"; } > "$dir/zoo.cfg"
  printf '%s\n' 'log4j.rootLogger=WARN, CONSOLE' 'log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender' \
    'log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout' \
    'log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n' > "$dir/log4j.properties"
  case $kind in
    zkd) "$work/bin/zkd" --config "$dir/zoo.cfg" --log-level warn > "$dir/server.log" 2>&1 & ;;
    # shellcheck disable=SC2086 # java_opts is a list of flags
    zookeeper) java $java_opts -cp "$dir:$(ls /usr/share/java/*.jar | tr '\n' ':')" \
      org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" > "$dir/server.log" 2>&1 & ;;
  esac
  server_pid=$!
  for _ in $(seq 1 300); do
    if "$py" -c "import socket,sys; s=socket.create_connection(('127.0.0.1',$port),2); s.sendall(b'srvr'); sys.exit(0 if b'Mode:' in s.recv(4096) else 1)" 2> /dev/null; then
      return 0
    fi
    sleep 0.1
  done
  echo "wchp.sh: $kind did not start; log:" >&2; cat "$dir/server.log" >&2; exit 1
}

log "building zkd"
(cd "$repo" && go build -o "$work/bin/zkd" ./cmd/zkd)
for kind in zkd zookeeper; do
  [ -z "$only" ] || [ "$only" = "$kind" ] || continue
  port=$(free_port)
  start "$kind" "$work/$kind" "$port"
  log "$kind: pid $server_pid, port $port: warm-up"
  "$py" "$repo/bench/wchp.py" --port "$port" --watches "$watches" --duration 5 --threads 4 --cmds wchp > /dev/null
  log "$kind: 4 x wchp"
  "$py" "$repo/bench/wchp.py" --port "$port" --watches "$watches" --duration "$dur" --threads 4 --cmds wchp --label "$kind"
  log "$kind: 8 x dump,wchp,wchc,cons,mntr,stat"
  "$py" "$repo/bench/wchp.py" --port "$port" --watches "$watches" --duration "$dur" --threads 8 \
    --cmds dump,wchp,wchc,cons,mntr,stat --label "$kind"
  stop_server
done
