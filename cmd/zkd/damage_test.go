package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/storage"
)

// dirDigest is every file under dir with a hash of its bytes, to tell whether anything changed.
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || info.Name() == storage.LockName {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s %x", path, sha256.Sum256(b)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// logEntries lists the entries of the log files in a data directory's version-2, with the
// file each is in.
type logEntry struct {
	file string
	off  int64
	zxid int64
	size int
}

func logEntries(t *testing.T, dataDir string) []logEntry {
	t.Helper()
	vdir := filepath.Join(dataDir, "version-2")
	names, err := os.ReadDir(vdir)
	if err != nil {
		t.Fatal(err)
	}
	var out []logEntry
	for _, n := range names {
		if _, ok := storage.ParseLogName(n.Name()); !ok {
			continue
		}
		path := filepath.Join(vdir, n.Name())
		_, err := storage.ScanLogFile(storage.OSFS{}, path, false, func(e storage.LogEntry) error {
			out = append(out, logEntry{path, e.Offset, e.Zxid, len(e.Txn)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].zxid < out[j].zxid })
	return out
}

func patchFile(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func flipBit(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

func createChildren(t *testing.T, c *zk.Conn, n int) {
	t.Helper()
	if _, err := c.Create("/g", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := c.Create(fmt.Sprintf("/g/c%03d", i), []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDamagedLogStopsStandalone is issue 25's first case on a real process: 100 creates
// acknowledged, kill -9, one bit flipped in the body of the 21st log entry (or its length
// set to 0x7fffffff). zkd must refuse to start, naming the file, the offset and the zxids at
// stake, and change no file; `zkd tool repair DIR` then cuts the log there, keeping the
// originals, and the server starts on what is left.
func TestDamagedLogStopsStandalone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, e logEntry)
	}{
		{"bit flip in the body", func(t *testing.T, e logEntry) { flipBit(t, e.file, e.off+12+int64(e.size)/2) }},
		{"length 0x7fffffff", func(t *testing.T, e logEntry) { patchFile(t, e.file, e.off+8, []byte{0x7f, 0xff, 0xff, 0xff}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			port := freePort(t)
			p := startZkd(t, dir, port)
			createChildren(t, connectZK(t, p.addr), 100)
			p.kill()

			es := logEntries(t, dir)
			if len(es) < 60 {
				t.Fatalf("%d log entries after 101 creates", len(es))
			}
			bad := es[20]
			tc.damage(t, bad)
			before := dirDigest(t, dir)

			p2 := spawn(t, fmt.Sprintf("127.0.0.1:%d", port), []string{"--addr", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", dir, "--log-level", "warn"})
			if err := p2.Wait(2 * time.Minute); err != nil {
				t.Fatalf("zkd did not stop on a damaged log: %v\n%s", err, p2.logText())
			}
			out := p2.logText()
			if p2.ExitCode() == 0 {
				t.Fatalf("zkd exited 0 on a damaged log:\n%s", out)
			}
			for _, want := range []string{
				"txn log damaged", bad.file, fmt.Sprintf("at offset %d", bad.off),
				fmt.Sprintf("last valid zxid before it %#x", es[19].zxid),
				fmt.Sprintf("(zxid %#x..%#x)", es[21].zxid, es[len(es)-1].zxid),
				"zkd tool verify", "zkd tool repair", "nothing was changed",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("the refusal does not say %q:\n%s", want, out)
				}
			}
			if after := dirDigest(t, dir); after != before {
				t.Fatalf("a refused start changed the data directory:\nbefore\n%s\nafter\n%s", before, after)
			}

			// The operator accepts the loss.
			var stdout, stderr bytes.Buffer
			if err := runTool([]string{"repair", dir}, &stdout, &stderr); err != nil {
				t.Fatalf("repair: %v\n%s%s", err, stdout.String(), stderr.String())
			}
			kept, _ := filepath.Glob(filepath.Join(dir, "version-2", "damaged.*"))
			if len(kept) == 0 {
				t.Fatalf("repair kept no original:\n%s", stdout.String())
			}
			orig, err := os.ReadFile(kept[0])
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(before, fmt.Sprintf("%s %x", bad.file, sha256.Sum256(orig))) {
				t.Fatalf("%s is not the damaged file as it was", kept[0])
			}
			p3 := startZkd(t, dir, port)
			kids, _, err := connectZK(t, p3.addr).Children("/g")
			if err != nil {
				t.Fatal(err)
			}
			// es[0] is the session, es[1] /g: the children before the damage are left.
			if len(kids) != 18 {
				t.Fatalf("after repair /g has %d children, want the 18 before the damage", len(kids))
			}
			p3.stop(t)
		})
	}
}

// TestDamagedMemberRefills is issue 25's ensemble case on real processes: one follower
// paused while 100 creates are acknowledged by the other two, all killed, and the other
// follower's data damaged: one bit flipped in the middle of its log (the case),
// every snapshot it has unreadable, or its currentEpoch garbled. That member and the paused
// one must not form a quorum that lacks the writes; when the old leader returns, the three
// serve and every one has all 100.
func TestDamagedMemberRefills(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dataDir string)
		logs   string // what the damaged member says
	}{
		{"bit flip in the middle of the log", func(t *testing.T, dataDir string) {
			var creates []logEntry
			for _, le := range logEntries(t, dataDir) {
				if le.size > 40 {
					creates = append(creates, le)
				}
			}
			if len(creates) < 100 {
				t.Fatalf("the damaged member logged %d creates", len(creates))
			}
			bad := creates[len(creates)/2]
			flipBit(t, bad.file, bad.off+12+int64(bad.size)/2)
		}, "damaged txn log"},
		{"every snapshot unreadable", func(t *testing.T, dataDir string) {
			snaps, _ := filepath.Glob(filepath.Join(dataDir, "version-2", "snapshot.*"))
			if len(snaps) == 0 {
				t.Fatal("no snapshot")
			}
			for _, sn := range snaps {
				st, err := os.Stat(sn)
				if err != nil {
					t.Fatal(err)
				}
				flipBit(t, sn, st.Size()/2)
			}
		}, "no snapshot can be read"},
		{"currentEpoch garbled", func(t *testing.T, dataDir string) {
			if err := os.WriteFile(filepath.Join(dataDir, "version-2", "currentEpoch"), []byte("1\x00"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "damaged epoch files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startProcEnsemble(t, 3, 200)
			leader := e.leader()
			var followers []int
			for i := range e.procs {
				if i != leader {
					followers = append(followers, i)
				}
			}
			paused, damaged := followers[0], followers[1]
			e.procs[paused].Signal(syscall.SIGSTOP)
			c := connectAll(t, []string{e.addrs[leader]})
			createChildren(t, c, 100)
			c.Close()
			for _, p := range e.procs {
				p.kill()
			}
			tc.damage(t, e.dirs[damaged])

			e.start(damaged)
			e.start(paused)
			// They must not serve without the member that holds every write: watch long
			// enough for several election rounds (ticks of 200 ms, a finalize wait of 200 ms).
			waitLog(t, e.procs[damaged], tc.logs)
			for end := time.Now().Add(8 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				for _, i := range []int{damaged, paused} {
					if m := e.procs[i].mode(); m == "leader" || m == "follower" {
						t.Fatalf("server %d serves as %s without the member holding every write:\n%s", i+1, m, tail(e.procs[i].logText(), 30))
					}
				}
			}
			e.start(leader)
			e.waitQuorum(3)
			for i, addr := range e.addrs {
				c := connectAll(t, []string{addr})
				if _, err := c.Sync("/g"); err != nil {
					t.Fatalf("server %d: sync: %v", i+1, err)
				}
				kids, _, err := c.Children("/g")
				if err != nil || len(kids) != 100 {
					t.Fatalf("server %d: /g has %d children (%v), want 100", i+1, len(kids), err)
				}
				c.Close()
			}
			waitLog(t, e.procs[damaged], "refilled by the leader")
			vdir := filepath.Join(e.dirs[damaged], "version-2")
			if _, err := os.Stat(filepath.Join(vdir, storage.DamageMark)); !os.IsNotExist(err) {
				t.Fatalf("the damage mark is still there after the refill: %v", err)
			}
			if tc.logs != "damaged epoch files" {
				if kept, _ := filepath.Glob(filepath.Join(vdir, "damaged.*")); len(kept) == 0 {
					t.Fatal("the damaged member kept no original of what it set aside")
				}
			}
		})
	}
}

// waitLog waits until p's output holds s.
func waitLog(t *testing.T, p *proc, s string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(p.logText(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log within 60s:\n%s", s, tail(p.logText(), 30))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSecondProcessOnDataDirRefused: a second zkd started on a live server's data directory
// refuses to start, naming the first one's pid, and writes nothing there.
func TestSecondProcessOnDataDirRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	p := startZkd(t, dir, freePort(t))
	createChildren(t, connectZK(t, p.addr), 3)
	before := dirDigest(t, filepath.Join(dir, "version-2"))
	port2 := freePort(t)
	p2 := spawn(t, fmt.Sprintf("127.0.0.1:%d", port2), []string{"--addr", fmt.Sprintf("127.0.0.1:%d", port2), "--data-dir", dir, "--log-level", "warn"})
	if err := p2.Wait(2 * time.Minute); err != nil {
		t.Fatalf("a second zkd on a live data directory did not stop: %v\n%s", err, p2.logText())
	}
	if out := p2.logText(); p2.ExitCode() == 0 || !strings.Contains(out, fmt.Sprintf("locked by process %d", p.PID())) {
		t.Fatalf("exit %d, want a refusal naming pid %d:\n%s", p2.ExitCode(), p.PID(), out)
	}
	// Nor may zkd tool repair touch it while it runs.
	var out, errOut bytes.Buffer
	if err := runTool([]string{"repair", dir}, &out, &errOut); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("locked by process %d", p.PID())) {
		t.Fatalf("repair on a live data directory: %v, want a refusal naming pid %d", err, p.PID())
	}
	if after := dirDigest(t, filepath.Join(dir, "version-2")); after != before {
		t.Fatalf("the refused zkd changed the data directory")
	}
	// The first one still serves, and a restart after it stops takes the directory.
	if _, err := connectZK(t, p.addr).Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p.stop(t)
	p3 := startZkd(t, dir, port2)
	if ok, _, err := connectZK(t, p3.addr).Exists("/after"); err != nil || !ok {
		t.Fatalf("/after after the restart: %v %v", ok, err)
	}
	p3.stop(t)
}

// TestDiskErrorsLoseNothing runs a standalone zkd whose disk fails at a storage failpoint
// (ZKD_FAILPOINTS: EIO, ENOSPC or a torn write at the log's, snapshots' or directory's
// writes, fsyncs and renames) under a create load, then restarts it on the healthy disk:
// every create it acknowledged must be there. A log failure stops the server (ZooKeeper's
// rule too); a failed snapshot is logged and the log keeps everything.
func TestDiskErrorsLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, spec := range []string{
		"log.write=eio@40", "log.sync=enospc@30", "log.write=torn@35", "log.create=eio@3",
		"snap.write=eio@12", "snap.create=eio@3", "snap.sync=enospc@2", "snap.rename=eio@2", "dir.sync=eio@4",
	} {
		t.Run(spec, func(t *testing.T) {
			dir := t.TempDir()
			port := freePort(t)
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			cfg := filepath.Join(dir, "zoo.cfg")
			text := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nsnapCount=20\npreAllocSize=16\n",
				filepath.Join(dir, "data"), port)
			if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			p := spawnEnv(t, addr, []string{"--config", cfg, "--log-level", "info"}, []string{failpointsEnv + "=" + spec})
			p.waitMode(t, func(m string) bool { return m == "standalone" })
			c := connectZK(t, addr)
			var acked []string
			for i := 0; i < 400; i++ {
				path := fmt.Sprintf("/k%04d", i)
				if _, err := c.Create(path, []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
					break
				}
				acked = append(acked, path)
			}
			c.Close()
			// The server logs the failure after its client may have seen it: wait for the line.
			waitLog(t, p, "injected fault")
			p.kill()
			p2 := spawn(t, addr, []string{"--config", cfg, "--log-level", "warn"})
			p2.waitMode(t, func(m string) bool { return m == "standalone" })
			c2 := connectZK(t, addr)
			for _, path := range acked {
				if ok, _, err := c2.Exists(path); err != nil || !ok {
					t.Fatalf("acknowledged %s lost after %s (%d acknowledged): %v %v", path, spec, len(acked), ok, err)
				}
			}
			t.Logf("%s: %d creates acknowledged, all kept", spec, len(acked))
			p2.stop(t)
		})
	}
}
