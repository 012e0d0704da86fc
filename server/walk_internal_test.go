package server

import (
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
