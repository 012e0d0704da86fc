package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

// viewTree is a tree with ACLs, null and empty data, nesting and a big value.
func viewTree(t *testing.T) *datatree.Tree {
	t.Helper()
	tr := datatree.New()
	acl := []jute.ACL{{Perms: jute.PermRead, ID: jute.ID{Scheme: "digest", ID: "u:x"}}}
	zxid := int64(0x100000000)
	create := func(p string, data []byte, a []jute.ACL) {
		zxid++
		r := tr.Apply(&jute.TxnHeader{Zxid: zxid, Time: 1_700_000_000_000, Type: jute.OpCreate},
			&jute.CreateTxn{Path: p, Data: data, ACL: a, ParentCVersion: -1})
		if r.Err != jute.OK {
			t.Fatalf("create %s: %v", p, r.Err)
		}
	}
	create("/a", nil, jute.OpenACLUnsafe)
	create("/a/b", []byte{}, acl)
	create("/big", bytes.Repeat([]byte("z"), 300<<10), jute.OpenACLUnsafe)
	for i := 0; i < 700; i++ {
		create(fmt.Sprintf("/a/b/n%d", i), []byte(fmt.Sprint(i)), acl)
	}
	return tr
}

// TestWriteSnapshotMatchesWriter: a view written by WriteSnapshot is byte for byte the file
// the spooling SnapshotWriter makes of the same nodes, in every compression, and reads back.
func TestWriteSnapshotMatchesWriter(t *testing.T) {
	tr := viewTree(t)
	sessions := []SnapSession{{ID: 0x11, Timeout: 30000}, {ID: 0x12, Timeout: 4000}}
	for _, comp := range []SnapCompression{SnapUncompressed, SnapGzip, SnapSnappy} {
		t.Run(string(comp), func(t *testing.T) {
			v := tr.Capture()
			a, b := NewMemFS(), NewMemFS()
			if err := WriteSnapshot(a, vdir, v, sessions, comp, nil); err != nil {
				t.Fatal(err)
			}
			w, err := NewCompressedSnapshotWriter(b, vdir, v.LastZxid(), comp)
			if err != nil {
				t.Fatal(err)
			}
			wk := v.Walk()
			var nodes []SnapNode
			for done := false; !done; {
				nodes, done = wk.Next(100, nodes[:0])
				if err := w.WriteNodes(nodes); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Finish(sessions, v.ACLs(), v.LastZxid(), v.Digest()); err != nil {
				t.Fatal(err)
			}
			name := vdir + "/" + SnapFileName(v.LastZxid(), comp)
			got, want := fileBytes(t, a, name), fileBytes(t, b, name)
			if !bytes.Equal(got, want) {
				t.Fatalf("WriteSnapshot wrote %d bytes, the writer %d; they differ", len(got), len(want))
			}
			if names, _ := a.ReadDir(vdir); len(names) != 1 {
				t.Fatalf("files left: %v", names)
			}
			_, c, _, err := loadNewest(a)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.nodes) != tr.NodeCount() || c.digest.Digest != tr.Digest() {
				t.Fatalf("read back %d nodes digest %#x, want %d, %#x", len(c.nodes), c.digest.Digest, tr.NodeCount(), tr.Digest())
			}
		})
	}
}

func fileBytes(t *testing.T, fsys FS, name string) []byte {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWriteSnapshotFaults: a failed fsync, a crash before the rename and a stop leave no
// snapshot and no temporary file behind (after CleanTemp for the crash).
func TestWriteSnapshotFaults(t *testing.T) {
	tr := viewTree(t)
	m := NewMemFS()
	m.FailNextSync(errors.New("disk gone"))
	if err := WriteSnapshot(m, vdir, tr.Capture(), nil, SnapGzip, nil); err == nil {
		t.Fatal("WriteSnapshot succeeded despite an fsync failure")
	}
	if names, _ := m.ReadDir(vdir); len(names) != 0 {
		t.Fatalf("failed write left %v", names)
	}
	stop := make(chan struct{})
	close(stop)
	if err := WriteSnapshot(m, vdir, tr.Capture(), nil, SnapUncompressed, stop); !errors.Is(err, ErrSnapshotStopped) {
		t.Fatalf("stopped write: %v, want ErrSnapshotStopped", err)
	}
	if names, _ := m.ReadDir(vdir); len(names) != 0 {
		t.Fatalf("stopped write left %v", names)
	}
	if err := WriteSnapshot(m, vdir, tr.Capture(), nil, SnapSnappy, nil); err != nil {
		t.Fatal(err)
	}
	m.Crash()
	if _, c, _, err := loadNewest(m); err != nil || len(c.nodes) != tr.NodeCount() {
		t.Fatalf("after a crash following the write: %v", err)
	}
}

// TestWriteSnapStream: a view's SNAP stream reads back to the same nodes and ACLs.
func TestWriteSnapStream(t *testing.T) {
	tr := viewTree(t)
	v := tr.Capture()
	var buf bytes.Buffer
	if err := WriteSnapStream(&buf, v, []SnapSession{{ID: 7, Timeout: 5000}}); err != nil {
		t.Fatal(err)
	}
	l := datatree.NewLoader()
	var sessions int
	err := ReadSnapStream(bufio.NewReader(&buf), SnapshotHandler{
		Session: func(SnapSession) error { sessions++; return nil },
		ACL:     func(k int64, a []jute.ACL) error { l.ACL(k, a); return nil },
		Node:    l.Node,
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.Finish(false, v.LastZxid())
	if err != nil {
		t.Fatal(err)
	}
	if sessions != 1 || got.NodeCount() != tr.NodeCount() || got.Digest() != tr.Digest() {
		t.Fatalf("stream read back %d sessions, %d nodes, digest %#x; want 1, %d, %#x",
			sessions, got.NodeCount(), got.Digest(), tr.NodeCount(), tr.Digest())
	}
}

// writeSizes records the size of each write.
type writeSizes struct {
	sizes []int
	total int
}

func (w *writeSizes) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	w.total += len(p)
	return len(p), nil
}

// TestWriteViewBoundedBatches: writing a tree of many big values never gathers more than
// a batch's bound in one buffer (each big value is written from the node's own bytes), so
// no single copy grows with the tree; the bytes are those appendNode makes, node by node.
func TestWriteViewBoundedBatches(t *testing.T) {
	tr := datatree.New()
	big := bytes.Repeat([]byte("v"), 200<<10)
	for i := range 60 {
		data := big
		if i%2 == 1 {
			data = []byte(fmt.Sprint(i))
		}
		r := tr.Apply(&jute.TxnHeader{Zxid: int64(i + 1), Type: jute.OpCreate},
			&jute.CreateTxn{Path: fmt.Sprintf("/n%03d", i), Data: data, ACL: jute.OpenACLUnsafe, ParentCVersion: -1})
		if r.Err != jute.OK {
			t.Fatal(r.Err)
		}
	}
	v := tr.Capture()
	var w writeSizes
	e := jute.Encoder{Buf: make([]byte, 0, 4096)}
	if err := writeView(&w, v, &e, nil); err != nil {
		t.Fatal(err)
	}
	if limit := 2 * (batchBytes + directData); cap(e.Buf) > limit {
		t.Errorf("the batch buffer grew to %d bytes for 30 values of %d; want at most %d", cap(e.Buf), len(big), limit)
	}
	for _, n := range w.sizes {
		if n > batchBytes+directData && n != len(big) {
			t.Errorf("a write of %d bytes: neither one value nor a bounded batch", n)
		}
	}
	var want []byte
	wk := v.Walk()
	defer wk.Close()
	var nodes []SnapNode
	for done := false; !done; {
		nodes, done = wk.Next(7, nodes[:0])
		for i := range nodes {
			want = appendNode(want, &nodes[i])
		}
	}
	if w.total != len(want) {
		t.Errorf("wrote %d bytes, the nodes encode to %d", w.total, len(want))
	}
}
