package zab

import "fmt"

// Tracker is the leader's view of outstanding proposals: it collects acks and reports
// commits, always in zxid order, as ZooKeeper's Leader.processAck / tryToCommit do. A
// proposal commits once a quorum of voters (the leader's own ack included, given when its
// log is durable) has acked it and every earlier proposal has committed.
type Tracker struct {
	qv            QuorumVerifier
	outstanding   []*pendingProposal // zxid order
	lastProposed  int64
	lastCommitted int64
}

type pendingProposal struct {
	zxid int64
	acks map[int64]bool
}

// NewTracker starts tracking after lastCommitted (the new epoch's zxid for a new leader).
func NewTracker(qv QuorumVerifier, lastCommitted int64) *Tracker {
	return &Tracker{qv: qv, lastProposed: lastCommitted, lastCommitted: lastCommitted}
}

// Propose records a new proposal; zxids must increase.
func (t *Tracker) Propose(zxid int64) error {
	if zxid <= t.lastProposed {
		return fmt.Errorf("zab: proposal %s not after last proposed %s", Hex(zxid), Hex(t.lastProposed))
	}
	t.outstanding = append(t.outstanding, &pendingProposal{zxid: zxid, acks: map[int64]bool{}})
	t.lastProposed = zxid
	return nil
}

// Ack records that sid has logged every proposal up to zxid (followers ack each proposal;
// an ack implies the earlier ones, since a follower logs in order). It returns the zxid up to
// which proposals are now committed, and whether that moved.
func (t *Tracker) Ack(sid, zxid int64) (committed int64, moved bool) {
	if !t.qv.IsVoter(sid) {
		return t.lastCommitted, false
	}
	for _, p := range t.outstanding {
		if p.zxid > zxid {
			break
		}
		p.acks[sid] = true
	}
	before := t.lastCommitted
	n := 0
	for ; n < len(t.outstanding) && t.qv.IsQuorum(t.outstanding[n].acks); n++ {
		t.lastCommitted = t.outstanding[n].zxid
	}
	if n > 0 {
		clear(t.outstanding[:n])
		t.outstanding = t.outstanding[n:]
	}
	return t.lastCommitted, t.lastCommitted != before
}

// LastCommitted is the highest committed zxid.
func (t *Tracker) LastCommitted() int64 { return t.lastCommitted }

// LastProposed is the highest proposed zxid.
func (t *Tracker) LastProposed() int64 { return t.lastProposed }

// Outstanding lists the zxids proposed but not committed, in order.
func (t *Tracker) Outstanding() []int64 {
	out := make([]int64, len(t.outstanding))
	for i, p := range t.outstanding {
		out[i] = p.zxid
	}
	return out
}
