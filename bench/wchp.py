#!/usr/bin/env python3
"""Four-letter-word flood against one server, the way a user reported it (see bench/wchp.sh).

    wchp.py --port PORT [--sessions 20] [--watches 100000] [--duration 20]
            [--threads 4] [--cmds wchp] [--label NAME]

Opens --sessions kazoo sessions holding --watches data watches between them (exists
watches on paths that do not exist), then for --duration seconds runs --threads flood
workers (separate processes, so the measuring client does not share a GIL with them), each
looping the four-letter words in --cmds (comma-separated, assigned round-robin), while one
kazoo client (10 s session timeout) does set+get of one znode every 20 ms. Prints one JSON
line: the worst and p99 set+get latency, how many set+get pairs failed and with which
errors, and how many four-letter answers came back.
"""
import argparse
import json
import logging
import multiprocessing
import socket
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError


def four(port, cmd, timeout=60.0):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(cmd.encode())
        chunks = []
        while True:
            b = s.recv(1 << 20)
            if not b:
                return b"".join(chunks)
            chunks.append(b)


def flood(port, cmd, stop_at, out):
    answers = errors = size = 0
    while time.time() < stop_at:
        try:
            size += len(four(port, cmd))
            answers += 1
        except OSError:
            errors += 1
    out.put((cmd, answers, errors, size))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--watches", type=int, default=100000)
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--cmds", default="wchp")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    logging.basicConfig(level=logging.CRITICAL)  # kazoo logs every connection loss
    hosts = "127.0.0.1:%d" % a.port

    holders = []
    per = a.watches // a.sessions
    for s in range(a.sessions):
        c = KazooClient(hosts=hosts, timeout=10)
        c.start(timeout=30)
        futures = [c.exists_async("/wchp/s%02d/w%06d" % (s, i), watch=lambda ev: None) for i in range(per)]
        for f in futures:
            f.get(timeout=60)
        holders.append(c)
    wchs = four(a.port, "wchs").decode().strip().replace("\n", " ")

    rw = KazooClient(hosts=hosts, timeout=10)
    rw.start(timeout=30)
    try:
        rw.create("/rw", b"")
    except NodeExistsError:
        pass

    stop_at = time.time() + a.duration
    mp = multiprocessing.get_context("spawn")  # no fork of a process running kazoo's threads
    out = mp.Queue()
    cmds = a.cmds.split(",")
    procs = [mp.Process(target=flood, args=(a.port, cmds[i % len(cmds)], stop_at, out))
             for i in range(a.threads)]
    for p in procs:
        p.start()

    lat, errs = [], {}
    n = 0
    while time.time() < stop_at:
        t0 = time.monotonic()
        try:
            rw.set("/rw", str(n).encode())
            rw.get("/rw")
            lat.append(time.monotonic() - t0)
        except Exception as e:  # ConnectionLoss, SessionExpiredError, ...: count and go on
            errs[type(e).__name__] = errs.get(type(e).__name__, 0) + 1
            # Until kazoo has reconnected every call fails at once: wait for it, as an
            # application retrying would, and charge the wait to this op.
            while not rw.connected and time.time() < stop_at + 30:
                time.sleep(0.01)
            lat.append(time.monotonic() - t0)
        n += 1
        time.sleep(0.02)

    answers = {}
    for _ in procs:
        cmd, k, e, size = out.get(timeout=120)
        c = answers.setdefault(cmd, {"answers": 0, "errors": 0, "bytes": 0})
        c["answers"] += k
        c["errors"] += e
        c["bytes"] += size
    for p in procs:
        p.join(timeout=120)
    lat.sort()
    print(json.dumps({
        "label": a.label, "cmds": a.cmds, "threads": a.threads, "watches": wchs,
        "ops": len(lat), "worst_s": round(lat[-1], 3) if lat else None,
        "p99_s": round(lat[int(len(lat) * 0.99)], 3) if lat else None,
        "p50_s": round(lat[len(lat) // 2], 4) if lat else None,
        "errors": errs, "flood": answers,
    }), flush=True)
    rw.stop()
    for c in holders:
        c.stop()


if __name__ == "__main__":
    main()
