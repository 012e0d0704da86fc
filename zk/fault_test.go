package zk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/faultnet"
)

// Fault tests put a faultnet bridge between the client and the server. They run against every
// backend, so they also show how a real ZooKeeper treats the client after each fault.

// pendingLen is the number of requests sent and not yet answered.
func (c *Conn) pendingLen() int {
	c.mu.Lock()
	w := c.w
	c.mu.Unlock()
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

// queuedLen is the number of requests waiting for a connection.
func (c *Conn) queuedLen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queued)
}

func proxyFor(t *testing.T, ps []*faultnet.Bridge, addr string) (*faultnet.Bridge, int) {
	t.Helper()
	for i, p := range ps {
		if p.Addr() == addr {
			return p, i
		}
	}
	t.Fatalf("connected to %s, which is none of the proxies", addr)
	return nil, -1
}

// testDropWithPendingRequests: every request in flight when the connection drops fails with
// ErrConnectionLoss; the client reconnects to the same session.
func testDropWithPendingRequests(t *testing.T, e *env) {
	root := e.ns(t)
	ps := e.proxies(t, 1)
	c := dial(t, connString(proxyAddrs(ps), root))
	rec := recordStates(c)
	ctx := testCtx(t)
	mustCreate(t, c, "/a", []byte("a"), ModePersistent)
	id := c.SessionID()

	ps[0].Pause() // requests reach the proxy and stay there
	const n = 50
	gets := make([]*Pending[[]byte], n)
	for i := range n {
		gets[i] = goGet(ctx, c, "/a")
	}
	errs := make(chan error, 1)
	go func() {
		_, _, err := c.Get(ctx, "/a")
		errs <- err
	}()
	eventually(t, "requests pending", func() error {
		if got := c.pendingLen(); got != n+1 {
			return fmt.Errorf("%d pending", got)
		}
		return nil
	})
	ps[0].DropAll()
	for _, g := range gets {
		if _, err := g.Wait(ctx); !errors.Is(err, ErrConnectionLoss) {
			t.Fatalf("pending request: %v, want ErrConnectionLoss", err)
		}
	}
	if err := <-errs; !errors.Is(err, ErrConnectionLoss) {
		t.Fatalf("pending request: %v, want ErrConnectionLoss", err)
	}
	ps[0].Resume()
	rec.waitFor(t, StateConnected, 2)
	if c.SessionID() != id {
		t.Fatalf("session changed from 0x%x to 0x%x", id, c.SessionID())
	}
	if d, _, err := c.Get(ctx, "/a"); err != nil || string(d) != "a" {
		t.Fatalf("get after reconnect: %q %v", d, err)
	}
	if s := rec.states(); !slices.Equal(s[:3], []State{StateConnected, StateDisconnected, StateConnected}) {
		t.Fatalf("states %v", s)
	}
}

// testStalledServer: a server that keeps the connection open but sends nothing is given up
// after the read timeout (2/3 of the session timeout), and the client moves to another server
// in time to keep its session.
func testStalledServer(t *testing.T, e *env) {
	root := e.ns(t)
	ps := e.proxies(t, 2)
	// 4 s, what Apache ZooKeeper (tickTime 2000) negotiates anyway: after the stall is
	// noticed (2/3 of the timeout) the client has a third of it to reach the other server,
	// which a 2 s timeout made 0.7 s, too little on a loaded machine.
	c := dial(t, connString(proxyAddrs(ps), root), WithSessionTimeout(4*time.Second))
	rec := recordStates(c)
	ctx := testCtx(t)
	mustCreate(t, c, "/eph", nil, ModeEphemeral)
	id, timeout := c.SessionID(), c.SessionTimeout()
	stalled, _ := proxyFor(t, ps, c.Server())

	start := time.Now()
	stalled.Pause()
	rec.waitFor(t, StateDisconnected, 1)
	detected := time.Since(start)
	rec.waitFor(t, StateConnected, 2)
	t.Logf("session timeout %v: stall detected after %v", timeout, detected)
	// The client pings every timeout/3 and waits 2*timeout/3 for a byte, so even right
	// after a missed ping it has a third of the timeout left; allow for a late ping.
	if detected < timeout/6 {
		t.Errorf("gave up on the server after %v: too early", detected)
	}
	if c.Server() == stalled.Addr() {
		t.Fatalf("reconnected to the stalled server")
	}
	if c.SessionID() != id {
		t.Fatalf("session changed")
	}
	if ok, st, err := c.Exists(ctx, "/eph"); !ok || err != nil || st.EphemeralOwner != id {
		t.Fatalf("ephemeral after moving: %v %v", ok, err)
	}
	stalled.Resume()
}

// testReconnectRearmsWatches: while the client is cut off, other clients change watched
// nodes; after it reconnects, setWatches (from the last zxid it saw) delivers every one of
// those changes, and persistent watches are active again.
func testReconnectRearmsWatches(t *testing.T, e *env) {
	root := e.ns(t)
	ps := e.proxies(t, 2)
	c := dial(t, connString(proxyAddrs(ps), root))
	admin := dial(t, connString(e.servers, root))
	rec := recordStates(c)
	ctx := testCtx(t)
	for _, p := range []string{"/data", "/dir", "/gone", "/pers", "/rec"} {
		mustCreate(t, c, p, nil, ModePersistent)
	}
	_, _, dataW, _ := c.GetW(ctx, "/data")
	_, _, existW, _ := c.ExistsW(ctx, "/later")
	_, _, childW, _ := c.ChildrenW(ctx, "/dir")
	_, _, goneW, _ := c.GetW(ctx, "/gone")
	_, _, quietW, _ := c.GetW(ctx, "/pers") // nothing happens to it while disconnected
	pw, err := c.AddWatch(ctx, "/pers", AddWatchPersistent)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := c.AddWatch(ctx, "/rec", AddWatchPersistentRecursive)
	if err != nil {
		t.Fatal(err)
	}
	if c.LastZxid() == 0 {
		t.Fatal("no zxid seen")
	}

	for _, p := range ps {
		p.SetRefuse(true)
	}
	for _, p := range ps {
		p.DropAll()
	}
	rec.waitFor(t, StateDisconnected, 1)
	mustSet(t, admin, "/data", []byte("changed"))
	mustCreate(t, admin, "/later", nil, ModePersistent)
	mustCreate(t, admin, "/dir/k", nil, ModePersistent)
	if err := admin.Delete(ctx, "/gone", AnyVersion); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		p.SetRefuse(false)
	}

	ev := expectEvent(t, dataW, EventNodeDataChanged, "/data")
	// Watch events of a connection come after its connect event.
	if s := c.State(); s != StateConnected {
		t.Fatalf("watch event %v delivered in state %v", ev, s)
	}
	expectEvent(t, existW, EventNodeCreated, "/later")
	expectEvent(t, childW, EventNodeChildrenChanged, "/dir")
	expectEvent(t, goneW, EventNodeDeleted, "/gone")
	rec.waitFor(t, StateConnected, 2)

	// Re-armed: changes after the reconnect reach the persistent watches and the untouched
	// one-shot watch.
	mustSet(t, admin, "/pers", []byte("p"))
	mustCreate(t, admin, "/rec/x", nil, ModePersistent)
	expectEvent(t, pw.Events(), EventNodeDataChanged, "/pers")
	expectEvent(t, quietW, EventNodeDataChanged, "/pers")
	expectEvent(t, rw.Events(), EventNodeCreated, "/rec/x")
	if s := rec.states(); !slices.Equal(s, []State{StateConnected, StateDisconnected, StateConnected}) {
		t.Fatalf("states %v", s)
	}
}

// testExpiryWhilePartitioned: the client is partitioned long enough for the server to expire
// its session; when the partition heals it reports StateExpired, fails every request with
// ErrSessionExpired, ends its watches, and never creates a new session by itself.
func testExpiryWhilePartitioned(t *testing.T, e *env) {
	root := e.ns(t)
	ps := e.proxies(t, 1)
	c := dial(t, connString(proxyAddrs(ps), root), WithSessionTimeout(time.Second),
		WithReconnectBackoff(10*time.Millisecond, 100*time.Millisecond))
	admin := dial(t, connString(e.servers, root))
	rec := recordStates(c)
	ctx := testCtx(t)
	mustCreate(t, c, "/eph", nil, ModeEphemeral)
	mustCreate(t, c, "/n", nil, ModePersistent)
	_, _, dw, _ := c.GetW(ctx, "/n")
	rw, err := c.AddWatch(ctx, "/n", AddWatchPersistentRecursive)
	if err != nil {
		t.Fatal(err)
	}
	id := c.SessionID()

	ps[0].Pause() // a partition: connections stay open, nothing gets through
	inFlight := goGet(ctx, c, "/n")
	rec.waitFor(t, StateDisconnected, 1)
	if _, err := inFlight.Wait(ctx); !errors.Is(err, ErrConnectionLoss) {
		t.Fatalf("request in flight at the partition: %v", err)
	}
	eventually(t, "server expires the session", func() error {
		if ok, _, err := admin.Exists(ctx, "/eph"); err != nil || ok {
			return fmt.Errorf("ephemeral still there (%v)", err)
		}
		return nil
	})
	ps[0].Resume()
	rec.waitFor(t, StateExpired, 1)

	if c.State() != StateExpired || c.SessionID() != id {
		t.Fatalf("state %v session 0x%x", c.State(), c.SessionID())
	}
	if _, _, err := c.Get(ctx, "/n"); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("request after expiry: %v", err)
	}
	ev := nextEvent(t, dw)
	if ev.Type != EventNotWatching || !errors.Is(ev.Err, ErrSessionExpired) || ev.State != StateExpired {
		t.Fatalf("one-shot watch at expiry: %v", ev)
	}
	expectClosed(t, dw)
	ev = nextEvent(t, rw.Events())
	if ev.Type != EventNotWatching || !errors.Is(ev.Err, ErrSessionExpired) {
		t.Fatalf("persistent watch at expiry: %v", ev)
	}
	expectClosed(t, rw.Events())
	// The connection loop has ended: no new session will be made.
	select {
	case <-c.loopDone:
	case <-time.After(waitTimeout):
		t.Fatal("connection loop still running after expiry")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if s := rec.states(); s[len(s)-1] != StateExpired || slices.Contains(s, StateClosed) {
		t.Fatalf("states %v", s)
	}
}

// testRequestsWhileDisconnected: a request issued while the client is reconnecting waits for
// the new connection instead of failing.
func testRequestsWhileDisconnected(t *testing.T, e *env) {
	root := e.ns(t)
	ps := e.proxies(t, 1)
	c := dial(t, connString(proxyAddrs(ps), root), WithReconnectBackoff(10*time.Millisecond, 50*time.Millisecond))
	rec := recordStates(c)
	ctx := testCtx(t)
	mustCreate(t, c, "/q", nil, ModePersistent)
	ps[0].SetRefuse(true)
	ps[0].DropAll()
	rec.waitFor(t, StateDisconnected, 1)

	res := make(chan error, 1)
	go func() {
		_, err := c.Set(ctx, "/q", []byte("queued"), AnyVersion)
		res <- err
	}()
	eventually(t, "request queued", func() error {
		if c.queuedLen() != 1 {
			return errors.New("not queued yet")
		}
		return nil
	})
	ps[0].SetRefuse(false)
	if err := <-res; err != nil {
		t.Fatalf("request issued while disconnected: %v", err)
	}
	if d, _, err := c.Get(ctx, "/q"); err != nil || string(d) != "queued" {
		t.Fatalf("get: %q %v", d, err)
	}
}

// testContextTimeoutKeepsOrder: a request whose context ends before its reply returns the
// context's error; its late reply is discarded and later requests get their own replies.
func testContextTimeoutKeepsOrder(t *testing.T, e *env) {
	root := e.ns(t)
	ps := e.proxies(t, 1)
	c := dial(t, connString(proxyAddrs(ps), root))
	ctx := testCtx(t)
	mustCreate(t, c, "/o", []byte("1"), ModePersistent)
	ps[0].Pause()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, _, err := c.Get(short, "/o")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("get with expiring context: %v", err)
	}
	ps[0].Resume()
	mustSet(t, c, "/o", []byte("2"))
	if d, _, err := c.Get(ctx, "/o"); err != nil || string(d) != "2" {
		t.Fatalf("get after a timed-out request: %q %v", d, err)
	}
}

// testServerListUpdate: a client whose server leaves the list moves to one that stays, with
// its session; an unchanged list moves nobody.
func testServerListUpdate(t *testing.T, e *env) {
	root := e.ns(t)
	ps := e.proxies(t, 2)
	c := dial(t, connString(proxyAddrs(ps[:1]), root))
	rec := recordStates(c)
	ctx := testCtx(t)
	id := c.SessionID()
	if err := c.UpdateServerList(connString(proxyAddrs(ps[1:]), "/other")); !errors.Is(err, ErrBadArguments) {
		t.Fatalf("update changing the chroot: %v", err)
	}
	if err := c.UpdateServerList(connString(proxyAddrs(ps[1:]), root)); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, StateConnected, 2)
	if c.Server() != ps[1].Addr() || c.SessionID() != id {
		t.Fatalf("after update: server %s session 0x%x", c.Server(), c.SessionID())
	}
	accepted := ps[1].Accepted()
	if err := c.UpdateServerList(connString(proxyAddrs(ps[1:]), root)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	if ps[1].Accepted() != accepted || rec.count(StateDisconnected) != 1 {
		t.Fatalf("an unchanged server list moved the client")
	}
}

// TestZKDRestart: zkd keeps sessions across a restart, so the client reconnects to the same
// session, with its watches.
func TestZKDRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	s := startZKD(t)
	c := dial(t, s.Addr(), WithReconnectBackoff(10*time.Millisecond, 100*time.Millisecond))
	rec := recordStates(c)
	ctx := testCtx(t)
	mustCreate(t, c, "/eph", nil, ModeEphemeral)
	_, _, w, _ := c.ExistsW(ctx, "/later")
	id := c.SessionID()
	s.Restart()
	rec.waitFor(t, StateConnected, 2)
	if c.SessionID() != id {
		t.Fatalf("session changed")
	}
	mustCreate(t, c, "/later", nil, ModePersistent)
	expectEvent(t, w, EventNodeCreated, "/later")
	if ok, _, err := c.Exists(ctx, "/eph"); !ok || err != nil {
		t.Fatalf("ephemeral after restart: %v %v", ok, err)
	}
}
