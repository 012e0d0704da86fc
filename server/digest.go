package server

import (
	"errors"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/election"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/jute"
)

// The tree digest (ZOOKEEPER-3114): every txn but an error txn carries the digest of the
// tree once it is applied (prep computes it before proposing, as ZooKeeper's
// PrepRequestProcessor does), and whoever applies a txn compares it with its own tree's
// digest, as ZooKeeper's DataTree.compareDigest does: a mismatch is the one sign that this
// member's tree differs from the one the txn was made on. It counts in
// digest_mismatches_count (ZooKeeper's name) and is logged.
//
// Beyond ZooKeeper, which only counts, a learner that finds one leaves its role at once (so
// it serves no read from a tree known to be wrong, and its clients move to another member)
// and rejoins the same leader claiming zxid -1, which both ZooKeeper's and zkd's leaders
// answer with a SNAP: the leader's tree replaces the diverged one. That counts in zkd's own
// digest_resync_count. A leader or a standalone server has nobody to resync from: it counts
// and logs.

// digestState is the core's digest bookkeeping.
type digestState struct {
	// armed: a mismatch now is grounds for a resync. A SNAP disarms it until a digest has
	// matched again: right after one the tree is the leader's (possibly fuzzy, as
	// ZooKeeper's leader streams it while it applies txns), so a mismatch then says the
	// leader's digests disagree with its own tree, which no resync can mend; resyncing
	// again and again would only keep this member away.
	armed bool
	// resync: the next sync must bring the leader's whole tree (claim zxid -1).
	resync bool
	// leader is the leader to rejoin without an election.
	leader int64
}

// errDigestMismatch ends a learner's role for a resync.
var errDigestMismatch = errors.New("tree digest mismatch: resyncing from the leader")

// checkDigest compares the tree, just after txn was applied, with the digest txn carries.
func (s *Server) checkDigest(txn *jute.LoggedTxn) {
	d := txn.Digest
	if d == nil || s.cfg.NoDigest || d.Version != jute.DigestVersion {
		// ZooKeeper does not compare across digest versions either.
		return
	}
	actual := s.tree.Digest()
	if actual == d.TreeDigest {
		s.digest.armed = true
		return
	}
	s.counters.add(cntDigestMismatch, 1)
	zxid := txn.Header.Zxid
	lr := s.role.learner()
	if lr == nil || !s.digest.armed || s.digest.resync {
		s.log.Warn("tree digest mismatch: this server's tree differs from the one the txn was made on",
			"zxid", hex(zxid), "type", txn.Header.Type, "txnDigest", d.TreeDigest, "treeDigest", actual, "mode", s.role.mode(), "resyncing", s.digest.resync)
		return
	}
	s.log.Warn("tree digest mismatch: this member's tree has diverged from the leader's; it stops serving and resyncs from the leader by SNAP",
		"zxid", hex(zxid), "type", txn.Header.Type, "txnDigest", d.TreeDigest, "treeDigest", actual, "leader", lr.leaderSid)
	s.counters.add(cntDigestResync, 1)
	s.digest.resync = true
	s.digest.leader = lr.leaderSid
	// Not a damaged member: its log is whole, and the log is what its vote stands for
	// (Zab's safety); marking every follower of a diverged leader damaged would leave no
	// one to elect the next leader should that one go before the SNAPs come.
	if s.stepDown == nil {
		s.stepDown = errDigestMismatch
	}
}

// takeResync is where a learner that found a digest mismatch goes: straight back to its
// leader, without an election (its peers still follow that leader; one that is gone fails
// the dial, and a normal election follows).
func (s *Server) takeResync() (election.Decision, bool) {
	if !s.digest.resync || s.digest.leader == 0 {
		return election.Decision{}, false
	}
	leader := s.digest.leader
	s.digest.leader = 0
	if _, ok := s.peer(leader); !ok || leader == s.cfg.ServerID {
		return election.Decision{}, false
	}
	d := election.Decision{Leader: leader, Zxid: s.ens.st.LastLogged, ElectionEpoch: s.ens.elect.Round(), PeerEpoch: s.ens.st.CurrentEpoch, State: election.Following}
	if s.ens.observer {
		d.State = election.Observing
	}
	return d, true
}

// syncZxid is the last zxid a learner tells its leader it has (ACKEPOCH): its log's, or -1
// while it must resync, so that the leader sends its whole tree. ZooKeeper's
// LearnerHandler.syncFollower answers -1 with a SNAP (no committed proposal and no logged
// txn is at or before it; it is no new epoch's zxid), and so does zab.PlanSync. Not 0: zkd's
// leader would DIFF a learner at 0 from its first logged txn when its log reaches back
// that far, onto the diverged tree.
func (s *Server) syncZxid() int64 {
	if s.digest.resync {
		return -1
	}
	return max(s.tree.LastZxid(), s.lastQueued)
}

// replayDigest checks the digests of the txns replayed at start-up, as ZooKeeper's
// DataTree does while it restores: a tree loaded from a fuzzy snapshot is only exact again
// once the replay has passed the zxid the snapshot's digest section names (ZooKeeper
// records the digest as of the end of its walk; compareSnapshotDigests), so until then
// nothing is compared; there the tree must have the section's digest, and from then on
// each txn's. A section older than the snapshot's zxid, or at it (zkd's own snapshots
// record the digest as of the start of their walk, whose end no file tells), leaves the
// whole replay unchecked, as it does ZooKeeper's. A mismatch found here is counted and
// logged: the member's own log and snapshot disagree, and a learner's first sync brings
// the leader's tree if its digests disagree too.
type replayDigest struct {
	s       *Server
	pending *storage.SnapDigest // the snapshot's digest, not reached yet
	off     bool
}

func (s *Server) newReplayDigest(snapZxid int64, d *storage.SnapDigest) *replayDigest {
	r := &replayDigest{s: s, off: s.cfg.NoDigest}
	if d != nil && d.Zxid > 0 {
		if d.Zxid <= snapZxid || d.Version != jute.DigestVersion {
			r.off = true
		} else {
			r.pending = d
		}
	}
	return r
}

func (r *replayDigest) check(tree *datatree.Tree, t *jute.LoggedTxn) {
	if r.off {
		return
	}
	if p := r.pending; p != nil {
		switch {
		case t.Header.Zxid < p.Zxid:
			return
		case t.Header.Zxid > p.Zxid:
			// The log lacks the section's txn: nothing tells when the tree is exact.
			r.off = true
			return
		}
		r.pending = nil
		if got := tree.Digest(); got != p.Digest {
			r.mismatch(t.Header.Zxid, p.Digest, got, "snapshot")
		}
	}
	if d := t.Digest; d != nil && d.Version == jute.DigestVersion {
		if got := tree.Digest(); got != d.TreeDigest {
			r.mismatch(t.Header.Zxid, d.TreeDigest, got, "txn")
		}
	}
}

func (r *replayDigest) mismatch(zxid, want, got int64, of string) {
	r.s.counters.add(cntDigestMismatch, 1)
	r.s.log.Warn("tree digest mismatch replaying the log: the tree differs from what the "+of+" recorded",
		"zxid", hex(zxid), "recordedDigest", want, "treeDigest", got)
}
