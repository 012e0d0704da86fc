package server_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/testing/faultnet"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

func resumeServer(t *testing.T, maxChanges int) *zktest.Server {
	return zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.Extensions = ext.Of(ext.WatchResume)
		c.WatchHistoryMaxChanges = maxChanges
	}))
}

func resumeClient(t *testing.T, ctx context.Context, addr string) *zk.Conn {
	t.Helper()
	c, err := zk.Connect(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// nextEvents reads n events of w, failing after a generous deadline.
func nextEvents(t *testing.T, w *zk.Watcher, n int) []string {
	t.Helper()
	var out []string
	deadline := time.After(20 * time.Second)
	for len(out) < n {
		select {
		case ev := <-w.Events():
			out = append(out, fmt.Sprintf("%v %s", ev.Type, ev.Path))
		case <-deadline:
			t.Fatalf("got %q, waiting for %d events", out, n)
		}
	}
	return out
}

// TestWatchResumeAfterDisconnect: a recursive watch's connection goes away; while it is
// gone /a/x is created and deleted; a watch resumed from the zxid the connection last saw
// gets both events, in order, and not the one it had already seen.
func TestWatchResumeAfterDisconnect(t *testing.T) {
	ctx := context.Background()
	srv := resumeServer(t, 0)
	b := resumeClient(t, ctx, srv.Addr())
	if _, err := b.Create(ctx, "/a", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	a := resumeClient(t, ctx, srv.Addr())
	w, _, err := a.AddWatchSince(ctx, "/a", zk.AddWatchPersistentRecursive, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "/a/seen", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	if got := nextEvents(t, w, 1); got[0] != fmt.Sprintf("%v /a/seen", zk.EventNodeCreated) {
		t.Fatalf("live event %q", got)
	}
	if _, _, err := a.Exists(ctx, "/"); err != nil { // a reply after the event: its zxid is the resume point
		t.Fatal(err)
	}
	since := a.LastZxid()
	a.Close()

	if _, err := b.Create(ctx, "/a/x", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "/a/x", -1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "/elsewhere", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}

	a2 := resumeClient(t, ctx, srv.Addr())
	w2, at, err := a2.AddWatchSince(ctx, "/a", zk.AddWatchPersistentRecursive, since)
	if err != nil {
		t.Fatal(err)
	}
	if at <= since {
		t.Errorf("registered at %d, not after the resume point %d", at, since)
	}
	want := []string{fmt.Sprintf("%v /a/x", zk.EventNodeCreated), fmt.Sprintf("%v /a/x", zk.EventNodeDeleted)}
	if got := nextEvents(t, w2, 2); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("resumed events %q, want %q", got, want)
	}
	// Then live events, nothing replayed twice.
	if err := b.Delete(ctx, "/a/seen", -1); err != nil {
		t.Fatal(err)
	}
	if got := nextEvents(t, w2, 1); got[0] != fmt.Sprintf("%v /a/seen", zk.EventNodeDeleted) {
		t.Errorf("after the replay: %q, want the live delete", got)
	}
}

// TestWatchResumeCompacted: more changes than the history holds happened since the resume
// point: the typed error, and nothing is registered.
func TestWatchResumeCompacted(t *testing.T) {
	ctx := context.Background()
	srv := resumeServer(t, 2)
	b := resumeClient(t, ctx, srv.Addr())
	if _, err := b.Create(ctx, "/a", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	since := b.LastZxid()
	for i := range 5 {
		if _, err := b.Create(ctx, fmt.Sprintf("/a/%d", i), nil, zk.OpenACL(), 0); err != nil {
			t.Fatal(err)
		}
	}
	a := resumeClient(t, ctx, srv.Addr())
	if _, _, err := a.AddWatchSince(ctx, "/a", zk.AddWatchPersistentRecursive, since); !errors.Is(err, zk.ErrWatchHistoryCompacted) {
		t.Fatalf("resume from before the history: %v, want ErrWatchHistoryCompacted", err)
	}
	if err := a.CheckWatches(ctx, "/a", zk.WatcherPersistentRecursive); !errors.Is(err, zk.ErrNoWatcher) {
		t.Errorf("after the compaction error the server holds a watch: %v", err)
	}

	// The raw answer carries the oldest zxid a resume may name; resuming from it works.
	raw := rawzk.Connect(t, srv.Addr())
	var resp jute.AddWatchSinceResponse
	raw.Send(jute.OpAddWatchSince, &jute.AddWatchSinceRequest{Path: "/a", Mode: jute.AddWatchPersistentRecursive, SinceZxid: since})
	frame, err := raw.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	d := jute.NewDecoder(frame)
	var h jute.ReplyHeader
	h.Decode(d)
	resp.Decode(d) // the one error reply with a body
	if d.Err() != nil {
		t.Fatalf("compaction answer: %v", d.Err())
	}
	if h.Err != jute.ErrWatchHistoryCompacted || resp.Zxid <= since || resp.Zxid > h.Zxid {
		t.Fatalf("raw answer %v oldest %d (since %d, now %d)", h.Err, resp.Zxid, since, h.Zxid)
	}
	h = raw.Call(jute.OpAddWatchSince, &jute.AddWatchSinceRequest{Path: "/a", Mode: jute.AddWatchPersistentRecursive, SinceZxid: resp.Zxid}, &resp)
	if h.Err != jute.OK {
		t.Fatalf("resume from the oldest zxid held: %v", h.Err)
	}
	if len(raw.Events) == 0 {
		t.Errorf("resume from the oldest zxid held replayed nothing")
	}
}

// TestWatchResumeDisabled: without the extension the opcode is an unknown one: UNIMPLEMENTED
// and the connection closed, as zkd answers any opcode ZooKeeper does not know.
func TestWatchResumeDisabled(t *testing.T) {
	srv := zktest.Start(t)
	raw := rawzk.Connect(t, srv.Addr())
	h := raw.Call(jute.OpAddWatchSince, &jute.AddWatchSinceRequest{Path: "/", Mode: jute.AddWatchPersistent, SinceZxid: -1}, nil)
	if h.Err != jute.ErrUnimplemented || h.Zxid != -1 {
		t.Errorf("disabled: %v zxid %d, want UNIMPLEMENTED -1", h.Err, h.Zxid)
	}
	if !raw.Closed() {
		t.Error("the connection stayed open")
	}
}

// TestWatchResumeOnAnotherMember: the watch was on one member; the changes are written
// through a second; the resume is served by a third, from its own history.
func TestWatchResumeOnAnotherMember(t *testing.T) {
	ctx := context.Background()
	e := startEnsembleConfig(t, 3, func(c *server.Config) { c.Extensions = ext.Of(ext.WatchResume) })
	e.waitServing()
	addrs := e.addrs()
	b := resumeClient(t, ctx, addrs[1])
	if _, err := b.Create(ctx, "/a", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	a := resumeClient(t, ctx, addrs[0])
	if err := a.Sync(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.AddWatchSince(ctx, "/a", zk.AddWatchPersistentRecursive, -1); err != nil {
		t.Fatal(err)
	}
	since := a.LastZxid()
	a.Close()
	if _, err := b.Create(ctx, "/a/x", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "/a/x", -1); err != nil {
		t.Fatal(err)
	}
	a2 := resumeClient(t, ctx, addrs[2])
	if err := a2.Sync(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	w, _, err := a2.AddWatchSince(ctx, "/a", zk.AddWatchPersistentRecursive, since)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("%v /a/x", zk.EventNodeCreated), fmt.Sprintf("%v /a/x", zk.EventNodeDeleted)}
	if got := nextEvents(t, w, 2); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("resumed on another member: %q, want %q", got, want)
	}
}

// bridgedResumeClient connects through a faultnet bridge, so the test can cut the client off
// (refuse and drop) and let it back, all within one session.
func bridgedResumeClient(t *testing.T, ctx context.Context, addr string) (*zk.Conn, *faultnet.Bridge) {
	t.Helper()
	b, err := faultnet.Start(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c, err := zk.Connect(ctx, b.Addr(), zk.WithSessionTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, b
}

// cutOff drops c's connection through b and keeps it from reconnecting until the returned
// function is called; it returns once c knows it is disconnected.
func cutOff(t *testing.T, c *zk.Conn, b *faultnet.Bridge) (reconnect func()) {
	t.Helper()
	b.SetRefuse(true)
	b.DropAll()
	waitFor(t, "the client to see its connection lost", func() bool { return c.State() == zk.StateDisconnected })
	return func() { b.SetRefuse(false) }
}

// TestWatchAutoResumeAfterDisconnect: the Go client resumes an AddWatchSince watch by itself
// after a reconnect: a create and a delete made while it was cut off arrive on the same
// Events channel, in order, then live events, none twice.
func TestWatchAutoResumeAfterDisconnect(t *testing.T) {
	ctx := context.Background()
	srv := resumeServer(t, 0)
	b := resumeClient(t, ctx, srv.Addr())
	if _, err := b.Create(ctx, "/a", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	a, bridge := bridgedResumeClient(t, ctx, srv.Addr())
	w, _, err := a.AddWatchSince(ctx, "/a", zk.AddWatchPersistentRecursive, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "/a/seen", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	if got := nextEvents(t, w, 1); got[0] != fmt.Sprintf("%v /a/seen", zk.EventNodeCreated) {
		t.Fatalf("live event %q", got)
	}
	if _, _, err := a.Exists(ctx, "/"); err != nil { // a reply after the event: the resume point
		t.Fatal(err)
	}
	session := a.SessionID()
	reconnect := cutOff(t, a, bridge)
	if _, err := b.Create(ctx, "/a/x", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "/a/x", -1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "/elsewhere", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	reconnect()
	want := []string{fmt.Sprintf("%v /a/x", zk.EventNodeCreated), fmt.Sprintf("%v /a/x", zk.EventNodeDeleted)}
	if got := nextEvents(t, w, 2); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("resumed events %q, want %q", got, want)
	}
	if a.SessionID() != session {
		t.Fatalf("the session changed (%x -> %x): not a resume", session, a.SessionID())
	}
	if err := b.Delete(ctx, "/a/seen", -1); err != nil {
		t.Fatal(err)
	}
	if got := nextEvents(t, w, 1); got[0] != fmt.Sprintf("%v /a/seen", zk.EventNodeDeleted) {
		t.Errorf("after the replay: %q, want the live delete", got)
	}
	// The server holds the resumed registration (not a setWatches one).
	if err := a.CheckWatches(ctx, "/a", zk.WatcherPersistentRecursive); err != nil {
		t.Errorf("no registration after the resume: %v", err)
	}
}

// TestWatchAutoResumeCompacted: while the client was cut off, more changes were made than
// the history holds: the watch's last event is an EventNotWatching whose error wraps
// ErrWatchHistoryCompacted, and the server holds no registration for it.
func TestWatchAutoResumeCompacted(t *testing.T) {
	ctx := context.Background()
	srv := resumeServer(t, 2)
	b := resumeClient(t, ctx, srv.Addr())
	if _, err := b.Create(ctx, "/a", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	a, bridge := bridgedResumeClient(t, ctx, srv.Addr())
	w, _, err := a.AddWatchSince(ctx, "/a", zk.AddWatchPersistentRecursive, -1)
	if err != nil {
		t.Fatal(err)
	}
	reconnect := cutOff(t, a, bridge)
	for i := range 5 {
		if _, err := b.Create(ctx, fmt.Sprintf("/a/%d", i), nil, zk.OpenACL(), 0); err != nil {
			t.Fatal(err)
		}
	}
	reconnect()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatal("the channel closed without the compaction event")
			}
			if ev.Type != zk.EventNotWatching {
				t.Fatalf("event %v %s before the compaction error: the history should not cover the resume", ev.Type, ev.Path)
			}
			if !errors.Is(ev.Err, zk.ErrWatchHistoryCompacted) {
				t.Fatalf("the watch ended with %v, want ErrWatchHistoryCompacted", ev.Err)
			}
			if _, ok := <-w.Events(); ok {
				t.Error("events after the watch ended")
			}
			if err := a.CheckWatches(ctx, "/a", zk.WatcherPersistentRecursive); !errors.Is(err, zk.ErrNoWatcher) {
				t.Errorf("after the compaction error the server holds a watch: %v", err)
			}
			return
		case <-deadline:
			t.Fatal("no compaction event within 20s")
		}
	}
}

// resumeCutter is a TCP proxy that reads the client's frames: it refuses connections while
// refuse is set, and closes a connection instead of forwarding the next addWatchSince
// while dropResume is set (once).
type resumeCutter struct {
	ln         net.Listener
	target     string
	refuse     atomic.Bool
	dropResume atomic.Bool
	dropped    atomic.Int32
	mu         sync.Mutex
	conns      []net.Conn
}

func startResumeCutter(t *testing.T, target string) *resumeCutter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &resumeCutter{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.closeAll() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *resumeCutter) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *resumeCutter) serve(c net.Conn) {
	if p.refuse.Load() {
		c.Close()
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, s)
	p.mu.Unlock()
	go func() { io.Copy(c, s); c.Close() }()
	defer s.Close()
	defer c.Close()
	for first := true; ; first = false {
		var n [4]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(n[:]))
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		// The connect request has no header; every later frame starts with xid and op.
		if !first && len(frame) >= 8 && jute.OpCode(int32(binary.BigEndian.Uint32(frame[4:8]))) == jute.OpAddWatchSince &&
			p.dropResume.CompareAndSwap(true, false) {
			p.dropped.Add(1)
			return
		}
		if _, err := s.Write(append(n[:], frame...)); err != nil {
			return
		}
	}
}

// TestWatchAutoResumeLostMidway: the connection a resume goes out on is lost after the
// reply to another request (the new server's capabilities, at its latest zxid) but before
// the resume's: the next connection resumes from the same point, not from that later zxid,
// so the changes made while the client was away still arrive.
func TestWatchAutoResumeLostMidway(t *testing.T) {
	ctx := context.Background()
	srv := resumeServer(t, 0)
	b := resumeClient(t, ctx, srv.Addr())
	if _, err := b.Create(ctx, "/a", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	cut := startResumeCutter(t, srv.Addr())
	a, err := zk.Connect(ctx, cut.ln.Addr().String(), zk.WithSessionTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	w, _, err := a.AddWatchSince(ctx, "/a", zk.AddWatchPersistentRecursive, -1)
	if err != nil {
		t.Fatal(err)
	}
	cut.refuse.Store(true)
	cut.closeAll()
	waitFor(t, "the client to see its connection lost", func() bool { return a.State() == zk.StateDisconnected })
	if _, err := b.Create(ctx, "/a/x", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "/a/x", -1); err != nil {
		t.Fatal(err)
	}
	cut.dropResume.Store(true)
	cut.refuse.Store(false)
	want := []string{fmt.Sprintf("%v /a/x", zk.EventNodeCreated), fmt.Sprintf("%v /a/x", zk.EventNodeDeleted)}
	if got := nextEvents(t, w, 2); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("resumed events %q, want %q", got, want)
	}
	if cut.dropped.Load() != 1 {
		t.Fatalf("the first resume was not cut (%d): the test did not test the loss", cut.dropped.Load())
	}
}
