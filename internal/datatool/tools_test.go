package datatool

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/jute"
)

func copyTestdata(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "zk38", name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// entryOffsets lists the offsets of a log's entries.
func entryOffsets(t *testing.T, path string) []int64 {
	t.Helper()
	var offs []int64
	if _, err := storage.ScanLogFile(storage.OSFS{}, path, false, func(e storage.LogEntry) error {
		offs = append(offs, e.Offset)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return offs
}

func TestRepairTornTail(t *testing.T) {
	dir := t.TempDir()
	p := copyTestdata(t, dir, "log.1")
	orig, _ := os.ReadFile(p)
	offs := entryOffsets(t, p)
	// A crash mid-append: the last entry's first half, no zeros after it.
	last := offs[len(offs)-1]
	tornFull := append(append([]byte(nil), orig[:len(orig)-13]...), orig[last:last+30]...)
	if err := os.WriteFile(p, tornFull, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Verify(&out, dir); !errors.Is(err, ErrProblems) || !strings.Contains(out.String(), "torn tail") {
		t.Fatalf("verify of a torn log: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := Repair(&out, p, RepairOptions{}); err != nil {
		t.Fatalf("repair: %v\n%s", err, out.String())
	}
	bak, err := os.ReadFile(p + ".bak")
	if err != nil || !bytes.Equal(bak, tornFull) {
		t.Fatalf("backup: %v (%d bytes, want %d)", err, len(bak), len(tornFull))
	}
	got, _ := os.ReadFile(p)
	if !bytes.Equal(got, orig[:len(orig)-13]) {
		t.Fatalf("repaired log is %d bytes, want the %d before the torn entry", len(got), len(orig)-13)
	}
	// The repaired log dumps as the original did, and a server's recovery reads it whole.
	out.Reset()
	if err := DumpLog(&out, p, Options{Loc: time.UTC}); err != nil {
		t.Fatal(err)
	}
	diffText(t, "repaired log.1", out.String(), golden(t, "log.1.txt"))
	os.Remove(p + ".bak")
	out.Reset()
	if err := Verify(&out, dir); err != nil {
		t.Fatalf("verify after repair: %v\n%s", err, out.String())
	}
	n := 0
	if _, err := storage.ReadLog(storage.OSFS{}, dir, 0, func(int64, []byte) error { n++; return nil }); err != nil || n != len(offs) {
		t.Fatalf("ReadLog after repair: %d txns, %v", n, err)
	}
	// A second repair has nothing to do and takes no backup.
	out.Reset()
	if err := Repair(&out, p, RepairOptions{}); err != nil || !strings.Contains(out.String(), "nothing to repair") {
		t.Fatalf("second repair: %v %s", err, out.String())
	}
	if _, err := os.Stat(p + ".bak"); !os.IsNotExist(err) {
		t.Fatalf("a clean log got a backup: %v", err)
	}
}

func TestRepairChecksum(t *testing.T) {
	dir := t.TempDir()
	p := copyTestdata(t, dir, "log.1")
	orig, _ := os.ReadFile(p)
	offs := entryOffsets(t, p)
	// Flip a byte of entry 5's txn (past checksum and length), keeping its structure.
	bad := append([]byte(nil), orig...)
	bad[offs[5]+12+20] ^= 0x01
	os.WriteFile(p, bad, 0o644)

	var out bytes.Buffer
	err := DumpLog(&out, p, Options{Loc: time.UTC})
	if err != nil || strings.Count(out.String(), "CRC ERROR - ") != 1 {
		t.Fatalf("dump of a log with a bad checksum: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := Verify(&out, dir); !errors.Is(err, ErrProblems) || !strings.Contains(out.String(), "1 checksum mismatches") {
		t.Fatalf("verify: %v\n%s", err, out.String())
	}

	// Without --fix-crc the log is cut before the bad entry, as recovery would.
	out.Reset()
	if err := Repair(&out, p, RepairOptions{}); err != nil {
		t.Fatalf("repair: %v\n%s", err, out.String())
	}
	if got := entryOffsets(t, p); len(got) != 5 {
		t.Fatalf("after cutting: %d entries, want 5", len(got))
	}
	if b, _ := os.ReadFile(p + ".bak"); !bytes.Equal(b, bad) {
		t.Fatal("backup is not the damaged original")
	}
	// A leftover backup is never overwritten.
	os.WriteFile(p, bad, 0o644)
	if err := Repair(&out, p, RepairOptions{}); err == nil {
		t.Fatal("repair overwrote an existing backup")
	}
	os.Remove(p + ".bak")

	// With --fix-crc every entry stays and the checksum is recomputed.
	out.Reset()
	if err := Repair(&out, p, RepairOptions{FixCRC: true}); err != nil {
		t.Fatalf("repair --fix-crc: %v\n%s", err, out.String())
	}
	if got := entryOffsets(t, p); len(got) != len(offs) {
		t.Fatalf("after fixing: %d entries, want %d", len(got), len(offs))
	}
	fixed, _ := os.ReadFile(p)
	if len(fixed) != len(orig) {
		t.Fatalf("fixing changed the size: %d, want %d", len(fixed), len(orig))
	}
	out.Reset()
	if err := Verify(&out, dir); err != nil {
		// The .bak is not a log name, so only log.1 is checked.
		t.Fatalf("verify after fixing: %v\n%s", err, out.String())
	}
}

func TestRepairCorruptLength(t *testing.T) {
	dir := t.TempDir()
	p := copyTestdata(t, dir, "log.24")
	offs := entryOffsets(t, p)
	b, _ := os.ReadFile(p)
	b[offs[3]+8] = 0x80 // negative length: corruption, not a torn write
	os.WriteFile(p, b, 0o644)
	var out bytes.Buffer
	if err := DumpLog(&out, p, Options{Loc: time.UTC}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("dump of a corrupt log: %v", err)
	}
	if err := Repair(&out, p, RepairOptions{FixCRC: true}); err != nil {
		t.Fatal(err)
	}
	if got := entryOffsets(t, p); len(got) != 3 {
		t.Fatalf("after repair: %d entries, want 3", len(got))
	}
	// Not a log at all: refused.
	os.WriteFile(p, []byte("not a txn log at all, sorry"), 0o644)
	os.Remove(p + ".bak")
	if err := Repair(&out, p, RepairOptions{}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("repair of a non-log: %v", err)
	}
}

func TestDiffAndSummary(t *testing.T) {
	a := filepath.Join("testdata", "zk38", "snapshot.39.snappy")
	b := filepath.Join("testdata", "zk38", "snapshot.48")
	var out bytes.Buffer
	if err := Diff(&out, b, b); err != nil || out.Len() != 0 {
		t.Fatalf("diff of a snapshot with itself: %v %q", err, out.String())
	}
	err := Diff(&out, a, b)
	if !errors.Is(err, ErrDiffer) {
		t.Fatalf("diff: %v", err)
	}
	for _, want := range []string{"- /bulk/n000\n", "+ /e2\n", "+ /ttl\n", "~ /: pzxid 0xd -> 0x46, cversion 5 -> 8\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("diff lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := Summary(&out, b, 1, 2); err != nil {
		t.Fatal(err)
	}
	want := "nodes 66, data bytes 1241, ephemerals 3, sessions 5, ACL lists 3\n" +
		"digest 136372677179 at zxid 0x48\n" +
		"       nodes     data bytes  subtree (depth 1)\n" +
		"          50           1225  /bulk\n" +
		"           5             10  /app\n"
	if out.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", out.String(), want)
	}
	for _, c := range []struct {
		p     string
		depth int
		want  string
	}{{"/a", 1, "/a"}, {"/a/b/c", 1, "/a"}, {"/a/b/c", 2, "/a/b"}, {"/a/b", 5, "/a/b"}} {
		if got := subtreeKey(c.p, c.depth); got != c.want {
			t.Errorf("subtreeKey(%q, %d) = %q, want %q", c.p, c.depth, got, c.want)
		}
	}
}

// zkdFiles writes a log and a snapshot with zkd's storage package: data Java has to
// escape or replace, every txn type the toolkit formats, and a parent with enough
// children for its HashSet to resize several times.
func zkdFiles(t *testing.T) (logPath, snapPath string) {
	t.Helper()
	dir := t.TempDir()
	l, err := storage.OpenLog(storage.OSFS{}, dir, storage.LogOptions{PreAllocSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	world := []jute.ACL{{Perms: 31, ID: jute.ID{Scheme: "world", ID: "anyone"}}}
	digestACL := []jute.ACL{{Perms: 1, ID: jute.ID{Scheme: "digest", ID: "u:x,y}%"}}, {Perms: 16, ID: jute.ID{Scheme: "ip", ID: "127.0.0.1"}}}
	enc := func(r jute.Record) []byte { var e jute.Encoder; r.Encode(&e); return e.Buf }
	bodies := []struct {
		op   jute.OpCode
		body jute.Record
	}{
		{jute.OpCreateSession, &jute.CreateSessionTxn{TimeOut: 30000}},
		{jute.OpCreate, &jute.CreateTxn{Path: "/a", Data: []byte("x,y\n%}\x00\xff\xe2\x82end"), ACL: world, ParentCVersion: 1}},
		{jute.OpCreate, &jute.CreateTxn{Path: "/a/é", Data: nil, ACL: digestACL, Ephemeral: true, ParentCVersion: 1}},
		{jute.OpSetData, &jute.SetDataTxn{Path: "/a", Data: []byte("\x80\x05"), Version: 1}},
		{jute.OpSetACL, &jute.SetACLTxn{Path: "/a,b%", ACL: digestACL, Version: 2}},
		{jute.OpCreateContainer, &jute.CreateContainerTxn{Path: "/c", Data: []byte("c"), ACL: world, ParentCVersion: 2}},
		{jute.OpCreateTTL, &jute.CreateTTLTxn{Path: "/t", Data: []byte{}, ACL: world, ParentCVersion: 3, TTL: 5000}},
		{jute.OpDelete, &jute.DeleteTxn{Path: "/t"}},
		{jute.OpError, &jute.ErrorTxn{Err: -110}},
		{jute.OpMulti, &jute.MultiTxn{Txns: []jute.Txn{
			{Type: jute.OpCheck, Data: enc(&jute.CheckVersionTxn{Path: "/a", Version: 2})},
			{Type: jute.OpSetData, Data: enc(&jute.SetDataTxn{Path: "/a", Data: []byte("m"), Version: 3})},
			{Type: jute.OpDelete, Data: enc(&jute.DeleteTxn{Path: "/c"})},
		}}},
		{jute.OpCloseSession, &jute.CloseSessionTxn{Paths2Delete: []string{"/a/é", "/x,y"}}},
		{jute.OpReconfig, &jute.SetDataTxn{Path: "/zookeeper/config", Data: []byte("server.1=127.0.0.1:1:2\nversion=1"), Version: -1}},
	}
	zxid := int64(0x100000000)
	for i, b := range bodies {
		zxid++
		var e jute.Encoder
		hdr := jute.TxnHeader{ClientID: 0x1000001234abcd, Cxid: int32(i) - 1, Zxid: zxid, Time: 1795608584385 + int64(i)*3600_000*7, Type: b.op}
		hdr.Encode(&e)
		b.body.Encode(&e)
		if i%2 == 0 { // some with the 3.6+ digest trailer, some without
			(&jute.TxnDigest{Version: 2, TreeDigest: int64(i)}).Encode(&e)
		}
		if err := l.Append(zxid, e.Buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	l.Close()

	w, err := storage.NewSnapshotWriter(storage.OSFS{}, dir, 0x100000005)
	if err != nil {
		t.Fatal(err)
	}
	st := func(z int64) jute.StatPersisted {
		return jute.StatPersisted{Czxid: z, Mzxid: z, Pzxid: z, Ctime: 1795608584385 + z*1000, Mtime: 1795608584385 - z*77777, Version: int32(z % 3)}
	}
	nodes := []storage.SnapNode{
		{Path: "", Data: nil, ACLKey: -1},
		{Path: "/zookeeper", ACLKey: -1},
		{Path: "/zookeeper/quota", ACLKey: -1},
		{Path: "/many", Data: []byte("m"), ACLKey: 1, Stat: st(3)},
	}
	for i := 0; i < 300; i++ {
		name := fmt.Sprintf("/many/n-%d", i*7919%1000)
		if i%3 == 0 {
			name = fmt.Sprintf("/many/lock-%010d", i)
		}
		s := st(int64(4 + i))
		if i%50 == 0 {
			s.EphemeralOwner = 0x1000001234abcd + int64(i%100)
		}
		nodes = append(nodes, storage.SnapNode{Path: name, Data: bytes.Repeat([]byte{'z'}, i%5), ACLKey: -1, Stat: s})
	}
	nodes = append(nodes, storage.SnapNode{Path: "/é,x", Data: []byte("\xff"), ACLKey: 2, Stat: st(400)})
	if err := w.WriteNodes(nodes); err != nil {
		t.Fatal(err)
	}
	var sessions []storage.SnapSession
	for i := int64(0); i < 40; i++ {
		sessions = append(sessions, storage.SnapSession{ID: 0x1000001234abcd + i*0x10000000001, Timeout: int32(4000 + i)})
	}
	sessions = append(sessions, storage.SnapSession{ID: 0x1000001234abcd + 50, Timeout: 9})
	if err := w.Finish(sessions, map[int64][]jute.ACL{1: world, 2: digestACL}, 0x100000005, 99); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, storage.LogName(0x100000001)), filepath.Join(dir, storage.SnapName(0x100000005))
}

// javaTool runs one of ZooKeeper's tool classes and returns its standard output.
func javaTool(t *testing.T, class string, args ...string) string {
	t.Helper()
	refzk.Require(t)
	cp := os.Getenv(refzk.EnvClassPath)
	if cp == "" {
		var jars []string
		for _, j := range []string{"zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-log4j12.jar", "log4j-1.2.jar"} {
			jars = append(jars, filepath.Join("/usr/share/java", j))
		}
		cp = strings.Join(jars, ":")
	}
	cmd := exec.Command("java", append([]string{"-Duser.timezone=UTC", "-Duser.language=en", "-Duser.country=US",
		"-XX:-UsePerfData", "-Xmx256m", "-XX:+UseSerialGC", "-cp", cp, class}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", class, err, stderr.String())
	}
	return stdout.String()
}

// TestZkdFilesMatchJavaTools dumps files zkd's storage wrote with zkd's tools and with
// ZooKeeper's, and wants the same text.
func TestZkdFilesMatchJavaTools(t *testing.T) {
	logPath, snapPath := zkdFiles(t)
	var out bytes.Buffer
	if err := DumpLog(&out, logPath, Options{Loc: time.UTC}); err != nil {
		t.Fatal(err)
	}
	gotLog := out.String()
	out.Reset()
	if err := DumpSnapshot(&out, snapPath, Options{Loc: time.UTC}); err != nil {
		t.Fatal(err)
	}
	gotSnap := out.String()
	out.Reset()
	if err := DumpSnapshot(&out, snapPath, Options{Loc: time.UTC, Data: true}); err != nil {
		t.Fatal(err)
	}
	gotSnapData := out.String()

	diffText(t, "zkd log", gotLog, javaTool(t, "org.apache.zookeeper.server.persistence.TxnLogToolkit", logPath))
	diffText(t, "zkd snapshot", gotSnap, javaTool(t, "org.apache.zookeeper.server.SnapshotFormatter", snapPath))
	diffText(t, "zkd snapshot -d", gotSnapData, javaTool(t, "org.apache.zookeeper.server.SnapshotFormatter", "-d", snapPath))

	// The same snapshot through zkd's snappy writer reads the same in both.
	raw, err := os.ReadFile(snapPath)
	if err != nil {
		t.Fatal(err)
	}
	var zb bytes.Buffer
	sw := storage.NewSnappyWriter(&zb)
	sw.Write(raw)
	sw.Close()
	snappyPath := snapPath + ".snappy"
	os.WriteFile(snappyPath, zb.Bytes(), 0o644)
	out.Reset()
	if err := DumpSnapshot(&out, snappyPath, Options{Loc: time.UTC}); err != nil {
		t.Fatal(err)
	}
	if out.String() != gotSnap {
		t.Error("the snappy copy dumps differently from the original")
	}
	diffText(t, "zkd snappy snapshot", gotSnap, javaTool(t, "org.apache.zookeeper.server.SnapshotFormatter", snappyPath))
}
