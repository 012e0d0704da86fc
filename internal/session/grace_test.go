package session

import (
	"slices"
	"testing"
)

// driveTicks observes every tick from `from` (exclusive) to `to` (inclusive) and returns
// the sessions expired on the way, each with the wall time it expired at.
func driveTicks(t *testing.T, tr *Tracker, g *Grace, from, to, tick int64) map[int64]int64 {
	t.Helper()
	out := map[int64]int64{}
	for w := from + tick; w <= to; w += tick {
		now := w
		if g != nil {
			now = g.Observe(w)
		}
		for _, id := range tr.Expired(now) {
			out[id] = w
		}
	}
	return out
}

// TestGraceStallExtendsDeadlines: a stall of X (no tick for X) extends every deadline by
// X minus the one tick that was due anyway; a session that pings after the stall lives, a
// silent one expires after its timeout plus the stall.
func TestGraceStallExtendsDeadlines(t *testing.T) {
	const tick, timeout = 1000, 3000
	tr := NewTracker(tick)
	g := NewGrace(tick, tick)
	g.Observe(0)
	tr.Add(1, timeout, g.Now(0)) // pings
	tr.Add(2, timeout, g.Now(0)) // silent
	if exp := driveTicks(t, tr, g, 0, 2000, tick); len(exp) != 0 {
		t.Fatalf("expired before the stall: %v", exp)
	}
	// The core stalls from 2000 to 12000; the first tick after it sees a 10 s gap.
	if exp := tr.Expired(g.Observe(12000)); len(exp) != 0 {
		t.Fatalf("expired at the tick right after a stall: %v", exp)
	}
	if g.Lost() != 9000 {
		t.Fatalf("lost %d, want 9000", g.Lost())
	}
	// Session 1's ping, queued during the stall, is read now.
	tr.Touch(1, g.Now(12000))
	exp := driveTicks(t, tr, g, 12000, 20000, tick)
	// Session 2's deadline was 4000 on the session clock: wall 4000+9000. Session 1 was
	// touched at session time 3000: deadline 7000, wall 16000.
	if !slices.Equal(keys(exp), []int64{1, 2}) || exp[2] != 13000 || exp[1] != 16000 {
		t.Fatalf("expired %v, want session 2 at 13000 and session 1 at 16000", exp)
	}
}

// TestGraceOffIsToday: without Grace, the same stall expires both sessions at the first
// tick after it, which is what ZooKeeper's leader does.
func TestGraceOffIsToday(t *testing.T) {
	const tick, timeout = 1000, 3000
	tr := NewTracker(tick)
	tr.Add(1, timeout, 0)
	tr.Add(2, timeout, 0)
	driveTicks(t, tr, nil, 0, 2000, tick)
	if exp := tr.Expired(12000); !slices.Equal(exp, []int64{1, 2}) {
		t.Fatalf("expired %v after the stall, want [1 2]", exp)
	}
}

// TestGraceOrdinaryJitter: gaps within interval+slack lose nothing.
func TestGraceOrdinaryJitter(t *testing.T) {
	g := NewGrace(1000, 500)
	for _, w := range []int64{0, 1000, 2400, 3300, 4800} {
		g.Observe(w)
	}
	if g.Lost() != 0 || g.Now(5000) != 5000 {
		t.Fatalf("lost %d, now %d", g.Lost(), g.Now(5000))
	}
}

// TestGraceNotServing: time while not serving is not counted, and the session clock
// stands still meanwhile (never runs backwards).
func TestGraceNotServing(t *testing.T) {
	g := NewGrace(1000, 1000)
	g.Observe(0)
	g.Observe(1000)
	g.SetServing(false, 1500)
	if a, b := g.Now(1500), g.Now(4000); a != 1500 || b != 1500 {
		t.Fatalf("while down: now %d then %d, want 1500 both", a, b)
	}
	g.SetServing(true, 5500)
	if now := g.Observe(6000); now != 2000 || g.Lost() != 4000 {
		t.Fatalf("after: now %d lost %d, want 2000 and 4000", now, g.Lost())
	}
}

func keys(m map[int64]int64) []int64 {
	var out []int64
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
