package session

import "testing"

// TestHoldWaitsForTheLearner: a session due while its learner is silent waits; the learner's
// first reply does not release it, a full tick of replies does; a learner that is gone holds
// nothing.
func TestHoldWaitsForTheLearner(t *testing.T) {
	h := NewHold(100)
	h.Pinged(2, 1000)
	if !h.Holds(7, 2, 1050) {
		t.Fatal("a session due before its learner answered again was not held")
	}
	// Silent for a long time: still held, and the due time stays the first one.
	if !h.Holds(7, 2, 9000) {
		t.Fatal("released while the learner is silent")
	}
	h.Pinged(2, 9100) // back, but its reply may not carry the touches yet
	if !h.Holds(7, 2, 9100) {
		t.Fatal("released by the learner's first reply after the silence")
	}
	if h.Held() != 1 {
		t.Fatalf("held %d, want 1", h.Held())
	}
	h.Pinged(2, 9200)
	if h.Holds(7, 2, 9200) {
		t.Fatal("held although the learner answered for a tick without touching it")
	}
	if h.Held() != 0 {
		t.Fatalf("held %d after release, want 0", h.Held())
	}
	// A touch forgets the due time; a learner gone holds nothing; an unknown one neither.
	if !h.Holds(8, 2, 9250) {
		t.Fatal("session 8 not held")
	}
	h.Touched(8)
	if h.Held() != 0 {
		t.Fatal("a touched session is still held")
	}
	h.Gone(2)
	if h.Holds(8, 2, 20000) || h.Holds(9, 3, 20000) {
		t.Fatal("a learner that is gone (or never pinged) holds its sessions")
	}
}

// TestTrackerRequeue: a session Expired returned and the caller put back is due again at
// the next bucket, touchable meanwhile.
func TestTrackerRequeue(t *testing.T) {
	tr := NewTracker(100)
	tr.Add(1, 1000, 0)
	if got := tr.Expired(1100); len(got) != 1 {
		t.Fatalf("expired %v, want [1]", got)
	}
	if !tr.Requeue(1, 1100) || tr.IsClosing(1) {
		t.Fatal("requeue did not undo closing")
	}
	if got := tr.Expired(1150); len(got) != 0 {
		t.Fatalf("expired %v before the next bucket", got)
	}
	if got := tr.Expired(1200); len(got) != 1 {
		t.Fatalf("expired %v at the next bucket, want [1]", got)
	}
	if tr.Requeue(2, 0) {
		t.Fatal("requeued an unknown session")
	}
}
