package zab

import (
	"cmp"
	"slices"
)

// LearnerState is what the leader knows of one connected learner, for the web console.
type LearnerState struct {
	Sid      int64
	Observer bool  // it does not vote (it acks nothing)
	Synced   bool  // it was synced and receives proposals or commits
	PeerZxid int64 // the zxid it reported when it connected
	LastAck  int64 // the highest proposal it acked; 0 before the first (and for observers)
	LastRecv int64 // when the leader last heard from it, ms on the leader's clock
}

// Learners lists the connected learners by sid.
func (l *Leader) Learners() []LearnerState {
	out := make([]LearnerState, 0, len(l.conns))
	for _, c := range l.conns {
		out = append(out, LearnerState{
			Sid: c.sid, Observer: !l.voter(c), Synced: l.forwarding(c),
			PeerZxid: c.peerZxid, LastAck: c.lastAck, LastRecv: c.lastRecv,
		})
	}
	slices.SortFunc(out, func(a, b LearnerState) int { return cmp.Compare(a.Sid, b.Sid) })
	return out
}

// LastProposed is the newest proposed zxid (the last committed before broadcast starts).
func (l *Leader) LastProposed() int64 {
	if l.tracker == nil {
		return l.lastProcessed
	}
	return l.tracker.LastProposed()
}
