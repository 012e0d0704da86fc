package zab

import "github.com/zkd-io/zkd/jute"

// Committed is one committed txn in the leader's history: its zxid and its txn bytes
// (TxnHeader + txn [+ digest], as a PROPOSAL carries them).
type Committed struct {
	Zxid int64
	Data []byte
}

// SyncPlan is how a leader brings a learner up to date: the packets to queue before
// NEWLEADER. For SNAP, Packets is empty: the caller streams the database after the SNAP
// packet. LearnerZxid is the zxid the learner has after these packets; proposals after it
// follow as the leader forwards them.
type SyncPlan struct {
	Snap        bool
	Packets     []jute.QuorumPacket
	LearnerZxid int64
}

// PlanSync decides how to sync a learner whose last logged zxid is peerLastZxid, following
// ZooKeeper's LearnerHandler.syncFollower. history is the leader's in-memory committed log
// (ascending, possibly empty); older reads more history from disk (ascending, starting at or
// before its argument; nil or empty if that is not possible or too large). lastProcessed
// is the leader's last applied zxid.
func PlanSync(peerLastZxid, lastProcessed int64, history []Committed, older func(from int64) []Committed) SyncPlan {
	isPeerNewEpochZxid := Counter(peerLastZxid) == 0
	minCommitted, maxCommitted := lastProcessed, lastProcessed
	if len(history) > 0 {
		minCommitted, maxCommitted = history[0].Zxid, history[len(history)-1].Zxid
	}
	q := &queuer{needOp: true, queued: peerLastZxid}
	switch {
	case peerLastZxid < 0:
		// A learner that asks for the whole tree (zkd's learner after a digest mismatch;
		// ZooKeeper's syncFollower also ends at SNAP for it, having found no history).
	case lastProcessed == peerLastZxid:
		// Already in sync: an empty DIFF.
		q.op(PktDiff, peerLastZxid)
		return SyncPlan{Packets: q.packets, LearnerZxid: peerLastZxid}
	case peerLastZxid > maxCommitted && !isPeerNewEpochZxid:
		// The learner has txns we never committed (an old leader's tail).
		q.op(PktTrunc, maxCommitted)
		return SyncPlan{Packets: q.packets, LearnerZxid: maxCommitted}
	case maxCommitted >= peerLastZxid && minCommitted <= peerLastZxid:
		z, ok := q.committed(history, peerLastZxid, nil, maxCommitted)
		if ok && !q.needOp {
			return SyncPlan{Packets: q.packets, LearnerZxid: z}
		}
	case peerLastZxid < minCommitted && older != nil:
		disk := older(peerLastZxid)
		if len(disk) > 0 {
			limit := minCommitted
			z, ok := q.committed(disk, peerLastZxid, &limit, maxCommitted)
			if ok && z >= minCommitted {
				z, ok = q.committed(history, z, nil, maxCommitted)
				if ok && !q.needOp {
					return SyncPlan{Packets: q.packets, LearnerZxid: z}
				}
			}
		}
	}
	return SyncPlan{Snap: true, LearnerZxid: lastProcessed}
}

// NeedsOlder reports whether PlanSync would read older history for a learner whose last
// logged zxid is peerLastZxid: it is behind the in-memory history.
func NeedsOlder(peerLastZxid, lastProcessed int64, history []Committed) bool {
	minCommitted, maxCommitted := lastProcessed, lastProcessed
	if len(history) > 0 {
		minCommitted, maxCommitted = history[0].Zxid, history[len(history)-1].Zxid
	}
	switch {
	case peerLastZxid < 0, lastProcessed == peerLastZxid:
		return false
	case peerLastZxid > maxCommitted && Counter(peerLastZxid) != 0:
		return false
	case maxCommitted >= peerLastZxid && minCommitted <= peerLastZxid:
		return false
	}
	return peerLastZxid < minCommitted
}

type queuer struct {
	packets []jute.QuorumPacket
	needOp  bool
	queued  int64
}

func (q *queuer) op(typ int32, zxid int64) {
	q.packets = append(q.packets, jute.QuorumPacket{Type: typ, Zxid: zxid})
	q.needOp = false
}

// committed is ZooKeeper's queueCommittedProposals: it queues the proposals after
// peerLastZxid, preceded by DIFF, or by TRUNC when the learner has a divergent tail within
// the range. ok is false when only a snapshot can help (a TRUNC across an epoch boundary).
func (q *queuer) committed(props []Committed, peerLastZxid int64, maxZxid *int64, lastCommitted int64) (int64, bool) {
	isPeerNewEpochZxid := Counter(peerLastZxid) == 0
	prev := int64(-1)
	for _, p := range props {
		if maxZxid != nil && p.Zxid > *maxZxid {
			break
		}
		if p.Zxid < peerLastZxid {
			prev = p.Zxid
			continue
		}
		if q.needOp {
			if p.Zxid == peerLastZxid {
				q.op(PktDiff, lastCommitted)
				continue
			}
			if isPeerNewEpochZxid {
				q.op(PktDiff, lastCommitted)
			} else if p.Zxid > peerLastZxid {
				if Epoch(p.Zxid) != Epoch(peerLastZxid) {
					// A learner cannot truncate across an epoch boundary.
					return q.queued, false
				}
				q.op(PktTrunc, prev)
			}
		}
		if p.Zxid <= q.queued {
			continue
		}
		q.packets = append(q.packets,
			jute.QuorumPacket{Type: PktProposal, Zxid: p.Zxid, Data: p.Data},
			jute.QuorumPacket{Type: PktCommit, Zxid: p.Zxid})
		q.queued = p.Zxid
	}
	if q.needOp && isPeerNewEpochZxid {
		q.op(PktDiff, lastCommitted)
	}
	return q.queued, true
}
