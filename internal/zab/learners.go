package zab

import (
	"cmp"
	"slices"
)

// LearnerState is what the leader (or an observer master) knows of one connected learner,
// for the web console and the AdminServer's observers command.
type LearnerState struct {
	Conn     ConnID
	Sid      int64 // 0 until its FOLLOWERINFO or OBSERVERINFO arrived
	Observer bool  // it does not vote (it acks nothing)
	// ObserverInfo: it registered with OBSERVERINFO (ZooKeeper's LearnerType.OBSERVER).
	ObserverInfo bool
	Synced       bool // it was synced and receives proposals or commits
	// Started: it acked NEWLEADER, so what it sends from now on is LearnerHandler's main
	// loop's (the packets ZooKeeper counts as received).
	Started  bool
	PeerZxid int64 // the zxid it reported when it connected
	LastAck  int64 // the highest proposal it acked; 0 before the first (and for observers)
	LastRecv int64 // when the leader last heard from it, ms on the leader's clock
}

// Learners lists the connected learners by sid.
func (l *Leader) Learners() []LearnerState {
	out := make([]LearnerState, 0, len(l.conns))
	for _, c := range l.conns {
		out = append(out, l.learnerState(c))
	}
	slices.SortFunc(out, func(a, b LearnerState) int { return cmp.Compare(a.Sid, b.Sid) })
	return out
}

// Learner is one connection's state; false when the leader does not know it (closed or
// dropped).
func (l *Leader) Learner(id ConnID) (LearnerState, bool) {
	c := l.conns[id]
	if c == nil {
		return LearnerState{}, false
	}
	return l.learnerState(c), true
}

func (l *Leader) learnerState(c *lconn) LearnerState {
	return LearnerState{
		Conn: c.id, Sid: c.sid, Observer: !l.voter(c), ObserverInfo: c.observerInfo,
		Synced: l.forwarding(c), Started: c.phase >= lcStartup,
		PeerZxid: c.peerZxid, LastAck: c.lastAck, LastRecv: c.lastRecv,
	}
}

// Observer is one observer connection's state (Observer and ObserverInfo are always true;
// Synced once NEWLEADER is queued, Started once UPTODATE was sent, as SyncedObservers
// counts); false when unknown.
func (m *ObserverMaster) Observer(id ConnID) (LearnerState, bool) {
	c := m.conns[id]
	if c == nil {
		return LearnerState{}, false
	}
	return c.state(), true
}

func (c *omConn) state() LearnerState {
	return LearnerState{
		Conn: c.id, Sid: c.sid, Observer: true, ObserverInfo: true,
		Synced: c.phase >= omNewLeader, Started: c.phase == omServing,
		PeerZxid: c.peerZxid, LastRecv: c.lastRecv,
	}
}

// LastProposed is the newest proposed zxid (the last committed before broadcast starts).
func (l *Leader) LastProposed() int64 {
	if l.tracker == nil {
		return l.lastProcessed
	}
	return l.tracker.LastProposed()
}
