#!/usr/bin/env bash
# Issue 28's and 29's tree-size figures for zkd alone, on this machine:
#
#   bench/scale.sh [ZNODES] [PORT]      (defaults: 10000000, 24100)
#
# Builds zkd, zkbench and zkcli, starts zkd on a fresh data directory under $TMPDIR (fsync
# on, the paged-list extension on), fills ZNODES znodes under /zkm with zkbench's `znodes`
# workload (8 sessions x 8 outstanding, multis of 10, 16-byte paths, 10-byte data: the
# memory test of bench/compare.sh), prints RSS per znode, lists /zkm in pages of 10,000
# with `zkcli lsPaged` while sampling the server's RSS, times a clean stop, then restarts
# after the stop and after kill -9 until the last znode is readable (zkbench wait) and
# prints the RSS after each.
set -euo pipefail
n=${1:-10000000}
port=${2:-24100}
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$(mktemp -d)
d=$(mktemp -d)
trap 'rm -rf "$bin" "$d"' EXIT
(cd "$top" && go build -o "$bin/" ./cmd/zkd ./cmd/zkbench ./cmd/zkcli)
printf 'tickTime=2000\ndataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\nzkd.extensions=paged-list\n' \
  "$d" "$port" > "$d/zoo.cfg"
rss() { awk '/VmRSS/{printf "%.0f\n", $2*1024}' "/proc/$1/status"; }
start() { "$bin/zkd" --config "$d/zoo.cfg" --log-level info >> "$d/log" 2>&1 & pid=$!; }
field() { tail -1 "$1" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d[sys.argv[1]])" "$2"; }

start
sleep 1
"$bin/zkbench" run --servers "127.0.0.1:$port" --server-pid "$pid" --label zkd --json "$d/fill.json" \
  --progress 60s --clients 8 --outstanding 8 --multi-size 10 --znodes "$n" --as znodes znodes > /dev/null
echo "fill: $n znodes in $(field "$d/fill.json" seconds) s, $(field "$d/fill.json" bytes_per_znode) bytes of RSS per znode"
grep '"snapshot written"\|snapshot written' "$d/log" | tail -3 || true

before=$(rss "$pid"); max=$before
( "$bin/zkcli" -server "127.0.0.1:$port" lsPaged -n 10000 /zkm > "$d/list.out" 2> "$d/list.err"; touch "$d/list.done" ) &
t0=$(date +%s%N)
while [ ! -f "$d/list.done" ]; do r=$(rss "$pid"); [ "$r" -gt "$max" ] && max=$r; sleep 0.2; done
t1=$(date +%s%N)
echo "list: $(tail -1 "$d/list.err") in $(( (t1 - t0) / 1000000 )) ms; RSS $before before, $max at most during: +$(python3 -c "print(round(100*($max-$before)/$before, 2))")%"

t0=$(date +%s%N); kill -TERM "$pid"; wait "$pid" || true; t1=$(date +%s%N)
echo "clean stop: $(( (t1 - t0) / 1000000 )) ms"
last=$(printf '/zkm/n%010d' $((n - 1)))
for how in clean kill9; do
  sync
  t0=$(date +%s%N)
  start
  "$bin/zkbench" wait --servers "127.0.0.1:$port" --since "$t0" --path "$last" --timeout 20m \
    --name "recovery-$how" --label zkd --json "$d/wait.json" > /dev/null
  echo "restart after $how stop: $(field "$d/wait.json" elapsed_s) s, RSS after $(( $(rss "$pid") / 1000000 )) MB"
  if [ "$how" = clean ]; then kill -9 "$pid"; else kill -TERM "$pid"; fi
  wait "$pid" 2> /dev/null || true
done
