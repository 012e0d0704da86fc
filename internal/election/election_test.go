package election

import (
	"math"
	"testing"
)

func TestTotalOrderPredicate(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3}, Observers: []int64{4}})
	type v struct{ id, zxid, epoch int64 }
	tests := []struct {
		name     string
		new, cur v
		want     bool
	}{
		{"higher epoch wins over higher zxid", v{1, 5, 2}, v{3, 9, 1}, true},
		{"lower epoch loses", v{3, 9, 1}, v{1, 5, 2}, false},
		{"same epoch, higher zxid", v{1, 6, 1}, v{3, 5, 1}, true},
		{"same epoch, lower zxid", v{3, 5, 1}, v{1, 6, 1}, false},
		{"tie broken by higher sid", v{3, 5, 1}, v{2, 5, 1}, true},
		{"tie, lower sid", v{2, 5, 1}, v{3, 5, 1}, false},
		{"identical vote is not better", v{2, 5, 1}, v{2, 5, 1}, false},
		{"observer never wins", v{4, 100, 100}, v{1, 0, 0}, false},
		{"unknown sid never wins", v{9, 100, 100}, v{1, 0, 0}, false},
		{"anything beats an observer's empty vote", v{1, 0, 0}, v{math.MinInt64, math.MinInt64, math.MinInt64}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := e.totalOrderPredicate(tt.new.id, tt.new.zxid, tt.new.epoch, tt.cur.id, tt.cur.zxid, tt.cur.epoch); got != tt.want {
				t.Errorf("totalOrderPredicate(%v over %v) = %v, want %v", tt.new, tt.cur, got, tt.want)
			}
		})
	}
}

func TestVoteEqual(t *testing.T) {
	base := vote{leader: 3, zxid: 5, electionEpoch: 2, peerEpoch: 1}
	with := func(f func(*vote)) vote { v := base; f(&v); return v }
	tests := []struct {
		name string
		a, b vote
		want bool
	}{
		{"looking votes must match in every field", base, with(func(v *vote) { v.zxid = 6 }), false},
		{"looking vs following compares every field", base, with(func(v *vote) { v.state = Following; v.version = 2 }), true},
		{"looking vs following, other round", base, with(func(v *vote) { v.state = Following; v.electionEpoch = 9 }), false},
		{"out of election, same leader and epoch, other zxid and round",
			with(func(v *vote) { v.state = Following; v.version = 2 }),
			with(func(v *vote) { v.state = Leading; v.version = 2; v.zxid = 99; v.electionEpoch = 9 }), true},
		{"out of election, other epoch",
			with(func(v *vote) { v.state = Following; v.version = 2 }),
			with(func(v *vote) { v.state = Leading; v.version = 2; v.peerEpoch = 2 }), false},
		{"out of election, one legacy version: leader only",
			with(func(v *vote) { v.state = Following; v.version = 0 }),
			with(func(v *vote) { v.state = Leading; v.version = 2; v.peerEpoch = 2 }), true},
		{"out of election, other leader", with(func(v *vote) { v.state = Following }), with(func(v *vote) { v.state = Following; v.leader = 2 }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.equal(tt.b); got != tt.want {
				t.Errorf("equal = %v, want %v", got, tt.want)
			}
			if got := tt.b.equal(tt.a); got != tt.want {
				t.Errorf("equal (reversed) = %v, want %v", got, tt.want)
			}
		})
	}
}

// looking builds a LOOKING notification from sid from.
func looking(from, leader, zxid, round, epoch int64) Notification {
	return Notification{State: Looking, Leader: leader, Zxid: zxid, ElectionEpoch: round, PeerEpoch: epoch, Version: 2, From: from}
}

func outsTo(outs []Out, to int64) []Notification {
	var ns []Notification
	for _, o := range outs {
		if o.To == to {
			ns = append(ns, o.N)
		}
	}
	return ns
}

func TestStartVotesForSelfAndTellsEveryVoter(t *testing.T) {
	e := New(Config{ID: 2, Voters: []int64{1, 2, 3}, Observers: []int64{4}, ConfigText: []byte("version=0")})
	outs := e.Start(0, 0x500000007, 5)
	if e.Round() != 1 || e.State() != Looking {
		t.Fatalf("round %d state %v", e.Round(), e.State())
	}
	if len(outs) != 2 || outs[0].To != 1 || outs[1].To != 3 {
		t.Fatalf("outs = %+v, want one to each other voter (not the observer, not self)", outs)
	}
	for _, o := range outs {
		n := o.N
		if n.State != Looking || n.Leader != 2 || n.Zxid != 0x500000007 || n.ElectionEpoch != 1 || n.PeerEpoch != 5 ||
			n.From != 2 || string(n.Config) != "version=0" {
			t.Errorf("notification = %+v", n)
		}
	}
	if v := e.Vote(); v.Leader != 2 || v.ElectionEpoch != 1 {
		t.Errorf("Vote = %+v", v)
	}
	e.Start(10, 0x500000007, 5)
	if e.Round() != 2 {
		t.Errorf("second Start: round %d, want 2", e.Round())
	}
}

func TestObserverVotesForNobody(t *testing.T) {
	e := New(Config{ID: 4, Voters: []int64{1, 2, 3}, Observers: []int64{4}})
	outs := e.Start(0, 99, 9)
	if len(outs) != 3 {
		t.Fatalf("outs = %+v, want one to each voter", outs)
	}
	for _, o := range outs {
		if o.N.Leader != math.MinInt64 || o.N.Zxid != math.MinInt64 || o.N.PeerEpoch != math.MinInt64 {
			t.Errorf("observer's notification = %+v, want Long.MIN_VALUE vote", o.N)
		}
	}
}

func TestNotificationBackoffDoublesToMax(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3}, MaxNotificationIntervalMs: 5000})
	e.Start(0, 0, 0)
	var gaps []int64
	last := int64(0)
	for range 8 {
		at, ok := e.NextTick()
		if !ok {
			t.Fatal("no tick scheduled while looking")
		}
		if outs, d := e.Tick(at - 1); len(outs) != 0 || d != nil {
			t.Fatalf("Tick before the deadline sent %v", outs)
		}
		outs, _ := e.Tick(at)
		if len(outs) != 2 {
			t.Fatalf("resend at %d: %v", at, outs)
		}
		gaps = append(gaps, at-last)
		last = at
	}
	want := []int64{200, 400, 800, 1600, 3200, 5000, 5000, 5000}
	for i := range want {
		if gaps[i] != want[i] {
			t.Fatalf("resend gaps = %v, want %v", gaps, want)
		}
	}
}

func TestNotificationRestartsResendTimer(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3}})
	e.Start(0, 0, 0)
	e.Receive(150, looking(2, 1, 0, 0, 0)) // an old round: ignored, but it was received
	if at, _ := e.NextTick(); at != 350 {
		t.Errorf("next tick = %d, want 350 (poll restarts after every notification)", at)
	}
}

func TestQuorumThenFinalizeWait(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3}})
	e.Start(0, 5, 1)
	// Server 3 has the best vote; adopting it re-sends.
	outs, d := e.Receive(10, looking(3, 3, 5, 1, 1))
	if d != nil || len(outs) != 2 || outs[0].N.Leader != 3 {
		t.Fatalf("adopting a better vote: outs %+v, decision %v", outs, d)
	}
	// Self (loopback) and 3 now vote 3: a quorum of 3, so the finalize wait runs.
	if at, _ := e.NextTick(); at != 210 {
		t.Fatalf("finalize deadline = %d, want 210", at)
	}
	if _, d := e.Tick(209); d != nil {
		t.Fatalf("decided before the finalize wait ended: %+v", d)
	}
	// A vote that does not beat the proposal is dropped and restarts the wait.
	if outs, d := e.Receive(150, looking(2, 2, 5, 1, 1)); len(outs) != 0 || d != nil {
		t.Fatalf("worse vote during the finalize wait: %v %v", outs, d)
	}
	if _, d := e.Tick(349); d != nil {
		t.Fatalf("decided at 349: %+v", d)
	}
	_, d = e.Tick(350)
	want := Decision{State: Following, Leader: 3, Zxid: 5, ElectionEpoch: 1, PeerEpoch: 1}
	if d == nil || *d != want {
		t.Fatalf("decision = %+v, want %+v", d, want)
	}
	if e.State() != Following || e.Vote() != want {
		t.Errorf("after deciding: state %v vote %+v", e.State(), e.Vote())
	}
	if _, ok := e.NextTick(); ok {
		t.Error("ticks scheduled after deciding")
	}
}

func TestBetterVoteEndsFinalizeWait(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3}})
	e.Start(0, 5, 1)
	e.Receive(10, looking(3, 3, 5, 1, 1))
	// A higher epoch arrives during the wait.
	outs, d := e.Receive(100, looking(2, 2, 1, 1, 2))
	if d != nil || len(outs) != 2 || outs[0].N.Leader != 2 || outs[0].N.PeerEpoch != 2 {
		t.Fatalf("better vote during the wait: outs %+v decision %v", outs, d)
	}
	// 1 and 2 now vote 2: quorum again, a new wait from 100.
	if at, _ := e.NextTick(); at != 300 {
		t.Fatalf("finalize deadline = %d, want 300", at)
	}
	_, d = e.Tick(300)
	if d == nil || d.Leader != 2 || d.State != Following || d.PeerEpoch != 2 {
		t.Fatalf("decision = %+v", d)
	}
}

func TestSingleVoterElectsItself(t *testing.T) {
	e := New(Config{ID: 7, Voters: []int64{7}})
	if outs := e.Start(0, 0, 0); len(outs) != 0 {
		t.Fatalf("outs = %v", outs)
	}
	_, d := e.Tick(200)
	if d == nil || d.State != Leading || d.Leader != 7 {
		t.Fatalf("decision = %+v", d)
	}
}

func TestHigherRoundIsAdopted(t *testing.T) {
	e := New(Config{ID: 3, Voters: []int64{1, 2, 3}})
	e.Start(0, 5, 1)
	e.Receive(5, looking(1, 1, 5, 1, 1))
	// Round 4 from server 2 with a worse vote: adopt the round, keep our own vote.
	outs, _ := e.Receive(10, looking(2, 2, 4, 4, 1))
	if e.Round() != 4 {
		t.Fatalf("round = %d, want 4", e.Round())
	}
	if len(outs) != 2 || outs[0].N.Leader != 3 || outs[0].N.ElectionEpoch != 4 {
		t.Fatalf("outs = %+v, want our own vote in round 4", outs)
	}
	// The round-1 vote of server 1 was discarded with the tally: 2 (for 2) and 3 (for 3)
	// make no quorum.
	if _, ok := e.NextTick(); !ok || e.finalizing {
		t.Fatal("finalizing without a quorum")
	}
}

func TestPeerBehindIsAnswered(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3}})
	for range 5 {
		e.Start(0, 8, 2)
	}
	outs, _ := e.Receive(1, looking(2, 2, 3, 3, 1))
	got := outsTo(outs, 2)
	if len(got) != 1 {
		t.Fatalf("outs = %+v, want one answer to 2", outs)
	}
	if n := got[0]; n.State != Looking || n.Leader != 1 || n.Zxid != 8 || n.ElectionEpoch != 5 || n.PeerEpoch != 2 {
		t.Errorf("answer = %+v, want our round-5 proposal", n)
	}
	// Same round: no answer needed.
	if outs, _ := e.Receive(2, looking(3, 1, 8, 5, 2)); len(outsTo(outs, 3)) != 0 {
		t.Errorf("answered a peer in the same round: %+v", outs)
	}
}

func TestDecidedServerAnswersLookingPeers(t *testing.T) {
	e := New(Config{ID: 2, Voters: []int64{1, 2, 3}, Observers: []int64{4}})
	e.Start(0, 5, 1)
	e.Receive(1, looking(1, 2, 5, 1, 1))
	_, d := e.Tick(201)
	if d == nil || d.State != Leading {
		t.Fatalf("decision = %+v", d)
	}
	outs, d := e.Receive(300, looking(3, 3, 9, 7, 1))
	if d != nil || len(outs) != 1 || outs[0].To != 3 {
		t.Fatalf("outs = %+v", outs)
	}
	if n := outs[0].N; n.State != Leading || n.Leader != 2 || n.Zxid != 5 || n.ElectionEpoch != 1 || n.PeerEpoch != 1 {
		t.Errorf("answer = %+v, want the decided round-1 vote, LEADING", n)
	}
	// Voters that are not looking get nothing.
	if outs, _ := e.Receive(301, Notification{State: Following, Leader: 2, ElectionEpoch: 1, From: 1}); len(outs) != 0 {
		t.Errorf("answered a FOLLOWING voter: %+v", outs)
	}
	// A non-voter always gets an answer, with the logical clock as its round.
	outs, _ = e.Receive(302, Notification{State: Following, Leader: 1, ElectionEpoch: 9, From: 4})
	if len(outs) != 1 || outs[0].To != 4 || outs[0].N.State != Leading || outs[0].N.Leader != 2 || outs[0].N.ElectionEpoch != 1 {
		t.Errorf("answer to the observer = %+v", outs)
	}
	// UpdateElectionVote changes the epoch answered with.
	e.UpdateElectionVote(2)
	outs, _ = e.Receive(303, looking(3, 3, 9, 7, 1))
	if len(outs) != 1 || outs[0].N.PeerEpoch != 2 {
		t.Errorf("after UpdateElectionVote: %+v", outs)
	}
}

func TestNonVoterAnsweredWhileLooking(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3}, Observers: []int64{4}})
	e.Start(0, 5, 1)
	e.Receive(1, looking(3, 3, 6, 1, 1)) // the proposal moves to 3
	outs, _ := e.Receive(2, looking(4, math.MinInt64, math.MinInt64, 1, math.MinInt64))
	if len(outs) != 1 || outs[0].To != 4 {
		t.Fatalf("outs = %+v", outs)
	}
	// ZooKeeper answers non-voters with currentVote (the initial self vote before the first
	// decision), not with the proposal.
	if n := outs[0].N; n.State != Looking || n.Leader != 1 || n.Zxid != 5 || n.ElectionEpoch != 1 || n.PeerEpoch != 1 {
		t.Errorf("answer = %+v", n)
	}
	if e.Vote().Leader != 3 {
		t.Errorf("the observer's notification changed the proposal: %+v", e.Vote())
	}
}

func TestIgnoredNotifications(t *testing.T) {
	tests := []struct {
		name string
		n    Notification
	}{
		{"vote for a non-voter", looking(2, 4, 100, 1, 100)},
		{"vote for an unknown sid", looking(2, 9, 100, 1, 100)},
		{"zxid -1", looking(2, 3, -1, 1, 100)},
		{"observing voter", Notification{State: Observing, Leader: 3, Zxid: 100, ElectionEpoch: 1, PeerEpoch: 100, From: 2}},
		{"unknown state", Notification{State: 9, Leader: 3, Zxid: 100, ElectionEpoch: 1, PeerEpoch: 100, From: 2}},
		{"older round", looking(2, 3, 100, 0, 100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(Config{ID: 1, Voters: []int64{1, 2, 3}, Observers: []int64{4}})
			e.Start(0, 5, 1)
			before := e.Vote()
			outs, d := e.Receive(1, tt.n)
			if d != nil || e.Vote() != before {
				t.Errorf("vote %+v -> %+v, decision %v", before, e.Vote(), d)
			}
			for _, o := range outs {
				if o.N.Leader != 1 {
					t.Errorf("sent %+v", o)
				}
			}
		})
	}
	// Our own zxid -1 ignores every LOOKING notification.
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3}})
	e.Start(0, -1, 0)
	e.Receive(1, looking(2, 2, 5, 1, 0))
	if e.Vote().Leader != 1 {
		t.Errorf("with zxid -1 the proposal moved: %+v", e.Vote())
	}
}

func TestCheckLeaderNeedsLeadingLeader(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3, 4, 5}})
	e.Start(0, 5, 1)
	e.Receive(1, looking(3, 3, 6, 1, 1)) // adopt 3: 1 and 3 vote 3, two of five
	if e.finalizing {
		t.Fatal("finalizing without a quorum")
	}
	for _, from := range []int64{2, 4} {
		f := Notification{State: Following, Leader: 3, Zxid: 6, ElectionEpoch: 1, PeerEpoch: 1, Version: 2, From: from}
		// With 2 and 4 following 3, four of five agree, but 3 has not said it leads.
		if _, d := e.Receive(2, f); d != nil {
			t.Fatalf("decided without the leader's LEADING: %+v", d)
		}
	}
	leading := Notification{State: Leading, Leader: 3, Zxid: 6, ElectionEpoch: 1, PeerEpoch: 1, Version: 2, From: 3}
	_, d := e.Receive(3, leading)
	want := Decision{State: Following, Leader: 3, Zxid: 6, ElectionEpoch: 1, PeerEpoch: 1}
	if d == nil || *d != want {
		t.Fatalf("decision = %+v, want %+v", d, want)
	}
}

func TestSameRoundFollowersAndLeaderDecide(t *testing.T) {
	// Server 3 restarted (round 1 again) while 1 and 2 run round 1 with leader 2.
	e := New(Config{ID: 3, Voters: []int64{1, 2, 3}})
	e.Start(0, 1, 1)
	f := Notification{State: Following, Leader: 2, Zxid: 9, ElectionEpoch: 1, PeerEpoch: 1, Version: 2, From: 1}
	if _, d := e.Receive(1, f); d != nil {
		t.Fatalf("decided on one follower: %+v", d)
	}
	l := Notification{State: Leading, Leader: 2, Zxid: 9, ElectionEpoch: 1, PeerEpoch: 1, Version: 2, From: 2}
	_, d := e.Receive(2, l)
	want := Decision{State: Following, Leader: 2, Zxid: 9, ElectionEpoch: 1, PeerEpoch: 1}
	if d == nil || *d != want {
		t.Fatalf("decision = %+v, want %+v", d, want)
	}
}

func TestOutOfElectionAdoptsLeadersRound(t *testing.T) {
	e := New(Config{ID: 3, Voters: []int64{1, 2, 3}})
	for range 6 {
		e.Start(0, 1, 1) // round 6
	}
	f := Notification{State: Following, Leader: 2, Zxid: 9, ElectionEpoch: 2, PeerEpoch: 4, Version: 2, From: 1}
	l := Notification{State: Leading, Leader: 2, Zxid: 12, ElectionEpoch: 2, PeerEpoch: 4, Version: 2, From: 2}
	if _, d := e.Receive(1, f); d != nil {
		t.Fatalf("decided on one follower: %+v", d)
	}
	_, d := e.Receive(2, l)
	if d == nil || d.Leader != 2 || d.ElectionEpoch != 2 || d.State != Following || e.Round() != 2 {
		t.Fatalf("decision = %+v round %d", d, e.Round())
	}
	// Epochs must agree unless a sender is legacy.
	e = New(Config{ID: 3, Voters: []int64{1, 2, 3}})
	e.Start(0, 1, 1)
	e.Start(0, 1, 1)
	e.Start(0, 1, 1) // round 3: only the out-of-election tally applies
	l.PeerEpoch = 5
	e.Receive(1, f)
	if _, d := e.Receive(2, l); d != nil {
		t.Fatalf("decided although the leader's epoch differs: %+v", d)
	}
}

func TestLeaderCannotBeReelectedFromOldRound(t *testing.T) {
	// Server 2 led round 1, restarted (round 2), and 1 and 3 still follow it from round 1:
	// it must not decide to lead again from their out-of-election votes.
	e := New(Config{ID: 2, Voters: []int64{1, 2, 3}})
	e.Start(0, 9, 1)
	e.Start(1, 9, 1)
	for _, from := range []int64{1, 3} {
		f := Notification{State: Following, Leader: 2, Zxid: 9, ElectionEpoch: 1, PeerEpoch: 1, Version: 2, From: from}
		if _, d := e.Receive(2, f); d != nil {
			t.Fatalf("re-elected itself from round-1 followers: %+v", d)
		}
	}
}

func TestDecidedOverride(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3}})
	e.Start(0, 0, 0)
	e.Decided(Decision{State: Following, Leader: 3, Zxid: 7, ElectionEpoch: 4, PeerEpoch: 2})
	if e.State() != Following {
		t.Fatalf("state = %v", e.State())
	}
	outs, _ := e.Receive(1, looking(2, 2, 0, 1, 0))
	if len(outs) != 1 || outs[0].N.State != Following || outs[0].N.Leader != 3 || outs[0].N.ElectionEpoch != 4 {
		t.Errorf("outs = %+v", outs)
	}
	e.Decided(Decision{State: Looking})
	if e.State() != Following {
		t.Errorf("Decided(Looking) changed the state to %v", e.State())
	}
}

// TestWorseVoteIsAnswered: a LOOKING peer proposing a worse leader in our round gets our
// proposal back at once (ZooKeeper leaves it to the resend timer, 200 ms and more), and only
// it; a peer that already agrees gets nothing.
func TestWorseVoteIsAnswered(t *testing.T) {
	e := New(Config{ID: 2, Voters: []int64{1, 2, 3}})
	e.Start(0, 5, 1)
	outs, d := e.Receive(10, looking(1, 1, 5, 1, 1))
	if d != nil || len(outs) != 1 || outs[0].To != 1 {
		t.Fatalf("worse vote from 1: outs %+v, decision %v", outs, d)
	}
	if n := outs[0].N; n.State != Looking || n.Leader != 2 || n.Zxid != 5 || n.ElectionEpoch != 1 || n.PeerEpoch != 1 || n.From != 2 {
		t.Fatalf("answer = %+v", n)
	}
	outs, d = e.Receive(20, looking(1, 2, 5, 1, 1))
	if len(outs) != 0 || d != nil {
		t.Fatalf("agreeing vote answered: %+v %v", outs, d)
	}
	// The agreement is a quorum; the decision comes after the finalize wait, not a resend.
	if _, d := e.Tick(220); d == nil || d.State != Leading {
		t.Fatalf("decision at 220 = %+v, want leading", d)
	}
}

// A server voting with zxid -1 (damaged) never leads, even when its peers' stale answers
// say they follow it in its round: it restarted before they noticed.
func TestNoZxidNeverLeads(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3}})
	e.Start(0, -1, 5)
	for _, from := range []int64{2, 3} {
		_, d := e.Receive(10, Notification{From: from, State: Following, Leader: 1, Zxid: 0x500000010, ElectionEpoch: 1, PeerEpoch: 5, Version: CurrentVersion})
		if d != nil && d.State == Leading {
			t.Fatalf("a server voting with zxid -1 decided to lead on stale FOLLOWING answers: %+v", d)
		}
	}
	// With its real zxid the same answers make it lead (the rule's reach is the -1 alone).
	e = New(Config{ID: 1, Voters: []int64{1, 2, 3}})
	e.Start(0, 0x500000010, 5)
	var last *Decision
	for _, from := range []int64{2, 3} {
		if _, d := e.Receive(10, Notification{From: from, State: Following, Leader: 1, Zxid: 0x500000010, ElectionEpoch: 1, PeerEpoch: 5, Version: CurrentVersion}); d != nil {
			last = d
		}
	}
	if last == nil || last.State != Leading {
		t.Fatalf("with its zxid: %+v, want Leading", last)
	}
}
