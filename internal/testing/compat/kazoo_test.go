package compat

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/needs"
)

// kazooScript prints one line per observation; zxids relative to the first node's czxid,
// session ids as names.
const kazooScript = `
import queue, sys
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl, OPEN_ACL_UNSAFE

addr = sys.argv[1]
events = queue.Queue()

def watcher(ev):
    events.put("%s %s" % (ev.type, ev.path))

def event():
    try:
        return events.get(timeout=30)
    except queue.Empty:
        return "no event within 30s"

def connect():
    c = KazooClient(hosts=addr, timeout=20)
    c.start(timeout=30)
    return c

zk, zk2 = connect(), connect()
owners = {0: "0", zk.client_id[0]: "zk", zk2.client_id[0]: "zk2"}
base = [0]

def z(v):
    return str(v) if v <= 0 else "z%+d" % (v - base[0])

def st(s):
    return "{cz=%s mz=%s pz=%s v=%d cv=%d av=%d eph=%s len=%d nc=%d}" % (
        z(s.czxid), z(s.mzxid), z(s.pzxid), s.version, s.cversion, s.aversion,
        owners.get(s.ephemeralOwner, "unknown"), s.dataLength, s.numChildren)

def run(name, f):
    try:
        r = f()
    except Exception as e:
        r = "raised " + type(e).__name__
    print("%s: %s" % (name, r), flush=True)

zk.create("/kz", b"root")
base[0] = zk.exists("/kz").czxid - 1
run("create again", lambda: zk.create("/kz"))
run("create sequential", lambda: zk.create("/kz/s-", b"", sequence=True))
run("create sequential", lambda: zk.create("/kz/s-", b"", sequence=True))
run("create ephemeral", lambda: zk2.create("/kz/e", b"eph", ephemeral=True))
run("create deep", lambda: zk.create("/kz/a/b/c", b"deep", makepath=True))
run("create null data", lambda: zk.create("/kz/null", None))
run("get null data", lambda: zk.get("/kz/null")[0])
run("get", lambda: (lambda d: (d[0], st(d[1])))(zk.get("/kz")))
run("set", lambda: st(zk.set("/kz", b"v1", version=0)))
run("set stale", lambda: st(zk.set("/kz", b"v2", version=0)))
run("get ephemeral", lambda: st(zk.get("/kz/e")[1]))
run("children", lambda: sorted(zk.get_children("/kz")))
run("children with stat", lambda: (lambda r: (sorted(r[0]), st(r[1])))(zk.get_children("/kz", include_data=True)))
run("exists missing", lambda: zk.exists("/kz/none"))
run("delete non-empty", lambda: zk.delete("/kz/a"))
run("delete recursive", lambda: zk.delete("/kz/a", recursive=True))

run("get watch", lambda: zk.get("/kz", watch=watcher)[0])
run("zk2 set", lambda: st(zk2.set("/kz", b"by zk2")))
print("event:", event(), flush=True)
run("children watch", lambda: sorted(zk.get_children("/kz", watch=watcher)))
run("exists watch", lambda: zk.exists("/kz/w", watch=watcher))
run("zk2 create", lambda: zk2.create("/kz/w", b""))
print("event:", event(), flush=True)
print("event:", event(), flush=True)

t = zk.transaction()
t.create("/kz/t1", b"1")
t.set_data("/kz/t1", b"2", version=0)
t.check("/kz/t1", 1)
t.create("/kz/tseq-", b"", sequence=True)
t.delete("/kz/w")
run("transaction", lambda: [st(r) if hasattr(r, "czxid") else r for r in t.commit()])
t = zk.transaction()
t.create("/kz/t2", b"")
t.check("/kz/t1", 9)
t.delete("/kz/t1")
run("failing transaction", lambda: [type(r).__name__ for r in t.commit()])
run("t2 after failed transaction", lambda: zk.exists("/kz/t2"))

zk.add_auth("digest", "kz:pw")
run("create digest", lambda: zk.create("/kz/priv", b"p", acl=[make_digest_acl("kz", "pw", all=True)]))
run("acl owner", lambda: [str(a) for a in zk.get_acls("/kz/priv")[0]])
run("get other", lambda: zk2.get("/kz/priv"))
run("set acl", lambda: st(zk.set_acls("/kz/priv", OPEN_ACL_UNSAFE, version=0)))
run("sync", lambda: zk.sync("/kz"))

run("children watch", lambda: sorted(zk.get_children("/kz", watch=watcher)))
run("ephemeral watch", lambda: st(zk.exists("/kz/e", watch=watcher)))
zk2.stop()
zk2.close()
print("event:", event(), flush=True)
print("event:", event(), flush=True)
run("children", lambda: sorted(zk.get_children("/kz")))
run("stat", lambda: st(zk.exists("/kz")))
zk.stop()
zk.close()
print("done", flush=True)
`

// testKazoo runs a small kazoo (Python) script against both servers and compares its output.
// It needs kazoo installed for Debian's python3 (needs.Kazoo).
func testKazoo(t *testing.T, targets []target) {
	python := needs.Kazoo(t)
	script := filepath.Join(t.TempDir(), "kazoo_script.py")
	if err := os.WriteFile(script, []byte(kazooScript), 0o644); err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, tgt := range targets {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, python, script, tgt.addr)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
		if err != nil || len(lines) == 0 || lines[len(lines)-1] != "done" {
			t.Fatalf("kazoo script against %s: %v\nstdout:\n%s\nstderr:\n%s", tgt.name, err, stdout.String(), stderr.String())
		}
		got = append(got, lines)
	}
	compareLines(t, targets, got)
}
