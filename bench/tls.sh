#!/usr/bin/env bash
# Compare zkd with Apache ZooKeeper 3.8 (Debian's package) over TLS on this machine.
#
#   bench/tls.sh [--quick] [--out FILE] [--keep]
#
# Makes one CA and one server certificate (openssl; PKCS12 key store, PKCS12 trust store made
# with keytool), writes the same zoo.cfg for both servers (secureClientPort, Netty for
# ZooKeeper, ssl.* with those stores, ssl.clientAuth=need, the x509 provider; fsync on), and
# runs zkbench's set, get and mixed over TLS with a client certificate (64 sessions x 32
# outstanding, 1 KiB values) against each in turn, then `zkbench compare`.
# Writes the comparison to bench/RESULTS-tls.md (or --out).
#
#   --quick  ~1 minute: 3 s runs (default 10 s runs, ~3 minutes)
#   --keep   keep the work directory (logs, zoo.cfg, certificates, raw JSON lines)
#
# Environment: JAVA_OPTS (default "-Xmx2g -XX:-UsePerfData"), TMPDIR (data directories).
set -euo pipefail

cmdline="bench/tls.sh${*:+ $*}"
quick=0 keep=0
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$repo/bench/RESULTS-tls.md"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    --out) out=$(realpath -m "$2"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "tls.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ $quick = 1 ]; then dur=3s warm=1s jvmwarm=5s; else dur=10s warm=2s jvmwarm=15s; fi
java_opts=${JAVA_OPTS:--Xmx2g -XX:-UsePerfData}
pw=changeit-tls

work=$(mktemp -d "${TMPDIR:-/tmp}/zkbench-tls.XXXXXX")
pids=()
log() { printf '%s tls: %s\n' "$(date +%T)" "$*" >&2; }
stop_pid() {
  local pid=$1 sig=${2:-TERM}
  {
    if kill -0 "$pid"; then
      kill -"$sig" "$pid" || true
      for _ in $(seq 1 300); do kill -0 "$pid" || break; sleep 0.1; done
      if kill -0 "$pid"; then kill -KILL "$pid" || true; fi
    fi
    wait "$pid" || true
  } 2>/dev/null
}
cleanup() {
  local rc=$?
  for pid in "${pids[@]+"${pids[@]}"}"; do stop_pid "$pid" TERM; done
  if [ $keep = 1 ] || [ $rc != 0 ]; then log "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
fourlw() { (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf '%s' "$2" >&3 && timeout 5 cat <&3) 2>/dev/null || true; }
wait_mode() {
  for _ in $(seq 1 1200); do
    if [ -n "$(fourlw "$1" srvr | sed -n 's/^Mode: //p')" ]; then return 0; fi
    kill -0 "$2" 2>/dev/null || { log "server pid $2 exited"; return 1; }
    sleep 0.1
  done
  return 1
}

log "building zkd and zkbench"
mkdir -p "$work/bin"
(cd "$repo" && go build -o "$work/bin/zkd" ./cmd/zkd && go build -o "$work/bin/zkbench" ./cmd/zkbench)

log "certificates"
pki=$work/pki
mkdir -p "$pki"
(
  cd "$pki"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench CA" \
    -keyout ca.key -out ca.pem 2>/dev/null
  for who in server client; do
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$who/O=zkbench" \
      -keyout "$who.key" -out "$who.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > "$who.ext"
    openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -extfile "$who.ext" -out "$who.pem" 2>/dev/null
  done
  openssl pkcs12 -export -in server.pem -inkey server.key -certfile ca.pem -name server \
    -passout "pass:$pw" -out server.p12
  keytool -importcert -noprompt -alias ca -file ca.pem -keystore trust.p12 -storetype PKCS12 \
    -storepass "$pw" > /dev/null 2>&1
)

run_server() {
  local kind=$1 dir="$work/$1" port secure
  port=$(free_port) secure=$(free_port)
  mkdir -p "$dir/data"
  { echo "tickTime=2000"; echo "dataDir=$dir/data"; echo "clientPort=$port"; echo "clientPortAddress=127.0.0.1"
    echo "secureClientPort=$secure"; echo "secureClientPortAddress=127.0.0.1"
    echo "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory"
    echo "ssl.keyStore.location=$pki/server.p12"; echo "ssl.keyStore.password=$pw"
    echo "ssl.trustStore.location=$pki/trust.p12"; echo "ssl.trustStore.password=$pw"
    echo "ssl.clientAuth=need"
    echo "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider"
    echo "maxClientCnxns=0"; echo "forceSync=yes"; echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=srvr"; } > "$dir/zoo.cfg"
  printf '%s\n' 'log4j.rootLogger=WARN, CONSOLE' 'log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender' \
    'log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout' \
    'log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n' > "$dir/log4j.properties"
  case $kind in
    zkd) "$work/bin/zkd" --config "$dir/zoo.cfg" --log-level warn >> "$dir/server.log" 2>&1 & ;;
    # shellcheck disable=SC2086
    zookeeper) java $java_opts -cp "$dir:$(ls /usr/share/java/*.jar | tr '\n' ':')" \
      org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" >> "$dir/server.log" 2>&1 & ;;
  esac
  local pid=$!
  pids+=("$pid")
  wait_mode "$port" "$pid" || { tail -20 "$dir/server.log" >&2; return 1; }
  log "$kind: serving TLS on $secure, pid $pid"
  local common=(--servers "127.0.0.1:$secure" --server-pid "$pid" --label "$kind" --json "$work/$kind.jsonl"
    --tls-ca "$pki/ca.pem" --tls-cert "$pki/client.pem" --tls-key "$pki/client.key"
    --duration "$dur" --warmup "$warm" --progress 0)
  "$work/bin/zkbench" run "${common[@]}" --json "" --duration "$jvmwarm" --warmup 0s mixed > /dev/null
  "$work/bin/zkbench" run "${common[@]}" --clients 64 --outstanding 32 --data-size 1024 set get mixed
  stop_pid "$pid" TERM
}

run_server zkd
run_server zookeeper
{
  echo "# zkd vs Apache ZooKeeper 3.8 over TLS"
  echo
  echo "\`$cmdline\` on $(nproc) CPUs, $(date -u +%F). Same certificates (EC P-256, PKCS12 stores),"
  echo "ssl.clientAuth=need, TLS 1.3, fsync on; zkbench over TLS with a client certificate."
  echo
  "$work/bin/zkbench" compare --a "$work/zkd.jsonl" --b "$work/zookeeper.jsonl"
} > "$out"
log "wrote $out"
cat "$out"
