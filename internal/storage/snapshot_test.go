package storage

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

// snapContents is everything a snapshot holds, collected by a SnapshotHandler.
type snapContents struct {
	sessions []SnapSession
	acls     map[int64][]jute.ACL
	aclOrder []int64
	nodes    []SnapNode
	digest   *SnapDigest
	lastZxid *int64
}

func (c *snapContents) handler() SnapshotHandler {
	c.acls = map[int64][]jute.ACL{}
	return SnapshotHandler{
		Session: func(s SnapSession) error { c.sessions = append(c.sessions, s); return nil },
		ACL: func(k int64, a []jute.ACL) error {
			c.acls[k] = a
			c.aclOrder = append(c.aclOrder, k)
			return nil
		},
		Node: func(n SnapNode) error {
			// A reader may hash the node while decoding (SnapNode.Digest); when it did, the
			// digest must be the node's. The contents compare without it.
			if n.Digest != 0 {
				if d, _ := datatree.NodeDigest(nil, n.Path, n.Data, &n.Stat); d != n.Digest {
					return fmt.Errorf("node %q: digest %#x read, %#x computed", n.Path, n.Digest, d)
				}
				n.Digest = 0
			}
			c.nodes = append(c.nodes, n)
			return nil
		},
		Digest:            func(d SnapDigest) error { c.digest = &d; return nil },
		LastProcessedZxid: func(z int64) error { c.lastZxid = &z; return nil },
	}
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeSnap(t *testing.T, b []byte) *snapContents {
	t.Helper()
	c := &snapContents{}
	if err := ReadSnapshot(bytes.NewReader(b), c.handler()); err != nil {
		t.Fatalf("ReadSnapshot: %v", err)
	}
	return c
}

func TestGoldenSnapshot3c(t *testing.T) {
	c := decodeSnap(t, readGolden(t, "snapshot.3c"))
	if len(c.sessions) != 9 || c.sessions[0] != (SnapSession{0x100000a4ed7000d, 30000}) ||
		c.sessions[8] != (SnapSession{0x100000a4ed70006, 30000}) {
		t.Errorf("sessions %v", c.sessions)
	}
	if fmt.Sprint(c.aclOrder) != "[1 2 4]" {
		t.Errorf("acl keys %v", c.aclOrder)
	}
	if a := c.acls[1]; len(a) != 1 || a[0] != (jute.ACL{Perms: 1, ID: jute.ID{Scheme: "world", ID: "anyone"}}) {
		t.Errorf("acl 1 = %v", a)
	}
	if len(c.acls[4]) != 2 {
		t.Errorf("acl 4 = %v", c.acls[4])
	}
	if len(c.nodes) == 0 || c.nodes[0].Path != "" || c.nodes[0].ACLKey != -1 {
		t.Fatalf("first node %+v", c.nodes)
	}
	byPath := map[string]SnapNode{}
	for _, n := range c.nodes {
		byPath[n.Path] = n
	}
	c2 := byPath["/jv/c2"]
	if string(c2.Data) != "c2b" || c2.ACLKey != 2 || c2.Stat.Czxid != 0xf || c2.Stat.Mzxid != 0x14 ||
		c2.Stat.Mtime != 1795337734182 || c2.Stat.Version != 1 || c2.Stat.Cversion != 1 || c2.Stat.Pzxid != 0x15 {
		t.Errorf("/jv/c2 = %+v", c2)
	}
	if ttl := byPath["/jv/ttl"]; ttl.Path != "" && uint64(ttl.Stat.EphemeralOwner)>>56 != 0xff {
		t.Errorf("ttl node owner %#x", ttl.Stat.EphemeralOwner)
	}
	if n := c.nodes[len(c.nodes)-1]; n.Path != "/w4" || n.Stat.Czxid != 0x2e || n.Stat.Pzxid != 0x30 {
		t.Errorf("last node %+v", n)
	}
	if c.digest == nil || *c.digest != (SnapDigest{Zxid: 0x3c, Version: 2, Digest: 0x548e16c34}) {
		t.Errorf("digest %+v", c.digest)
	}
	if c.lastZxid != nil {
		t.Errorf("3.8 snapshot has no lastProcessedZxid section, got %#x", *c.lastZxid)
	}
}

func TestGoldenSnapshot0(t *testing.T) {
	c := decodeSnap(t, readGolden(t, "snapshot.0"))
	var paths []string
	for _, n := range c.nodes {
		paths = append(paths, n.Path)
	}
	if fmt.Sprint(paths) != "[ /zookeeper /zookeeper/config /zookeeper/quota]" {
		t.Errorf("paths %q", paths)
	}
	if c.nodes[2].Stat.Aversion != -1 || c.nodes[2].ACLKey != 1 {
		t.Errorf("/zookeeper/config %+v", c.nodes[2])
	}
	if c.digest == nil || *c.digest != (SnapDigest{Version: 2}) || len(c.sessions) != 0 {
		t.Errorf("digest %+v sessions %v", c.digest, c.sessions)
	}
}

// writeSnap writes c through a SnapshotWriter, feeding nodes in batches of batch.
func writeSnap(t *testing.T, fsys FS, dir string, zxid int64, c *snapContents, batch int) {
	t.Helper()
	w, err := NewSnapshotWriter(fsys, dir, zxid)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(c.nodes); i += batch {
		if err := w.WriteNodes(c.nodes[i:min(i+batch, len(c.nodes))]); err != nil {
			t.Fatal(err)
		}
	}
	var dz, d int64
	if c.digest != nil {
		dz, d = c.digest.Zxid, c.digest.Digest
	}
	if err := w.Finish(c.sessions, c.acls, dz, d); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotReencodeGolden(t *testing.T) {
	for _, name := range []string{"snapshot.3c", "snapshot.0"} {
		golden := readGolden(t, name)
		c := decodeSnap(t, golden)
		for _, batch := range []int{1, 3, 1000} {
			m := NewMemFS()
			z, _, _ := ParseSnapName(name)
			writeSnap(t, m, vdir, z, c, batch)
			got, err := m.ReadFile(vdir + "/" + name)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, golden) {
				t.Fatalf("%s (batch %d): re-encoded %d bytes differ from golden %d bytes at %d",
					name, batch, len(got), len(golden), firstDiff(got, golden))
			}
			names, _ := m.ReadDir(vdir)
			if fmt.Sprint(names) != "["+name+"]" {
				t.Errorf("directory after Finish: %v", names)
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// appendSeal adds a section and its seal, as SnapStream.sealStream would.
func appendSeal(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(adler32.Checksum(b)))
	return append(b, 0, 0, 0, 1, '/')
}

func TestSnapshotOptionalSections(t *testing.T) {
	golden := readGolden(t, "snapshot.3c")
	seal1End := 0x7c6

	// 3.9: lastProcessedZxid and a third seal.
	b39 := appendSeal(binary.BigEndian.AppendUint64(append([]byte(nil), golden...), 0x3c))
	c := decodeSnap(t, b39)
	if c.lastZxid == nil || *c.lastZxid != 0x3c || c.digest == nil {
		t.Errorf("3.9 sections: last %v digest %v", c.lastZxid, c.digest)
	}
	bad := append([]byte(nil), b39...)
	bad[len(bad)-6] ^= 1
	if err := ReadSnapshot(bytes.NewReader(bad), SnapshotHandler{}); !errors.Is(err, ErrCorruptSnapshot) {
		t.Errorf("bad third seal: %v", err)
	}

	// No digest section (digest disabled), or a partial one: accepted like ZooKeeper does.
	for _, cut := range []int{seal1End, seal1End + 3, seal1End + 12, seal1End + 19} {
		c := decodeSnap(t, golden[:cut])
		if c.digest != nil {
			t.Errorf("cut %#x: digest reported without its seal", cut)
		}
	}
	// A complete digest without its seal is not.
	for _, cut := range []int{seal1End + 20, len(golden) - 1, len(golden) - 5} {
		if err := ReadSnapshot(bytes.NewReader(golden[:cut]), SnapshotHandler{}); !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("cut %#x: %v", cut, err)
		}
	}

	// Digest version 1 stored the digest as hex text.
	v1 := append([]byte(nil), golden[:seal1End]...)
	v1 = binary.BigEndian.AppendUint64(v1, 0x3c)
	v1 = binary.BigEndian.AppendUint32(v1, 1)
	v1 = binary.BigEndian.AppendUint32(v1, 9)
	v1 = append(v1, "548e16c34"...)
	c = decodeSnap(t, appendSeal(v1))
	if c.digest == nil || c.digest.Digest != 0x548e16c34 || c.digest.Version != 1 {
		t.Errorf("v1 digest %+v", c.digest)
	}
}

// Every single-byte flip is detected.
func TestSnapshotEveryFlipDetected(t *testing.T) {
	for _, name := range []string{"snapshot.0", "snapshot.3c"} {
		golden := readGolden(t, name)
		for off := range golden {
			b := append([]byte(nil), golden...)
			b[off] ^= 0x20
			err := ReadSnapshot(bytes.NewReader(b), SnapshotHandler{})
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("%s: flip at %#x: %v", name, off, err)
			}
		}
	}
}

func TestSnapshotGzip(t *testing.T) {
	golden := readGolden(t, "snapshot.3c")
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(golden)
	zw.Close()
	m := NewMemFS()
	m.MkdirAll(vdir, 0o755)
	m.WriteFile(vdir+"/snapshot.3c.gz", zb.Bytes())
	files, err := FindSnapshots(m, vdir)
	if err != nil || len(files) != 1 {
		t.Fatalf("FindSnapshots %v %v", files, err)
	}
	if ok, err := ValidSnapshot(m, vdir, files[0]); !ok || err != nil {
		t.Fatalf("ValidSnapshot %v %v", ok, err)
	}
	c := &snapContents{}
	if err := ReadSnapshotFile(m, vdir, files[0], c.handler()); err != nil {
		t.Fatal(err)
	}
	if len(c.nodes) != len(decodeSnap(t, golden).nodes) || c.digest == nil {
		t.Errorf("gz decode: %d nodes", len(c.nodes))
	}
	// Damage inside the compressed stream.
	bad := append([]byte(nil), zb.Bytes()...)
	bad[len(bad)/2] ^= 0xff
	m.WriteFile(vdir+"/snapshot.3c.gz", bad)
	if err := ReadSnapshotFile(m, vdir, files[0], SnapshotHandler{}); err == nil {
		t.Error("damaged gzip snapshot read without error")
	}
	// A snappy header with garbage after it is corrupt (snappy was refused before it was
	// read; now it must not be mistaken for a good file either).
	m.WriteFile(vdir+"/snapshot.40.snappy", []byte("\x82SNAPPY\x00rest"))
	if err := ReadSnapshotFile(m, vdir, SnapshotFile{"snapshot.40.snappy", 0x40}, SnapshotHandler{}); !errors.Is(err, ErrCorruptSnapshot) {
		t.Errorf("snappy: %v", err)
	}
}

func TestSnapshotSnappy(t *testing.T) {
	golden := readGolden(t, "snapshot.3c")
	var zb bytes.Buffer
	zw := NewSnappyWriter(&zb)
	// Odd-sized writes cross the 32 KiB block boundary at arbitrary points.
	for i := 0; i < 40; i++ {
		zw.Write(golden[:i*7%len(golden)])
	}
	zw.Write(golden)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	m := NewMemFS()
	m.MkdirAll(vdir, 0o755)
	m.WriteFile(vdir+"/snapshot.3c.snappy", zb.Bytes())
	sf := SnapshotFile{"snapshot.3c.snappy", 0x3c}
	if ok, err := ValidSnapshot(m, vdir, sf); !ok || err != nil {
		t.Fatalf("ValidSnapshot %v %v", ok, err)
	}
	// The stream is 40 prefixes then the snapshot: decode it by hand and compare.
	sr, err := newSnappyReader(bytes.NewReader(zb.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(sr)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := 0; i < 40; i++ {
		want = append(want, golden[:i*7%len(golden)]...)
	}
	want = append(want, golden...)
	if !bytes.Equal(all, want) {
		t.Fatalf("snappy round trip: %d bytes, want %d", len(all), len(want))
	}

	zb.Reset()
	zw = NewSnappyWriter(&zb)
	zw.Write(golden)
	zw.Close()
	m.WriteFile(vdir+"/snapshot.3c.snappy", zb.Bytes())
	c := &snapContents{}
	if err := ReadSnapshotFile(m, vdir, sf, c.handler()); err != nil {
		t.Fatal(err)
	}
	if len(c.nodes) != len(decodeSnap(t, golden).nodes) || c.digest == nil {
		t.Errorf("snappy decode: %d nodes", len(c.nodes))
	}
	for _, cut := range []int{3, 17, zb.Len() - 1} {
		m.WriteFile(vdir+"/snapshot.3c.snappy", zb.Bytes()[:cut])
		if err := ReadSnapshotFile(m, vdir, sf, SnapshotHandler{}); !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("snappy cut at %d: %v", cut, err)
		}
	}
	bad := append([]byte(nil), zb.Bytes()...)
	bad[20] ^= 0xff
	m.WriteFile(vdir+"/snapshot.3c.snappy", bad)
	if err := ReadSnapshotFile(m, vdir, sf, SnapshotHandler{}); err == nil {
		t.Error("damaged snappy snapshot read without error")
	}
}

// testTree builds a small tree whose contents depend on tag.
func testTree(tag string) *snapContents {
	c := &snapContents{
		sessions: []SnapSession{{0x2000, 4000}, {0x1000, 6000}},
		acls: map[int64][]jute.ACL{
			7: {{Perms: 31, ID: jute.ID{Scheme: "digest", ID: "u:x"}}},
			1: {{Perms: 1, ID: jute.ID{Scheme: "world", ID: "anyone"}}},
		},
		digest: &SnapDigest{Zxid: 9, Version: 2, Digest: 12345},
	}
	c.nodes = []SnapNode{
		{Path: "", Data: []byte{}, ACLKey: -1},
		{Path: "/a", Data: []byte(tag), ACLKey: 7, Stat: jute.StatPersisted{Czxid: 3, Mzxid: 4, Pzxid: 3}},
		{Path: "/a/b", Data: nil, ACLKey: 1, Stat: jute.StatPersisted{Czxid: 5, EphemeralOwner: 0x2000}},
		{Path: "/big", Data: bytes.Repeat([]byte(tag), 1000), ACLKey: -1},
	}
	return c
}

func TestSnapshotRoundTripAndNil(t *testing.T) {
	m := NewMemFS()
	want := testTree("x")
	// Larger than the reader's direct-allocation limit, to exercise chunked reads.
	want.nodes[3].Data = bytes.Repeat([]byte("0123456789abcdef"), 200000)
	writeSnap(t, m, vdir, 9, want, 2)
	c := &snapContents{}
	if err := ReadSnapshotFile(m, vdir, SnapshotFile{"snapshot.9", 9}, c.handler()); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.sessions) != fmt.Sprint(want.sessions) || fmt.Sprint(c.aclOrder) != "[1 7]" {
		t.Errorf("sessions %v acl order %v", c.sessions, c.aclOrder)
	}
	for i := range want.nodes {
		g, w := c.nodes[i], want.nodes[i]
		if g.Path != w.Path || !bytes.Equal(g.Data, w.Data) || (g.Data == nil) != (w.Data == nil) ||
			g.ACLKey != w.ACLKey || g.Stat != w.Stat {
			t.Errorf("node %d: got %q nil=%v, want %q nil=%v", i, g.Path, g.Data == nil, w.Path, w.Data == nil)
		}
	}
	if *c.digest != *want.digest {
		t.Errorf("digest %+v", c.digest)
	}
}

func TestLoadNewestFallsBack(t *testing.T) {
	m := NewMemFS()
	for i, z := range []int64{0x10, 0x20, 0x30} {
		writeSnap(t, m, vdir, z, testTree(fmt.Sprint("tree", i)), 10)
	}
	load := func() (SnapshotFile, *snapContents, int, error) {
		var c *snapContents
		attempts := 0
		sf, err := LoadNewest(m, vdir, quiet, func(SnapshotFile) SnapshotHandler {
			attempts++
			c = &snapContents{}
			return c.handler()
		})
		return sf, c, attempts, err
	}
	sf, c, _, err := load()
	if err != nil || sf.Zxid != 0x30 || string(c.nodes[1].Data) != "tree2" {
		t.Fatalf("newest: %v %v", sf, err)
	}
	// Damage in the middle of the newest: its seal fails, the older one is used.
	size, _ := m.Stat(vdir + "/snapshot.30")
	m.Corrupt(vdir+"/snapshot.30", size/2)
	sf, c, attempts, err := load()
	if err != nil || sf.Zxid != 0x20 || string(c.nodes[1].Data) != "tree1" || attempts != 2 {
		t.Fatalf("fallback: %v %d attempts %v", sf, attempts, err)
	}
	// A truncated one fails the quick check and is not even tried.
	b, _ := m.ReadFile(vdir + "/snapshot.20")
	m.WriteFile(vdir+"/snapshot.20", b[:len(b)-1])
	sf, _, attempts, err = load()
	if err != nil || sf.Zxid != 0x10 || attempts != 2 {
		t.Fatalf("quick check: %v %d attempts %v", sf, attempts, err)
	}
	m.Corrupt(vdir+"/snapshot.10", 100)
	_, _, _, err = load()
	if !errors.Is(err, ErrCorruptSnapshot) || errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("all corrupt: %v", err)
	}
	_, err = LoadNewest(NewMemFS(), vdir, quiet, func(SnapshotFile) SnapshotHandler { return SnapshotHandler{} })
	if !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("empty: %v", err)
	}
}

func TestSnapshotWriterCrashAndAbort(t *testing.T) {
	m := NewMemFS()
	c := testTree("y")
	w, err := NewSnapshotWriter(m, vdir, 0x50)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteNodes(c.nodes)
	if files, _ := FindSnapshots(m, vdir); len(files) != 0 {
		t.Fatalf("snapshot visible before Finish: %v", files)
	}
	w.Abort()
	if names, _ := m.ReadDir(vdir); len(names) != 0 {
		t.Fatalf("Abort left %v", names)
	}

	// Crash mid-write: only temp files remain, and CleanTemp removes them.
	w, _ = NewSnapshotWriter(m, vdir, 0x60)
	w.WriteNodes(c.nodes)
	m.SyncDir(vdir)
	m.Crash()
	if files, _ := FindSnapshots(m, vdir); len(files) != 0 {
		t.Fatalf("snapshot after crash mid-write: %v", files)
	}
	if names, _ := m.ReadDir(vdir); len(names) == 0 {
		t.Fatal("expected leftovers to clean")
	}
	if err := CleanTemp(m, vdir); err != nil {
		t.Fatal(err)
	}
	if names, _ := m.ReadDir(vdir); len(names) != 0 {
		t.Fatalf("CleanTemp left %v", names)
	}

	// A finished snapshot survives a crash intact.
	writeSnap(t, m, vdir, 0x70, c, 1)
	m.Crash()
	got := &snapContents{}
	if err := ReadSnapshotFile(m, vdir, SnapshotFile{"snapshot.70", 0x70}, got.handler()); err != nil {
		t.Fatal(err)
	}
	if len(got.nodes) != len(c.nodes) {
		t.Fatalf("%d nodes after crash", len(got.nodes))
	}

	// A failed fsync leaves no snapshot behind.
	w, _ = NewSnapshotWriter(m, vdir, 0x80)
	w.WriteNodes(c.nodes)
	m.FailNextSync(errors.New("disk gone"))
	if err := w.Finish(c.sessions, c.acls, 0, 0); err == nil {
		t.Fatal("Finish succeeded despite fsync failure")
	}
	if files, _ := FindSnapshots(m, vdir); len(files) != 1 {
		t.Fatalf("files after failed Finish: %v", files)
	}
}

func TestSnapStream(t *testing.T) {
	c := testTree("z")
	var buf bytes.Buffer
	sw, err := NewSnapStreamWriter(&buf, c.sessions, c.acls)
	if err != nil {
		t.Fatal(err)
	}
	sw.WriteNodes(c.nodes[:2])
	sw.WriteNodes(c.nodes[2:])
	if err := sw.Finish(); err != nil {
		t.Fatal(err)
	}
	body := buf.Bytes()
	if !bytes.HasSuffix(body, []byte("\x00\x00\x00\x01/\x00\x00\x00\x0aBenWasHere")) {
		t.Fatalf("stream tail %q", body[len(body)-20:])
	}
	buf.WriteString("next packet")
	br := bufio.NewReaderSize(&buf, 16)
	got := &snapContents{}
	if err := ReadSnapStream(br, got.handler()); err != nil {
		t.Fatal(err)
	}
	if len(got.nodes) != 4 || len(got.sessions) != 2 || len(got.acls) != 2 {
		t.Fatalf("stream contents %d nodes", len(got.nodes))
	}
	rest, _ := br.ReadString(0)
	if rest != "next packet" {
		t.Fatalf("reader consumed past the stream: %q", rest)
	}
	bad := append([]byte(nil), body...)
	bad[len(bad)-1] = 'x'
	if err := ReadSnapStream(bufio.NewReader(bytes.NewReader(bad)), SnapshotHandler{}); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("bad signature: %v", err)
	}
}

func TestSnapshotHandlerErrorStops(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := ReadSnapshot(bytes.NewReader(readGolden(t, "snapshot.3c")), SnapshotHandler{
		Node: func(SnapNode) error {
			n++
			if n == 3 {
				return stop
			}
			return nil
		},
	})
	if !errors.Is(err, stop) || errors.Is(err, ErrCorruptSnapshot) || n != 3 {
		t.Fatalf("err %v after %d nodes", err, n)
	}
}

// TestSnapshotPipelineManyBatches reads a snapshot many decoding batches long: every node
// arrives once, in file order, and a handler error in the middle stops the decoder (no
// goroutine is left behind).
func TestSnapshotPipelineManyBatches(t *testing.T) {
	c := testTree("x")
	for i := 0; i < 5*snapBatch+7; i++ {
		c.nodes = append(c.nodes, SnapNode{Path: fmt.Sprintf("/a/n%06d", i), Data: []byte{byte(i)}, ACLKey: -1,
			Stat: jute.StatPersisted{Czxid: int64(i)}})
	}
	fsys := NewMemFS()
	if err := fsys.MkdirAll("/s", 0o755); err != nil {
		t.Fatal(err)
	}
	writeSnap(t, fsys, "/s", 0x10, c, 100)
	sf := SnapshotFile{Name: SnapName(0x10), Zxid: 0x10}
	got := &snapContents{}
	if err := ReadSnapshotFile(fsys, "/s", sf, got.handler()); err != nil {
		t.Fatal(err)
	}
	if len(got.nodes) != len(c.nodes) {
		t.Fatalf("%d nodes read, %d written", len(got.nodes), len(c.nodes))
	}
	for i := range c.nodes {
		if got.nodes[i].Path != c.nodes[i].Path || !bytes.Equal(got.nodes[i].Data, c.nodes[i].Data) || got.nodes[i].Stat != c.nodes[i].Stat {
			t.Fatalf("node %d: got %+v, wrote %+v", i, got.nodes[i], c.nodes[i])
		}
	}
	if got.digest == nil || *got.digest != *c.digest || len(got.sessions) != 2 || len(got.acls) != 2 {
		t.Fatalf("sections: digest %v, %d sessions, %d acls", got.digest, len(got.sessions), len(got.acls))
	}

	before := runtime.NumGoroutine()
	stop := errors.New("stop")
	n := 0
	err := ReadSnapshotFile(fsys, "/s", sf, SnapshotHandler{Node: func(SnapNode) error {
		if n++; n == 2*snapBatch+3 {
			return stop
		}
		return nil
	}})
	if !errors.Is(err, stop) || n != 2*snapBatch+3 {
		t.Fatalf("err %v after %d nodes", err, n)
	}
	// The decoder has closed its channel when ReadSnapshotFile returns; it may take a
	// moment more to exit.
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines before, %d after", before, runtime.NumGoroutine())
		}
		time.Sleep(time.Millisecond)
	}
}
