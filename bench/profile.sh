#!/usr/bin/env bash
# Where zkd spends its time under load: CPU and allocation profiles, syscalls per request and
# fsyncs against writes (issue 16's profiles), for set and get (64 sessions x 32 outstanding,
# 1 KB) and watch fan-out (--watchers sessions watching one znode).
#
#   bench/profile.sh [--quick] [--out FILE] [--keep] [--watchers N]
#
# zkd runs standalone on loopback with forceSync on and --pprof, driven by zkbench. For each
# workload:
#   - a CPU profile (/debug/pprof/profile) over a window inside zkbench's measured phase, and
#     the allocations of the same window (the memory profile before and after, diffed);
#     both rendered as go tool pprof's top 15;
#   - strace -c -f on zkd over one whole zkbench run of the window's length: syscalls divided
#     by the ops zkbench reports, and by the requests zkd counted (mntr's packets_received,
#     which also counts zkbench's setup: the sessions and the key space's exists). strace
#     stops the server at every syscall, so its rates mean nothing; the counts per request do;
#   - for set, fsyncs per second against writes per second on a second zkd with the metrics
#     provider on (its fsync count), without strace; and from the strace window.
# Then a 3-server zkd ensemble on loopback (--pprof on each), set 1 KB at 64 x 32 with the
# sessions spread over the three ("## ensemble set"): CPU and allocation profiles of the leader
# and of one follower over the same window, each server's CPU per write from /proc, syscalls
# per write on the leader and the follower (strace -c -f on both at once), and fsyncs against
# writes on each (mntr's fsynctime count, no strace). A write is one txn: the leader's zxid
# counter over the window.
# Writes bench/RESULTS-profile.md (or --out). Needs go, curl and, for the syscall sections,
# strace (apt-get install strace) with ptrace allowed: without it those sections say so.
#
#   --quick          3 s windows (default 10 s)
#   --out FILE       markdown output (default bench/RESULTS-profile.md)
#   --keep           keep the work directory (profiles, strace output, zkbench JSON lines)
#   --watchers N     watch fan-out sessions (default 1000)
#   --no-ensemble    leave the ensemble section out
#   --only ensemble  the ensemble section alone, written into the existing output file in
#                    place of its "## ensemble set" section (appended when it has none): the
#                    standalone sections, measured on a quieter machine, are kept
set -euo pipefail

cmdline="bench/profile.sh${*:+ $*}"
quick=0 keep=0 watchers=1000 ensemble=1 only=""
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$repo/bench/RESULTS-profile.md"
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --keep) keep=1 ;;
    --out) out=$(realpath -m "$2"); shift ;;
    --watchers) watchers=$2; shift ;;
    --no-ensemble) ensemble=0 ;;
    --only) only=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "profile.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[[ $watchers =~ ^[1-9][0-9]*$ ]] || { echo "profile.sh: --watchers $watchers: want a positive number" >&2; exit 2; }
case $only in
  "") ;;
  ensemble) ensemble=1 ;;
  *) echo "profile.sh: --only $only: want ensemble" >&2; exit 2 ;;
esac
[ -z "$only" ] || [ -f "$out" ] || { echo "profile.sh: --only $only: $out does not exist (run the whole profile first)" >&2; exit 2; }

window=10
[ $quick = 1 ] && window=3
tick=2000

work=$(mktemp -d "${TMPDIR:-/tmp}/zkbench-profile.XXXXXX")
bench_name=profile
# shellcheck source=bench/lib-bench.sh
. "$repo/bench/lib-bench.sh"
cd "$repo"

command -v curl > /dev/null || { echo "profile.sh: curl not found" >&2; exit 1; }
log "building zkd and zkbench"
mkdir -p "$work/bin"
go build -o "$work/bin/zkd" ./cmd/zkd
go build -o "$work/bin/zkbench" ./cmd/zkbench

# Syscall counts need strace, installed and allowed to attach to our own processes (a container may deny
# ptrace); strace_why says why not.
strace_why=""
if ! command -v strace > /dev/null; then
  strace_why="strace is not installed (apt-get install strace)"
elif ! strace -f -o /dev/null true 2> /dev/null; then
  strace_why="strace cannot trace here (ptrace denied?)"
fi
[ -z "$strace_why" ] || log "no syscall counts: $strace_why"

# start_zkd DIR: zkd with --pprof on a fresh zoo.cfg ($cfg_extra) and free ports, retried when
# it exits at once (a port taken meanwhile); sets server_pid, port and pport.
start_zkd() {
  local dir=$1 try
  for try in 1 2 3; do
    port=$(free_port) pport=$(free_port)
    rm -rf "$dir"; write_cfg "$dir" "$port"
    sync # the last server's dirty pages are not this one's fsyncs to flush
    "$work/bin/zkd" --config "$dir/zoo.cfg" --log-level warn --pprof "127.0.0.1:$pport" >> "$dir/server.log" 2>&1 &
    server_pid=$!
    pids+=("$server_pid")
    if wait_mode "$port" "$server_pid" > /dev/null; then return 0; fi
    stop_pid "$server_pid" KILL
  done
  log "zkd did not start: $(tail -3 "$dir/server.log")"
  return 1
}

# forget_pid PID: a process we reaped ourselves is no longer one to stop at exit.
forget_pid() {
  local keep_pids=() p
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep_pids+=("$p"); done
  pids=("${keep_pids[@]+"${keep_pids[@]}"}")
}

# mntr_value PORT KEY: one number from mntr (0 when absent).
mntr_value() {
  local v
  v=$(fourlw "$1" mntr | awk -v k="zk_$2" '$1 == k { print $2 }')
  echo "${v:-0}"
}

# json_field FILE FIELD: a number from the last JSON line of FILE.
json_field() {
  python3 -c 'import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
print(r.get(sys.argv[2], 0))' "$1" "$2"
}

# wait_measuring LOG PID: until zkbench (PID, progress lines in LOG) is in its measured phase.
wait_measuring() {
  local i
  for i in $(seq 1 1200); do # 2 minutes: the watch workload's sessions connect first
    grep -q ' measure ' "$1" && return 0
    kill -0 "$2" 2> /dev/null || { log "zkbench exited before measuring: $(tail -3 "$1")"; return 1; }
    sleep 0.1
  done
  log "zkbench did not reach its measured phase"; return 1
}

# wait_traced PID: until every thread of PID has a tracer (strace -f has attached).
wait_traced() {
  local i t all
  for i in $(seq 1 300); do
    all=1
    for t in /proc/"$1"/task/*/status; do
      grep -q '^TracerPid:[[:space:]]*0$' "$t" 2> /dev/null && { all=0; break; }
    done
    [ $all = 1 ] && return 0
    sleep 0.1
  done
  log "strace did not attach to $1"; return 1
}

# pprof_top ARGS...: go tool pprof's top 15, without the lines naming local files.
pprof_top() {
  go tool pprof -top -nodecount=15 "$@" 2> /dev/null | grep -v '^File: \|^Build ID: \|^Main binary' || true
}

# profile_workload NAME ZKBENCH-ARGS...: the CPU and allocation profiles of one workload,
# then its strace window; appends its section to $work/sections.md.
profile_workload() {
  local name=$1 bpid spid base="$work/$1" req0 req1; shift
  local common=(--servers "127.0.0.1:$port" --server-pid "$server_pid" --label zkd)

  log "$name: profiles (${window}s)"
  # The measured phase outlasts the profile by a second or two, so the profile is all load.
  "$work/bin/zkbench" run "${common[@]}" --warmup 2s --duration "$((window + 2))s" --progress 200ms \
    --json "$base.profile.jsonl" "$@" > /dev/null 2> "$base.profile.log" &
  bpid=$!; pids+=("$bpid")
  wait_measuring "$base.profile.log" "$bpid"
  # The heap profile is the allocs profile (the same samples; pprof picks alloc_space below);
  # gc=1 makes the runtime publish allocations up to now, so the window's edges are exact.
  # Both are totals since start: pprof -base subtracts the first (-diff_base would compare
  # two runs, with percentages of the first's total), leaving the window's allocations.
  curl -sSf -o "$base.allocs-before.pb.gz" "http://127.0.0.1:$pport/debug/pprof/heap?gc=1"
  curl -sSf -o "$base.cpu.pb.gz" "http://127.0.0.1:$pport/debug/pprof/profile?seconds=$window"
  curl -sSf -o "$base.allocs-after.pb.gz" "http://127.0.0.1:$pport/debug/pprof/heap?gc=1"
  wait "$bpid"
  forget_pid "$bpid"

  {
    echo "## $name"
    echo
    echo "zkbench during the profiles: $(json_field "$base.profile.jsonl" ops_per_sec | cut -d. -f1) ops/s," \
      "zkd CPU $(printf %.1f "$(json_field "$base.profile.jsonl" server_cpu_us_per_op)") µs per op" \
      "(\`zkbench run $*\`)."
    echo
    echo "### CPU, top 15 (${window}s)"
    echo
    echo '```'
    pprof_top "$work/bin/zkd" "$base.cpu.pb.gz"
    echo '```'
    echo
    echo "### Allocations in the same window, top 15 (alloc_space)"
    echo
    echo '```'
    pprof_top -sample_index=alloc_space -base "$base.allocs-before.pb.gz" "$work/bin/zkd" "$base.allocs-after.pb.gz"
    echo '```'
    echo
  } >> "$work/sections.md"

  if [ -n "$strace_why" ]; then
    printf '### Syscalls\n\nNot measured: %s.\n\n' "$strace_why" >> "$work/sections.md"
    return 0
  fi
  log "$name: strace window (${window}s)"
  strace -c -f -p "$server_pid" -o "$base.strace" 2> "$base.strace.log" &
  spid=$!; pids+=("$spid")
  wait_traced "$server_pid"
  req0=$(mntr_value "$port" packets_received)
  zkbench run "${common[@]}" --warmup 0s --duration "${window}s" --progress 0 \
    --json "$base.strace.jsonl" "$@" > /dev/null
  req1=$(mntr_value "$port" packets_received)
  kill -INT "$spid" # strace detaches and writes its summary
  wait "$spid" || true
  forget_pid "$spid"
  local ops
  ops=$(json_field "$base.strace.jsonl" ops)
  {
    echo "### Syscalls per request (strace -c -f, ${window}s)"
    echo
    echo "zkbench completed $ops ops in the window ($(json_field "$base.strace.jsonl" ops_per_sec | cut -d. -f1) ops/s under strace);" \
      "zkd received $((req1 - req0)) requests (with zkbench's setup: sessions, the key space's exists)."
    echo
    echo "| syscall | calls | errors | per op | per request |"
    echo "|---|--:|--:|--:|--:|"
    # strace -c rows: % time, seconds, usecs/call, calls, [errors,] syscall; the total last.
    local rows
    rows=$(awk -v ops="$ops" -v req="$((req1 - req0))" '
      $1 ~ /^[0-9.]+$/ && NF >= 5 {
        calls = $4; errs = (NF == 6) ? $5 : 0
        printf "%d\t%s\t| %s | %d | %d | %.2f | %.2f |\n", calls, $NF, $NF, calls, errs,
          calls / (ops > 0 ? ops : 1), calls / (req > 0 ? req : 1)
      }' "$base.strace")
    awk -F'\t' '$2 != "total"' <<< "$rows" | sort -t$'\t' -k1,1nr | head -15 | cut -f3
    awk -F'\t' '$2 == "total"' <<< "$rows" | cut -f3
    echo
  } >> "$work/sections.md"
}

# start_ensemble_pprof DIR: three zkd voters on loopback under DIR, each with --pprof, retried
# on fresh ports when one does not come up; sets ens_pids, ens_ports, ens_pports, ens_servers.
start_ensemble_pprof() {
  local dir=$1 try i lines ok
  for try in 1 2 3; do
    ens_pids=() ens_ports=() ens_pports=() lines=()
    for i in 1 2 3; do
      ens_ports+=("$(free_port)"); ens_pports+=("$(free_port)")
      lines+=("server.$i=127.0.0.1:$(free_port):$(free_port):participant")
    done
    for i in 1 2 3; do
      rm -rf "$dir/s$i"; write_cfg "$dir/s$i" "${ens_ports[$((i - 1))]}" "${lines[@]}"
      echo "$i" > "$dir/s$i/data/myid"
    done
    sync
    for i in 1 2 3; do
      "$work/bin/zkd" --config "$dir/s$i/zoo.cfg" --log-level warn --pprof "127.0.0.1:${ens_pports[$((i - 1))]}" \
        >> "$dir/s$i/server.log" 2>&1 &
      ens_pids+=("$!"); pids+=("$!")
    done
    ok=1
    for i in 0 1 2; do wait_mode "${ens_ports[$i]}" "${ens_pids[$i]}" > /dev/null || { ok=0; break; }; done
    if [ $ok = 1 ]; then
      ens_servers=$(printf '127.0.0.1:%s,' "${ens_ports[@]}"); ens_servers=${ens_servers%,}
      return 0
    fi
    for i in 0 1 2; do stop_pid "${ens_pids[$i]}" KILL; done
  done
  log "the ensemble did not start: $(tail -3 "$dir/s1/server.log")"
  return 1
}

# zxid PORT: the server's last zxid's counter (srvr's Zxid, low 32 bits) in decimal.
zxid_counter() {
  local z
  z=$(fourlw "$1" srvr | sed -n 's/^Zxid: //p')
  echo $(( ${z:-0} & 0xffffffff ))
}

# cpu_ticks PID: utime + stime of the process, in clock ticks.
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

# ens_snapshot NAME: per server CPU ticks, fsync counts and the leader's zxid, into $work/ens.NAME.
ens_snapshot() {
  local i f="$work/ens.$1"
  : > "$f"
  for i in 0 1 2; do
    echo "cpu$i $(cpu_ticks "${ens_pids[$i]}")" >> "$f"
    echo "fsyncs$i $(mntr_value "${ens_ports[$i]}" cnt_fsynctime)" >> "$f"
    echo "txns$i $(mntr_value "${ens_ports[$i]}" sum_sync_processor_batch_size)" >> "$f"
  done
  echo "zxid $(zxid_counter "${ens_ports[$leader]}")" >> "$f"
  echo "time $(date +%s.%N)" >> "$f"
}

# profile_ensemble: the "## ensemble set" section, into $work/ensemble.md.
profile_ensemble() {
  local base="$work/ens" bpid i role lf spids=() z0 z1 ops
  start_ensemble_pprof "$work/ensemble"
  leader=-1
  for i in 0 1 2; do [ "$(fourlw "${ens_ports[$i]}" srvr | sed -n 's/^Mode: //p')" = leader ] && leader=$i; done
  [ "$leader" -ge 0 ] || { log "ensemble: no leader"; return 1; }
  follower=$(( (leader + 1) % 3 ))
  log "ensemble: leader server.$((leader + 1)) (pid ${ens_pids[$leader]}), follower server.$((follower + 1)) (pid ${ens_pids[$follower]})"
  local eshape=(--clients 64 --outstanding 32 --data-size 1024)
  local common=(--servers "$ens_servers" --server-pid "$(IFS=,; echo "${ens_pids[*]}")" --label zkd "${eshape[@]}")

  log "ensemble set: profiles (${window}s)"
  "$work/bin/zkbench" run "${common[@]}" --warmup 2s --duration "$((window + 2))s" --progress 200ms \
    --json "$base.profile.jsonl" set > /dev/null 2> "$base.profile.log" &
  bpid=$!; pids+=("$bpid")
  wait_measuring "$base.profile.log" "$bpid"
  for role in leader follower; do
    i=${!role}
    curl -sSf -o "$base.$role.allocs-before.pb.gz" "http://127.0.0.1:${ens_pports[$i]}/debug/pprof/heap?gc=1"
  done
  ens_snapshot before
  # Both CPU profiles over the same window.
  local cpids=()
  for role in leader follower; do
    i=${!role}
    curl -sSf -o "$base.$role.cpu.pb.gz" "http://127.0.0.1:${ens_pports[$i]}/debug/pprof/profile?seconds=$window" &
    cpids+=("$!"); pids+=("$!")
  done
  for i in "${cpids[@]}"; do wait "$i"; forget_pid "$i"; done
  ens_snapshot after
  for role in leader follower; do
    i=${!role}
    curl -sSf -o "$base.$role.allocs-after.pb.gz" "http://127.0.0.1:${ens_pports[$i]}/debug/pprof/heap?gc=1"
  done
  wait "$bpid"
  forget_pid "$bpid"

  if [ -z "$strace_why" ]; then
    log "ensemble set: strace window (${window}s), leader and follower"
    for role in leader follower; do
      i=${!role}
      strace -c -f -p "${ens_pids[$i]}" -o "$base.$role.strace" 2> "$base.$role.strace.log" &
      spids+=("$!"); pids+=("$!")
      wait_traced "${ens_pids[$i]}"
    done
    z0=$(zxid_counter "${ens_ports[$leader]}")
    zkbench run "${common[@]}" --warmup 0s --duration "${window}s" --progress 0 \
      --json "$base.strace.jsonl" set > /dev/null
    z1=$(zxid_counter "${ens_ports[$leader]}")
    for i in "${spids[@]}"; do kill -INT "$i"; done
    for i in "${spids[@]}"; do wait "$i" || true; forget_pid "$i"; done
    echo "$((z1 - z0))" > "$base.strace.txns"
  fi
  stop_ensemble

  local leader_no=$((leader + 1)) follower_no=$((follower + 1)) other_no=$(( (leader + 2) % 3 + 1 ))
  {
    echo "## ensemble set"
    echo
    echo "- Measured: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit, \`$cmdline\`, ${window}s windows."
    echo "- Three zkd voters on loopback (forceSync on, tickTime $tick), the 64 sessions spread over the three;"
    echo "  server.$leader_no led. \"follower\" is server.$follower_no; server.$other_no is the other follower."
    echo "- zkbench during the profiles: $(json_field "$base.profile.jsonl" ops_per_sec | cut -d. -f1) ops/s," \
      "CPU of the three servers $(printf %.1f "$(json_field "$base.profile.jsonl" server_cpu_us_per_op)") µs per op" \
      "(\`zkbench run ${eshape[*]} set\`, sessions on all three)."
    echo
    echo "### CPU per write, by server"
    echo
    echo "From /proc (utime + stime) over the CPU profiles' window; a write is one txn (the leader's"
    echo "zxid counter). Each follower also serves a third of the sessions (reading their requests,"
    echo "forwarding them to the leader, replying); a follower's fsyncs make its acks durable."
    echo
    python3 - "$work" "$leader" "$follower" "$(getconf CLK_TCK)" <<'PY'
import sys
work, leader, follower, hz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
def snap(n):
    return {k: float(v) for k, v in (l.split() for l in open(f"{work}/ens.{n}"))}
b, a = snap("before"), snap("after")
writes, secs = a["zxid"] - b["zxid"], a["time"] - b["time"]
print(f"{writes:.0f} writes in {secs:.1f} s ({writes / secs:.0f} writes/s).")
print()
print("| server | role | CPU (s) | CPU per write (µs) | share | fsyncs/s | writes per fsync | txns per fsync |")
print("|---|---|--:|--:|--:|--:|--:|--:|")
tot = sum(a[f"cpu{i}"] - b[f"cpu{i}"] for i in range(3)) / hz
for i in range(3):
    role = "leader" if i == leader else ("follower (profiled)" if i == follower else "follower")
    cpu = (a[f"cpu{i}"] - b[f"cpu{i}"]) / hz
    fs = a[f"fsyncs{i}"] - b[f"fsyncs{i}"]
    tx = a[f"txns{i}"] - b[f"txns{i}"]
    per = f"{writes / fs:.1f}" if fs > 0 else ""
    txper = f"{tx / fs:.1f}" if fs > 0 else ""
    print(f"| server.{i + 1} | {role} | {cpu:.2f} | {cpu / max(writes, 1) * 1e6:.1f} | {cpu / tot * 100 if tot else 0:.0f}% | {fs / secs:.0f} | {per} | {txper} |")
print(f"| all three | | {tot:.2f} | {tot / max(writes, 1) * 1e6:.1f} | 100% | | | |")
PY
    echo
    echo "Fsyncs are the txn log's group commits (mntr's fsynctime count, no strace); txns per fsync"
    echo "is zkd's own count of the txns each made durable."
    echo
    for role in leader follower; do
      echo "### $role: CPU, top 15 (${window}s)"
      echo
      echo '```'
      pprof_top "$work/bin/zkd" "$base.$role.cpu.pb.gz"
      echo '```'
      echo
      echo "### $role: CPU, top 15 by cumulative time"
      echo
      echo '```'
      pprof_top -cum "$work/bin/zkd" "$base.$role.cpu.pb.gz" | sed -n '/flat  flat%/,$p'
      echo '```'
      echo
      echo "### $role: allocations in the same window, top 15 (alloc_space)"
      echo
      echo '```'
      pprof_top -sample_index=alloc_space -base "$base.$role.allocs-before.pb.gz" "$work/bin/zkd" "$base.$role.allocs-after.pb.gz"
      echo '```'
      echo
    done
    if [ -n "$strace_why" ]; then
      printf '### Syscalls per write\n\nNot measured: %s.\n\n' "$strace_why"
    else
      ops=$(json_field "$base.strace.jsonl" ops)
      echo "### Syscalls per write (strace -c -f on the leader and the follower at once, ${window}s)"
      echo
      echo "zkbench completed $ops sets in the window ($(json_field "$base.strace.jsonl" ops_per_sec | cut -d. -f1) ops/s under strace);" \
        "the leader's zxid advanced by $(cat "$base.strace.txns") (the writes counted below)."
      echo
      python3 - "$base" "$(cat "$base.strace.txns")" <<'PY'
import sys
base, writes = sys.argv[1], max(int(sys.argv[2]), 1)
def rows(role):
    out = {}
    for line in open(f"{base}.{role}.strace"):
        f = line.split()
        if len(f) >= 5 and f[0].replace(".", "").isdigit():
            out[f[-1]] = (int(f[3]), int(f[4]) if len(f) == 6 else 0)
    return out
l, f = rows("leader"), rows("follower")
names = sorted((n for n in set(l) | set(f) if n != "total"), key=lambda n: -(l.get(n, (0, 0))[0] + f.get(n, (0, 0))[0]))[:15]
print("| syscall | leader calls | leader per write | follower calls | follower per write |")
print("|---|--:|--:|--:|--:|")
for n in names + ["total"]:
    lc, fc = l.get(n, (0, 0))[0], f.get(n, (0, 0))[0]
    print(f"| {n} | {lc} | {lc / writes:.2f} | {fc} | {fc / writes:.2f} |")
PY
      echo
    fi
  } > "$work/ensemble.md"
}

commit=$(git -C "$repo" rev-parse --short HEAD)
git -C "$repo" diff --quiet HEAD 2> /dev/null || commit="$commit (with uncommitted changes)"

: > "$work/sections.md"
if [ -z "$only" ]; then
start_zkd "$work/load"
log "zkd on port $port (pprof $pport), pid $server_pid"
shape=(--clients 64 --outstanding 32 --data-size 1024)
profile_workload set "${shape[@]}" set
profile_workload get "${shape[@]}" get
profile_workload watch --clients "$watchers" watch
stop_pid "$server_pid" TERM

# Group commit, without strace: a zkd with the metrics provider on counts its txn log fsyncs
# and the txns each made durable (the fsynctime and sync_processor_batch_size summaries of
# /metrics; mntr prints zeros for them), which the profiled server does not pay for.
log "set: fsyncs against writes (${window}s)"
mport=$(free_port)
cfg_extra=("metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider"
  "metricsProvider.httpHost=127.0.0.1" "metricsProvider.httpPort=$mport")
start_zkd "$work/fsync"
common=(--servers "127.0.0.1:$port" --label zkd "${shape[@]}")
zkbench run "${common[@]}" --warmup 0s --duration 1s --progress 0 set > /dev/null # the keys
curl -sSf -o "$work/fsync.metrics.before" "http://127.0.0.1:$mport/metrics"
zkbench run "${common[@]}" --warmup 0s --duration "${window}s" --progress 0 --json "$work/fsync.jsonl" set > /dev/null
curl -sSf -o "$work/fsync.metrics.after" "http://127.0.0.1:$mport/metrics"
stop_pid "$server_pid" TERM
cfg_extra=()
fsync_text=$(python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]

def last_json(name):
    return json.loads(open(os.path.join(work, name)).read().splitlines()[-1])

def metric(name, key):
    for line in open(os.path.join(work, name)):
        f = line.split()
        if len(f) == 2 and f[0] == key:
            return float(f[1])
    return 0.0

r = last_json("fsync.jsonl")
ops, secs = r["ops"], r["seconds"]
fsyncs = metric("fsync.metrics.after", "fsynctime_count") - metric("fsync.metrics.before", "fsynctime_count")
txns = metric("fsync.metrics.after", "sync_processor_batch_size_sum") - metric("fsync.metrics.before", "sync_processor_batch_size_sum")
print("| measured | writes/s | fsyncs/s | writes per fsync | txns per fsync (zkd) |")
print("|---|--:|--:|--:|--:|")
if fsyncs > 0:
    print(f"| /metrics fsync count, no strace | {ops / secs:.0f} | {fsyncs / secs:.0f} | {ops / fsyncs:.1f} | {txns / fsyncs:.1f} |")
else:
    print(f"| /metrics fsync count, no strace | {ops / secs:.0f} | (no count) | | |")
if os.path.exists(os.path.join(work, "set.strace")):
    calls = 0
    for line in open(os.path.join(work, "set.strace")):
        f = line.split()
        if len(f) >= 5 and f[-1] in ("fsync", "fdatasync"):
            calls += int(f[3])
    s = last_json("set.strace.jsonl")
    if calls > 0:
        print(f"| strace fsync+fdatasync, set's strace run | {s['ops'] / s['seconds']:.0f} | {calls / s['seconds']:.0f} | {s['ops'] / calls:.1f} | |")
PY
)

fi

if [ $ensemble = 1 ]; then
  profile_ensemble
fi

if [ -n "$only" ]; then
  # Splice the section into the existing file: in place of its own, or at the end.
  python3 - "$out" "$work/ensemble.md" <<'PY'
import re, sys
out, sec = sys.argv[1], open(sys.argv[2]).read().rstrip("\n") + "\n"
text = open(out).read()
m = re.search(r"^## ensemble set\n.*?(?=^## |\Z)", text, re.S | re.M)
if m:
    text = text[:m.start()] + sec + ("\n" if m.end() < len(text) else "") + text[m.end():]
else:
    text = text.rstrip("\n") + "\n\n" + sec
open(out, "w").write(text)
PY
  log "wrote the ensemble section into $out"
  exit 0
fi

{
  echo "# zkd profiles"
  echo
  echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- Commit: $commit"
  echo "- Machine: $(uname -srm), $(nproc) × $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(go version | cut -d' ' -f3)"
  echo "- Command: \`$cmdline\`"
  echo "- zkd standalone on loopback, forceSync on, data under ${TMPDIR:-/tmp}; ${window}s windows; watch fan-out with $watchers watchers."
  echo
  echo "CPU profiles are of zkd alone (zkbench runs beside it on the same cores). Syscall counts"
  echo "come from strace -c, which stops zkd at every syscall and so changes its timing: read the"
  echo "counts per op, not the rates. The strace run includes zkbench's setup (opening sessions, and the key space's"
  echo "exists for set and get), which the per request column counts as requests too."
  echo
  cat "$work/sections.md"
  echo "## Group commit: fsyncs against writes (set)"
  echo
  echo "Writes per fsync is zkbench's sets over the txn log's fsyncs in the same run; zkd's own"
  echo "figure (txns per fsync) also counts session txns. strace changes the server's timing and"
  echo "so its batches: its row checks the count, not the batching."
  echo
  echo "$fsync_text"
  if [ $ensemble = 1 ]; then echo; cat "$work/ensemble.md"; fi
} > "$out"
log "wrote $out"
