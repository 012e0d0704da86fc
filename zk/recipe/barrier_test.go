package recipe

import (
	"fmt"
	"slices"
	"testing"

	"github.com/zkd-io/zkd/zk"
)

// testBarrier: waiters in two sessions block while the barrier is up and all return when it
// is removed; waiting on a barrier that is down returns at once.
func testBarrier(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	conns := []*zk.Conn{e.conn(t), e.conn(t)}
	b := NewBarrier(conns[0], "/app/barrier")
	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Set(ctx); err != nil {
		t.Fatalf("set twice: %v", err)
	}
	const n = 5
	done := make(chan error, n)
	for i := range n {
		h := newHookRec()
		w := NewBarrier(conns[i%2], "/app/barrier", h.opt())
		go func() { done <- w.Wait(ctx) }()
		h.waitWaits(t, 1)
	}
	noValue(t, done, "waiter while the barrier is up")
	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := recv(t, done, "waiter"); err != nil {
			t.Fatal(err)
		}
	}
	if err := NewBarrier(conns[1], "/app/barrier").Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// testDoubleBarrier: with n = 5, four participants block in Enter until the fifth arrives
// (ready does not exist before), then all enter; four block in Leave until the fifth leaves,
// then all leave, the directory is empty, and the barrier works again for a second round.
func testDoubleBarrier(t *testing.T, e *tenv) {
	const n = 5
	ctx := testCtx(t)
	admin := e.conn(t)
	conns := []*zk.Conn{e.conn(t), e.conn(t), e.conn(t)}
	for round := range 2 {
		parts := make([]*DoubleBarrier, n)
		hooks := make([]*hookRec, n)
		for i := range n {
			hooks[i] = newHookRec()
			parts[i] = NewDoubleBarrier(conns[i%len(conns)], "/db", n, hooks[i].opt())
		}
		entered := make(chan error, n)
		for i := range n - 1 {
			go func() { entered <- parts[i].Enter(ctx) }()
		}
		for i := range n - 1 {
			hooks[i].waitWaits(t, 1)
		}
		noValue(t, entered, fmt.Sprintf("round %d: entered with %d of %d", round, n-1, n))
		if ok, _, err := admin.Exists(ctx, "/db/ready"); ok || err != nil {
			t.Fatalf("ready exists before the count is reached (%v)", err)
		}
		go func() { entered <- parts[n-1].Enter(ctx) }()
		for range n {
			if err := recv(t, entered, "enter"); err != nil {
				t.Fatal(err)
			}
		}
		ch, _, err := admin.Children(ctx, "/db")
		if err != nil || len(ch) != n+1 || !slices.Contains(ch, "ready") {
			t.Fatalf("after enter: %v %v", ch, err)
		}

		left := make(chan error, n)
		base := make([]int, n)
		for i := range n {
			base[i], _ = hooks[i].counts()
		}
		for i := range n - 1 {
			go func() { left <- parts[i].Leave(ctx) }()
		}
		for i := range n - 1 {
			hooks[i].waitWaits(t, base[i]+1)
		}
		noValue(t, left, "left while one participant is still in")
		go func() { left <- parts[n-1].Leave(ctx) }()
		for range n {
			if err := recv(t, left, "leave"); err != nil {
				t.Fatal(err)
			}
		}
		if ch, _, err := admin.Children(ctx, "/db"); err != nil || len(ch) != 0 {
			t.Fatalf("after leave: %v %v", ch, err)
		}
	}
}
