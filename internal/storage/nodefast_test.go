package storage

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

// TestSnapshotFastAndSlowNodePaths mixes nodes the buffered fast path decodes with ones too
// large for it (data from null to 200 KB) and reads them back through the file and the
// SNAP-stream readers with small and large buffers: the same nodes, the checksum intact, and
// nothing after the stream consumed. (Written by a reviewer of the fast path.)
func TestSnapshotFastAndSlowNodePaths(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	c := testTree("r")
	sizes := []int{-1, 0, 1, 100, 1000, 30000, 32700, 32800, 65400, 65536, 70000, 200000}
	for i := 0; i < 600; i++ {
		dl := sizes[rng.Intn(len(sizes))]
		var d []byte
		if dl >= 0 {
			d = make([]byte, dl)
			rng.Read(d)
		}
		p := fmt.Sprintf("/a/n%06d", i)
		if rng.Intn(50) == 0 {
			p += "/" + string(bytes.Repeat([]byte("x"), rng.Intn(40000)))
			p = fmt.Sprintf("/a/l%06d", i) + "x" + string(bytes.Repeat([]byte("y"), rng.Intn(40000)))
		}
		c.nodes = append(c.nodes, SnapNode{Path: p, Data: d, ACLKey: -1, Stat: jute.StatPersisted{Czxid: int64(i), Mzxid: rng.Int63()}})
	}
	fsys := NewMemFS()
	fsys.MkdirAll("/s", 0o755)
	writeSnap(t, fsys, "/s", 0x10, c, 100)
	got := &snapContents{}
	if err := ReadSnapshotFile(fsys, "/s", SnapshotFile{Name: SnapName(0x10), Zxid: 0x10}, got.handler()); err != nil {
		t.Fatal(err)
	}
	check := func(got *snapContents) {
		if len(got.nodes) != len(c.nodes) {
			t.Fatalf("%d nodes, want %d", len(got.nodes), len(c.nodes))
		}
		for i := range c.nodes {
			g, w := got.nodes[i], c.nodes[i]
			if g.Path != w.Path || !bytes.Equal(g.Data, w.Data) || (g.Data == nil) != (w.Data == nil) || g.Stat != w.Stat || g.ACLKey != w.ACLKey {
				t.Fatalf("node %d differs", i)
			}
		}
	}
	check(got)
	for _, size := range []int{16, 4096, 65536} {
		var buf bytes.Buffer
		sw, _ := NewSnapStreamWriter(&buf, c.sessions, c.acls)
		sw.WriteNodes(c.nodes)
		sw.Finish()
		buf.WriteString("next packet")
		br := bufio.NewReaderSize(&buf, size)
		got := &snapContents{}
		if err := ReadSnapStream(br, got.handler()); err != nil {
			t.Fatal(err)
		}
		check(got)
		rest, _ := br.ReadString(0)
		if rest != "next packet" {
			t.Fatalf("size %d: rest %q", size, rest)
		}
	}
}
