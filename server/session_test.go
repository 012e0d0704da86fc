package server_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/clock"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// TestSessionSurvivesRestart: sessions are in the data directory, so a client reconnects to
// a restarted server within its timeout, keeps its ephemerals, and its watches are re-armed
// (go-zookeeper sends SetWatches) so the change it waits for still reaches it.
func TestSessionSurvivesRestart(t *testing.T) {
	srv := startStock(t, zktest.WithConfig(func(c *server.Config) { c.TickTime = 2000 }))
	c, states := connect(t, srv.Addr(), 30*time.Second)
	other, _ := connect(t, srv.Addr(), 30*time.Second)
	if _, err := c.Create("/eph", []byte("x"), zk.FlagEphemeral, open); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/watched", []byte("1"), 0, open); err != nil {
		t.Fatal(err)
	}
	_, _, ch, err := c.GetW("/watched")
	if err != nil {
		t.Fatal(err)
	}
	id := c.SessionID()
	srv.Restart()
	// Wait for the client to resume its session on the restarted server.
	deadline := time.After(60 * time.Second)
	for resumed := false; !resumed; {
		select {
		case e := <-states:
			if e.State == zk.StateExpired {
				t.Fatal("session expired across a restart")
			}
			resumed = e.State == zk.StateHasSession
		case <-deadline:
			t.Fatal("client did not reconnect")
		}
	}
	if c.SessionID() != id {
		t.Fatalf("session changed: %x -> %x", id, c.SessionID())
	}
	waitFor(t, "other client reconnect", func() bool { return other.State() == zk.StateHasSession })
	if _, err := other.Set("/watched", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	if e := waitEvent(t, ch); e.Type != zk.EventNodeDataChanged || e.Path != "/watched" {
		t.Fatalf("event after restart %+v", e)
	}
	_, st, err := other.Get("/eph")
	if err != nil || st.EphemeralOwner != id {
		t.Fatalf("ephemeral after restart: %+v %v", st, err)
	}
}

// TestSetWatchesCatchUp re-registers watches with a relativeZxid older than changes made
// while the client was away: the server fires those at once, before its reply.
func TestSetWatchesCatchUp(t *testing.T) {
	srv := startStock(t)
	w := rawzk.Connect(t, srv.Addr())
	for _, p := range []string{"/d", "/c", "/gone", "/same"} {
		w.Call(jute.OpCreate, &jute.CreateRequest{Path: p, ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{})
	}
	rel := w.Call(jute.OpExists, &jute.ExistsRequest{Path: "/"}, &jute.ExistsResponse{}).Zxid
	w.Call(jute.OpSetData, &jute.SetDataRequest{Path: "/d", Data: []byte("x"), Version: -1}, &jute.SetDataResponse{})
	w.Call(jute.OpCreate, &jute.CreateRequest{Path: "/c/kid", ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{})
	w.Call(jute.OpDelete, &jute.DeleteRequest{Path: "/gone", Version: -1}, nil)
	w.Call(jute.OpCreate, &jute.CreateRequest{Path: "/born", ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{})

	c := rawzk.Connect(t, srv.Addr())
	h := c.Call(jute.OpSetWatches, &jute.SetWatches{
		RelativeZxid: rel,
		DataWatches:  []string{"/d", "/gone", "/same"},
		ExistWatches: []string{"/born", "/unborn"},
		ChildWatches: []string{"/c"},
	}, nil)
	if h.Err != jute.OK {
		t.Fatal(h.Err)
	}
	got := map[string]jute.EventType{}
	for _, e := range c.Events {
		got[e.Path] = e.Type
	}
	want := map[string]jute.EventType{"/d": jute.EventNodeDataChanged, "/gone": jute.EventNodeDeleted, "/born": jute.EventNodeCreated, "/c": jute.EventNodeChildrenChanged}
	if len(got) != len(want) {
		t.Fatalf("catch-up events %v, want %v", got, want)
	}
	for p, typ := range want {
		if got[p] != typ {
			t.Fatalf("catch-up events %v, want %v", got, want)
		}
	}
	// The unchanged ones are armed.
	c.Events = nil
	w.Call(jute.OpSetData, &jute.SetDataRequest{Path: "/same", Data: []byte("y"), Version: -1}, &jute.SetDataResponse{})
	w.Call(jute.OpCreate, &jute.CreateRequest{Path: "/unborn", ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{})
	c.Call(jute.OpSync, &jute.SyncRequest{Path: "/"}, &jute.SyncResponse{})
	if len(c.Events) != 2 {
		t.Fatalf("armed watches fired %+v", c.Events)
	}
}

func TestMaxClientCnxns(t *testing.T) {
	srv := startStock(t, zktest.WithConfig(func(c *server.Config) { c.MaxClientCnxns = 2 }))
	a := rawzk.Connect(t, srv.Addr())
	rawzk.Connect(t, srv.Addr())
	third := rawzk.Dial(t, srv.Addr())
	if _, err := third.Handshake(&jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)}); err == nil {
		t.Fatal("third connection from one address was served")
	}
	a.NC.Close()
	waitFor(t, "a slot to free up", func() bool {
		c := rawzk.Dial(t, srv.Addr())
		_, err := c.Handshake(&jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)})
		c.NC.Close()
		return err == nil
	})
}

func TestCloseSessionReply(t *testing.T) {
	srv := startStock(t)
	c := rawzk.Connect(t, srv.Addr())
	c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/e", ACL: jute.OpenACLUnsafe, Flags: jute.FlagEphemeral}, &jute.CreateResponse{})
	h := c.Call(jute.OpCloseSession, nil, nil)
	if h.Err != jute.OK || h.Zxid == 0 {
		t.Fatalf("close reply %+v", h)
	}
	if !c.Closed() {
		t.Fatal("connection open after closeSession")
	}
	again := rawzk.Dial(t, srv.Addr())
	resp, err := again.Handshake(&jute.ConnectRequest{TimeOut: 10000, SessionID: c.Session, Passwd: c.Passwd})
	if err != nil || resp.SessionID != 0 {
		t.Fatalf("closed session resumed: %+v %v", resp, err)
	}
	o, _ := connect(t, srv.Addr(), 10*time.Second)
	if ok, _, err := o.Exists("/e"); ok || err != nil {
		t.Fatalf("ephemeral after close: %v %v", ok, err)
	}
}

// TestCleanStopSnapshot: a clean stop with a long log since the last snapshot (1,000 txns
// or more) writes one at the last zxid, so the next start replays nothing; a short log does
// not.
func TestCleanStopSnapshot(t *testing.T) {
	srv := startStock(t)
	newest := func() int64 {
		t.Helper()
		files, err := storage.FindSnapshots(storage.OSFS{}, filepath.Join(srv.DataDir(), "version-2"))
		if err != nil || len(files) == 0 {
			t.Fatalf("snapshots: %v %v", files, err)
		}
		return files[0].Zxid
	}
	sets := func(n int) int64 {
		t.Helper()
		c, _ := connect(t, srv.Addr(), 30*time.Second)
		defer c.Close()
		if _, err := c.Create("/n", nil, 0, open); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
		var last int64
		for i := 0; i < n; i++ {
			st, err := c.Set("/n", []byte(fmt.Sprint(i)), -1)
			if err != nil {
				t.Fatal(err)
			}
			last = st.Mzxid
		}
		return last
	}
	sets(5)
	srv.Stop() // the first stop snapshots any non-empty tree: there was only snapshot.0
	first := newest()
	if first == 0 {
		t.Fatal("no snapshot at the first stop")
	}
	srv.Restart()
	last := sets(1100)
	srv.Stop()
	if got := newest(); got < last {
		t.Fatalf("newest snapshot %#x after a clean stop; last write %#x", got, last)
	}
	snapped := newest()
	srv.Restart()
	sets(20)
	srv.Stop()
	if got := newest(); got != snapped {
		t.Fatalf("a short log was snapshotted at stop: %#x, was %#x", got, snapped)
	}
}

// TestSessionExpiryRunsOnTheServerClock: session expiry follows the configured clock, not
// the wall clock: a 2-minute session expires as soon as the fake clock passes its timeout,
// and not before.
func TestSessionExpiryRunsOnTheServerClock(t *testing.T) {
	fake := clock.NewFake(time.Now())
	// No extensions: session-grace would take the fake clock's jump for a stall of the
	// server and extend the session by it, which is what that extension is for.
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.Clock = fake
		c.TickTime = 60000 // sessions of 2 to 20 minutes
	}))
	victim := rawzk.Connect(t, srv.Addr())
	if victim.Timeout != 120000 {
		t.Fatalf("negotiated timeout %d ms, want the 2-minute minimum", victim.Timeout)
	}
	victim.Call(jute.OpCreate, &jute.CreateRequest{Path: "/eph", ACL: jute.OpenACLUnsafe, Flags: jute.FlagEphemeral}, &jute.CreateResponse{})
	exists := func() bool {
		c := rawzk.Connect(t, srv.Addr())
		defer c.NC.Close()
		return c.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/eph"}, &jute.StatResponse{}).Err == jute.OK
	}
	fake.Advance(time.Minute)
	if !exists() {
		t.Fatal("session expired a minute into its two")
	}
	fake.Advance(3 * time.Minute)
	waitFor(t, "the ephemeral of the expired session to go", func() bool { return !exists() })
	if !victim.Closed() {
		t.Fatal("the expired session's connection is still open")
	}
}
