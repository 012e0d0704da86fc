package server

import (
	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/ext"
)

// The virtual nodes of the capabilities extension (docs/beyond.md; what they copy of
// ClickHouse Keeper is in internal/admin's caps.go). They live only in the read path: the
// tree never holds them, so no snapshot, digest, txn log or peer ever sees them, and
// getChildren of their parent does not list them (unless zkd.keeperNodesListed lists
// /keeper under "/").
//
// A real node wins: when the tree holds /keeper, the whole virtual /keeper subtree yields to
// it (a user may already own /keeper), and a real /zookeeper/capabilities hides the virtual
// one. Writes never look here: they are answered by the tree as ZooKeeper answers them.

// keeperChildren are the virtual /keeper's children, sorted. ClickHouse Keeper lists them
// in /keeper's children while its numChildren stays 0 (KeeperMemNodesStorage's
// addCommittedNodeIfNotExists adds the child without counting it); zkd does the same. Its
// /keeper/config and /keeper/availability_zone (NuRaft's cluster configuration, the
// server's zone) have no zkd meaning and are not served.
var keeperChildren = []string{"api_version", "feature_flags"}

// virtualNode returns the virtual node at path, nil when there is none: its Stat is all
// zero but for dataLength (as ClickHouse Keeper's system nodes), its ACL ZooKeeper's open
// one (world:anyone, as ZooKeeper's own /zookeeper; ClickHouse Keeper's have none, which
// it checks as open too).
func (s *Server) virtualNode(path string) (datatree.Node, bool) {
	set := s.cfg.Extensions
	if set.Empty() {
		return datatree.Node{}, false
	}
	var data []byte
	switch path {
	case admin.CapabilitiesPath:
		// Whenever any extension is on, so a client learns of keeper-ops or paged-list
		// even on a server that does not enable capabilities itself.
		data = admin.CapabilitiesData(set)
	case admin.KeeperPath, admin.KeeperAPIVersionPath, admin.KeeperFeatureFlagsPath:
		if _, real := s.tree.Lookup(admin.KeeperPath); !set.Has(ext.Capabilities) || real {
			return datatree.Node{}, false
		}
		switch path {
		case admin.KeeperAPIVersionPath:
			data = []byte(admin.APIVersion(set))
		case admin.KeeperFeatureFlagsPath:
			data = admin.FeatureFlagsData(set)
		default:
			data = []byte{}
		}
	default:
		return datatree.Node{}, false
	}
	if _, real := s.tree.Lookup(path); real {
		return datatree.Node{}, false
	}
	return datatree.Node{Data: data, ACL: datatree.OpenACLKey}, true
}

// lookup is node for a read that may see a virtual node.
func (s *Server) lookup(path string) (datatree.Node, bool) {
	if n, ok := s.node(path); ok {
		return n, true
	}
	return s.virtualNode(path)
}

// virtualKeeper reports whether the virtual /keeper is served.
func (s *Server) virtualKeeper() bool {
	_, ok := s.virtualNode(admin.KeeperPath)
	return ok
}

// virtualChildren is what getChildren adds to path's real children: "keeper" under "/" when
// zkd.keeperNodesListed asks, and the virtual /keeper's own children.
func (s *Server) virtualChildren(path string) []string {
	if s.cfg.Extensions.Empty() {
		return nil // every getChildren passes here: ZooKeeper's path stays one test
	}
	switch path {
	case "/", "":
		if s.cfg.KeeperNodesListed && s.virtualKeeper() {
			return []string{"keeper"}
		}
	case admin.KeeperPath:
		if s.virtualKeeper() {
			return keeperChildren
		}
	}
	return nil
}
