#!/usr/bin/env bash
# What the operations endpoints cost client traffic: zkd plain against zkd with the
# Prometheus endpoint and the AdminServer on, /metrics and /commands/monitor each scraped
# every second. Rounds alternate the two so that drift on a shared machine hits both;
# compare medians, and look at other_cpu_pct in the JSON before trusting a small ratio.
#
#   bench/scrapecost.sh [ROUNDS] [DURATION]      (defaults 3, 8s)
#
# Writes bench/scrapecost.jsonl (zkbench's JSON lines, labelled plain / scraped) and prints
# the ratio of medians per workload.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
dur=${2:-8s}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/zkd" ./cmd/zkd
go build -o "$bin/zkbench" ./cmd/zkbench
out=bench/scrapecost.jsonl
: > "$out"
port=22300 mport=22301 aport=22302
for ((round = 1; round <= rounds; round++)); do
  for mode in plain scraped; do
    d=$(mktemp -d)
    cfg=$d/zoo.cfg
    printf 'tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n' "$d" $port > "$cfg"
    if [ $mode = scraped ]; then
      printf 'metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider\nmetricsProvider.httpHost=127.0.0.1\nmetricsProvider.httpPort=%d\nadmin.enableServer=true\nadmin.serverPort=%d\n' $mport $aport >> "$cfg"
    fi
    "$bin/zkd" --config "$cfg" --log-level warn > "$d/log" 2>&1 &
    zpid=$!
    "$bin/zkbench" wait --servers 127.0.0.1:$port > /dev/null
    spid=""
    if [ $mode = scraped ]; then
      (while true; do
        curl -s -o /dev/null http://127.0.0.1:$mport/metrics
        curl -s -o /dev/null http://127.0.0.1:$aport/commands/monitor
        sleep 1
      done) &
      spid=$!
    fi
    "$bin/zkbench" run --servers 127.0.0.1:$port --duration "$dur" --clients 32 --keys 1000 \
      --label $mode --json "$out" set get > /dev/null
    if [ -n "$spid" ]; then kill $spid; fi
    kill $zpid
    wait $zpid 2>/dev/null || true
    rm -rf "$d"
  done
done
python3 - "$out" <<'PY'
import collections, json, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    d[(r["label"], r["workload"])].append(r["ops_per_sec"])
for w in sorted({w for _, w in d}):
    p, s = d[("plain", w)], d[("scraped", w)]
    print(f"{w}: plain {[round(x) for x in p]} scraped {[round(x) for x in s]} "
          f"ratio of medians {statistics.median(s) / statistics.median(p):.3f}")
PY
