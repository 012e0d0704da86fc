package election

import "testing"

// A 3-server failover: server 3 (the old leader) is down, 1 and 2 agree on 2.
func TestFastDecisionWhenEveryLiveVoterAgrees(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3}, FastDecision: true})
	e.Start(0, 5, 1)
	if _, d := e.PeerDown(1, 3); d != nil {
		t.Fatalf("decided on a down report with no quorum: %+v", d)
	}
	_, d := e.Receive(10, looking(2, 2, 5, 1, 1))
	want := Decision{State: Following, Leader: 2, Zxid: 5, ElectionEpoch: 1, PeerEpoch: 1}
	if d == nil || *d != want {
		t.Fatalf("decision = %+v, want %+v at once", d, want)
	}
}

// The down report may come after the quorum: it ends the wait.
func TestFastDecisionOnLateDownReport(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3}, FastDecision: true})
	e.Start(0, 5, 1)
	if _, d := e.Receive(10, looking(2, 2, 5, 1, 1)); d != nil {
		t.Fatalf("decided while server 3 may still vote: %+v", d)
	}
	if at, _ := e.NextTick(); at != 210 {
		t.Fatalf("finalize deadline = %d, want 210", at)
	}
	_, d := e.PeerDown(20, 3)
	if d == nil || d.Leader != 2 || d.State != Following {
		t.Fatalf("decision on the down report = %+v", d)
	}
}

// With every voter up, the last agreeing vote decides, even one arriving during the wait
// (which ZooKeeper's loop drops).
func TestFastDecisionAllVotersAgree(t *testing.T) {
	e := New(Config{ID: 3, Voters: []int64{1, 2, 3}, FastDecision: true})
	e.Start(0, 5, 1)
	if _, d := e.Receive(10, looking(1, 3, 5, 1, 1)); d != nil {
		t.Fatalf("decided without server 2's vote: %+v", d)
	}
	_, d := e.Receive(20, looking(2, 3, 5, 1, 1))
	if d == nil || d.State != Leading {
		t.Fatalf("decision = %+v, want leading at once", d)
	}
}

func TestFastDecisionWaitsForDisagreeingLiveVoter(t *testing.T) {
	e := New(Config{ID: 3, Voters: []int64{1, 2, 3}, FastDecision: true})
	e.Start(0, 5, 1)
	e.Receive(10, looking(1, 3, 5, 1, 1))
	// Server 2 votes for itself (worse): it is up and does not agree yet.
	if _, d := e.Receive(20, looking(2, 2, 5, 1, 1)); d != nil {
		t.Fatalf("decided while a live voter disagrees: %+v", d)
	}
	// The finalize wait still decides, as ZooKeeper would.
	if _, d := e.Tick(220); d == nil || d.State != Leading {
		t.Fatalf("finalize wait decision = %+v", d)
	}
}

// Without FastDecision, down reports change nothing: ZooKeeper's timing exactly.
func TestNoFastDecisionByDefault(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3}})
	e.Start(0, 5, 1)
	e.PeerDown(1, 3)
	if _, d := e.Receive(10, looking(2, 2, 5, 1, 1)); d != nil {
		t.Fatalf("decided before the finalize wait: %+v", d)
	}
	if _, d := e.PeerDown(20, 3); d != nil {
		t.Fatalf("decided on a down report: %+v", d)
	}
	if _, d := e.Tick(209); d != nil {
		t.Fatalf("decided at 209: %+v", d)
	}
	if _, d := e.Tick(210); d == nil || d.Leader != 2 {
		t.Fatalf("decision = %+v", d)
	}
}

func TestFastDecisionNeedsQuorum(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3, 4, 5}, FastDecision: true})
	e.Start(0, 5, 1)
	for _, sid := range []int64{3, 4, 5} {
		e.PeerDown(1, sid)
	}
	// 1 and 2 agree and everyone else is down, but 2 of 5 is no quorum.
	if _, d := e.Receive(10, looking(2, 2, 5, 1, 1)); d != nil {
		t.Fatalf("decided without a quorum: %+v", d)
	}
	if _, d := e.Tick(10_000); d != nil {
		t.Fatalf("decided without a quorum: %+v", d)
	}
}

// A proposal for a server known down is not decided fast; a PeerUp counts the voter again.
func TestFastDecisionDownLeaderAndPeerUp(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3}, FastDecision: true})
	e.Start(0, 5, 1)
	e.PeerDown(1, 3)
	if _, d := e.Receive(10, looking(2, 3, 5, 1, 1)); d != nil {
		t.Fatalf("decided fast for a leader known down: %+v", d)
	}
	e2 := New(Config{ID: 1, Voters: []int64{1, 2, 3}, FastDecision: true})
	e2.Start(0, 5, 1)
	e2.PeerDown(1, 3)
	e2.PeerUp(3)
	if _, d := e2.Receive(10, looking(2, 2, 5, 1, 1)); d != nil {
		t.Fatalf("decided while server 3, up again, has not voted: %+v", d)
	}
}

// Start never decides, even when this server alone is a quorum.
func TestFastDecisionNotInStart(t *testing.T) {
	e := New(Config{ID: 7, Voters: []int64{7}, FastDecision: true})
	e.Start(0, 0, 0)
	if e.State() != Looking {
		t.Fatalf("state after Start = %v", e.State())
	}
	if _, d := e.Tick(200); d == nil || d.State != Leading {
		t.Fatalf("decision = %+v", d)
	}
}
