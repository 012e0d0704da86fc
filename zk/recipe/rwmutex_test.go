package recipe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zkd-io/zkd/zk"
)

// testRWMutex: readers queued behind a writer watch that writer only and all get in when it
// leaves; a writer queued behind readers waits for them; a reader queued behind that writer
// waits for it even while other readers hold the lock; a write holder may also read.
func testRWMutex(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	c1, c2 := e.conn(t), e.conn(t)
	w1 := NewRWMutex(c1, "/rw")
	if err := w1.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := NewRWMutex(c2, "/rw").TryRLock(ctx); ok || err != nil {
		t.Fatalf("TryRLock under a writer: %v %v", ok, err)
	}
	type part struct {
		rw   *RWMutex
		h    *hookRec
		res  chan error
		read bool
	}
	start := func(read bool, c *zk.Conn) *part {
		p := &part{h: newHookRec(), res: make(chan error, 1), read: read}
		p.rw = NewRWMutex(c, "/rw", p.h.opt())
		go func() {
			if read {
				p.res <- p.rw.RLock(ctx)
			} else {
				p.res <- p.rw.Lock(ctx)
			}
		}()
		p.h.waitWaits(t, 1)
		return p
	}
	var readers []*part
	for i := range 3 {
		r := start(true, []*zk.Conn{c1, c2}[i%2])
		if w := r.h.lastWatched(); w != w1.WriteNode() {
			t.Fatalf("reader %d watches %s, want the writer %s", i, w, w1.WriteNode())
		}
		readers = append(readers, r)
	}
	w2 := start(false, c2)
	if w := w2.h.lastWatched(); w != readers[2].rw.ReadNode() {
		t.Fatalf("writer watches %s, want the last reader %s", w, readers[2].rw.ReadNode())
	}
	r4 := start(true, c1)
	if w := r4.h.lastWatched(); w != w2.rw.WriteNode() {
		t.Fatalf("late reader watches %s, want the queued writer %s", w, w2.rw.WriteNode())
	}

	if err := w1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i, r := range readers { // all three share the lock
		if err := recv(t, r.res, fmt.Sprintf("reader %d", i)); err != nil {
			t.Fatal(err)
		}
		if _, w := r.h.counts(); w != 1 {
			t.Fatalf("reader %d woken %d times", i, w)
		}
	}
	noValue(t, w2.res, "writer behind readers")
	noValue(t, r4.res, "reader behind a queued writer")
	for _, r := range readers {
		if err := r.rw.RUnlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := recv(t, w2.res, "writer"); err != nil {
		t.Fatal(err)
	}
	noValue(t, r4.res, "reader behind the writer")
	if _, w := r4.h.counts(); w != 0 {
		t.Fatalf("the late reader was woken %d times by readers", w)
	}
	if err := w2.rw.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, r4.res, "late reader"); err != nil {
		t.Fatal(err)
	}
	if err := r4.rw.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}

	// Downgrade: the write holder reads without waiting for itself.
	d := NewRWMutex(c1, "/rw")
	if err := d.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.TryRLock(ctx); !ok || err != nil {
		t.Fatalf("read under own write lock: %v %v", ok, err)
	}
	if err := d.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.RUnlock(ctx); !errors.Is(err, ErrNotLocked) {
		t.Fatalf("second RUnlock: %v", err)
	}
	if got, _ := d.Contenders(ctx); len(got) != 0 {
		t.Fatalf("left behind: %v", got)
	}
}

// testRWMutexExclusion: writers and readers in 3 sessions loop over the lock; a writer is
// always alone, and readers never see a writer.
func testRWMutexExclusion(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	var readers, writers atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		c := e.conn(t)
		write := i%3 == 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			rw := NewRWMutex(c, "/rw")
			for range 4 {
				if write {
					if err := rw.Lock(ctx); err != nil {
						errs <- err
						return
					}
					if w := writers.Add(1); w != 1 || readers.Load() != 0 {
						errs <- fmt.Errorf("writer with %d writers, %d readers", w, readers.Load())
					}
					// A round trip while holding, so overlaps would show.
					c.Sync(ctx, "/")
					writers.Add(-1)
					if err := rw.Unlock(ctx); err != nil {
						errs <- err
						return
					}
				} else {
					if err := rw.RLock(ctx); err != nil {
						errs <- err
						return
					}
					readers.Add(1)
					if w := writers.Load(); w != 0 {
						errs <- fmt.Errorf("reader with %d writers", w)
					}
					c.Sync(ctx, "/")
					readers.Add(-1)
					if err := rw.RUnlock(ctx); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// testRevocation: a waiter asks the holder to give the lock up by writing "unlock" to its
// node; the holder's callback consents and unlocks, and the waiter gets the lock. The same
// works for a shared lock's reader.
func testRevocation(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	c1, c2 := e.conn(t), e.conn(t)
	revoked := make(chan string, 2)
	h := NewMutex(c1, "/lock", WithRevocation(func() { revoked <- "mutex" }))
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	w := NewMutex(c2, "/lock")
	res := make(chan error, 1)
	go func() { res <- w.Lock(ctx) }()
	if err := Revoke(ctx, c2, h.Node()); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, revoked, "revocation"); got != "mutex" {
		t.Fatal(got)
	}
	noValue(t, res, "waiter before the holder consents")
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, res, "waiter"); err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	r := NewRWMutex(c1, "/rw", WithRevocation(func() { revoked <- "reader" }))
	if err := r.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := Revoke(ctx, c2, r.ReadNode()); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, revoked, "reader revocation"); got != "reader" {
		t.Fatal(got)
	}
	node := r.ReadNode()
	if err := r.RUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := Revoke(ctx, c2, node); err != nil {
		t.Fatalf("revoking a released lock: %v", err)
	}
	noValue(t, revoked, "revocations")
}

// testSemaphore: 8 participants in 2 sessions share 3 leases. Three hold at once; each
// release admits exactly one waiter and wakes exactly one client (the one watching the
// leases, holding the internal lock); TryLock fails when the leases are taken.
func testSemaphore(t *testing.T, e *tenv) {
	const n, parts = 3, 8
	ctx := testCtx(t)
	conns := []*zk.Conn{e.conn(t), e.conn(t)}
	var holding, maxHolding atomic.Int32
	acquired := make(chan int, parts)
	release := make([]chan struct{}, parts)
	hooks := make([]*hookRec, parts)
	errs := make(chan error, 2*parts)
	var wg sync.WaitGroup
	for i := range parts {
		release[i] = make(chan struct{})
		hooks[i] = newHookRec()
		s := NewSemaphore(conns[i%2], "/sem", n, hooks[i].opt())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Lock(ctx); err != nil {
				errs <- err
				return
			}
			h := holding.Add(1)
			for {
				m := maxHolding.Load()
				if h <= m || maxHolding.CompareAndSwap(m, h) {
					break
				}
			}
			acquired <- i
			<-release[i]
			holding.Add(-1)
			if err := s.Unlock(ctx); err != nil {
				errs <- err
			}
		}()
	}
	var held []int
	for range n {
		held = append(held, recv(t, acquired, "first holders"))
	}
	leaseWakes := func() (waiting bool, wakes int) {
		for _, h := range hooks {
			h.mu.Lock()
			for _, ev := range h.woken {
				if ev.Path == "/sem/leases" {
					wakes++
				}
			}
			if len(h.waiting) > 0 && h.waiting[len(h.waiting)-1] == "/sem/leases" && len(h.waiting) > len(h.woken) {
				waiting = true
			}
			h.mu.Unlock()
		}
		return waiting, wakes
	}
	waitLeaseWatcher := func() {
		t.Helper()
		eventually(t, "a participant waits for a lease", func() error {
			if w, _ := leaseWakes(); !w {
				return errors.New("no one watches the leases")
			}
			return nil
		})
	}
	waitLeaseWatcher()
	if ok, err := NewSemaphore(conns[0], "/sem", n).TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock with every lease taken: %v %v", ok, err)
	}
	noValue(t, acquired, "a fourth holder")
	for r := 1; r <= parts-n; r++ {
		if r > 1 {
			waitLeaseWatcher()
		}
		close(release[held[0]])
		held = held[1:]
		held = append(held, recv(t, acquired, "next holder"))
		if _, w := leaseWakes(); w != r {
			t.Fatalf("after %d releases, %d lease watch events", r, w)
		}
	}
	for _, i := range held {
		close(release[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	_, w := leaseWakes()
	t.Logf("%s: %d releases with waiters, %d lease watch events", e.name, parts-n, w)
	if m := maxHolding.Load(); m != n {
		t.Fatalf("at most %d holders at once, want %d", m, n)
	}
	if got, err := NewSemaphore(conns[0], "/sem", n).Holders(ctx); err != nil || len(got) != 0 {
		t.Fatalf("leases left: %v %v", got, err)
	}
}

// testSemaphoreCancelAndExpiry: with one lease, a waiter that gives up (while holding the
// internal lock and watching the leases) removes its lease node and passes the internal lock
// on; when the holder's session expires, the remaining waiter gets the lease.
func testSemaphoreCancelAndExpiry(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	admin := e.conn(t)
	hc, p := e.proxied(t)
	h := NewSemaphore(hc, "/sem", 1)
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	holders, err := h.Holders(ctx)
	if err != nil || len(holders) != 1 {
		t.Fatalf("holders %v %v", holders, err)
	}
	h1, h2 := newHookRec(), newHookRec()
	w1 := NewSemaphore(admin, "/sem", 1, h1.opt())
	w2 := NewSemaphore(e.conn(t), "/sem", 1, h2.opt())
	c1, cancel1 := context.WithCancel(ctx)
	defer cancel1()
	r1, r2 := make(chan error, 1), make(chan error, 1)
	go func() { r1 <- w1.Lock(c1) }()
	eventually(t, "w1 watches the leases", func() error {
		if h1.lastWatched() != "/sem/leases" {
			return fmt.Errorf("w1 watches %q", h1.lastWatched())
		}
		return nil
	})
	go func() { r2 <- w2.Lock(ctx) }()
	h2.waitWaits(t, 1) // queued for the internal lock
	cancel1()
	if err := recv(t, r1, "cancelled Lock"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock: %v", err)
	}
	eventually(t, "w2 watches the leases", func() error {
		if h2.lastWatched() != "/sem/leases" {
			return fmt.Errorf("w2 watches %q", h2.lastWatched())
		}
		return nil
	})
	// w2's lease node exists but does not count as held while the holder's does.
	noValue(t, r2, "w2 while the lease is held")
	expire(t, hc, p, admin, holders[0])
	if err := recv(t, r2, "w2 after the holder's expiry"); err != nil {
		t.Fatal(err)
	}
	if got, err := w2.Holders(ctx); err != nil || len(got) != 1 {
		t.Fatalf("holders %v %v", got, err)
	}
	if err := h.Unlock(ctx); !isExpired(err) {
		t.Fatalf("expired holder's Unlock: %v", err)
	}
	if err := w2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := w2.Holders(ctx); len(got) != 0 {
		t.Fatalf("left: %v", got)
	}
	if locks, _, err := admin.Children(ctx, "/sem/locks"); err != nil || len(locks) != 0 {
		t.Fatalf("internal lock nodes left: %v %v", locks, err)
	}
}
