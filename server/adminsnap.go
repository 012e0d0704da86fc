package server

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/jute"
)

// What the AdminServer's snapshot and restore commands (internal/admin/httpadmin) need of
// the server, answered through adminBackend: a snapshot written now, and a restored tree
// read off the core, then installed in one core step.

// adminSnapDir is where an admin snapshot is written before it is renamed into the data
// directory: a directory of its own, so its temporary files never meet those of a
// background snapshot of the same zxid.
const adminSnapDir = ".admin-snapshot"

// writeAdminSnapshot captures the tree on the core and writes it as snapshot.<zxid> in the
// data directory off the core (ZooKeeper's takeSnapshot), returning the file's path.
func (s *Server) writeAdminSnapshot() (string, int64, error) {
	var (
		v        *datatree.View
		sessions []storage.SnapSession
	)
	// The capture costs the core one pointer per page of nodes; the walk, encoding and
	// writing run here.
	if !s.coreQuery(func() {
		v, sessions = s.tree.Capture(), s.sessionList()
	}) {
		return "", 0, errors.New("server: not serving")
	}
	fs := s.cfg.FS
	tmp := filepath.Join(s.snapDir(), adminSnapDir)
	if err := fs.MkdirAll(tmp, 0o755); err != nil {
		return "", 0, fmt.Errorf("server: admin snapshot: %w", err)
	}
	if names, err := fs.ReadDir(tmp); err == nil {
		for _, n := range names { // left by a crash in the middle of an earlier one
			fs.Remove(filepath.Join(tmp, n))
		}
	}
	zxid := v.LastZxid()
	if err := storage.WriteSnapshot(fs, tmp, v, sessions, storage.SnapUncompressed, nil); err != nil {
		return "", 0, fmt.Errorf("server: admin snapshot: %w", err)
	}
	final := filepath.Join(s.snapDir(), storage.SnapName(zxid))
	if err := fs.Rename(filepath.Join(tmp, storage.SnapName(zxid)), final); err != nil {
		return "", 0, fmt.Errorf("server: admin snapshot: %w", err)
	}
	if err := fs.SyncDir(s.snapDir()); err != nil {
		return "", 0, fmt.Errorf("server: admin snapshot: %w", err)
	}
	for { // last_snapshot reports the newest
		old := s.snappedZxid.Load()
		if old >= zxid || s.snappedZxid.CompareAndSwap(old, zxid) {
			break
		}
	}
	s.log.Info("admin snapshot written", "zxid", hex(zxid), "nodes", v.NodeCount())
	return final, zxid, nil
}

// readRestore builds a tree from a snapshot stream (ZKDatabase.deserializeSnapshot): its
// zxid is the lastProcessedZxid section's, or for a snapshot without one (zkd's own files,
// ZooKeeper before 3.9) the digest section's.
func (s *Server) readRestore(body io.Reader) (*loaded, error) {
	if body == nil {
		return nil, errors.New("server: restore: no snapshot in the request")
	}
	loader := datatree.NewLoader()
	sessions := map[int64]int32{}
	zxid := int64(-1)
	var digest *storage.SnapDigest
	err := storage.ReadSnapshot(body, storage.SnapshotHandler{
		Session: func(ss storage.SnapSession) error { sessions[ss.ID] = ss.Timeout; return nil },
		ACL:     func(key int64, acls []jute.ACL) error { loader.ACL(key, acls); return nil },
		Node:    func(n storage.SnapNode) error { return loader.Node(datatree.SnapNode(n)) },
		Digest: func(d storage.SnapDigest) error {
			digest = &d
			return nil
		},
		LastProcessedZxid: func(z int64) error { zxid = z; return nil },
	})
	if err != nil {
		return nil, fmt.Errorf("server: restore: %w", err)
	}
	if zxid < 0 && digest != nil {
		zxid = digest.Zxid
	}
	if zxid < 0 {
		return nil, errors.New("server: restore: the snapshot carries no zxid (no lastProcessedZxid or digest section)")
	}
	tree, err := loader.Finish(s.cfg.ExtendedTypes, zxid)
	if err != nil {
		return nil, fmt.Errorf("server: restore: %w", err)
	}
	if loader.MissingACLs > 0 {
		// A server's own snapshot may lack them (its log replay restores them); a
		// restored tree has no log behind it.
		return nil, fmt.Errorf("server: restore: %d nodes reference ACLs the snapshot lacks", loader.MissingACLs)
	}
	if digest != nil && digest.Zxid == zxid && digest.Version == jute.DigestVersion && digest.Digest != tree.Digest() {
		// ZooKeeper only logs this (compareSnapshotDigests): a fuzzy snapshot's digest
		// may be of a state the tree never exactly had.
		s.log.Warn("restored snapshot's digest does not match its tree", "zxid", hex(zxid))
	}
	return &loaded{tree: tree, sessions: sessions, snapZxid: zxid}, nil
}

// installRestore makes a restored tree the core's (ZooKeeperServer.restoreFromSnapshot):
// the tree and its sessions replace the current ones and session tracking starts afresh.
// Unlike ZooKeeper, which keeps its connections and lets the writes in flight land on the
// new tree, every client is disconnected and pending writes are dropped (their clients
// see the disconnect; sessions the snapshot holds reconnect). The tree is given a zxid
// past everything logged, and snapshotted at once: a restart loads it instead of
// replaying the old log over it, which ZooKeeper's restore leaves to the next snapshot.
// It returns that zxid.
func (s *Server) installRestore(ld *loaded) int64 {
	for c := range s.conns {
		s.detach(c)
		c.close()
	}
	for _, sess := range s.sessions {
		s.dropQueue(sess)
		sess.conn = nil
	}
	s.pending = nil
	restored := ld.snapZxid
	zxid := max(restored, s.lastProposed+1, s.lastQueued+1, s.tree.LastZxid()+1)
	ld.tree.SetLastZxid(zxid)
	ld.snapZxid = zxid
	s.install(ld)
	s.queueSnapshot()
	s.log.Info("database restored", "snapshotZxid", hex(restored), "zxid", hex(zxid),
		"nodes", s.tree.NodeCount(), "sessions", len(s.sessions))
	return zxid
}
