#!/usr/bin/env bash
# A new member synced by SNAP (issue 28's row), zkd and Apache ZooKeeper 3.8 side by side:
#
#   bench/snapsync.sh [--znodes 1000000] [--kinds "zkd zookeeper"] [--heap 4g] [--out FILE]
#
# For each kind: a 3-server loopback ensemble (fsync on, tickTime 2000); server 3 is
# stopped, the tree grows to --znodes znodes through servers 1 and 2 (zkbench's `znodes`:
# 16-byte paths, 10-byte data, multis of 10), server 3's data directory is emptied (its myid
# kept) and it is started again while a client load runs on the leader (1 KB set and get,
# 16 sessions x 8 outstanding, in 5-second rounds). Prints the seconds from the start of
# server 3 until it serves as a follower at (or past) the zxid the leader had then, and the
# leader's clients' p99.9 and maximum latency: the worst 5-second round while server 3
# syncs, against a round just before. The machine is shared with whatever else runs: the
# figures are as good as it is quiet. Every process is stopped by its PID on exit. With
# --out, the table also goes to FILE (markdown, with the command and date), which
# bench/compare.sh copies into RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
znodes=1000000 kinds="zkd zookeeper" heap=4g out=/dev/null
cmdline="bench/snapsync.sh${*:+ $*}"
while [ $# -gt 0 ]; do
  case "$1" in
    --znodes) znodes=$2; shift ;;
    --kinds) kinds=$2; shift ;;
    --heap) heap=$2; shift ;;
    --out) out=$(realpath -m "$2"); shift ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
bench_name=snapsync
# shellcheck source=bench/lib-ensemble.sh
. bench/lib-ensemble.sh

zxid_of() { srvr "$1" | sed -n 's/^Zxid: //p'; }

# launch KIND I: (re)starts server I of the ensemble whose configs start_ensemble wrote.
launch() {
  local kind=$1 i=$2 d="$work/$name/s$2"
  if [ "$kind" = zkd ]; then
    "$work/bin/zkd" --config "$d/zoo.cfg" --log-level warn >> "$d/out.log" 2>&1 &
  else
    java "-Xmx$heap" -XX:-UsePerfData -cp "$CP" org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg" >> "$d/out.log" 2>&1 &
  fi
  spid[$i]=$!; pids+=("$!")
}

# round SERVERS FILE: one 5-second round of the client load; appends its JSON line to FILE.
round() {
  "$work/bin/zkbench" run --servers "$1" --clients 16 --outstanding 8 --duration 5s --warmup 0s \
    --progress 0 --json "$2" set get > /dev/null
}

worst() { # worst FILE: "p99.9 max" in ms, the worst of the file's rounds
  python3 -c 'import json,sys
rows=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("%.1f %.1f" % (max(r["latency_us"]["p999"] for r in rows)/1000, max(r["latency_us"]["max"] for r in rows)/1000))' "$1"
}

rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
{ echo "# A new member synced by SNAP at $znodes znodes"; echo
  echo "Produced by \`$cmdline\` on $(date -u '+%Y-%m-%d %H:%M UTC'); zkd at $rev. Method: the header of bench/snapsync.sh."; echo; } > "$out"
echo "3-server loopback ensembles, fsync on: a member with an empty data directory synced by SNAP at $znodes znodes"
printf '| server | sync (s) | clients p99.9 / max before (ms) | clients p99.9 / max during (ms) |\n| --- | --- | --- | --- |\n' | tee -a "$out"
for kind in $kinds; do
  name="$kind-$RANDOM"
  if [ "$kind" = zookeeper ]; then
    # start_ensemble's JVMs get 1 GiB: enough to form the ensemble, not for the tree.
    start_ensemble "$name" "$kind"
    for i in 1 2 3; do kill -9 "${spid[$i]}"; wait "${spid[$i]}" 2> /dev/null || true; done
    for i in 1 2; do launch "$kind" "$i"; done
  else
    start_ensemble "$name" "$kind"
    kill -9 "${spid[3]}"; wait "${spid[3]}" 2> /dev/null || true
  fi
  two="127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"
  "$work/bin/zkbench" wait --servers "$two" --op write --timeout 5m > /dev/null
  "$work/bin/zkbench" run --servers "$two" --clients 8 --outstanding 8 --multi-size 10 --znodes "$znodes" \
    --progress 0 znodes > /dev/null
  leader=1; [ "$(mode "${ports[2]}")" = leader ] && leader=2
  lsrv="127.0.0.1:${ports[$leader]}"
  round "$lsrv" "$work/$name-before.json"
  d="$work/$name/s3"
  find "$d" -mindepth 1 -maxdepth 1 ! -name myid ! -name zoo.cfg ! -name out.log -exec rm -rf {} +
  target=$(zxid_of "${ports[$leader]}")
  t0=$(date +%s%N); launch "$kind" 3
  # A poller notes when server 3 first serves as a follower at the leader's zxid of its
  # start; the client rounds run meanwhile.
  synced_file="$work/$name-synced"
  ( for _ in $(seq 1 6000); do # at most 20 minutes
      z=$(zxid_of "${ports[3]}")
      if [ "$(mode "${ports[3]}")" = follower ] && [ -n "$z" ] && [ $((z)) -ge $((target)) ]; then
        python3 -c "print(round(($(date +%s%N) - $t0) / 1e9, 2))" > "$synced_file"; exit 0
      fi
      sleep 0.2
    done ) &
  poller=$!; pids+=("$poller")
  round "$lsrv" "$work/$name-during.json"
  while [ ! -s "$synced_file" ] && kill -0 "$poller" 2> /dev/null; do
    round "$lsrv" "$work/$name-during.json"
  done
  synced=$(cat "$synced_file" 2> /dev/null || true)
  echo "| $kind | ${synced:-not synced} | $(worst "$work/$name-before.json" | sed 's/ / \/ /') | $(worst "$work/$name-during.json" | sed 's/ / \/ /') |" | tee -a "$out"
  for i in 1 2 3; do kill -9 "${spid[$i]}" 2> /dev/null || true; done
  rm -rf "${work:?}/$name"
done
