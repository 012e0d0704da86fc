package recipe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/zk"
)

// testTwoPhaseCommit: the coordinator creates the transaction and a child per site; sites in
// their own sessions read it and vote; every party reaches the same decision: commit when all
// vote commit, abort as soon as one votes abort (before the others vote), abort when the
// coordinator gives up. A vote cannot be changed.
func testTwoPhaseCommit(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	sites := []string{"s1", "s2", "s3"}
	coord := NewTx(e.conn(t), "/tx/1")
	if err := coord.Begin(ctx, []byte("move 10 from a to b"), sites); err != nil {
		t.Fatal(err)
	}
	if err := coord.Begin(ctx, nil, sites); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("begin twice: %v", err)
	}
	if o, err := coord.Outcome(ctx); o != Undecided || err != nil {
		t.Fatalf("outcome before votes: %v %v", o, err)
	}
	type result struct {
		site string
		o    Outcome
		err  error
	}
	run := func(path string, votes map[string]bool) chan result {
		out := make(chan result, len(sites))
		for _, s := range sites {
			c := e.conn(t)
			go func() {
				tx := NewTx(c, path)
				if data, err := tx.Data(ctx); err != nil || len(data) == 0 {
					out <- result{s, Undecided, fmt.Errorf("data %q: %v", data, err)}
					return
				}
				if v, ok := votes[s]; ok {
					if err := tx.Vote(ctx, s, v); err != nil {
						out <- result{s, Undecided, err}
						return
					}
				}
				o, err := tx.Wait(ctx)
				out <- result{s, o, err}
			}()
		}
		return out
	}
	check := func(out chan result, want Outcome) {
		t.Helper()
		for range sites {
			r := recv(t, out, "site decision")
			if r.err != nil || r.o != want {
				t.Fatalf("site %s: %v %v, want %v", r.site, r.o, r.err, want)
			}
		}
	}
	out := run("/tx/1", map[string]bool{"s1": true, "s2": true, "s3": true})
	check(out, Committed)
	if o, err := coord.Wait(ctx); o != Committed || err != nil {
		t.Fatalf("coordinator: %v %v", o, err)
	}

	// One abort decides, while s3 has not voted at all.
	tx2 := NewTx(e.conn(t), "/tx/2")
	if err := tx2.Begin(ctx, []byte("x"), sites); err != nil {
		t.Fatal(err)
	}
	out = run("/tx/2", map[string]bool{"s1": true, "s2": false})
	check(out, Aborted)
	if err := tx2.Vote(ctx, "s2", false); err != nil {
		t.Fatalf("repeating a vote: %v", err)
	}
	if err := tx2.Vote(ctx, "s2", true); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("changing a vote: %v", err)
	}

	// The coordinator gives up on a site that never votes.
	tx3 := NewTx(e.conn(t), "/tx/3")
	if err := tx3.Begin(ctx, []byte("y"), sites); err != nil {
		t.Fatal(err)
	}
	if err := tx3.Vote(ctx, "s1", true); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan Outcome, 1)
	h := newHookRec()
	go func() {
		o, _ := NewTx(e.conn(t), "/tx/3", h.opt()).Wait(ctx)
		waiting <- o
	}()
	h.waitWaits(t, 1)
	if err := tx3.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if o := recv(t, waiting, "decision after Abort"); o != Aborted {
		t.Fatalf("after Abort: %v", o)
	}
	for _, tx := range []*Tx{coord, tx2, tx3} {
		if err := tx.Delete(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// testCounter: 12 goroutines in 3 sessions add 10 each; compare-and-set loses nothing.
func testCounter(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for s := range 3 {
		c := e.conn(t)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := NewCounter(c, "/count")
				for range 10 {
					if _, err := k.Add(ctx, 1); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		_ = s
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	k := NewCounter(e.conn(t), "/count")
	v, ver, err := k.Get(ctx)
	if err != nil || v != 120 {
		t.Fatalf("counter %d %v, want 120", v, err)
	}
	if ok, err := k.TrySet(ctx, 0, ver-1); ok || err != nil {
		t.Fatalf("TrySet with a stale version: %v %v", ok, err)
	}
	if ok, err := k.TrySet(ctx, -5, ver); !ok || err != nil {
		t.Fatalf("TrySet: %v %v", ok, err)
	}
	if v, err := k.Add(ctx, 7); v != 2 || err != nil {
		t.Fatalf("add: %d %v", v, err)
	}
	if v, _, _ := NewCounter(e.conn(t), "/missing").Get(ctx); v != 0 {
		t.Fatalf("missing counter reads %d", v)
	}
}

// testLease: a lease is exclusive while it lasts, can be extended by its holder, released,
// and taken over once expired; a multi-lease admits n holders.
func testLease(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	c1, c2 := e.conn(t), e.conn(t)
	a := NewLease(c1, "/leases/job", "host-a")
	b := NewLease(c2, "/leases/job", "host-b")
	if ok, err := a.TryAcquire(ctx, time.Hour); !ok || err != nil {
		t.Fatalf("a: %v %v", ok, err)
	}
	if ok, err := b.TryAcquire(ctx, time.Hour); ok || err != nil {
		t.Fatalf("b while a holds: %v %v", ok, err)
	}
	if ok, err := a.TryAcquire(ctx, time.Hour); !ok || err != nil {
		t.Fatalf("a extends: %v %v", ok, err)
	}
	// b's clock runs past the expiry.
	b.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if ok, err := b.TryAcquire(ctx, time.Hour); !ok || err != nil {
		t.Fatalf("b after expiry: %v %v", ok, err)
	}
	if ok, err := a.TryAcquire(ctx, time.Hour); ok || err != nil {
		t.Fatalf("a after b took over: %v %v", ok, err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b.now = time.Now
	if ok, err := a.TryAcquire(ctx, time.Hour); !ok || err != nil {
		t.Fatalf("a after release: %v %v", ok, err)
	}

	var got []bool
	for _, h := range []string{"x", "y", "z", "x"} {
		ok, err := NewMultiLease(c1, "/multi", 2, h).TryAcquire(ctx, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ok)
	}
	if want := []bool{true, true, false, true}; !slices.Equal(got, want) {
		t.Fatalf("multi-lease grants %v, want %v", got, want)
	}
}

// waitValue waits until the watcher's value satisfies ok, reading it after each change
// notification.
func waitValue(t *testing.T, w *ConfigWatcher, what string, ok func(Config) bool) {
	t.Helper()
	timeout := time.After(waitTimeout)
	for !ok(w.Value()) {
		select {
		case <-w.Changes():
		case <-w.Done():
			t.Fatalf("%s: watcher stopped: %v", what, w.Err())
		case <-timeout:
			t.Fatalf("%s: value %q after %v", what, w.Value().Data, waitTimeout)
		}
	}
}

func hasData(s string) func(Config) bool {
	return func(c Config) bool { return c.Exists() && string(c.Data) == s }
}

// testConfigWatcher: the watcher follows a node from before it exists, through 200
// pipelined updates (ending on the last one), to its deletion; Close stops it.
func testConfigWatcher(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	admin := e.conn(t)
	w, err := WatchConfig(ctx, e.conn(t), "/cfg")
	if err != nil {
		t.Fatal(err)
	}
	if w.Value().Exists() {
		t.Fatal("missing node reported as existing")
	}
	mustCreate(t, admin, "/cfg", []byte("v0"))
	waitValue(t, w, "created", hasData("v0"))
	const n = 200
	sets := make([]*zk.Pending[*zk.Stat], n)
	for i := range sets {
		sets[i] = zk.Go(ctx, func(ctx context.Context) (*zk.Stat, error) {
			return admin.Set(ctx, "/cfg", []byte(fmt.Sprintf("v%d", i+1)), zk.AnyVersion)
		})
	}
	for _, s := range sets {
		s.Wait(ctx)
	}
	waitValue(t, w, "last update", hasData(fmt.Sprintf("v%d", n)))
	if err := admin.Delete(ctx, "/cfg", zk.AnyVersion); err != nil {
		t.Fatal(err)
	}
	waitValue(t, w, "deleted", func(c Config) bool { return !c.Exists() })
	if w.Err() != nil {
		t.Fatalf("Err while running: %v", w.Err())
	}
	w.Close()
	if !errors.Is(w.Err(), context.Canceled) {
		t.Fatalf("Err after Close: %v", w.Err())
	}
}

// testConfigWatcherReconnect: updates made while the watcher's client is cut off are seen
// after it reconnects (to the same session); when its session expires, the watcher stops
// with ErrSessionExpired.
func testConfigWatcherReconnect(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	admin := e.conn(t)
	mustCreate(t, admin, "/cfg", []byte("v0"))
	wc, p := e.proxied(t, zk.WithSessionTimeout(2*time.Second))
	w, err := WatchConfig(ctx, wc, "/cfg")
	if err != nil {
		t.Fatal(err)
	}
	sid := wc.SessionID()
	p.Pause()
	for i := 1; i <= 5; i++ {
		if _, err := admin.Set(ctx, "/cfg", []byte(fmt.Sprintf("v%d", i)), zk.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	p.DropAll()
	p.Resume()
	waitValue(t, w, "update made while cut off", hasData("v5"))
	if wc.SessionID() != sid {
		t.Fatal("session changed")
	}
	if _, err := wc.Create(ctx, "/probe", nil, zk.OpenACL(), zk.ModeEphemeral); err != nil {
		t.Fatal(err)
	}
	expire(t, wc, p, admin, "/probe")
	recv(t, w.Done(), "watcher stops at expiry")
	if !isExpired(w.Err()) {
		t.Fatalf("Err after expiry: %v", w.Err())
	}
}

// testGroup: members in different sessions join and leave (explicitly, or with their
// session); Watch reports each membership; names are unique across sessions; a join whose
// reply is lost is recognised as this session's.
func testGroup(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	g := NewGroup(e.conn(t), "/g")
	ms := g.Watch(ctx)
	want := func(names ...string) {
		t.Helper()
		timeout := time.After(waitTimeout)
		for {
			select {
			case got, ok := <-ms:
				if !ok {
					t.Fatal("watch ended")
				}
				if slices.Equal(got, names) || (len(got) == 0 && len(names) == 0) {
					return
				}
			case <-timeout:
				t.Fatalf("membership never became %v", names)
			}
		}
	}
	want()
	c1, c2 := e.conn(t), e.conn(t)
	m1, err := NewGroup(c1, "/g").Join(ctx, "a", []byte("10.0.0.1:80"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewGroup(c2, "/g").Join(ctx, "b", nil); err != nil {
		t.Fatal(err)
	}
	want("a", "b")
	if _, err := NewGroup(c2, "/g").Join(ctx, "a", nil); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("joining as another session's member: %v", err)
	}
	if err := m1.Update(ctx, []byte("10.0.0.1:81")); err != nil {
		t.Fatal(err)
	}
	c2.Close()
	want("a")
	if err := m1.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	want()

	d := &dropper{}
	c3 := e.conn(t, zk.WithDialer(d.dial))
	d.arm("/g/lost")
	if _, err := NewGroup(c3, "/g").Join(ctx, "lost", nil); err != nil {
		t.Fatalf("join with a lost reply: %v", err)
	}
	d.waitFired(t, 1)
	want("lost")
	if got, err := g.Members(ctx); err != nil || !slices.Equal(got, []string{"lost"}) {
		t.Fatalf("members %v %v", got, err)
	}
}

// testCancellation: every blocking call returns the context's error when it ends, and
// removes the node it had created: a candidate leaves the line, a double-barrier participant
// leaves the count.
func testCancellation(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	c := e.conn(t)
	blocked := func(what string, h *hookRec, f func(ctx context.Context) error) {
		t.Helper()
		cctx, cancel := context.WithCancel(ctx)
		res := make(chan error, 1)
		go func() { res <- f(cctx) }()
		h.waitWaits(t, 1)
		cancel()
		if err := recv(t, res, what); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v, want context.Canceled", what, err)
		}
	}

	leader := NewElection(c, "/elect")
	if err := leader.Campaign(ctx, nil); err != nil {
		t.Fatal(err)
	}
	h := newHookRec()
	blocked("Campaign", h, func(ctx context.Context) error {
		return NewElection(e.conn(t), "/elect", h.opt()).Campaign(ctx, nil)
	})
	if got, err := leader.Candidates(ctx); err != nil || !slices.Equal(got, []string{leader.Node()}) {
		t.Fatalf("candidates %v %v", got, err)
	}

	h = newHookRec()
	blocked("DoubleBarrier.Enter", h, func(ctx context.Context) error {
		return NewDoubleBarrier(c, "/db", 2, h.opt()).Enter(ctx)
	})
	if ch, _, err := c.Children(ctx, "/db"); err != nil || len(ch) != 0 {
		t.Fatalf("double barrier after a cancelled Enter: %v %v", ch, err)
	}

	h = newHookRec()
	blocked("Queue.Take", h, func(ctx context.Context) error {
		_, err := NewQueue(c, "/q", h.opt()).Take(ctx)
		return err
	})

	if err := NewBarrier(c, "/b").Set(ctx); err != nil {
		t.Fatal(err)
	}
	h = newHookRec()
	blocked("Barrier.Wait", h, NewBarrier(c, "/b", h.opt()).Wait)

	tx := NewTx(c, "/tx")
	if err := tx.Begin(ctx, nil, []string{"s"}); err != nil {
		t.Fatal(err)
	}
	h = newHookRec()
	blocked("Tx.Wait", h, func(ctx context.Context) error {
		_, err := NewTx(c, "/tx", h.opt()).Wait(ctx)
		return err
	})

	if err := leader.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}
