package recipe

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/faultnet"
	"github.com/zkd-io/zkd/zk"
)

// incr adds one to the counter node at p. It is called under a lock, so it is the only
// writer: after a lost reply, a version one past the one it read means its write landed.
func incr(ctx context.Context, c *zk.Conn, p string) error {
	for {
		var data []byte
		var st *zk.Stat
		if err := retry(ctx, func() (err error) { data, st, err = c.Get(ctx, p); return err }); err != nil {
			return err
		}
		v, err := strconv.Atoi(string(data))
		if err != nil {
			return err
		}
		_, err = c.Set(ctx, p, []byte(strconv.Itoa(v+1)), st.Version)
		if err == nil {
			return nil
		}
		if !errors.Is(err, zk.ErrConnectionLoss) {
			return err
		}
		var now *zk.Stat
		if err := retry(ctx, func() (err error) { _, now, err = c.Get(ctx, p); return err }); err != nil {
			return err
		}
		if now.Version == st.Version+1 {
			return nil
		}
	}
}

func readInt(t *testing.T, c *zk.Conn, p string) int {
	t.Helper()
	data, _, err := c.Get(testCtx(t), p)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.Atoi(string(data))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustCreate(t *testing.T, c *zk.Conn, p string, data []byte) {
	t.Helper()
	if _, err := c.Create(testCtx(t), p, data, zk.OpenACL(), zk.ModePersistent); err != nil {
		t.Fatalf("create %s: %v", p, err)
	}
}

// exclusionRun has workers, spread over conns, increment a counter node under a Mutex,
// rounds times each; it checks that no two ever held the lock at once and that no increment
// was lost. quiesce, when not nil, runs once the workers are done and before the checks read
// the tree (it stops fault injection, which would fail those reads).
func exclusionRun(t *testing.T, conns []*zk.Conn, perConn, rounds int, quiesce func()) {
	ctx := testCtx(t)
	mustCreate(t, conns[0], "/counter", []byte("0"))
	var inside, maxInside atomic.Int32
	errs := make(chan error, len(conns)*perConn)
	var wg sync.WaitGroup
	for _, c := range conns {
		for range perConn {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := NewMutex(c, "/lock")
				for range rounds {
					if err := m.Lock(ctx); err != nil {
						errs <- fmt.Errorf("lock: %w", err)
						return
					}
					n := inside.Add(1)
					for {
						mx := maxInside.Load()
						if n <= mx || maxInside.CompareAndSwap(mx, n) {
							break
						}
					}
					err := incr(ctx, c, "/counter")
					inside.Add(-1)
					if err != nil {
						errs <- fmt.Errorf("increment: %w", err)
						return
					}
					if err := m.Unlock(ctx); err != nil {
						errs <- fmt.Errorf("unlock: %w", err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	if quiesce != nil {
		quiesce()
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m := maxInside.Load(); m != 1 {
		t.Fatalf("%d holders at once", m)
	}
	want := len(conns) * perConn * rounds
	if got := readInt(t, conns[0], "/counter"); got != want {
		t.Fatalf("counter %d, want %d: increments lost", got, want)
	}
	left, err := NewMutex(conns[0], "/lock").Contenders(ctx)
	if err != nil || len(left) != 0 {
		t.Fatalf("lock nodes left: %v %v", left, err)
	}
}

// testMutexExclusion: 20 goroutines in 4 sessions increment a counter under the lock; the
// counter ends exact and no two goroutines were ever inside at once.
func testMutexExclusion(t *testing.T, e *tenv) {
	var conns []*zk.Conn
	for range 4 {
		conns = append(conns, e.conn(t))
	}
	exclusionRun(t, conns, 5, 4, nil)
}

// testMutexHerd: with 10 waiters queued (in 3 sessions), each release wakes exactly one
// waiter, the next in line: the number of watch events per release is 1.
func testMutexHerd(t *testing.T, e *tenv) {
	const waiters = 10
	ctx := testCtx(t)
	conns := []*zk.Conn{e.conn(t), e.conn(t), e.conn(t)}
	holder := NewMutex(conns[0], "/lock")
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	hooks := make([]*hookRec, waiters)
	ms := make([]*Mutex, waiters)
	release := make([]chan struct{}, waiters)
	acquired := make(chan int, waiters)
	errs := make(chan error, 2*waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		hooks[i] = newHookRec()
		release[i] = make(chan struct{})
		ms[i] = NewMutex(conns[i%len(conns)], "/lock", hooks[i].opt())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ms[i].Lock(ctx); err != nil {
				errs <- err
				return
			}
			acquired <- i
			<-release[i]
			if err := ms[i].Unlock(ctx); err != nil {
				errs <- err
			}
		}()
	}
	for _, h := range hooks {
		h.waitWaits(t, 1)
	}
	// Everyone waits, each on a different node: a queue, not a crowd around the holder.
	watched := map[string]bool{}
	for _, h := range hooks {
		watched[h.lastWatched()] = true
	}
	if len(watched) != waiters || !watched[holder.Node()] {
		t.Fatalf("waiters watch %d distinct nodes (holder's among them: %v), want %d", len(watched), watched[holder.Node()], waiters)
	}
	events := func() int {
		n := 0
		for _, h := range hooks {
			_, w := h.counts()
			n += w
		}
		return n
	}
	if n := events(); n != 0 {
		t.Fatalf("%d watch events before any release", n)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	order := []int{}
	for r := 1; r <= waiters; r++ {
		var i int
		select {
		case i = <-acquired:
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(waitTimeout):
			t.Fatalf("release %d: no one acquired", r)
		}
		order = append(order, i)
		if n := events(); n != r {
			t.Fatalf("after %d releases, %d watch events", r, n)
		}
		close(release[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n := events()
	t.Logf("%s: %d releases with waiters, %d watch events: %.2f per release; order %v",
		e.name, waiters, n, float64(n)/waiters, order)
	if n != waiters {
		t.Fatalf("%d watch events for %d releases", n, waiters)
	}
	for i, h := range hooks {
		if _, w := h.counts(); w != 1 {
			t.Errorf("waiter %d got %d watch events", i, w)
		}
	}
}

// testMutexCancel: a waiter whose context ends leaves the queue (its node is deleted) and
// wakes only its successor, which then waits on the node before it; TryLock never waits and
// leaves nothing behind; misuse errors.
func testMutexCancel(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	c := e.conn(t)
	h := NewMutex(c, "/lock")
	if err := h.Unlock(ctx); !errors.Is(err, ErrNotLocked) {
		t.Fatalf("unlock before lock: %v", err)
	}
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Lock(ctx); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v", err)
	}
	if ok, err := NewMutex(c, "/lock").TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock on a held lock: %v %v", ok, err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := NewMutex(c, "/lock").Lock(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("lock with an ended context: %v", err)
	}
	if got, _ := h.Contenders(ctx); len(got) != 1 {
		t.Fatalf("contenders %v, want the holder only", got)
	}

	names := []string{"a", "b", "c"}
	ms := map[string]*Mutex{}
	hooks := map[string]*hookRec{}
	results := map[string]chan error{}
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	for _, n := range names {
		hooks[n] = newHookRec()
		ms[n] = NewMutex(e.conn(t), "/lock", hooks[n].opt())
		results[n] = make(chan error, 1)
		lctx := ctx
		if n == "b" {
			lctx = bctx
		}
		go func() { results[n] <- ms[n].Lock(lctx) }()
		hooks[n].waitWaits(t, 1) // queued in this order
	}
	if hooks["c"].lastWatched() != ms["b"].Node() {
		t.Fatalf("c watches %s, want b's node %s", hooks["c"].lastWatched(), ms["b"].Node())
	}
	bnode := ms["b"].Node()
	bcancel()
	if err := recv(t, results["b"], "b's Lock"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled lock: %v", err)
	}
	got, err := h.Contenders(ctx)
	if err != nil || !slices.Equal(got, []string{h.Node(), ms["a"].Node(), ms["c"].Node()}) || slices.Contains(got, bnode) {
		t.Fatalf("contenders after cancel %v (%v)", got, err)
	}
	hooks["c"].waitWaits(t, 2)
	if w := hooks["c"].lastWatched(); w != ms["a"].Node() {
		t.Fatalf("c watches %s after b left, want a's node", w)
	}
	if _, w := hooks["a"].counts(); w != 0 {
		t.Fatalf("a was woken %d times by b leaving", w)
	}
	noValue(t, results["a"], "a")
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, results["a"], "a's Lock"); err != nil {
		t.Fatal(err)
	}
	noValue(t, results["c"], "c")
	if err := ms["a"].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, results["c"], "c's Lock"); err != nil {
		t.Fatal(err)
	}
	if err := ms["c"].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testMutexSessionExpiry: the holder's session expires (its connection is cut, without
// closeSession): the lock passes to the next waiter, a waiter of the dead session fails with
// ErrSessionExpired, and the old holder's Unlock reports the loss.
func testMutexSessionExpiry(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	admin := e.conn(t)
	hc, p := e.proxied(t)
	h := NewMutex(hc, "/lock")
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	wh, h2h := newHookRec(), newHookRec()
	w := NewMutex(admin, "/lock", wh.opt())
	wres := make(chan error, 1)
	go func() { wres <- w.Lock(ctx) }()
	wh.waitWaits(t, 1)
	h2 := NewMutex(hc, "/lock", h2h.opt())
	h2res := make(chan error, 1)
	go func() { h2res <- h2.Lock(ctx) }()
	h2h.waitWaits(t, 1)

	expire(t, hc, p, admin, h.Node())
	if err := recv(t, wres, "waiter's Lock"); err != nil {
		t.Fatalf("waiter after the holder's expiry: %v", err)
	}
	if err := recv(t, h2res, "dead session's waiter"); !isExpired(err) {
		t.Fatalf("waiter in the expired session: %v, want ErrSessionExpired", err)
	}
	if err := h.Unlock(ctx); !isExpired(err) {
		t.Fatalf("unlock after expiry: %v, want ErrSessionExpired", err)
	}
	if got, err := w.Contenders(ctx); err != nil || !slices.Equal(got, []string{w.Node()}) {
		t.Fatalf("contenders %v %v", got, err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testMutexLostCreateReply: the connection breaks after the server applied the lock node's
// create but before its reply arrives. Lock finds its node by guid instead of creating a
// second one (which would sit in the queue, orphaned, until the session ends).
func testMutexLostCreateReply(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	d := &dropper{}
	c := e.conn(t, zk.WithDialer(d.dial))
	mustCreate(t, c, "/lock", nil)
	h := newHookRec()
	m := NewMutex(c, "/lock", h.opt())
	d.arm("-lock-")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	d.waitFired(t, 1)
	if h.recovered != 1 {
		t.Fatalf("the lost create was not found by its guid (%d recoveries)", h.recovered)
	}
	got, err := m.Contenders(ctx)
	if err != nil || !slices.Equal(got, []string{m.Node()}) {
		t.Fatalf("contenders %v (%v), want only %s", got, err, m.Node())
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Contenders(ctx); len(got) != 0 {
		t.Fatalf("left behind: %v", got)
	}
}

// testMutexConnectionChaos: connections are dropped again and again while 6 goroutines in 3
// sessions take turns with the lock; exclusion holds, nothing is lost, no node is orphaned.
func testMutexConnectionChaos(t *testing.T, e *tenv) {
	var conns []*zk.Conn
	var ps []*faultnet.Bridge
	for range 3 {
		c, p := e.proxied(t, zk.WithSessionTimeout(4*time.Second))
		conns = append(conns, c)
		ps = append(ps, p)
	}
	stop := make(chan struct{})
	chaos := make(chan int)
	go func() {
		drops := 0
		defer func() { chaos <- drops }()
		for range 1000 {
			select {
			case <-stop:
				return
			case <-time.After(15 * time.Millisecond): // pacing of the fault injection
			}
			ps[rand.IntN(len(ps))].DropAll()
			drops++
		}
	}()
	drops := 0
	exclusionRun(t, conns, 2, 6, func() {
		close(stop)
		drops = <-chaos
	})
	t.Logf("%s: %d connection drops", e.name, drops)
}
