# Shared by bench/ensemble.sh and bench/localsess.sh (sourced, from the repository's root):
# builds zkd and zkbench into a work directory and starts 3-server loopback ensembles of zkd
# or Apache ZooKeeper 3.8 (Debian's package), fsync on, tickTime 2000. Every process started
# is killed by its PID on exit.
# shellcheck shell=bash

work=$(mktemp -d "/tmp/zkd-${bench_name:-bench}.XXXXXX")
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

# start_ensemble DIR KIND [zoo.cfg lines...]: writes configs under $work/DIR and starts three
# servers of KIND (zkd or zookeeper); sets ports[1..3] and spid[1..3] and waits until they serve.
start_ensemble() {
  local name=$1 kind=$2 i d n lines=""
  shift 2
  base=$((base + 400))
  for i in 1 2 3; do lines+="server.$i=127.0.0.1:$((base+100+i)):$((base+200+i))"$'\n'; done
  for i in 1 2 3; do
    d="$work/$name/s$i"; mkdir -p "$d"; echo "$i" > "$d/myid"; ports[$i]=$((base+i))
    { printf 'tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n4lw.commands.whitelist=*\nadmin.enableServer=false\nforceSync=yes\n' "$d" "${ports[$i]}"
      printf '%s\n' "$@"; printf '%s' "$lines"; } > "$d/zoo.cfg"
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
