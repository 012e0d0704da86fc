#!/usr/bin/env bash
# 3-server ensembles side by side: zkd and Apache ZooKeeper 3.8 (Debian's package), each on
# loopback with fsync on. Measures write throughput (setData, 1 KB) through all three
# servers, then kills the leader with SIGKILL and times until a write commits again.
#   bench/ensemble.sh [--duration 5s] [--clients 24]
# Every process is stopped by its PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
duration=5s clients=24 outstanding=16
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift ;;
    --clients) clients=$2; shift ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
work=$(mktemp -d /tmp/zkd-ensemble.XXXXXX)
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

# start KIND: writes configs and starts three servers; sets ports[1..3] and spid[1..3]
start() {
  kind=$1; base=$((base + 400))
  lines=""
  for i in 1 2 3; do lines+="server.$i=127.0.0.1:$((base+100+i)):$((base+200+i))"$'\n'; done
  for i in 1 2 3; do
    d="$work/$kind/s$i"; mkdir -p "$d"; echo "$i" > "$d/myid"; ports[$i]=$((base+i))
    printf 'tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n4lw.commands.whitelist=*\nadmin.enableServer=false\nforceSync=yes\n%s' "$d" "${ports[$i]}" "$lines" > "$d/zoo.cfg"
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
  kind=$1
  start "$kind"
  all="127.0.0.1:${ports[1]},127.0.0.1:${ports[2]},127.0.0.1:${ports[3]}"
  "$work/bin/zkbench" run --servers "$all" --clients "$clients" --outstanding "$outstanding" --data-size 1024 --duration 3s set > /dev/null 2>&1   # warm-up
  "$work/bin/zkbench" run --servers "$all" --clients "$clients" --outstanding "$outstanding" --data-size 1024 --duration "$duration" --label "$kind" --json "$work/$kind.json" set > "$work/$kind.txt" 2>&1
  leader=0; for i in 1 2 3; do [ "$(mode "${ports[$i]}")" = leader ] && leader=$i; done
  survivors=""; for i in 1 2 3; do [ "$i" != "$leader" ] && survivors+="127.0.0.1:${ports[$i]},"; done
  "$work/bin/zkbench" wait --servers "127.0.0.1:${ports[$leader]}" --op write > /dev/null
  since=$(date +%s%N)
  kill -9 "${spid[$leader]}"
  "$work/bin/zkbench" wait --servers "${survivors%,}" --op write --since "$since" --label "$kind" --name failover --json "$work/$kind.json" > "$work/$kind-failover.txt" 2>&1
  for i in 1 2 3; do kill -9 "${spid[$i]}" 2>/dev/null || true; done
}

run zkd
run zookeeper
echo "3-server ensembles, fsync on, tickTime 2000, $clients sessions x $outstanding outstanding, 1 KB setData for $duration, spread over the three servers:"
"$work/bin/zkbench" compare --a "$work/zkd.json" --b "$work/zookeeper.json"
