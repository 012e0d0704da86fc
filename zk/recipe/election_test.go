package recipe

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/zkd-io/zkd/zk"
)

// testElectionRotation: 5 candidates in 3 sessions; leadership passes down the line as each
// leader resigns. There is never more than one leader, Leader and Observe report each one
// in turn, each change wakes exactly one candidate, and Done closes on resignation.
func testElectionRotation(t *testing.T, e *tenv) {
	const n = 5
	ctx := testCtx(t)
	conns := []*zk.Conn{e.conn(t), e.conn(t), e.conn(t)}
	observer := NewElection(e.conn(t), "/elect")
	if _, err := observer.Leader(ctx); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("leader before any campaign: %v", err)
	}
	observed := observer.Observe(ctx)
	var leaders, violations atomic.Int32
	won := make(chan int, n)
	errs := make(chan error, n)
	cands := make([]*Election, n)
	hooks := make([]*hookRec, n)
	for i := range n {
		hooks[i] = newHookRec()
		cands[i] = NewElection(conns[i%len(conns)], "/elect", hooks[i].opt())
		go func() {
			if err := cands[i].Campaign(ctx, []byte(strconv.Itoa(i))); err != nil {
				errs <- err
				return
			}
			if leaders.Add(1) != 1 {
				violations.Add(1)
			}
			won <- i
		}()
	}
	for r := range n {
		var i int
		select {
		case i = <-won:
		case err := <-errs:
			t.Fatal(err)
		case <-recvTimeout():
			t.Fatalf("round %d: no leader", r)
		}
		l, err := observer.Leader(ctx)
		if err != nil || string(l.Data) != strconv.Itoa(i) || l.Node != cands[i].Node() {
			t.Fatalf("round %d: Leader() = %v %q (%v), want candidate %d", r, l.Node, l.Data, err, i)
		}
		if ob := recv(t, observed, "observed leader"); ob.Node != cands[i].Node() {
			t.Fatalf("round %d: observed %s, want %s", r, ob.Node, cands[i].Node())
		}
		if r == 0 {
			// Everyone else is queued, each watching the one before.
			for j, h := range hooks {
				if j != i {
					h.waitWaits(t, 1)
				}
			}
		}
		select {
		case <-cands[i].Done():
			t.Fatalf("round %d: Done closed while leading", r)
		default:
		}
		leaders.Add(-1)
		if err := cands[i].Resign(ctx); err != nil {
			t.Fatal(err)
		}
		recv(t, cands[i].Done(), "Done after Resign")
	}
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d times more than one leader", v)
	}
	wakes := 0
	for _, h := range hooks {
		_, w := h.counts()
		wakes += w
	}
	t.Logf("%s: %d leadership changes, %d watch events among candidates", e.name, n-1, wakes)
	if wakes != n-1 {
		t.Fatalf("%d watch events for %d leadership changes", wakes, n-1)
	}
	if _, err := observer.Leader(ctx); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("leader after everyone resigned: %v", err)
	}
}

// testElectionLeaderExpiry: the leader's session expires (connection cut, no closeSession).
// The next candidate takes over once the server has expired the old leader (and with it the
// old acknowledgement); the old leader's fenced write fails; its Done closes when it learns
// of the expiry; the third candidate, watching the second, is not woken at all. A leader
// whose node an administrator deletes sees Done close and withdraws its acknowledgement.
func testElectionLeaderExpiry(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	admin := e.conn(t)
	mustCreate(t, admin, "/data", nil)
	ac, p := e.proxied(t)
	a := NewElection(ac, "/elect")
	if err := a.Campaign(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	fenced := func(c *zk.Conn, el *Election, v string) error {
		_, err := c.Multi(ctx, &zk.CheckOp{Path: el.Node(), Version: zk.AnyVersion},
			&zk.SetOp{Path: "/data", Data: []byte(v), Version: zk.AnyVersion})
		return err
	}
	if err := fenced(ac, a, "a"); err != nil {
		t.Fatal(err)
	}
	bh, ch := newHookRec(), newHookRec()
	b := NewElection(admin, "/elect", bh.opt())
	bres := make(chan error, 1)
	go func() { bres <- b.Campaign(ctx, []byte("b")) }()
	bh.waitWaits(t, 1)
	cc := e.conn(t)
	c := NewElection(cc, "/elect", ch.opt())
	cres := make(chan error, 1)
	go func() { cres <- c.Campaign(ctx, []byte("c")) }()
	ch.waitWaits(t, 1)

	anode := a.Node()
	expire(t, ac, p, admin, anode)
	if err := recv(t, bres, "next leader"); err != nil {
		t.Fatal(err)
	}
	if l, err := b.Leader(ctx); err != nil || l.Node != b.Node() || string(l.Data) != "b" {
		t.Fatalf("leader after expiry: %v %q %v", l.Node, l.Data, err)
	}
	recv(t, a.Done(), "old leader's Done")
	if err := fenced(ac, a, "stale"); !isExpired(err) {
		t.Fatalf("old leader's fenced write: %v, want ErrSessionExpired", err)
	}
	if err := fenced(admin, b, "b"); err != nil {
		t.Fatalf("new leader's fenced write: %v", err)
	}
	if data, _, err := admin.Get(ctx, "/data"); err != nil || string(data) != "b" {
		t.Fatalf("data %q %v", data, err)
	}
	noValue(t, cres, "third candidate")
	if _, w := ch.counts(); w != 0 {
		t.Fatalf("third candidate woken %d times by the first leader's expiry", w)
	}
	if err := a.Resign(ctx); !isExpired(err) && !errors.Is(err, ErrNotLocked) {
		t.Fatalf("old leader's Resign: %v", err)
	}
	if err := b.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, cres, "third candidate"); err != nil {
		t.Fatal(err)
	}
	if l, err := c.Leader(ctx); err != nil || string(l.Data) != "c" {
		t.Fatalf("leader %q %v", l.Data, err)
	}
	if err := admin.Delete(ctx, c.Node(), zk.AnyVersion); err != nil {
		t.Fatal(err)
	}
	recv(t, c.Done(), "Done after the node was deleted")
	eventually(t, "acknowledgement withdrawn", func() error {
		if _, _, err := admin.Get(ctx, "/elect/leader"); !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("ack: %v", err)
		}
		return nil
	})
	if err := c.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}
