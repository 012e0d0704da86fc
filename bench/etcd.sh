#!/usr/bin/env bash
# zkd against etcd 3.4 (Debian's etcd-server) for writes with fsync on, on this machine.
#
#   bench/etcd.sh [--quick] [--out FILE] [--keep]
#
# Builds zkd, zkbench and bench/etcdbench (a module of its own: etcd's client), then runs,
# alternating, zkd, etcd, zkd, etcd (2 rounds, each server started on a fresh data directory
# under $TMPDIR, both on loopback): 1 KB writes at 64 clients x 32 outstanding, then at
# 1 x 1 (single-client latency). zkd gets bench/lib-bench.sh's zoo.cfg (forceSync=yes);
# etcd its defaults for durability (its WAL is always fsynced; no --unsafe-no-fsync;
# snapshot count default) with a backend quota large enough for the run. zkd's writes are
# zkbench's set (setData), etcd's are etcdbench's puts; both on 10,000 keys.
# Writes `zkbench compare` of each shape, and every round's figures, to
# bench/RESULTS-etcd.md (or --out).
#
#   --quick  2 s runs, 1 round (default: 10 s runs, 2 rounds, ~3 minutes)
#   --out F  markdown output (default bench/RESULTS-etcd.md)
#   --keep   keep the work directory (server logs, configurations, raw JSON lines)
#
# Environment: TMPDIR (where both data directories go: the disk measured), ETCD (the etcd
# binary, default etcd from PATH).
set -euo pipefail

cmdline="bench/etcd.sh${*:+ $*}"
quick=0 keep=0
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$repo/bench/RESULTS-etcd.md"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    --out) out=$(realpath -m "$2"); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "etcd.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ $quick = 1 ]; then dur=2s warm=1s rounds=1; else dur=10s warm=2s rounds=2; fi
tick=2000
keys=10000
# 8 GiB, etcd's largest recommended quota: without compaction every put keeps its revision,
# and the default 2 GiB could fill up (a run of NOSPACE errors measures nothing).
quota=$((8 << 30))
etcd_bin=${ETCD:-etcd}
command -v "$etcd_bin" > /dev/null || { echo "etcd.sh: $etcd_bin not found (apt-get install etcd-server)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/zkbench-etcd.XXXXXX")
bench_name=etcd
# shellcheck source=bench/lib-bench.sh
. "$repo/bench/lib-bench.sh"

log "building zkd, zkbench and etcdbench"
mkdir -p "$work/bin"
(cd "$repo" && go build -o "$work/bin/zkd" ./cmd/zkd && go build -o "$work/bin/zkbench" ./cmd/zkbench)
(cd "$repo/bench/etcdbench" && go build -o "$work/bin/etcdbench" .)

# shapes: clients x outstanding; each gets its own pair of result files, since
# `zkbench compare` keeps one result per workload and both shapes are "set".
shapes=(64x32 1x1)

# start_etcd DIR: etcd on loopback ports, data in DIR/data; sets $server_pid and $etcd_ep.
# Retried on other ports if it exits at once (someone took a port first).
etcd_args=()
start_etcd() {
  local dir=$1 try cport pport
  for try in 1 2 3; do
    cport=$(free_port) pport=$(free_port)
    rm -rf "$dir"; mkdir -p "$dir"
    etcd_args=(--name bench --data-dir "$dir/data"
      --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport"
      --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport"
      --initial-cluster "bench=http://127.0.0.1:$pport" --initial-cluster-state new
      --quota-backend-bytes "$quota" --logger zap --log-outputs stderr --log-level warn)
    sync # the last server's dirty pages are not this one's fsyncs to flush
    "$etcd_bin" "${etcd_args[@]}" >> "$dir/server.log" 2>&1 &
    server_pid=$!
    pids+=("$server_pid")
    etcd_ep="127.0.0.1:$cport"
    for _ in $(seq 1 600); do
      if ETCDCTL_API=3 timeout 5 etcdctl --endpoints "$etcd_ep" endpoint health > /dev/null 2>&1; then return 0; fi
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.1
    done
    log "etcd on $etcd_ep did not start: $(tail -1 "$dir/server.log" 2>/dev/null)"
    stop_pid "$server_pid" KILL
  done
  return 1
}

run_zkd() {
  local r=$1 s
  start_fresh zkd "$work/r$r/zkd"
  log "round $r: zkd on port $port ($mode), pid $server_pid"
  for s in "${shapes[@]}"; do
    zkbench run --servers "127.0.0.1:$port" --server-pid "$server_pid" --label zkd \
      --json "$work/zkd-$s.jsonl" --duration "$dur" --warmup "$warm" --progress 0 \
      --clients "${s%x*}" --outstanding "${s#*x}" --data-size 1024 --keys "$keys" set
  done
  stop_pid "$server_pid" TERM
}

run_etcd() {
  local r=$1 s
  start_etcd "$work/r$r/etcd"
  log "round $r: etcd on $etcd_ep, pid $server_pid"
  for s in "${shapes[@]}"; do
    "$work/bin/etcdbench" --endpoints "$etcd_ep" --server-pid "$server_pid" --label etcd \
      --json "$work/etcd-$s.jsonl" --duration "$dur" --warmup "$warm" \
      --clients "${s%x*}" --outstanding "${s#*x}" --data-size 1024 --keys "$keys"
  done
  stop_pid "$server_pid" TERM
}

for r in $(seq 1 "$rounds"); do
  run_zkd "$r"
  run_etcd "$r"
done

# best FILE: the round with the highest throughput, each server at its best.
best() { jq -sc 'max_by(.ops_per_sec)' "$1"; }

# rounds_table: every round's figures, to see how far apart they were.
rounds_table() {
  echo "| shape | server | round | ops/s | p50 (ms) | p99 (ms) | server CPU per op (µs) | errors | other processes' CPU (%) |"
  echo "|---|---|---|---|---|---|---|---|---|"
  local s k
  for s in "${shapes[@]}"; do
    for k in zkd etcd; do
      jq -r --arg s "$s" --arg k "$k" '[$s, $k, input_line_number, .ops_per_sec,
          (.latency_us.p50 / 1000 * 100 | round / 100), (.latency_us.p99 / 1000 * 100 | round / 100),
          (.server_cpu_us_per_op // 0), .errors, (.other_cpu_pct // 0)] | "| " + (map(tostring) | join(" | ")) + " |"' \
        "$work/$k-$s.jsonl"
    done
  done
}

etcd_version=$("$etcd_bin" --version | sed -n 's/^etcd Version: //p')
client_version=$(sed -n 's/^[[:space:]]*go.etcd.io\/etcd\/client\/v3 //p' "$repo/bench/etcdbench/go.mod")
fs=$(df -PT "$work" | awk 'NR == 2 { print $2 " on " $1 }')
{
  echo "# zkd vs etcd: writes with fsync on"
  echo
  echo "\`$cmdline\` on $(date -u +%F), $(nproc) × $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1),"
  echo "kernel $(uname -r); data directories of both on $fs (\$TMPDIR)."
  echo
  echo "- zkd: commit $(git -C "$repo" rev-parse --short HEAD), $(go version | cut -d' ' -f3); zoo.cfg: tickTime=$tick,"
  echo "  forceSync=yes, maxClientCnxns=0 (bench/lib-bench.sh's write_cfg). Load: zkbench \`set\` (setData)."
  echo "- etcd $etcd_version (Debian's etcd-server), started as \`etcd ${etcd_args[*]//$work/\$WORK}\`:"
  echo "  its defaults for durability (the WAL is fsynced on every commit; no --unsafe-no-fsync;"
  echo "  --snapshot-count default), a $((quota >> 30)) GiB backend quota so that a run cannot fill it."
  echo "  Load: bench/etcdbench (etcd client $client_version), one gRPC connection per client, puts."
  echo "- Both: 1 KB values on $keys keys, $dur measured after a $warm warm-up, $rounds round(s)"
  echo "  alternating zkd, etcd, each on a fresh data directory; shapes ${shapes[*]} (clients ×"
  echo "  outstanding requests per client). The tables below show each server's best round (highest"
  echo "  ops/s); every round is in the last table. For etcd, the \"zkbench CPU\" rows are etcdbench's"
  echo "  own (etcd's Go gRPC client costs far more per request than zkbench's, and shares the same"
  echo "  CPUs). Machine figures are sampled from /proc/stat by both benchmarks alike."
  for s in "${shapes[@]}"; do
    best "$work/zkd-$s.jsonl" > "$work/zkd-$s.best.jsonl"
    best "$work/etcd-$s.jsonl" > "$work/etcd-$s.best.jsonl"
    echo
    echo "## Writes at ${s%x*} × ${s#*x}"
    echo
    zkbench compare --goals=false --a "$work/zkd-$s.best.jsonl" --b "$work/etcd-$s.best.jsonl" --a-name zkd --b-name etcd
  done
  echo
  echo "## Every round"
  echo
  rounds_table
} > "$out"
log "wrote $out"
cat "$out"
