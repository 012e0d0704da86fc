"""Renders bench/treesize.sh's JSON lines as markdown: issue 28's goals, then every figure
per tree size (zkd, ZooKeeper, zkd / ZooKeeper).

    python3 bench/treesize.py FILE.jsonl [NOTES]

NOTES is a file of "goal-key: text" lines, shown as the goals table's "why" column (default:
FILE without .jsonl, .notes, when it exists)."""
import json
import os
import sys

KINDS = ("zkd", "zookeeper")
NAMES = {"zkd": "zkd", "zookeeper": "ZooKeeper"}


def load(path):
    rows = {}
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)
        kind = r.get("label")
        w = r.get("workload")
        if w.startswith(("rss-", "stop-clean-")):
            name, size = w.rsplit("-", 1)
            size = int(size)
        else:
            name, size = w, int((r.get("params") or {}).get("znodes", 0))
        rows[(kind, size, name)] = r
    return rows


def human(n):
    for div, suf in ((1000000, "M"), (1000, "k")):
        if n >= div and n % div == 0:
            return f"{n // div}{suf}"
    return str(n)


def fmt(v):
    if v is None:
        return "—"
    if type(v).__name__ == "pct":
        return f"{100 * v:.0f}%"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


class Figures:
    def __init__(self, rows):
        self.rows = rows
        self.sizes = sorted({s for (_, s, _) in rows if s})
        self.kinds = [k for k in KINDS if any(key[0] == k for key in rows)]
        self.drivers = sorted({n[4:] for (_, _, n) in rows if n.startswith("set-") and n != "set-1mib"},
                              key=lambda d: (d != "zkbench", d))

    def get(self, kind, size, name, f):
        r = self.rows.get((kind, size, name))
        if r is None:
            return None
        try:
            v = f(r)
        except (KeyError, TypeError, ZeroDivisionError):
            return None
        return v

    def metrics(self, size):
        """(label, getter, higher_is_better) for one tree size."""
        m = [
            ("fill: znodes/s", lambda r: r["ops"] * r["batch"] / r["seconds"], True),
            ("fill: server CPU per znode (µs)", lambda r: r["server_cpu_us_per_op"] / r["batch"], False),
        ]
        out = [(label, "fill", f, hib) for label, f, hib in m]
        out.append(("RSS per znode (bytes)", "rss-per-znode", lambda r: r["value"], False))
        out.append(("longest snapshot while growing (ms)", "fill", lambda r: r["snapshot_max_ms"], False))
        out.append(("snapshots while growing", "fill", lambda r: r["snapshot_count"], None))
        for d in self.drivers:
            s, g = "set-" + d, "get-" + d
            out += [
                (f"set ({d}): ops/s", s, lambda r: r["ops_per_sec"], True),
                (f"set ({d}): server CPU per op (µs)", s, lambda r: r["server_cpu_us_per_op"], False),
                (f"set ({d}): p99.9 / max (ms)", s, lambda r: (r["latency_us"]["p999"] / 1000, r["latency_us"]["max"] / 1000), False),
                (f"set ({d}): share of the sets in flight while a snapshot was being written", s, lambda r: pct(r["during_snapshot"]["ops"] / r["ops"]), None),
                (f"set ({d}): p99.9 / max outside snapshots (ms)", s, lambda r: window(r, "outside_snapshot"), False),
                (f"set ({d}): p99.9 / max during snapshots (ms)", s, lambda r: window(r, "during_snapshot"), False),
                (f"set ({d}): the client's CPU per op (µs)", s, lambda r: r["client_cpu_us_per_op"], None),
                (f"get ({d}): ops/s", g, lambda r: r["ops_per_sec"], True),
                (f"get ({d}): server CPU per op (µs)", g, lambda r: r["server_cpu_us_per_op"], False),
                (f"get ({d}): the client's CPU per op (µs)", g, lambda r: r["client_cpu_us_per_op"], None),
                (f"get ({d}): p99.9 / max (ms)", g, lambda r: (r["latency_us"]["p999"] / 1000, r["latency_us"]["max"] / 1000), False),
            ]
        out += [
            ("set of 1 MiB: ops/s", "set-1mib", lambda r: r["ops_per_sec"], True),
            ("set of 1 MiB: server CPU per op (µs)", "set-1mib", lambda r: r["server_cpu_us_per_op"], False),
            ("get of 1 MiB: ops/s", "get-1mib", lambda r: r["ops_per_sec"], True),
            ("get of 1 MiB: server CPU per op (µs)", "get-1mib", lambda r: r["server_cpu_us_per_op"], False),
            ("clean stop (s)", "stop-clean", lambda r: r["value"] / 1000, False),
            ("restart after a clean stop until the last znode is readable (s)", "recovery-clean", lambda r: r["elapsed_s"], False),
            ("restart after kill -9 until the last znode is readable (s)", "recovery-kill9", lambda r: r["elapsed_s"], False),
            ("RSS per znode after the restart (bytes)", "rss-after-recovery-kill9", lambda r: r["value"] / size, False),
        ]
        return out


class pct(float):
    pass


def window(r, key):
    w = r.get(key)
    if not w or not w.get("ops"):
        return None
    return (w["latency_us"]["p999"] / 1000, w["latency_us"]["max"] / 1000)


def show(v):
    if isinstance(v, tuple):
        return " / ".join(fmt(x) for x in v)
    return fmt(v)


def ratio(a, b):
    if isinstance(a, tuple) and isinstance(b, tuple):
        return " / ".join(ratio(x, y) for x, y in zip(a, b))
    if a is None or b is None or not b:
        return ""
    return f"{a / b:.2f}x"


def tables(fig):
    lines = []
    for size in fig.sizes:
        lines += [f"### {human(size)} znodes", ""]
        head = "| figure | " + " | ".join(NAMES[k] for k in fig.kinds)
        if len(fig.kinds) == 2:
            head += " | zkd / ZooKeeper"
        lines += [head + " |", "|---" * (len(fig.kinds) + 1 + (len(fig.kinds) == 2)) + "|"]
        for label, name, f, hib in fig.metrics(size):
            vals = [fig.get(k, size, name, f) for k in fig.kinds]
            if all(v is None for v in vals):
                continue
            row = f"| {label} | " + " | ".join(show(v) for v in vals)
            if len(fig.kinds) == 2:
                row += " | " + (ratio(*vals) if hib is not None else "")
            lines.append(row + " |")
        lines.append("")
    return lines


def goals(fig, notes):
    """Issue 28's goals that these runs measure, a row per goal and size."""
    rows = []
    two = len(fig.kinds) == 2

    def add(key, goal, target, a, b, met):
        rows.append((key, goal, target, a, b, met))

    def z(size, name, f):
        return fig.get("zkd", size, name, f)

    def k(size, name, f):
        return fig.get("zookeeper", size, name, f)

    ops = lambda r: r["ops_per_sec"]
    cpu = lambda r: r["server_cpu_us_per_op"]
    for size in fig.sizes:
        h = human(size)
        for d in fig.drivers:
            sfx = "" if d == "zkbench" else "-" + d
            for op, want in (("set", 2), ("get", 3)):
                a, b = z(size, f"{op}-{d}", ops), k(size, f"{op}-{d}", ops)
                if a is not None and b:
                    add(f"{op}-{h}{sfx}", f"{op} throughput at {h} znodes ({d}, ops/s)", f"≥ {want}x", a, b, a / b >= want)
                a, b = z(size, f"{op}-{d}", cpu), k(size, f"{op}-{d}", cpu)
                if a is not None and b:
                    add(f"cpu-{op}-{h}{sfx}", f"server CPU per {op} at {h} znodes ({d}, µs)", "≤ 0.5x", a, b, a / b <= 0.5)
            a = z(size, f"set-{d}", lambda r: window(r, "during_snapshot")[1])
            b = k(size, f"set-{d}", lambda r: window(r, "during_snapshot")[1])
            if a is not None and b:
                add(f"snapmax-{h}{sfx}", f"max set latency during a snapshot at {h} znodes ({d}, ms)", "≤ 1x", a, b, a <= b)
            i = z(size, f"set-{d}", lambda r: window(r, "during_snapshot")[0])
            o = z(size, f"set-{d}", lambda r: window(r, "outside_snapshot")[0])
            if i is not None and o:
                rows.append((f"snapp999-{h}{sfx}", f"zkd's set p99.9 during / outside snapshots at {h} znodes ({d}, ms)",
                             "within 10%", i, o, abs(i / o - 1) <= 0.10))
        for how, label in (("clean", "a clean stop"), ("kill9", "kill -9")):
            a, b = z(size, f"recovery-{how}", lambda r: r["elapsed_s"]), k(size, f"recovery-{how}", lambda r: r["elapsed_s"])
            if a is not None and b:
                add(f"restart-{how}-{h}", f"restart after {label} at {h} znodes (s)", "≤ 0.1x", a, b, a / b <= 0.1)
        a = z(size, "rss-per-znode", lambda r: r["value"])
        if a is not None and size >= 10000000:
            b = k(size, "rss-per-znode", lambda r: r["value"])
            rows.append((f"rss-{h}", f"RSS per znode at {h} znodes (bytes)", "≤ 150 B", a, b, a <= 150))
        if size >= 10000000:
            a = z(size, "fill", lambda r: r["snapshot_max_ms"])
            b = k(size, "fill", lambda r: r["snapshot_max_ms"])
            if a is not None and b:
                add(f"snapshot-{h}", f"longest snapshot while growing to {h} znodes (ms)", "≤ 0.5x", a, b, a / b <= 0.5)
            fill = lambda r: r["ops"] * r["batch"] / r["seconds"]
            a, b = z(size, "fill", fill), k(size, "fill", fill)
            if a is not None and b:
                add(f"fill-{h}", f"fill rate growing to {h} znodes (znodes/s)", "≥ 2x", a, b, a / b >= 2)
    first = fig.sizes[0] if fig.sizes else 0
    for op in ("set", "get"):
        a, b = z(first, f"{op}-1mib", ops), k(first, f"{op}-1mib", ops)
        if a is not None and b:
            add(f"{op}-1mib", f"{op} of 1 MiB values (ops/s)", "≥ 1.5x", a, b, a / b >= 1.5)
    if len(fig.sizes) > 1:
        last = fig.sizes[-1]
        for d in fig.drivers:
            for op in ("set", "get"):
                a, b = z(last, f"{op}-{d}", ops), z(first, f"{op}-{d}", ops)
                if a is not None and b:
                    rows.append((f"own-{op}-{human(last)}", f"zkd's {op} at {human(last)} against its own at {human(first)} znodes ({d}, ops/s)",
                                 "≥ 0.5x", a, b, a / b >= 0.5))
    lines = ["| goal | target | zkd | " + ("ZooKeeper (or zkd's own)" if two else "zkd's own") + " | ratio | met | why |",
             "|---|---|---|---|---|---|---|"]
    for key, goal, target, a, b, met in rows:
        r = f"{a / b:.2f}x" if b and target not in ("≤ 150 B", "within 10%", "≤ 1x") else ""
        if target == "within 10%" and b:
            r = f"{a / b:.2f}x"
        if target == "≤ 1x" and b:
            r = f"{a / b:.2f}x"
        lines.append(f"| {goal} | {target} | {fmt(a)} | {fmt(b)} | {r} | {'yes' if met else 'no'} | {notes.get(key, '')} |")
    return lines


def main():
    path = sys.argv[1]
    notes_path = sys.argv[2] if len(sys.argv) > 2 else path[: -len(".jsonl")] + ".notes"
    notes = {}
    if os.path.exists(notes_path):
        for line in open(notes_path):
            if ":" in line and not line.startswith("#"):
                key, text = line.split(":", 1)
                notes[key.strip()] = text.strip()
    fig = Figures(load(path))
    print("## Goals")
    print()
    print("\n".join(goals(fig, notes)))
    print()
    print("## Figures")
    print()
    print("\n".join(tables(fig)))


if __name__ == "__main__":
    main()
