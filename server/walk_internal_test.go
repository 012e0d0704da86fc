package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/jute"
)

// TestInstallEndsSnapshotWalk: a background snapshot still being written when the core
// installs another tree (TRUNC or a role change reloading from disk, a SNAP sync) must not
// end with the nodes of the old tree and the ACL table of the new one: ACL keys are the
// tree's own, so that snapshot gives nodes other ACLs (or none). The snapshot is of a view
// that carries its own ACL table; install abandons it.
func TestInstallEndsSnapshotWalk(t *testing.T) {
	s, err := New(Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.startPersist()
	aliceOnly := []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "digest", ID: "alice:x"}}}
	anyone := []jute.ACL{{Perms: jute.PermRead, ID: jute.ID{Scheme: "world", ID: "anyone"}}}
	zxid := s.tree.LastZxid()
	create := func(tr *datatree.Tree, path string, acl []jute.ACL) {
		zxid++
		tr.Apply(&jute.TxnHeader{Zxid: zxid, Type: jute.OpCreate}, &jute.CreateTxn{Path: path, ACL: acl})
	}
	// More nodes than one walk step takes.
	for i := 0; i < 3000; i++ {
		create(s.tree, fmt.Sprintf("/n%d", i), aliceOnly)
	}
	s.startBackgroundSnapshot()
	if s.walk == nil {
		t.Fatal("no snapshot started")
	}
	// Another tree, in which the same ACL key means another ACL.
	other := datatree.New()
	create(other, "/other", anyone)
	s.install(&loaded{tree: other, sessions: map[int64]int32{}, snapZxid: zxid})
	close(s.logCh)
	<-s.logDone
	s.wg.Wait() // the snapshot writer
	defer s.txlog.Close()

	var acls map[int64][]jute.ACL
	var n0 *storage.SnapNode
	sf, err := storage.LoadNewest(s.cfg.FS, s.snapDir(), s.log, func(storage.SnapshotFile) storage.SnapshotHandler {
		acls, n0 = map[int64][]jute.ACL{}, nil
		return storage.SnapshotHandler{
			Session: func(storage.SnapSession) error { return nil },
			ACL:     func(k int64, a []jute.ACL) error { acls[k] = a; return nil },
			Node: func(n storage.SnapNode) error {
				if n.Path == "/n0" {
					n0 = &n
				}
				return nil
			},
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n0 != nil && !slices.Equal(acls[n0.ACLKey], aliceOnly) {
		t.Fatalf("%s gives /n0 the ACL %v, want %v", sf.Name, acls[n0.ACLKey], aliceOnly)
	}
}

// TestSnapStreamIsOfTheCapture: the SNAP stream's encoder, which runs on the connection's
// writer after the core returned, writes the tree as it was when snapStream captured it,
// whatever the core applied since.
func TestSnapStreamIsOfTheCapture(t *testing.T) {
	s, err := New(Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	zxid := s.tree.LastZxid()
	apply := func(typ jute.OpCode, body jute.Record) {
		zxid++
		if r := s.tree.Apply(&jute.TxnHeader{Zxid: zxid, Type: typ}, body); r.Err != jute.OK {
			t.Fatalf("%v: %v", typ, r.Err)
		}
	}
	for i := 0; i < 3000; i++ {
		apply(jute.OpCreate, &jute.CreateTxn{Path: fmt.Sprintf("/n%d", i), Data: []byte("old"), ACL: jute.OpenACLUnsafe, ParentCVersion: -1})
	}
	wantNodes, wantDigest := s.tree.NodeCount(), s.tree.Digest()
	encode := s.snapStream()
	for i := 0; i < 3000; i += 2 {
		apply(jute.OpSetData, &jute.SetDataTxn{Path: fmt.Sprintf("/n%d", i), Data: []byte("new"), Version: 1})
		apply(jute.OpDelete, &jute.DeleteTxn{Path: fmt.Sprintf("/n%d", i+1)})
	}
	var buf bytes.Buffer
	if err := encode(&buf); err != nil {
		t.Fatal(err)
	}
	l := datatree.NewLoader()
	err = storage.ReadSnapStream(bufio.NewReader(&buf), storage.SnapshotHandler{
		ACL:  func(k int64, a []jute.ACL) error { l.ACL(k, a); return nil },
		Node: l.Node,
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.Finish(false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.NodeCount() != wantNodes || got.Digest() != wantDigest {
		t.Fatalf("stream has %d nodes, digest %#x; the capture had %d, %#x", got.NodeCount(), got.Digest(), wantNodes, wantDigest)
	}
	if n := got.Get("/n2"); n == nil || string(n.Data) != "old" {
		t.Fatal("the stream has a change applied after the capture")
	}
}
