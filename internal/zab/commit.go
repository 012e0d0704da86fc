package zab

import "fmt"

// Tracker is the leader's view of outstanding proposals: it collects acks and reports
// commits, always in zxid order, as ZooKeeper's Leader.processAck / tryToCommit do. A
// proposal commits once a quorum of voters (the leader's own ack included, given when its
// log is durable) has acked it and every earlier proposal has committed.
type Tracker struct {
	qvs           []QuorumVerifier   // what new proposals need a quorum of (two while a reconfig is pending)
	outstanding   []*pendingProposal // zxid order
	lastProposed  int64
	lastCommitted int64
	// recent are the proposals the last Ack committed: a committed reconfig's acks pick
	// the next leader.
	recent []*pendingProposal
	// pauseAt is a pending reconfig's zxid: commits stop after it until Settle, so that the
	// leader activates the new configuration, and designates the next leader with the later
	// proposals still outstanding, before any of them commits (ZooKeeper's processAck
	// commits one proposal at a time, and no more once it designated another leader).
	pauseAt int64
}

// PauseAfter stops commits after zxid (a reconfig) until Settle is called.
func (t *Tracker) PauseAfter(zxid int64) { t.pauseAt = zxid }

// Settle commits what waited behind a reconfig; it reports as Ack does.
func (t *Tracker) Settle() (committed int64, moved bool) { return t.settle() }

// committedAcks is who acked zxid, committed by the last Ack.
func (t *Tracker) committedAcks(zxid int64) map[int64]bool {
	for _, p := range t.recent {
		if p.zxid == zxid {
			return p.acks
		}
	}
	return nil
}

type pendingProposal struct {
	zxid int64
	acks map[int64]bool
	qvs  []QuorumVerifier
}

func (p *pendingProposal) hasAllQuorums() bool {
	for _, qv := range p.qvs {
		if !qv.IsQuorum(p.acks) {
			return false
		}
	}
	return true
}

func (p *pendingProposal) counts(sid int64) bool {
	for _, qv := range p.qvs {
		if qv.IsVoter(sid) {
			return true
		}
	}
	return false
}

// NewTracker starts tracking after lastCommitted (the new epoch's zxid for a new leader).
func NewTracker(qv QuorumVerifier, lastCommitted int64) *Tracker {
	return &Tracker{qvs: []QuorumVerifier{qv}, lastProposed: lastCommitted, lastCommitted: lastCommitted}
}

// SetQuorums sets what proposals from now on need a quorum of: each of qvs (ZooKeeper's
// Proposal.addQuorumVerifier: the current configuration, and the proposed one while a
// reconfig is pending). Proposals already made keep theirs.
func (t *Tracker) SetQuorums(qvs ...QuorumVerifier) { t.qvs = qvs }

// AckSet is who acked the outstanding proposal zxid (nil when it is not outstanding).
func (t *Tracker) AckSet(zxid int64) map[int64]bool {
	for _, p := range t.outstanding {
		if p.zxid == zxid {
			return p.acks
		}
	}
	return nil
}

// Propose records a new proposal; zxids must increase.
func (t *Tracker) Propose(zxid int64) error {
	if zxid <= t.lastProposed {
		return fmt.Errorf("zab: proposal %s not after last proposed %s", Hex(zxid), Hex(t.lastProposed))
	}
	t.outstanding = append(t.outstanding, &pendingProposal{zxid: zxid, acks: map[int64]bool{}, qvs: t.qvs})
	t.lastProposed = zxid
	return nil
}

// Ack records that sid has logged every proposal up to zxid (followers ack each proposal;
// an ack implies the earlier ones, since a follower logs in order). It returns the zxid up to
// which proposals are now committed, and whether that moved. An ack counts for a proposal
// when sid votes in one of the configurations it needs a quorum of.
func (t *Tracker) Ack(sid, zxid int64) (committed int64, moved bool) {
	for _, p := range t.outstanding {
		if p.zxid > zxid {
			break
		}
		if p.counts(sid) {
			p.acks[sid] = true
		}
	}
	return t.settle()
}

func (t *Tracker) settle() (committed int64, moved bool) {
	before := t.lastCommitted
	n := 0
	for n < len(t.outstanding) && t.outstanding[n].hasAllQuorums() {
		t.lastCommitted = t.outstanding[n].zxid
		n++
		if t.lastCommitted == t.pauseAt {
			t.pauseAt = 0
			break
		}
	}
	t.recent = append(t.recent[:0], t.outstanding[:n]...)
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

// OldestOutstanding is the lowest zxid waiting to commit; false when none waits.
func (t *Tracker) OldestOutstanding() (int64, bool) {
	if len(t.outstanding) == 0 {
		return 0, false
	}
	return t.outstanding[0].zxid, true
}

// NewestOutstanding is the newest zxid proposed and not committed (false when none is).
func (t *Tracker) NewestOutstanding() (int64, bool) {
	if len(t.outstanding) == 0 {
		return 0, false
	}
	return t.outstanding[len(t.outstanding)-1].zxid, true
}

// Outstanding lists the zxids proposed but not committed, in order.
func (t *Tracker) Outstanding() []int64 {
	out := make([]int64, len(t.outstanding))
	for i, p := range t.outstanding {
		out[i] = p.zxid
	}
	return out
}
