package zk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/testing/faultnet"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// The integration suite runs unchanged against zkd (TestZKD), Apache ZooKeeper 3.8 when it is
// installed (TestApacheZK), and, when ZK_TEST_SERVERS=host:port[,host:port...] is set, against
// that running server or ensemble instead of both (TestExternal).

const envServers = "ZK_TEST_SERVERS"

// waitTimeout bounds every wait for something that should happen; it is generous because
// the CI machine is a loaded 2-core box. Nothing waits for something that should not happen.
const waitTimeout = 30 * time.Second

// env is a server (or ensemble) the suite runs against.
type env struct {
	name    string
	servers []string
	root    string // every test works below root/<test name>
	// extendedTypes: TTL nodes are enabled. fastContainers: the server removes empty
	// containers within a second or so.
	extendedTypes, fastContainers bool
	zkd                           *zktest.Server // nil unless the backend is zkd
}

type suiteTest struct {
	name string
	fn   func(t *testing.T, e *env)
}

// suite lists every integration test; each runs in parallel with the others, in its own
// chroot, so one server serves the whole suite.
var suite = []suiteTest{
	{"CreateGetSetDelete", testCreateGetSetDelete},
	{"CreateModes", testCreateModes},
	{"ClientSideValidation", testClientSideValidation},
	{"ChildrenAndCounts", testChildrenAndCounts},
	{"SyncWhoAmIReconfig", testSyncWhoAmIReconfig},
	{"GetConfig", testGetConfig},
	{"ACLAndAuth", testACLAndAuth},
	{"Multi", testMulti},
	{"MultiRead", testMultiRead},
	{"Pipelining", testPipelining},
	{"Go", testGo},
	{"Context", testContext},
	{"Close", testClose},
	{"Chroot", testChroot},
	{"OneShotWatches", testOneShotWatches},
	{"PersistentWatches", testPersistentWatches},
	{"RemoveAndCheckWatches", testRemoveAndCheckWatches},
	{"SlowWatchConsumer", testSlowWatchConsumer},
	{"SessionResumeAndExpiry", testSessionResumeAndExpiry},
	{"ResumeUnknownSession", testResumeUnknownSession},
	{"DropWithPendingRequests", testDropWithPendingRequests},
	{"StalledServer", testStalledServer},
	{"ReconnectRearmsWatches", testReconnectRearmsWatches},
	{"ExpiryWhilePartitioned", testExpiryWhilePartitioned},
	{"RequestsWhileDisconnected", testRequestsWhileDisconnected},
	{"ContextTimeoutKeepsOrder", testContextTimeoutKeepsOrder},
	{"ServerListUpdate", testServerListUpdate},
	{"ReplyTooLarge", testReplyTooLarge},
}

func runSuite(t *testing.T, e *env) {
	for _, st := range suite {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			st.fn(t, e)
		})
	}
}

func TestZKD(t *testing.T) {
	if os.Getenv(envServers) != "" {
		t.Skipf("%s is set: the suite runs against it (TestExternal)", envServers)
	}
	s := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.ExtendedTypes = true
		c.ContainerCheckInterval = 100 * time.Millisecond
		c.FourLetterWhitelist = []string{"*"}
		// Every extension on: the suite uses ZooKeeper's ops only, and runs unchanged
		// against ZooKeeper; with the extensions on, nothing it sees may change.
		c.Extensions = ext.Of(ext.All...)
	}))
	runSuite(t, &env{name: "zkd", servers: []string{s.Addr()}, root: "/zkgo", extendedTypes: true, fastContainers: true, zkd: s})
}

func TestApacheZK(t *testing.T) {
	if os.Getenv(envServers) != "" {
		t.Skipf("%s is set: the suite runs against it (TestExternal)", envServers)
	}
	s := refzk.StartStandalone(t, refzk.Options{
		TickTime: 200, // session timeouts from 400 ms, so expiry tests are quick
		SystemProperties: []string{
			"zookeeper.extendedTypesEnabled=true",
			"znode.container.checkIntervalMs=100",
		},
	})
	runSuite(t, &env{name: "zookeeper", servers: []string{s.Addr()}, root: "/zkgo", extendedTypes: true, fastContainers: true})
}

func TestExternal(t *testing.T) {
	list := os.Getenv(envServers)
	if list == "" {
		t.Skipf("set %s=host:port[,...] to run the suite against a running ZooKeeper", envServers)
	}
	cs, err := parseConnString(list)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{name: "external", servers: cs.servers, root: fmt.Sprintf("/zkgo-test-%x", rand.Uint64())}
	// Probe for TTL support; everything else the suite needs is in every 3.6+ server.
	c := e.connectRaw(t)
	ctx := testCtx(t)
	if _, err := c.Create(ctx, e.root, nil, OpenACL(), ModePersistent); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CreateTTL(ctx, e.root+"/ttl-probe", nil, OpenACL(), ModePersistentTTL, time.Hour); err == nil {
		e.extendedTypes = true
		c.Delete(ctx, e.root+"/ttl-probe", AnyVersion)
	}
	t.Cleanup(func() {
		c := e.connectRawNoCleanup(t)
		defer c.Close()
		if err := deleteAll(context.Background(), c, e.root); err != nil {
			t.Logf("cleaning up %s: %v", e.root, err)
		}
	})
	runSuite(t, e)
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("ZKTEST_LOG") == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(tbWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// ns creates the test's own directory and returns its absolute path.
func (e *env) ns(t *testing.T) string {
	t.Helper()
	c := e.connectRaw(t)
	ctx := testCtx(t)
	p := e.root + "/" + nonWord.ReplaceAllString(t.Name(), "_")
	for _, q := range []string{e.root, p} {
		if _, err := c.Create(ctx, q, nil, OpenACL(), ModePersistent); err != nil && !errors.Is(err, ErrNodeExists) {
			t.Fatalf("create %s: %v", q, err)
		}
	}
	return p
}

// connString joins addresses and a chroot.
func connString(servers []string, root string) string {
	return strings.Join(servers, ",") + root
}

// dial connects to servers with the test's logger and closes the client at the end.
func dial(t testing.TB, cs string, opts ...Option) *Conn {
	t.Helper()
	c, err := Connect(testCtx(t), cs, append([]Option{WithLogger(testLogger(t))}, opts...)...)
	if err != nil {
		t.Fatalf("connect %s: %v", cs, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// connect returns a client chrooted to the test's directory.
func (e *env) connect(t *testing.T, opts ...Option) (*Conn, string) {
	t.Helper()
	root := e.ns(t)
	c := dial(t, connString(e.servers, root), opts...)
	catchUp(t, c) // the directory was made by another session
	return c, root
}

// connectRaw returns a client without chroot.
func (e *env) connectRaw(t testing.TB, opts ...Option) *Conn {
	t.Helper()
	return dial(t, connString(e.servers, ""), opts...)
}

func (e *env) connectRawNoCleanup(t testing.TB) *Conn {
	c, err := Connect(testCtx(t), connString(e.servers, ""), WithLogger(testLogger(t)))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return c
}

// proxies starts n fault proxies in front of the env's servers (round robin).
func (e *env) proxies(t *testing.T, n int) []*faultnet.Bridge {
	t.Helper()
	var ps []*faultnet.Bridge
	for i := range n {
		p, err := faultnet.Start(e.servers[i%len(e.servers)])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		ps = append(ps, p)
	}
	return ps
}

func proxyAddrs(ps []*faultnet.Bridge) []string {
	var a []string
	for _, p := range ps {
		a = append(a, p.Addr())
	}
	return a
}

func deleteAll(ctx context.Context, c *Conn, p string) error {
	children, _, err := c.Children(ctx, p)
	switch {
	case errors.Is(err, ErrNoNode):
		return nil
	case errors.Is(err, ErrNoAuth):
		// Unreadable (a test's ACL); deleting needs rights on the parent only.
		children = nil
	case err != nil:
		return err
	}
	for _, ch := range children {
		if err := deleteAll(ctx, c, p+"/"+ch); err != nil {
			return err
		}
	}
	if err := c.Delete(ctx, p, AnyVersion); err != nil && !errors.Is(err, ErrNoNode) {
		return err
	}
	return nil
}

// nextEvent waits for the next event on ch; it fails the test if ch closes or nothing comes.
func nextEvent(t testing.TB, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("event channel closed")
		}
		return ev
	case <-time.After(waitTimeout):
		t.Fatalf("no event within %v", waitTimeout)
	}
	return Event{}
}

// expectEvent waits for the next event and checks its type and path.
func expectEvent(t testing.TB, ch <-chan Event, typ EventType, path string) Event {
	t.Helper()
	ev := nextEvent(t, ch)
	if ev.Type != typ || ev.Path != path {
		t.Fatalf("got event %v, want %v %s", ev, typ, path)
	}
	return ev
}

// expectClosed checks that ch is closed (after any events already queued are consumed).
func expectClosed(t testing.TB, ch <-chan Event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("unexpected event %v, want closed channel", ev)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("channel not closed within %v", waitTimeout)
	}
}

// expectNoEvent checks that nothing is queued on ch right now. Callers first make sure that
// anything that could have been queued has been (a later event, or a round trip).
func expectNoEvent(t testing.TB, ch <-chan Event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("unexpected event %v", ev)
		}
		t.Fatalf("unexpected close")
	default:
	}
}

// stateRecorder drains a client's session events and lets tests wait for states.
type stateRecorder struct {
	mu     sync.Mutex
	cond   *sync.Cond
	events []Event
	closed bool
}

func recordStates(c *Conn) *stateRecorder {
	r := &stateRecorder{}
	r.cond = sync.NewCond(&r.mu)
	go func() {
		for ev := range c.Events() {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.cond.Broadcast()
			r.mu.Unlock()
		}
		r.mu.Lock()
		r.closed = true
		r.cond.Broadcast()
		r.mu.Unlock()
	}()
	return r
}

// waitFor waits until the n-th occurrence (1-based) of state and returns its event index.
func (r *stateRecorder) waitFor(t testing.TB, state State, n int) int {
	t.Helper()
	deadline := time.AfterFunc(waitTimeout, func() {
		r.mu.Lock()
		r.closed = true
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer deadline.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		seen := 0
		for i, ev := range r.events {
			if ev.State == state {
				seen++
				if seen == n {
					return i
				}
			}
		}
		if r.closed {
			t.Fatalf("state %v #%d never came; events: %v", state, n, r.events)
		}
		r.cond.Wait()
	}
}

func (r *stateRecorder) states() []State {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []State
	for _, ev := range r.events {
		s = append(s, ev.State)
	}
	return s
}

func (r *stateRecorder) count(state State) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.events {
		if ev.State == state {
			n++
		}
	}
	return n
}

// eventually polls f until it returns nil or the wait times out.
func eventually(t testing.TB, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, waitTimeout, err)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronization
	}
}

// catchUp makes c's server apply everything committed so far (Sync), so that c reads what
// another session wrote: in an ensemble, sessions on different servers may lag each other.
func catchUp(t testing.TB, c *Conn) {
	t.Helper()
	if err := c.Sync(testCtx(t), "/"); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

func mustCreate(t testing.TB, c *Conn, p string, data []byte, mode CreateMode) string {
	t.Helper()
	got, err := c.Create(testCtx(t), p, data, OpenACL(), mode)
	if err != nil {
		t.Fatalf("create %s: %v", p, err)
	}
	return got
}

func mustSet(t testing.TB, c *Conn, p string, data []byte) *Stat {
	t.Helper()
	st, err := c.Set(testCtx(t), p, data, AnyVersion)
	if err != nil {
		t.Fatalf("set %s: %v", p, err)
	}
	return st
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// zkGoroutines counts the goroutines running this package's code on behalf of clients (not
// test goroutines).
func zkGoroutines() (int, string) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	var dump strings.Builder
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/zkd-io/zkd/zk.") && !strings.Contains(g, "testing.tRunner") &&
			!strings.Contains(g, "zk.(*stateRecorder)") && !strings.Contains(g, "zk.recordStates") {
			count++
			dump.WriteString(g + "\n\n")
		}
	}
	return count, dump.String()
}

// startZKD starts a plain in-process zkd for tests that need one of their own.
func startZKD(t testing.TB) *zktest.Server {
	t.Helper()
	return zktest.Start(t)
}

// goErr starts f with Go, for operations whose only result is an error.
func goErr(ctx context.Context, f func(context.Context) error) *Pending[struct{}] {
	return Go(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
}

// goGet starts c.Get(path) with Go.
func goGet(ctx context.Context, c *Conn, path string) *Pending[[]byte] {
	return Go(ctx, func(ctx context.Context) ([]byte, error) {
		data, _, err := c.Get(ctx, path)
		return data, err
	})
}

// goSync starts c.Sync(path) with Go.
func goSync(ctx context.Context, c *Conn, path string) *Pending[struct{}] {
	return goErr(ctx, func(ctx context.Context) error { return c.Sync(ctx, path) })
}
