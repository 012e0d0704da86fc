package recipe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/testing/faultnet"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

// The recipe suite runs unchanged against zkd (TestZKD) and Apache ZooKeeper 3.8 when it is
// installed (TestApacheZK; ZKD_REQUIRE_TOOLS=1 fails instead of skipping without it). Every
// test works in its own chroot and runs in parallel with the others.

// waitTimeout bounds every wait for something that should happen; generous, for a loaded
// 2-core CI machine. Nothing waits for something that should not happen.
const waitTimeout = 30 * time.Second

type env struct {
	name    string
	servers []string
}

type suiteTest struct {
	name string
	fn   func(t *testing.T, e *tenv)
}

var suite = []suiteTest{
	{"MutexExclusion", testMutexExclusion},
	{"MutexHerd", testMutexHerd},
	{"MutexCancel", testMutexCancel},
	{"MutexSessionExpiry", testMutexSessionExpiry},
	{"MutexLostCreateReply", testMutexLostCreateReply},
	{"MutexConnectionChaos", testMutexConnectionChaos},
	{"RWMutex", testRWMutex},
	{"RWMutexExclusion", testRWMutexExclusion},
	{"Revocation", testRevocation},
	{"Semaphore", testSemaphore},
	{"SemaphoreCancelAndExpiry", testSemaphoreCancelAndExpiry},
	{"Barrier", testBarrier},
	{"DoubleBarrier", testDoubleBarrier},
	{"QueueFIFO", testQueueFIFO},
	{"QueueConcurrent", testQueueConcurrent},
	{"QueueLostReplies", testQueueLostReplies},
	{"PriorityQueue", testPriorityQueue},
	{"ElectionRotation", testElectionRotation},
	{"ElectionLeaderExpiry", testElectionLeaderExpiry},
	{"TwoPhaseCommit", testTwoPhaseCommit},
	{"Counter", testCounter},
	{"Lease", testLease},
	{"ConfigWatcher", testConfigWatcher},
	{"ConfigWatcherReconnect", testConfigWatcherReconnect},
	{"Group", testGroup},
	{"Cancellation", testCancellation},
}

func runSuite(t *testing.T, e *env) {
	for _, st := range suite {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			st.fn(t, e.start(t))
		})
	}
}

func TestZKD(t *testing.T) {
	s := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.NoSync = true
		// Every extension on: the recipes use ZooKeeper's ops only and run unchanged
		// against ZooKeeper; with the extensions on, nothing they see may change.
		c.Extensions = ext.Of(ext.All...)
	}))
	runSuite(t, &env{name: "zkd", servers: []string{s.Addr()}})
}

func TestApacheZK(t *testing.T) {
	s := refzk.StartStandalone(t, refzk.Options{
		TickTime: 200, // session timeouts from 400 ms, so expiry tests are quick
		Config:   []string{"forceSync=no"},
	})
	runSuite(t, &env{name: "zookeeper", servers: []string{s.Addr()}})
}

// tenv is one test's view of the server: its own directory, used as the chroot of its
// clients.
type tenv struct {
	*env
	root string
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func (e *env) start(t *testing.T) *tenv {
	t.Helper()
	root := "/" + nonWord.ReplaceAllString(t.Name(), "_")
	c := dial(t, strings.Join(e.servers, ","))
	if _, err := c.Create(testCtx(t), root, nil, zk.OpenACL(), zk.ModePersistent); err != nil {
		t.Fatalf("create %s: %v", root, err)
	}
	c.Close()
	return &tenv{env: e, root: root}
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

func dial(t testing.TB, cs string, opts ...zk.Option) *zk.Conn {
	t.Helper()
	c, err := zk.Connect(testCtx(t), cs, append([]zk.Option{zk.WithLogger(testLogger(t))}, opts...)...)
	if err != nil {
		t.Fatalf("connect %s: %v", cs, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// conn returns a client chrooted to the test's directory.
func (e *tenv) conn(t *testing.T, opts ...zk.Option) *zk.Conn {
	t.Helper()
	c := dial(t, strings.Join(e.servers, ",")+e.root, opts...)
	if err := c.Sync(testCtx(t), "/"); err != nil {
		t.Fatal(err)
	}
	return c
}

// proxied returns a client that reaches the server through a fault proxy, with a short
// session timeout so that partitioning it expires its session quickly.
func (e *tenv) proxied(t *testing.T, opts ...zk.Option) (*zk.Conn, *faultnet.Bridge) {
	t.Helper()
	p, err := faultnet.Start(e.servers[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c := dial(t, p.Addr()+e.root, append([]zk.Option{zk.WithSessionTimeout(time.Second),
		zk.WithReconnectBackoff(10*time.Millisecond, 100*time.Millisecond)}, opts...)...)
	return c, p
}

// expire partitions a proxied client until the server has expired its session (its
// ephemeral node, probe, is gone as admin sees it), then heals the partition and waits until
// the client knows.
func expire(t *testing.T, c *zk.Conn, p *faultnet.Bridge, admin *zk.Conn, probe string) {
	t.Helper()
	ctx := testCtx(t)
	p.Pause()
	eventually(t, "session expires", func() error {
		if ok, _, err := admin.Exists(ctx, probe); err != nil || ok {
			return fmt.Errorf("%s still there (%v)", probe, err)
		}
		return nil
	})
	p.Resume()
	eventually(t, "client sees expiry", func() error {
		if s := c.State(); s != zk.StateExpired {
			return fmt.Errorf("state %v", s)
		}
		return nil
	})
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
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronization
	}
}

// recv waits for a value on ch.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("%s: nothing within %v", what, waitTimeout)
	}
	var zero T
	return zero
}

func recvTimeout() <-chan time.Time { return time.After(waitTimeout) }

// noValue checks that nothing is queued on ch right now.
func noValue[T any](t testing.TB, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s: unexpected %v", what, v)
	default:
	}
}

// hookRec records a participant's waits and watch events.
type hookRec struct {
	mu        sync.Mutex
	waiting   []string // watched paths, in order
	woken     []zk.Event
	listed    int
	recovered int
	notify    chan struct{} // receives after every record
}

func newHookRec() *hookRec { return &hookRec{notify: make(chan struct{}, 1024)} }

func (h *hookRec) opt() Option {
	return withHook(func(ev hookEvent) {
		h.mu.Lock()
		switch ev.kind {
		case hookWaiting:
			h.waiting = append(h.waiting, ev.path)
		case hookWoken:
			h.woken = append(h.woken, ev.ev)
		case hookListed:
			h.listed++
		case hookRecovered:
			h.recovered++
		}
		h.mu.Unlock()
		select {
		case h.notify <- struct{}{}:
		default:
		}
	})
}

func (h *hookRec) counts() (waits, wakes int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiting), len(h.woken)
}

func (h *hookRec) lastWatched() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.waiting) == 0 {
		return ""
	}
	return h.waiting[len(h.waiting)-1]
}

// waitWaits waits until the participant has blocked n times in all.
func (h *hookRec) waitWaits(t testing.TB, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d waits", n), func() error {
		if w, _ := h.counts(); w < n {
			return fmt.Errorf("%d waits", w)
		}
		return nil
	})
}

// dropper is a dialer whose connections can be made to break right after sending a request
// that contains a given string: the server gets the request, the client never gets the reply.
// It produces the lost-reply ConnectionLoss that the recipes' guid checks exist for.
type dropper struct {
	mu      sync.Mutex
	pattern []byte
	fired   atomic.Int32
}

func (d *dropper) arm(pattern string) {
	d.mu.Lock()
	d.pattern = []byte(pattern)
	d.mu.Unlock()
}

func (d *dropper) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &dropConn{Conn: c, d: d}, nil
}

type dropConn struct {
	net.Conn
	d          *dropper
	dead, done atomic.Bool
}

func (c *dropConn) Write(p []byte) (int, error) {
	c.d.mu.Lock()
	hit := c.d.pattern != nil && bytes.Contains(p, c.d.pattern)
	if hit {
		c.d.pattern = nil
	}
	c.d.mu.Unlock()
	if hit {
		c.dead.Store(true)
	}
	return c.Conn.Write(p)
}

// Read swallows what the server sends after the armed request (its reply, normally) and
// breaks the connection then: the request was read and applied, and the reply is lost.
func (c *dropConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.dead.Load() {
		if c.done.CompareAndSwap(false, true) {
			c.Conn.Close()
			c.d.fired.Add(1)
		}
		return 0, errors.New("dropper: reply swallowed")
	}
	return n, err
}

// waitFired waits until the armed drop has happened.
func (d *dropper) waitFired(t testing.TB, n int32) {
	t.Helper()
	eventually(t, "connection dropped", func() error {
		if got := d.fired.Load(); got < n {
			return fmt.Errorf("%d drops", got)
		}
		return nil
	})
}

// recipeGoroutines counts the goroutines running this package's code, other than tests.
func recipeGoroutines() (int, string) {
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
		if strings.Contains(g, "github.com/zkd-io/zkd/zk/recipe.") && !strings.Contains(g, "testing.tRunner") &&
			!strings.Contains(g, "recipe.test") && !strings.Contains(g, "recipe.Test") {
			count++
			dump.WriteString(g + "\n\n")
		}
	}
	return count, dump.String()
}

func isExpired(err error) bool {
	return errors.Is(err, zk.ErrSessionExpired)
}
