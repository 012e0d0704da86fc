package server_test

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// allExtensions is every extension beyond ZooKeeper. The go-zookeeper tests run against a
// server with all of them on: a stock client must see exactly ZooKeeper whatever the server
// enables (TestStockClientSeesNoExtension compares against a server with none).
var allExtensions = ext.Of(ext.All...)

// startStock starts a server for a stock client's test: every extension on, then opts.
func startStock(tb testing.TB, opts ...zktest.Option) *zktest.Server {
	tb.Helper()
	all := zktest.WithConfig(func(c *server.Config) { c.Extensions = allExtensions })
	return zktest.Start(tb, append([]zktest.Option{all}, opts...)...)
}

var quiet = zk.WithLogger(log.New(io.Discard, "", 0))

// connect opens a go-zookeeper session to addr and waits until it has a session.
func connect(t testing.TB, addr string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, ev, err := zk.Connect([]string{addr}, timeout, quiet)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return c, ev
			}
		case <-deadline:
			t.Fatalf("no session within 30s")
		}
	}
}

func waitEvent(t testing.TB, ch <-chan zk.Event) zk.Event {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(30 * time.Second):
		t.Fatalf("no watch event within 30s")
	}
	return zk.Event{}
}

func noEvent(t testing.TB, ch <-chan zk.Event) {
	t.Helper()
	// go-zookeeper closes a watch's channel after its one event.
	select {
	case e, ok := <-ch:
		if ok {
			t.Fatalf("unexpected event %+v", e)
		}
	default:
	}
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var open = zk.WorldACL(zk.PermAll)

func TestCRUDAndStat(t *testing.T) {
	srv := startStock(t)
	c, _ := connect(t, srv.Addr(), 10*time.Second)

	p, err := c.Create("/a", []byte("hello"), 0, open)
	if err != nil || p != "/a" {
		t.Fatalf("create: %q %v", p, err)
	}
	data, st, err := c.Get("/a")
	if err != nil || string(data) != "hello" {
		t.Fatalf("get: %q %v", data, err)
	}
	if st.Version != 0 || st.Czxid != st.Mzxid || st.Czxid != st.Pzxid || st.DataLength != 5 || st.NumChildren != 0 || st.EphemeralOwner != 0 {
		t.Fatalf("stat after create: %+v", st)
	}
	if st.Ctime == 0 || st.Ctime != st.Mtime {
		t.Fatalf("times after create: %+v", st)
	}
	if _, err := c.Create("/a", nil, 0, open); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("second create: %v", err)
	}
	if _, err := c.Create("/x/y", nil, 0, open); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("create under missing parent: %v", err)
	}
	st2, err := c.Set("/a", []byte("bye"), 0)
	if err != nil || st2.Version != 1 || st2.Mzxid <= st.Mzxid || st2.Czxid != st.Czxid {
		t.Fatalf("set: %+v %v", st2, err)
	}
	if _, err := c.Set("/a", []byte("x"), 0); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("set with stale version: %v", err)
	}
	if _, err := c.Create("/a/b", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/a/c", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("/a", -1); !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("delete non-empty: %v", err)
	}
	if err := c.Delete("/a/b", 3); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("delete with bad version: %v", err)
	}
	if err := c.Delete("/a/b", 0); err != nil {
		t.Fatal(err)
	}
	kids, st3, err := c.Children("/a")
	if err != nil || len(kids) != 1 || kids[0] != "c" {
		t.Fatalf("children: %v %v", kids, err)
	}
	// Two creates and one delete: the client sees cversion 3.
	if st3.Cversion != 3 || st3.NumChildren != 1 {
		t.Fatalf("parent stat: %+v", st3)
	}
	ok, _, err := c.Exists("/a/b")
	if err != nil || ok {
		t.Fatalf("exists deleted: %v %v", ok, err)
	}
	// Built-in nodes.
	kids, _, err = c.Children("/zookeeper")
	sort.Strings(kids)
	if err != nil || strings.Join(kids, ",") != "config,quota" {
		t.Fatalf("/zookeeper children: %v %v", kids, err)
	}
	if err := c.Delete("/zookeeper", -1); !errors.Is(err, zk.ErrBadArguments) {
		t.Fatalf("delete /zookeeper: %v", err)
	}
}

func TestNullAndEmptyData(t *testing.T) {
	srv := startStock(t)
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	if _, err := c.Create("/empty", []byte{}, 0, open); err != nil {
		t.Fatal(err)
	}
	d, st, err := c.Get("/empty")
	if err != nil || d == nil || len(d) != 0 || st.DataLength != 0 {
		t.Fatalf("empty data: %v %v %v", d, st, err)
	}
}

func TestSequentialNames(t *testing.T) {
	srv := startStock(t)
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	if _, err := c.Create("/q", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/q/a", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("/q/a", -1); err != nil {
		t.Fatal(err)
	}
	// A failed create does not consume a sequence number.
	if _, err := c.Create("/q/a/b", nil, 0, open); err == nil {
		t.Fatal("create under deleted node succeeded")
	}
	var names []string
	for i := 0; i < 3; i++ {
		p, err := c.Create("/q/n-", nil, zk.FlagSequence, open)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, p)
	}
	want := []string{"/q/n-0000000001", "/q/n-0000000002", "/q/n-0000000003"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("sequential names %v, want %v", names, want)
	}
}

func TestEphemeralsRemovedOnClose(t *testing.T) {
	srv := startStock(t)
	c1, _ := connect(t, srv.Addr(), 10*time.Second)
	c2, _ := connect(t, srv.Addr(), 10*time.Second)
	if _, err := c1.Create("/e", nil, zk.FlagEphemeral, open); err != nil {
		t.Fatal(err)
	}
	_, st, err := c2.Get("/e")
	if err != nil || st.EphemeralOwner != c1.SessionID() {
		t.Fatalf("ephemeral owner %x, session %x, err %v", st.EphemeralOwner, c1.SessionID(), err)
	}
	if _, err := c1.Create("/e/child", nil, 0, open); !errors.Is(err, zk.ErrNoChildrenForEphemerals) {
		t.Fatalf("child of ephemeral: %v", err)
	}
	ok, _, ch, err := c2.ExistsW("/e")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	c1.Close()
	if e := waitEvent(t, ch); e.Type != zk.EventNodeDeleted || e.Path != "/e" {
		t.Fatalf("event %+v", e)
	}
	ok, _, err = c2.Exists("/e")
	if err != nil || ok {
		t.Fatalf("ephemeral survived close: %v %v", ok, err)
	}
}

func TestEphemeralsRemovedOnExpiry(t *testing.T) {
	srv := startStock(t) // tickTime 200ms: the minimum session timeout is 400ms
	c2, _ := connect(t, srv.Addr(), 10*time.Second)
	raw := rawzk.Connect(t, srv.Addr())
	if h := raw.Call(jute.OpCreate, &jute.CreateRequest{Path: "/gone", ACL: jute.OpenACLUnsafe, Flags: jute.FlagEphemeral}, &jute.CreateResponse{}); h.Err != 0 {
		t.Fatalf("create ephemeral: %v", h.Err)
	}
	ok, _, ch, err := c2.ExistsW("/gone")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	// The raw client sends no pings: its session expires after its timeout.
	if e := waitEvent(t, ch); e.Type != zk.EventNodeDeleted {
		t.Fatalf("event %+v", e)
	}
	if !raw.Closed() {
		t.Fatal("expired session's connection stayed open")
	}
	// Reconnecting with the expired session gets the expired answer.
	again := rawzk.Dial(t, srv.Addr())
	resp, err := again.Handshake(&jute.ConnectRequest{TimeOut: 30000, SessionID: raw.Session, Passwd: raw.Passwd, HasReadOnly: true})
	if err != nil || resp.SessionID != 0 || resp.TimeOut != 0 {
		t.Fatalf("reconnect to expired session: %+v %v", resp, err)
	}
}

func TestWatchesFireOnce(t *testing.T) {
	srv := startStock(t)
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	w, _ := connect(t, srv.Addr(), 10*time.Second)
	if _, err := c.Create("/w", []byte("1"), 0, open); err != nil {
		t.Fatal(err)
	}
	_, _, dataCh, err := w.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	_, _, childCh, err := w.ChildrenW("/w")
	if err != nil {
		t.Fatal(err)
	}
	_, _, existCh, err := w.ExistsW("/w/new")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/w", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	if e := waitEvent(t, dataCh); e.Type != zk.EventNodeDataChanged || e.Path != "/w" {
		t.Fatalf("data event %+v", e)
	}
	if _, err := c.Create("/w/new", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	if e := waitEvent(t, existCh); e.Type != zk.EventNodeCreated || e.Path != "/w/new" {
		t.Fatalf("exist event %+v", e)
	}
	if e := waitEvent(t, childCh); e.Type != zk.EventNodeChildrenChanged || e.Path != "/w" {
		t.Fatalf("child event %+v", e)
	}
	// One-shot: a second change fires nothing. A round trip on the watching session
	// proves any event would have arrived first.
	if _, err := c.Set("/w", []byte("3"), -1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Get("/w"); err != nil {
		t.Fatal(err)
	}
	noEvent(t, dataCh)
}

// TestWatchEventBeforeReply checks ZooKeeper's ordering promise: a client sees the watch
// event before the reply to its own write that caused it.
func TestWatchEventBeforeReply(t *testing.T) {
	srv := startStock(t)
	raw := rawzk.Connect(t, srv.Addr())
	raw.Call(jute.OpCreate, &jute.CreateRequest{Path: "/o", ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{})
	raw.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/o", Watch: true}, &jute.GetDataResponse{})
	h := raw.Call(jute.OpSetData, &jute.SetDataRequest{Path: "/o", Data: []byte("x"), Version: -1}, &jute.SetDataResponse{})
	if h.Err != 0 || len(raw.Events) != 1 || raw.Events[0].Type != 3 || raw.Events[0].Path != "/o" {
		t.Fatalf("err %v events %+v", h.Err, raw.Events)
	}
}

func TestMulti(t *testing.T) {
	srv := startStock(t)
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	res, err := c.Multi(
		&zk.CreateRequest{Path: "/m", Data: []byte("1"), Acl: open},
		&zk.CreateRequest{Path: "/m/a", Acl: open},
		&zk.SetDataRequest{Path: "/m", Data: []byte("2"), Version: 0},
		&zk.CheckVersionRequest{Path: "/m", Version: 1},
	)
	if err != nil || len(res) != 4 || res[0].String != "/m" || res[1].String != "/m/a" || res[2].Stat == nil || res[2].Stat.Version != 1 {
		t.Fatalf("multi: %+v %v", res, err)
	}
	before, _, _ := c.Get("/m")
	res, err = c.Multi(
		&zk.SetDataRequest{Path: "/m", Data: []byte("3"), Version: -1},
		&zk.CreateRequest{Path: "/m/a", Acl: open}, // exists
		&zk.DeleteRequest{Path: "/m/a", Version: -1},
	)
	if !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("failed multi error %v", err)
	}
	if len(res) != 3 || res[0].Error != nil || !errors.Is(res[1].Error, zk.ErrNodeExists) || res[2].Error == nil {
		t.Fatalf("failed multi results %+v", res)
	}
	after, st, _ := c.Get("/m")
	if string(after) != string(before) || st.Version != 1 {
		t.Fatalf("failed multi changed data: %q -> %q (v%d)", before, after, st.Version)
	}
	if ok, _, _ := c.Exists("/m/a"); !ok {
		t.Fatal("failed multi deleted /m/a")
	}
}

func TestDigestACL(t *testing.T) {
	srv := startStock(t)
	owner, _ := connect(t, srv.Addr(), 10*time.Second)
	other, _ := connect(t, srv.Addr(), 10*time.Second)
	if err := owner.AddAuth("digest", []byte("user:pass")); err != nil {
		t.Fatal(err)
	}
	acl := zk.DigestACL(zk.PermAll, "user", "pass")
	if _, err := owner.Create("/secret", []byte("s"), 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.Get("/secret"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unauthenticated get: %v", err)
	}
	if _, err := other.Set("/secret", nil, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unauthenticated set: %v", err)
	}
	if _, err := other.Create("/secret/x", nil, 0, open); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unauthenticated create: %v", err)
	}
	if d, _, err := owner.Get("/secret"); err != nil || string(d) != "s" {
		t.Fatalf("owner get: %v", err)
	}
	// auth:: ACLs expand to the caller's identities.
	if _, err := owner.Create("/mine", nil, 0, zk.AuthACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	got, _, err := owner.GetACL("/mine")
	if err != nil || len(got) != 1 || got[0].Scheme != "digest" || got[0].ID != "user:smGaoVKd/cQkjm7b88GyorAUz20=" {
		t.Fatalf("auth ACL: %+v %v", got, err)
	}
	if _, err := other.Create("/theirs", nil, 0, zk.AuthACL(zk.PermAll)); !errors.Is(err, zk.ErrInvalidACL) {
		t.Fatalf("auth ACL without auth: %v", err)
	}
	if _, err := owner.Create("/bad", nil, 0, []zk.ACL{}); !errors.Is(err, zk.ErrInvalidACL) {
		t.Fatalf("empty ACL: %v", err)
	}
}

func TestContainerAndTTL(t *testing.T) {
	srv := startStock(t, zktest.WithConfig(func(c *server.Config) {
		c.ExtendedTypes = true
		c.ContainerCheckInterval = 100 * time.Millisecond
	}))
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	if _, err := c.CreateContainer("/box", nil, zk.FlagContainer, open); err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Get("/box")
	if err != nil || st.EphemeralOwner != 0 {
		t.Fatalf("container stat %+v %v", st, err)
	}
	if _, err := c.Create("/box/item", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("/box/item", -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "empty container removal", func() bool {
		ok, _, err := c.Exists("/box")
		return err == nil && !ok
	})
	if _, err := c.CreateTTL("/ttl", nil, zk.FlagTTL, open, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "TTL node removal", func() bool {
		ok, _, err := c.Exists("/ttl")
		return err == nil && !ok
	})
}

func TestTTLNeedsExtendedTypes(t *testing.T) {
	srv := startStock(t)
	raw := rawzk.Connect(t, srv.Addr())
	h := raw.Call(jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/ttl", ACL: jute.OpenACLUnsafe, Flags: jute.FlagPersistentWithTTL, TTL: 1000}, &jute.Create2Response{})
	if h.Err != jute.ErrUnimplemented {
		t.Fatalf("TTL without extended types: %v", h.Err)
	}
}

func TestDataSurvivesRestart(t *testing.T) {
	srv := startStock(t)
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	for i := 0; i < 50; i++ {
		if _, err := c.Create(fmt.Sprintf("/r%d", i), []byte(fmt.Sprint(i)), 0, open); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	srv.Restart()
	c2, _ := connect(t, srv.Addr(), 10*time.Second)
	for i := 0; i < 50; i++ {
		d, _, err := c2.Get(fmt.Sprintf("/r%d", i))
		if err != nil || string(d) != fmt.Sprint(i) {
			t.Fatalf("/r%d after restart: %q %v", i, d, err)
		}
	}
}

func TestConcurrentClients(t *testing.T) {
	srv := startStock(t)
	const clients, ops = 8, 100
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		c, _ := connect(t, srv.Addr(), 10*time.Second)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			base := fmt.Sprintf("/c%d", i)
			if _, err := c.Create(base, nil, 0, open); err != nil {
				errs <- err
				return
			}
			for j := 0; j < ops; j++ {
				if _, err := c.Set(base, []byte(fmt.Sprint(j)), int32(j)); err != nil {
					errs <- fmt.Errorf("client %d op %d: %w", i, j, err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestFuzzySnapshotsRestart takes many background snapshots while clients write, then
// restarts from the newest snapshot plus the log after it.
func TestFuzzySnapshotsRestart(t *testing.T) {
	srv := startStock(t, zktest.WithConfig(func(c *server.Config) { c.SnapCount = 20 }))
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		c, _ := connect(t, srv.Addr(), 10*time.Second)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				p := fmt.Sprintf("/f%d-%d", w, i)
				if _, err := c.Create(p, []byte(p), 0, open); err != nil {
					t.Errorf("create %s: %v", p, err)
					return
				}
				if i%3 == 0 {
					if _, err := c.Set(p, []byte(p+"!"), -1); err != nil {
						t.Errorf("set %s: %v", p, err)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	snaps, _ := os.ReadDir(srv.DataDir() + "/version-2")
	n := 0
	for _, e := range snaps {
		if strings.HasPrefix(e.Name(), "snapshot.") {
			n++
		}
	}
	if n < 5 {
		t.Fatalf("only %d snapshots taken", n)
	}
	srv.Restart()
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	for w := 0; w < 4; w++ {
		for i := 0; i < 100; i++ {
			p := fmt.Sprintf("/f%d-%d", w, i)
			want := p
			if i%3 == 0 {
				want += "!"
			}
			d, _, err := c.Get(p)
			if err != nil || string(d) != want {
				t.Fatalf("%s after restart: %q %v", p, d, err)
			}
		}
	}
}

// TestContainerCheckKeepsItsOwnInterval: container removal runs at the check interval, not
// at the tick's pace (a tick of 10 s here; removal inside the tick waited 5 s or more).
func TestContainerCheckKeepsItsOwnInterval(t *testing.T) {
	srv := startStock(t, zktest.WithConfig(func(c *server.Config) {
		c.TickTime = 10000
		c.ContainerCheckInterval = 100 * time.Millisecond
	}))
	c, _ := connect(t, srv.Addr(), 30*time.Second)
	if _, err := c.CreateContainer("/box", nil, zk.FlagContainer, open); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/box/item", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("/box/item", -1); err != nil {
		t.Fatal(err)
	}
	// 30 check intervals, well under the 5 s half tick.
	deadline := time.Now().Add(3 * time.Second)
	for {
		ok, _, err := c.Exists("/box")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("empty container still there after 3 s with a 100 ms check interval")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
