package zab

import (
	"fmt"
	"github.com/zkd-io/zkd/jute"
	"strings"
	"testing"
)

func TestTrackerCommitsInOrderOnQuorum(t *testing.T) {
	tr := NewTracker(NewMajority(1, 2, 3), MakeZxid(1, 0))
	for c := int64(1); c <= 3; c++ {
		if err := tr.Propose(MakeZxid(1, c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Propose(MakeZxid(1, 2)); err == nil {
		t.Fatal("out-of-order proposal accepted")
	}
	// The leader (1) has logged everything; a single follower ack on the third implies
	// the earlier ones (in-order logging), so all three commit together.
	if _, moved := tr.Ack(1, MakeZxid(1, 3)); moved {
		t.Fatal("committed with one ack of three voters")
	}
	if _, moved := tr.Ack(9, MakeZxid(1, 3)); moved {
		t.Fatal("a non-voter's ack counted")
	}
	c, moved := tr.Ack(2, MakeZxid(1, 2))
	if !moved || c != MakeZxid(1, 2) {
		t.Fatalf("commit after quorum on 2: %s %v", Hex(c), moved)
	}
	c, moved = tr.Ack(3, MakeZxid(1, 3))
	if !moved || c != MakeZxid(1, 3) || len(tr.Outstanding()) != 0 {
		t.Fatalf("commit after quorum on 3: %s %v %v", Hex(c), moved, tr.Outstanding())
	}
}

func TestTrackerNeverSkipsAnUncommittedProposal(t *testing.T) {
	tr := NewTracker(NewMajority(1, 2, 3, 4, 5), 0)
	tr.Propose(1)
	tr.Propose(2)
	// Acks for 2 alone from sids that did not ack 1 cannot happen with in-order logging,
	// but even counted per proposal, 2 must wait for 1.
	tr.Ack(1, 1)
	tr.Ack(1, 2)
	tr.Ack(2, 2)
	if c := tr.LastCommitted(); c != 1 && c != 0 {
		t.Fatalf("committed %d", c)
	}
	if c := tr.LastCommitted(); c != 0 {
		// sids 1 and 2 acked 1 (2 implies 1): two of five is not a quorum.
		t.Fatalf("committed %d without a quorum", c)
	}
	c, _ := tr.Ack(3, 2)
	if c != 2 {
		t.Fatalf("committed %d, want 2 after three of five", c)
	}
}

func hist(epoch int64, from, to int64) []Committed {
	var out []Committed
	for c := from; c <= to; c++ {
		z := MakeZxid(epoch, c)
		out = append(out, Committed{Zxid: z, Data: []byte(Hex(z))})
	}
	return out
}

func describe(p SyncPlan) string {
	if p.Snap {
		return fmt.Sprintf("SNAP learner=%s", Hex(p.LearnerZxid))
	}
	var parts []string
	for _, q := range p.Packets {
		parts = append(parts, PacketName(q.Type)+":"+Hex(q.Zxid))
	}
	return strings.Join(parts, " ") + " learner=" + Hex(p.LearnerZxid)
}

func TestPlanSync(t *testing.T) {
	e1 := func(c int64) int64 { return MakeZxid(1, c) }
	e2 := func(c int64) int64 { return MakeZxid(2, c) }
	h := hist(1, 5, 8) // leader committed 1:5..1:8
	mixed := append(hist(1, 5, 6), hist(2, 1, 2)...)
	disk := func(from int64) []Committed { return hist(1, 1, 8) }
	cases := []struct {
		name    string
		peer    int64
		last    int64
		history []Committed
		older   func(int64) []Committed
		want    string
	}{
		{"in sync", e1(8), e1(8), h, nil, "DIFF:0x100000008 learner=0x100000008"},
		{"behind within history", e1(6), e1(8), h, nil,
			"DIFF:0x100000008 PROPOSAL:0x100000007 COMMIT:0x100000007 PROPOSAL:0x100000008 COMMIT:0x100000008 learner=0x100000008"},
		{"at the start of history", e1(5), e1(8), h, nil,
			"DIFF:0x100000008 PROPOSAL:0x100000006 COMMIT:0x100000006 PROPOSAL:0x100000007 COMMIT:0x100000007 PROPOSAL:0x100000008 COMMIT:0x100000008 learner=0x100000008"},
		{"ahead: old leader's tail", e1(9), e1(8), h, nil, "TRUNC:0x100000008 learner=0x100000008"},
		{"new epoch zxid ahead is not truncated", e2(0), e1(8), h, nil, "SNAP learner=0x100000008"},
		{"divergent tail inside history", e1(6) + 0, e2(2), mixed, nil,
			"DIFF:0x200000002 PROPOSAL:0x200000001 COMMIT:0x200000001 PROPOSAL:0x200000002 COMMIT:0x200000002 learner=0x200000002"},
		{"too far behind, no disk", e1(2), e1(8), h, nil, "SNAP learner=0x100000008"},
		{"too far behind, disk has it", e1(2), e1(8), h, disk,
			"DIFF:0x100000008 PROPOSAL:0x100000003 COMMIT:0x100000003 PROPOSAL:0x100000004 COMMIT:0x100000004 PROPOSAL:0x100000005 COMMIT:0x100000005 PROPOSAL:0x100000006 COMMIT:0x100000006 PROPOSAL:0x100000007 COMMIT:0x100000007 PROPOSAL:0x100000008 COMMIT:0x100000008 learner=0x100000008"},
		{"empty history, learner behind", e1(3), e1(8), nil, nil, "SNAP learner=0x100000008"},
		{"empty history, learner at new epoch start", e1(0), e1(0), nil, nil, "DIFF:0x100000000 learner=0x100000000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(PlanSync(tc.peer, tc.last, tc.history, tc.older)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestPlanSyncTruncatesDivergentTail: a learner that logged 1:7' (never committed) while
// the leader's history went 1:6 then 2:1 is truncated back to 1:6 — but only within an
// epoch; here the next committed zxid is in a new epoch, so it gets a snapshot.
func TestPlanSyncTruncatesDivergentTail(t *testing.T) {
	h := append(hist(1, 5, 6), hist(2, 1, 2)...)
	got := describe(PlanSync(MakeZxid(1, 7), MakeZxid(2, 2), h, nil))
	if got != "SNAP learner=0x200000002" {
		t.Fatalf("cross-epoch divergent tail: %s", got)
	}
	// Same epoch: the leader committed 1:5, 1:6, 1:8 (1:7 was a failed proposal no one
	// kept); a learner at 1:7 is truncated to 1:6 and then gets 1:8.
	h2 := []Committed{{Zxid: MakeZxid(1, 5)}, {Zxid: MakeZxid(1, 6)}, {Zxid: MakeZxid(1, 8)}}
	got = describe(PlanSync(MakeZxid(1, 7), MakeZxid(1, 8), h2, nil))
	if got != "TRUNC:0x100000006 PROPOSAL:0x100000008 COMMIT:0x100000008 learner=0x100000008" {
		t.Fatalf("same-epoch divergent tail: %s", got)
	}
}

// TestPingReplyIsNeverNull: ZooKeeper's leader reads a PING reply's data without a null
// check (LearnerHandler), so an empty touch list must be an empty buffer, not null.
func TestPingReplyIsNeverNull(t *testing.T) {
	l, _ := NewLearner(LearnerConfig{ID: 1, TickMs: 100, InitLimit: 10, SyncLimit: 5}, PersistentState{}, 0)
	l.phase = lpBroadcast
	r := l.Receive(1, jute.QuorumPacket{Type: PktPing, Zxid: 5})
	if len(r.Out) != 1 || r.Out[0].Packet.Data == nil {
		t.Fatalf("ping reply %+v", r.Out)
	}
	b := jute.Marshal(&r.Out[0].Packet)
	if got := b[12:16]; string(got) != "\x00\x00\x00\x00" {
		t.Fatalf("ping reply data length bytes %x, want 00000000", got)
	}
}

// TestFollowerAcksProposalsCommittedBeforeItsFsync: a quorum can form without this
// follower, so a COMMIT may arrive before its own fsync; it must still ACK the proposal
// (ZooKeeper's leader drops a follower whose oldest ACK is missing past syncLimit).
func TestFollowerAcksProposalsCommittedBeforeItsFsync(t *testing.T) {
	l, _ := NewLearner(LearnerConfig{ID: 1, TickMs: 100, InitLimit: 10, SyncLimit: 5}, PersistentState{}, 0)
	l.phase = lpBroadcast
	for c := int64(1); c <= 3; c++ {
		z := MakeZxid(1, c)
		if r := l.Receive(1, jute.QuorumPacket{Type: PktProposal, Zxid: z, Data: txnData(z)}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if r := l.Receive(2, jute.QuorumPacket{Type: PktCommit, Zxid: MakeZxid(1, 1)}); r.Err != nil || len(r.Apply) != 1 {
		t.Fatalf("commit: %+v", r)
	}
	r := l.Logged(MakeZxid(1, 3))
	var acked []int64
	for _, o := range r.Out {
		if o.Packet.Type == PktAck {
			acked = append(acked, Counter(o.Packet.Zxid))
		}
	}
	if fmt.Sprint(acked) != "[1 2 3]" {
		t.Fatalf("acked %v, want [1 2 3]", acked)
	}
}

// TestSyncNeedsQuorumProof: a sync is answered only after a quorum answered a PING sent
// after it arrived, so a leader that lost its followers without noticing cannot answer.
func TestSyncNeedsQuorumProof(t *testing.T) {
	h := newHarness(t, 3, []int64{1, 2, 3}, 3, nil, map[int64][]Committed{1: nil, 2: nil}, nil)
	h.run()
	h.propose(3)
	h.run()
	r := h.leader.LocalSync()
	if r.Synced != 0 {
		t.Fatal("sync answered without hearing from any follower")
	}
	pings := 0
	for _, o := range r.Out {
		if o.Packet.Type == PktPing {
			pings++
		}
	}
	if pings != 2 {
		t.Fatalf("sync sent %d pings, want one per follower", pings)
	}
	// The followers' answers go through the harness; one answer (plus the leader) is a
	// quorum of three.
	h.leaderReady(r)
	answered := 0
	for id := range h.nodes {
		for len(h.toLearn[id]) > 0 {
			h.deliverToLearner(id)
		}
	}
	for id := range h.nodes {
		for len(h.toLeader[id]) > 0 {
			p := h.toLeader[id][0]
			h.toLeader[id] = h.toLeader[id][1:]
			answered += h.leader.Receive(id, h.now, p).Synced
		}
	}
	if answered != 1 {
		t.Fatalf("sync answered %d times after the followers' pongs", answered)
	}
	// With the followers gone silent (a deposed leader that has not noticed), no answer.
	r = h.leader.LocalSync()
	if r.Synced != 0 {
		t.Fatal("sync answered by a leader whose followers are gone")
	}
}

// TestPlanSyncWholeTreeForMinusOne: a learner that claims zxid -1 (zkd's learner resyncing
// after a digest mismatch) gets a SNAP whatever history the leader holds, and the leader
// reads no log for it.
func TestPlanSyncWholeTreeForMinusOne(t *testing.T) {
	h := hist(1, 1, 8)
	disk := func(from int64) []Committed {
		t.Fatalf("log read from %s for a learner at -1", Hex(from))
		return nil
	}
	for _, last := range []int64{MakeZxid(1, 8), 0} {
		history := h
		if last == 0 {
			history = nil
		}
		if got := describe(PlanSync(-1, last, history, disk)); got != "SNAP learner="+Hex(last) {
			t.Errorf("leader at %s: got %s, want a SNAP", Hex(last), got)
		}
		if NeedsOlder(-1, last, history) {
			t.Errorf("leader at %s: NeedsOlder(-1) asks for the log", Hex(last))
		}
	}
}
