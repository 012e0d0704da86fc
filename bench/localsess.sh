#!/usr/bin/env bash
# Connect storm against 3-server ensembles, with and without local sessions
# (localSessionsEnabled): zkd and Apache ZooKeeper 3.8 (Debian's package), each on loopback
# with fsync on. zkbench's connect workload runs --clients loops of connect + closeSession
# spread over the three servers; without local sessions each cycle is two quorum txns.
#   bench/localsess.sh [--duration 5s] [--clients 24] [--only zkd|zookeeper]
# Every process is stopped by its PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
duration=5s clients=24 only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift ;;
    --clients) clients=$2; shift ;;
    --only) only=$2; shift ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
work=$(mktemp -d /tmp/zkd-localsess.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/bin"; go build -o "$work/bin/zkd" ./cmd/zkd
go build -o "$work/bin/zkbench" ./cmd/zkbench
CP="$work/log:/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar"
mkdir -p "$work/log"
printf 'log4j.rootLogger=WARN, C\nlog4j.appender.C=org.apache.log4j.ConsoleAppender\nlog4j.appender.C.layout=org.apache.log4j.PatternLayout\n' > "$work/log/log4j.properties"

base=$((20000 + RANDOM % 20000))
srvr() { python3 - "$1" <<'PY' 2>/dev/null || true
import socket,sys
try:
    s=socket.create_connection(("127.0.0.1",int(sys.argv[1])),timeout=2); s.sendall(b"srvr"); out=b""
    while True:
        b=s.recv(4096)
        if not b: break
        out+=b
    print(out.decode())
except Exception: pass
PY
}
mode() { srvr "$1" | sed -n 's/^Mode: //p'; }

# start KIND LOCAL: writes configs and starts three servers; sets ports[1..3] and spid[1..3]
start() {
  kind=$1 local=$2; base=$((base + 400))
  lines=""
  for i in 1 2 3; do lines+="server.$i=127.0.0.1:$((base+100+i)):$((base+200+i))"$'\n'; done
  for i in 1 2 3; do
    d="$work/$kind-$local/s$i"; mkdir -p "$d"; echo "$i" > "$d/myid"; ports[$i]=$((base+i))
    printf 'tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n4lw.commands.whitelist=*\nadmin.enableServer=false\nforceSync=yes\nlocalSessionsEnabled=%s\n%s' "$d" "${ports[$i]}" "$local" "$lines" > "$d/zoo.cfg"
    if [ "$kind" = zkd ]; then
      "$work/bin/zkd" --config "$d/zoo.cfg" --log-level warn > "$d/out.log" 2>&1 &
    else
      java -Xmx1g -XX:-UsePerfData -cp "$CP" org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg" > "$d/out.log" 2>&1 &
    fi
    spid[$i]=$!; pids+=("$!")
  done
  for _ in $(seq 1 600); do
    n=0; for i in 1 2 3; do case "$(mode "${ports[$i]}")" in leader|follower) n=$((n+1)) ;; esac; done
    [ "$n" = 3 ] && return 0
    sleep 0.1
  done
  echo "$kind ensemble did not form" >&2; exit 1
}

run() {
  kind=$1 local=$2
  start "$kind" "$local"
  all="127.0.0.1:${ports[1]},127.0.0.1:${ports[2]},127.0.0.1:${ports[3]}"
  "$work/bin/zkbench" run --servers "$all" --clients "$clients" --duration 2s connect > /dev/null 2>&1 || { echo "warm-up failed:"; "$work/bin/zkbench" run --servers "$all" --clients 2 --duration 1s connect 2>&1 | tail -5; tail -20 "$work/$kind-$local/s1/out.log"; }   # warm-up
  "$work/bin/zkbench" run --servers "$all" --clients "$clients" --duration "$duration" --label "$kind local=$local" connect
  for i in 1 2 3; do kill -9 "${spid[$i]}" 2>/dev/null || true; done
}

for kind in zkd zookeeper; do
  [ -n "$only" ] && [ "$only" != "$kind" ] && continue
  run "$kind" false
  run "$kind" true
done
