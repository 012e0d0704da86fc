package server

import (
	"github.com/zkd-io/zkd/internal/config"
)

// quorumConfigText is what /zookeeper/config holds in this ensemble: its server.N lines as
// ZooKeeper's QuorumVerifier prints them (with the group.N and weight.N lines of a
// hierarchical quorum). zkd has no dynamic reconfiguration yet, so the
// configuration is the static one, whose version is 0.
func (s *Server) quorumConfigText() []byte {
	return []byte(config.HierarchicalText(membersByID(s.ens.peers), s.ens.hier, s.ens.version))
}

// fillConfigNode writes the ensemble's configuration into /zookeeper/config, where ZooKeeper
// calls initConfigInZKDatabase: when a member starts and whenever a learner has synced with
// its leader, so that every member shows its own configuration whatever a snapshot or a
// leader's SNAP carried. A standalone server keeps the node as it is (empty, or as a
// snapshot had it), as ZooKeeper's standalone server does.
//
// One difference: ZooKeeper fills the node before loading the snapshot, so a leader that
// restarted serves the node as its snapshot had it (an earlier run's Mtime, or even an
// empty node if a standalone server wrote the snapshot); zkd fills it after loading.
func (s *Server) fillConfigNode() {
	if !s.ensembleMode() || s.tree == nil {
		return
	}
	for _, ev := range s.tree.SetConfig(s.quorumConfigText(), s.ens.version, s.nowMs()) {
		s.notify(ev, 0)
	}
}
