#!/usr/bin/env bash
# Apache ZooKeeper alone under a sweep of its own settings, to find the configuration its
# operators would run before it is compared with zkd (issue 16).
#
#   bench/zktune.sh [--quick] [--out FILE] [--keep] [--rounds N] [--only NAME,...] [--warm jit]
#
# Each configuration gets a fresh standalone server started by bench/lib-bench.sh with the
# zoo.cfg compare.sh uses (fsync on, tickTime 2000), a JVM warm-up of mixed load (compare.sh's
# before 2026-11-25; since then compare.sh warms up as the jit rows do), then zkbench set and get at 64 sessions x 32 outstanding, 1 KB. Rounds run
# every configuration in turn (A B C ... A B C), so drift on a shared machine hits them all.
# Besides throughput and the server's CPU per op (zkbench, from /proc), each run records how
# much of that CPU the JIT compiler threads (C1/C2) took: CPU spent compiling is warm-up, not
# the server's cost per request, and compare.sh's 15 s warm-up is not always enough for it.
#
#   --quick          3 s runs, one round, five configurations (about 2 minutes)
#                    (default: 10 s runs, two rounds, every configuration: about 30 minutes)
#   --out FILE       markdown output (default bench/RESULTS-zktuning.md)
#   --keep           keep the work directory (server logs, zoo.cfg, raw JSON lines)
#   --rounds N       rounds (default 2; --quick 1)
#   --only A,B       only these configurations (names as in the table)
#   --warm jit       every configuration gets the jit warm-up (see configs below), so that
#                    compile CPU does not blur the settings' effects
#
# Environment: ZKD_REFZK_CLASSPATH, TMPDIR as for compare.sh. JAVA_OPTS is ignored: the
# JVM flags are what is being swept.
set -euo pipefail

cmdline="bench/zktune.sh${*:+ $*}"
quick=0 keep=0 rounds='' only='' warm_all=''
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$repo/bench/RESULTS-zktuning.md"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    --out) out=$(realpath -m "$2"); shift ;;
    --rounds) rounds=$2; shift ;;
    --only) only=$2; shift ;;
    --warm) warm_all=$2; shift
      [ "$warm_all" = jit ] || [ "$warm_all" = compare ] || { echo "zktune.sh: --warm: want jit or compare" >&2; exit 2; } ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "zktune.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
unset JAVA_OPTS

# The same durations as compare.sh's (--quick: compare.sh's quick warm-up, 3 s runs).
if [ $quick = 1 ]; then
  dur=3s warm=1s jvmwarm=4s rounds=${rounds:-1}
else
  dur=10s warm=2s jvmwarm=15s rounds=${rounds:-2}
fi
tick=2000

# The configurations: NAME|TUNING|LOG|WARM|SETTINGS. TUNING and LOG are lib-bench.sh's
# --zk-tuning and --zk-log; WARM is compare (the first pass's mixed warm-up) or jit (that, then
# as long again of set and of get: the JIT has compiled both paths before they are
# measured); SETTINGS are space-separated zoo.cfg lines (KEY=VALUE) and -D flags. Rows after
# the first three change one thing from parallel, the collector an operator would pick for
# throughput on 2 cores with a fixed heap.
configs=(
  "default|default|warn|compare|"
  "g1|g1|warn|compare|"
  "parallel|parallel|warn|compare|"
  "default-jitwarm|default|warn|jit|"
  "parallel-jitwarm|parallel|warn|jit|"
  "parallel-log-info|parallel|info|compare|"
  "parallel-log-none|parallel|none|compare|"
  "outstanding-10k|parallel|warn|compare|globalOutstandingLimit=10000"
  "outstanding-100k|parallel|warn|compare|globalOutstandingLimit=100000"
  "digest-off|parallel|warn|compare|-Dzookeeper.digest.enabled=false"
  "batch-10k|parallel|warn|compare|-Dzookeeper.maxBatchSize=10000"
  "commit-workers-4|parallel|warn|compare|-Dzookeeper.commitProcessor.numWorkerThreads=4"
  "nio-workers-0|parallel|warn|compare|-Dzookeeper.nio.numWorkerThreads=0"
  "nio-workers-8|parallel|warn|compare|-Dzookeeper.nio.numWorkerThreads=8"
  "netty|parallel|warn|compare|-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory"
  # Netty with the other two JVM set-ups: the best connection layer with each collector.
  "netty-g1|g1|warn|compare|-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory"
  "netty-default|default|warn|compare|-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory"
)
quick_configs=default,parallel,parallel-jitwarm,outstanding-100k,netty
[ $quick = 0 ] || [ -n "$only" ] || only=$quick_configs
if [ -n "$only" ]; then
  picked=()
  for name in ${only//,/ }; do
    found=0
    for c in "${configs[@]}"; do
      if [ "${c%%|*}" = "$name" ]; then picked+=("$c"); found=1; fi
    done
    [ $found = 1 ] || { echo "zktune.sh: --only: no configuration $name" >&2; exit 2; }
  done
  configs=("${picked[@]}")
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/zkbench-zktune.XXXXXX")
bench_name=zktune
# shellcheck source=bench/lib-bench.sh
. "$repo/bench/lib-bench.sh"
json="$work/zktune.jsonl"
: > "$json"

# cpu_ticks PID: "JIT TOTAL" clock ticks of the process's threads so far, JIT being the
# compiler threads (C1 CompilerThre, C2 CompilerThre: the comm field, which may hold spaces).
cpu_ticks() {
  cat /proc/"$1"/task/*/stat 2>/dev/null | sed -E 's/^[0-9]+ \((.*)\) [A-Z] (.*)$/\1|\2/' |
    awk -F'|' '{ split($2, f, " "); t = f[11] + f[12]; total += t; if ($1 ~ /^C[12] Compiler/) jit += t }
      END { printf "%d %d\n", jit, total }'
}

# io_counts PID PORT: "READS WRITES SWITCHES REQUESTS": the process's read and write system
# calls so far (/proc/PID/io: sockets, the log and all), its threads' voluntary context
# switches (a thread blocking to hand a request to another: futex waits and wake-ups), and
# the requests it has received (mntr's zk_packets_received). Counts per request do not
# depend on a quiet machine the way throughput does.
io_counts() {
  local r w
  r=$(awk '$1 == "syscr:" { print $2 }' /proc/"$1"/io)
  w=$(awk '$1 == "syscw:" { print $2 }' /proc/"$1"/io)
  printf '%s %s %s %s\n' "$r" "$w" \
    "$(cat /proc/"$1"/task/*/status 2>/dev/null | awk '$1 == "voluntary_ctxt_switches:" { s += $2 } END { print s + 0 }')" \
    "$(fourlw "$2" mntr | awk '$1 == "zk_packets_received" { print $2 }')"
}

# measure NAME ROUND WORKLOAD PORT PID: one zkbench run, its JSON line tagged with the
# configuration, the JIT's share of the server's CPU during it and the server's system
# calls and context switches per request.
measure() {
  local name=$1 round=$2 wl=$3 port=$4 pid=$5 before after io0 io1 line
  io0=$(io_counts "$pid" "$port")
  before=$(cpu_ticks "$pid")
  line=$(zkbench run --servers "127.0.0.1:$port" --server-pid "$pid" --label zookeeper \
    --param "config=$name" --param "round=$round" --duration "$dur" --warmup "$warm" \
    --progress 0 --clients 64 --outstanding 32 --data-size 1024 --json - "$wl")
  after=$(cpu_ticks "$pid")
  io1=$(io_counts "$pid" "$port")
  # shellcheck disable=SC2086 # lists of numbers
  set -- $before $after $io0 $io1
  printf '%s\n' "$line" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
a = [int(x or 0) for x in sys.argv[1:]]
jit, total = a[2] - a[0], a[3] - a[1]
r["jit_cpu_frac"] = jit / total if total > 0 else 0
reqs = a[11] - a[7]
if reqs > 0:
    r["reads_per_req"] = (a[8] - a[4]) / reqs
    r["writes_per_req"] = (a[9] - a[5]) / reqs
    r["switches_per_req"] = (a[10] - a[6]) / reqs
print(json.dumps(r))' "$@" >> "$json"
}

# run_config ROUND CONFIG: one configuration's server, warm-up, set and get.
run_config() {
  local round=$1 name tuning logging warmup settings s cfg_text=''
  IFS='|' read -r name tuning logging warmup settings <<< "$2"
  warmup=${warm_all:-$warmup}
  zk_set_tuning "$tuning"
  zk_set_log "$logging"
  cfg_extra=() zk_props=()
  for s in $settings; do
    case $s in
      -D*) zk_props+=("$s") ;;
      *) cfg_extra+=("$s") ;;
    esac
  done
  [ ${#cfg_extra[@]} -eq 0 ] || cfg_text=", zoo.cfg: $(printf '`%s` ' "${cfg_extra[@]}")"
  printf '%s\t%s%s, warm-up: %s\n' "$name" "$(zk_settings_text)" "${cfg_text% }" "$warmup" >> "$work/settings.tsv"
  if ! start_fresh zookeeper "$work/$name-$round"; then
    log "round $round, $name: ZooKeeper did not start ($(grep -m1 -E 'Exception|Error' "$work/$name-$round/server.log" || true)); left out"
    return 0
  fi
  log "round $round, $name: port $port, pid $server_pid; warm-up ($warmup)"
  zkbench run --servers "127.0.0.1:$port" --duration "$jvmwarm" --warmup 0s --progress 0 mixed > /dev/null
  if [ "$warmup" = jit ]; then
    zkbench run --servers "127.0.0.1:$port" --duration "$jvmwarm" --warmup 0s --progress 0 \
      --clients 64 --outstanding 32 --data-size 1024 set get > /dev/null
  fi
  measure "$name" "$round" set "$port" "$server_pid"
  measure "$name" "$round" get "$port" "$server_pid"
  stop_pid "$server_pid" TERM
  [ "$keep" = 1 ] || rm -rf "${work:?}/$name-$round"
}

cd "$repo"
bench_build
started=$(date +%s)
for round in $(seq 1 "$rounds"); do
  for c in "${configs[@]}"; do run_config "$round" "$c"; done
done
elapsed=$(( $(date +%s) - started ))

mkdir -p "$(dirname "$out")"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
zkversion=$(dpkg-query -W -f '${Version}' zookeeper 2>/dev/null || echo "unknown version")
{
  echo "# Apache ZooKeeper tuning sweep"
  echo
  echo "Produced by \`$cmdline\` on $(date -u '+%Y-%m-%d %H:%M UTC') in ${elapsed}s: ZooKeeper $zkversion,"
  echo "$(java -version 2>&1 | head -1), $(nproc) CPUs ($cpu), $(df -T "$work" | awk 'NR==2 {print $2}') data directory."
  echo "Each configuration: a fresh standalone server (bench/lib-bench.sh, compare.sh's zoo.cfg, fsync on),"
  echo "$jvmwarm of mixed load to warm the JVM up (the first pass's warm-up; rows warmed with \"jit\", as compare.sh now warms up: then $jvmwarm of set and of get"
  echo "more), then zkbench set and get, 64 sessions x 32"
  echo "outstanding, 1 KB, $dur each after $warm unmeasured; $rounds round(s), configurations in turn each round."
  echo
  python3 - "$json" "$work/settings.tsv" <<'PY'
import collections, json, statistics, sys

runs = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    name = r["params"]["config"]
    if name not in order:
        order.append(name)
    runs[(name, r["workload"])].append(r)
settings = {}
for line in open(sys.argv[2]):
    name, text = line.rstrip("\n").split("\t", 1)
    settings[name] = text

def med(name, wl, key):
    v = [r.get(key, 0) for r in runs[(name, wl)]]
    return statistics.median(v) if v else None

def k(v):
    return f"{v / 1000:.1f}k"

best = {}
for wl in ("set", "get"):
    have = [n for n in order if runs[(n, wl)]]
    best[(wl, "ops")] = max(have, key=lambda n: med(n, wl, "ops_per_sec"))
    best[(wl, "cpu")] = min(have, key=lambda n: med(n, wl, "server_cpu_us_per_op"))

print("| configuration | set ops/s | set CPU µs/op (JIT) | set reads, writes, switches /req "
      "| get ops/s | get CPU µs/op (JIT) | get reads, writes, switches /req | others' CPU % |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for n in order:
    cells = [f"`{n}`"]
    for wl in ("set", "get"):
        rs = runs[(n, wl)]
        if not rs:
            cells += ["", "", ""]
            continue
        ops = k(med(n, wl, "ops_per_sec"))
        if len(rs) > 1:
            ops += " (" + ", ".join(k(r["ops_per_sec"]) for r in rs) + ")"
        if best[(wl, "ops")] == n:
            ops = f"**{ops}**"
        cpu = med(n, wl, "server_cpu_us_per_op")
        jit = statistics.median(r.get("server_cpu_us_per_op", 0) * r["jit_cpu_frac"] for r in rs)
        cpu_text = f"{cpu:.1f} ({jit:.1f})"
        if best[(wl, "cpu")] == n:
            cpu_text = f"**{cpu_text}**"
        counts = ", ".join(f"{statistics.median(r.get(c, 0) for r in rs):.2f}"
                           for c in ("reads_per_req", "writes_per_req", "switches_per_req"))
        cells += [ops, cpu_text, counts]
    other = max(r.get("other_cpu_pct", 0) for wl in ("set", "get") for r in runs[(n, wl)])
    cells.append(f"{other:.0f}")
    print("| " + " | ".join(cells) + " |")
print()
print("Medians of the rounds (each round's figure in brackets); **bold**: the best of the column.")
print("JIT: the part of the server's CPU per op that its C1/C2 compiler threads took during the run.")
print("Reads, writes, switches: the server's read and write system calls (/proc/PID/io syscr, syscw:")
print("sockets and the transaction log) and its threads' voluntary context switches, per request")
print("received (mntr zk_packets_received), over the run and its unmeasured start.")
print("Others' CPU %: the most the rest of the machine took during any of the row's runs (zkbench's")
print("other_cpu_pct); a row measured while it was high is noise, not a setting's effect.")
print()
print("How each configuration ran ZooKeeper:")
print()
for n in order:
    print(f"- `{n}`: {settings.get(n, '')}")
PY
} > "$out"
log "wrote $out"
