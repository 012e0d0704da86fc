package zk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// Protocol tests script a fake server byte by byte, to check what the client sends and how
// it reacts to replies a real server would rarely produce.

type fakeServer struct {
	t     *testing.T
	ln    net.Listener
	conns chan *fakeConn
}

func newFakeServer(t *testing.T) *fakeServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{t: t, ln: ln, conns: make(chan *fakeConn, 16)}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				close(f.conns)
				return
			}
			fc := &fakeConn{t: t, nc: nc, br: bufio.NewReader(nc)}
			t.Cleanup(func() { nc.Close() })
			f.conns <- fc
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return f
}

func (f *fakeServer) addr() string { return f.ln.Addr().String() }

// accept waits for the client's next connection.
func (f *fakeServer) accept() *fakeConn {
	f.t.Helper()
	select {
	case c, ok := <-f.conns:
		if !ok {
			f.t.Fatal("listener closed")
		}
		return c
	case <-time.After(waitTimeout):
		f.t.Fatal("client did not connect")
	}
	return nil
}

type fakeConn struct {
	t     *testing.T
	nc    net.Conn
	br    *bufio.Reader
	pings atomic.Int32
}

func (c *fakeConn) readFrame() ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(waitTimeout))
	var hdr [4]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	_, err := io.ReadFull(c.br, b)
	return b, err
}

func (c *fakeConn) write(recs ...jute.Record) {
	c.t.Helper()
	e := jute.Encoder{Buf: make([]byte, 4)}
	for _, r := range recs {
		r.Encode(&e)
	}
	putLen(e.Buf)
	if _, err := c.nc.Write(e.Buf); err != nil {
		c.t.Errorf("fake server write: %v", err)
	}
}

// handshake reads the ConnectRequest and answers it.
func (c *fakeConn) handshake(resp jute.ConnectResponse) *jute.ConnectRequest {
	c.t.Helper()
	b, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("reading ConnectRequest: %v", err)
	}
	var req jute.ConnectRequest
	if err := jute.Unmarshal(b, &req); err != nil {
		c.t.Fatalf("ConnectRequest: %v", err)
	}
	resp.HasReadOnly = true
	if resp.Passwd == nil {
		resp.Passwd = bytes.Repeat([]byte{7}, 16)
	}
	c.write(&resp)
	return &req
}

// next reads the next request, answering pings itself.
func (c *fakeConn) next() (jute.RequestHeader, *jute.Decoder) {
	c.t.Helper()
	for {
		b, err := c.readFrame()
		if err != nil {
			c.t.Fatalf("reading request: %v", err)
		}
		d := &jute.Decoder{B: b}
		var h jute.RequestHeader
		h.Decode(d)
		if h.Type == jute.OpPing {
			c.pings.Add(1)
			c.write(&jute.ReplyHeader{Xid: jute.XidPing})
			continue
		}
		return h, d
	}
}

func (c *fakeConn) expect(op jute.OpCode) (jute.RequestHeader, *jute.Decoder) {
	c.t.Helper()
	h, d := c.next()
	if h.Type != op {
		c.t.Fatalf("got request %v, want %v", h.Type, op)
	}
	return h, d
}

func (c *fakeConn) reply(xid int32, zxid int64, code Code, body jute.Record) {
	c.t.Helper()
	if body == nil {
		c.write(&jute.ReplyHeader{Xid: xid, Zxid: zxid, Err: code})
		return
	}
	c.write(&jute.ReplyHeader{Xid: xid, Zxid: zxid, Err: code}, body)
}

// answerAll answers every further request with an empty success, so Close is quick.
func (c *fakeConn) answerAll() {
	go func() {
		for {
			b, err := c.readFrame()
			if err != nil {
				return
			}
			var h jute.RequestHeader
			h.Decode(&jute.Decoder{B: b})
			c.write(&jute.ReplyHeader{Xid: h.Xid})
		}
	}()
}

func (c *fakeConn) notify(typ jute.EventType, path string) {
	c.write(&jute.ReplyHeader{Xid: jute.XidNotification, Zxid: -1}, &jute.WatcherEvent{Type: typ, State: jute.StateSyncConnected, Path: path})
}

// fakeConnect connects a client to f, answering the handshake with session 0x55.
func fakeConnect(t *testing.T, f *fakeServer, suffix string, timeout int32, opts ...Option) (*Conn, *fakeConn, *jute.ConnectRequest) {
	t.Helper()
	type result struct {
		c   *Conn
		err error
	}
	res := make(chan result, 1)
	go func() {
		c, err := Connect(testCtx(t), f.addr()+suffix, append([]Option{WithLogger(testLogger(t))}, opts...)...)
		res <- result{c, err}
	}()
	fc := f.accept()
	req := fc.handshake(jute.ConnectResponse{TimeOut: timeout, SessionID: 0x55})
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { r.c.Close() })
	return r.c, fc, req
}

// TestProtocolRequests checks the handshake, framing, xids and chroot on the wire, and that
// an idle client pings often enough to keep a connection with a short timeout alive.
func TestProtocolRequests(t *testing.T) {
	f := newFakeServer(t)
	c, fc, req := fakeConnect(t, f, "/app", 300, WithSessionTimeout(5*time.Second))
	if req.ProtocolVersion != 0 || req.TimeOut != 5000 || req.SessionID != 0 || req.LastZxidSeen != 0 ||
		!bytes.Equal(req.Passwd, make([]byte, 16)) || !req.HasReadOnly || req.ReadOnly {
		t.Fatalf("ConnectRequest %+v", req)
	}
	if c.SessionTimeout() != 300*time.Millisecond || c.SessionID() != 0x55 || c.State() != StateConnected {
		t.Fatalf("session: %v 0x%x %v", c.SessionTimeout(), c.SessionID(), c.State())
	}

	done := make(chan error, 1)
	go func() {
		d, st, err := c.Get(testCtx(t), "/x")
		if err == nil && (string(d) != "v" || st.Version != 3) {
			err = errors.New("bad reply")
		}
		done <- err
	}()
	h, d := fc.expect(jute.OpGetData)
	var gr jute.GetDataRequest
	gr.Decode(d)
	if h.Xid != 1 || gr.Path != "/app/x" || gr.Watch {
		t.Fatalf("getData request xid %d %+v", h.Xid, gr)
	}
	fc.reply(h.Xid, 9, jute.OK, &jute.GetDataResponse{Data: []byte("v"), Stat: jute.Stat{Version: 3}})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c.LastZxid() != 9 {
		t.Fatalf("last zxid %d", c.LastZxid())
	}

	// With a 300 ms session the client must ping about every 100 ms; wait for several pings
	// and check the connection survived them (the server answered each).
	rec := recordStates(c)
	go func() {
		for {
			b, err := fc.readFrame()
			if err != nil {
				return
			}
			var h jute.RequestHeader
			h.Decode(&jute.Decoder{B: b})
			if h.Type == jute.OpPing {
				fc.pings.Add(1)
			}
			fc.write(&jute.ReplyHeader{Xid: h.Xid})
		}
	}()
	eventually(t, "pings", func() error {
		if fc.pings.Load() < 5 {
			return errors.New("too few pings")
		}
		return nil
	})
	if rec.count(StateDisconnected) != 0 || c.State() != StateConnected {
		t.Fatalf("idle connection dropped: %v", rec.states())
	}
}

// TestProtocolXidMismatch: a reply for the wrong request drops the connection; the client
// resumes its session on a new one, telling the server the last zxid it saw.
func TestProtocolXidMismatch(t *testing.T) {
	f := newFakeServer(t)
	c, fc, _ := fakeConnect(t, f, "", 4000)
	ctx := testCtx(t)
	first, second := goSync(ctx, c, "/"), goSync(ctx, c, "/")
	h, _ := fc.expect(jute.OpSync)
	fc.reply(h.Xid, 77, jute.OK, &jute.SyncResponse{Path: "/"})
	if _, err := first.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	h, _ = fc.expect(jute.OpSync)
	fc.reply(h.Xid+5, 78, jute.OK, &jute.SyncResponse{Path: "/"})
	if _, err := second.Wait(ctx); !errors.Is(err, ErrConnectionLoss) || !errors.Is(err, errProtocol) {
		t.Fatalf("request answered out of order: %v", err)
	}
	fc2 := f.accept()
	req := fc2.handshake(jute.ConnectResponse{TimeOut: 4000, SessionID: 0x55})
	if req.SessionID != 0x55 || !bytes.Equal(req.Passwd, bytes.Repeat([]byte{7}, 16)) || req.LastZxidSeen != 77 {
		t.Fatalf("reconnect request %+v", req)
	}
	fc2.answerAll()
}

// TestProtocolReconnectPrime: after a reconnect the client sends, in order, its credentials,
// one setWatches2 re-registering every watch (server paths, last zxid), and then the
// requests issued while it was disconnected.
func TestProtocolReconnectPrime(t *testing.T) {
	f := newFakeServer(t)
	c, fc, _ := fakeConnect(t, f, "/app", 4000)
	ctx := testCtx(t)

	authDone := make(chan error, 1)
	go func() { authDone <- c.AddAuth(ctx, "digest", []byte("u:p")) }()
	h, d := fc.next()
	var ap jute.AuthPacket
	ap.Decode(d)
	if h.Xid != jute.XidAuth || h.Type != jute.OpAuth || ap.Scheme != "digest" || string(ap.Auth) != "u:p" {
		t.Fatalf("auth packet %+v %+v", h, ap)
	}
	fc.reply(jute.XidAuth, 0, jute.OK, nil)
	if err := <-authDone; err != nil {
		t.Fatal(err)
	}

	var watches [5]any
	calls := []func(ctx context.Context) (any, error){
		func(ctx context.Context) (any, error) { _, _, ch, err := c.GetW(ctx, "/a"); return ch, err },
		func(ctx context.Context) (any, error) { _, _, ch, err := c.ExistsW(ctx, "/b"); return ch, err },
		func(ctx context.Context) (any, error) { _, _, ch, err := c.ChildrenW(ctx, "/c"); return ch, err },
		func(ctx context.Context) (any, error) { return c.AddWatch(ctx, "/d", AddWatchPersistent) },
		func(ctx context.Context) (any, error) { return c.AddWatch(ctx, "/", AddWatchPersistentRecursive) },
	}
	for i, call := range calls {
		p := Go(ctx, call)
		h, _ := fc.next()
		switch {
		case i == 1:
			fc.reply(h.Xid, int64(10+i), jute.ErrNoNode, nil) // exists on a missing node keeps its watch
		case h.Type == jute.OpGetData:
			fc.reply(h.Xid, int64(10+i), jute.OK, &jute.GetDataResponse{})
		case h.Type == jute.OpGetChildren2:
			fc.reply(h.Xid, int64(10+i), jute.OK, &jute.GetChildren2Response{Children: []string{}})
		case h.Type == jute.OpAddWatch:
			fc.reply(h.Xid, int64(10+i), jute.OK, &jute.ErrorResponse{})
		default:
			t.Fatalf("unexpected %v", h.Type)
		}
		var err error
		if watches[i], err = p.Wait(ctx); err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
	}

	rec := recordStates(c)
	fc.nc.Close()
	rec.waitFor(t, StateDisconnected, 1)
	queued := make(chan error, 1)
	go func() { _, err := c.Set(ctx, "/q", nil, AnyVersion); queued <- err }()
	eventually(t, "queued", func() error {
		if c.queuedLen() != 1 {
			return errors.New("not queued")
		}
		return nil
	})

	fc2 := f.accept()
	req := fc2.handshake(jute.ConnectResponse{TimeOut: 4000, SessionID: 0x55})
	if req.LastZxidSeen != 14 {
		t.Fatalf("reconnect with last zxid %d, want 14", req.LastZxidSeen)
	}
	h, _ = fc2.next()
	if h.Xid != jute.XidAuth {
		t.Fatalf("first request after reconnect: %+v, want auth", h)
	}
	fc2.reply(jute.XidAuth, 0, jute.OK, nil)
	h, d = fc2.expect(jute.OpSetWatches2)
	sw := jute.SetWatches{V2: true}
	sw.Decode(d)
	want := jute.SetWatches{RelativeZxid: 14, DataWatches: []string{"/app/a"}, ExistWatches: []string{"/app/b"},
		ChildWatches: []string{"/app/c"}, PersistentWatches: []string{"/app/d"}, PersistentRecursiveWatches: []string{"/app"}, V2: true}
	if sw.RelativeZxid != want.RelativeZxid || !slices.Equal(sw.DataWatches, want.DataWatches) ||
		!slices.Equal(sw.ExistWatches, want.ExistWatches) || !slices.Equal(sw.ChildWatches, want.ChildWatches) ||
		!slices.Equal(sw.PersistentWatches, want.PersistentWatches) || !slices.Equal(sw.PersistentRecursiveWatches, want.PersistentRecursiveWatches) {
		t.Fatalf("setWatches2 %+v, want %+v", sw, want)
	}
	// The server reports a change missed while disconnected before answering setWatches.
	fc2.notify(jute.EventNodeDataChanged, "/app/a")
	fc2.reply(h.Xid, 20, jute.OK, nil)
	h, d = fc2.expect(jute.OpSetData)
	var sd jute.SetDataRequest
	sd.Decode(d)
	if sd.Path != "/app/q" {
		t.Fatalf("queued request %+v", sd)
	}
	fc2.reply(h.Xid, 21, jute.OK, &jute.SetDataResponse{})
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
	expectEvent(t, watches[0].(<-chan Event), EventNodeDataChanged, "/a")
	// A recursive watch on the chroot sees its own node as "/".
	fc2.notify(jute.EventNodeCreated, "/app")
	expectEvent(t, watches[4].(*Watcher).Events(), EventNodeDataChanged, "/a")
	expectEvent(t, watches[4].(*Watcher).Events(), EventNodeCreated, "/")
	// Paths outside the chroot are ignored.
	fc2.notify(jute.EventNodeCreated, "/apple")
	fc2.notify(jute.EventNodeCreated, "/app/b")
	expectEvent(t, watches[1].(<-chan Event), EventNodeCreated, "/b")
	expectEvent(t, watches[4].(*Watcher).Events(), EventNodeCreated, "/b")
	fc2.answerAll()
}

// TestProtocolAuthFailed: a rejected AddAuth ends the client, as in the Java client.
func TestProtocolAuthFailed(t *testing.T) {
	f := newFakeServer(t)
	c, fc, _ := fakeConnect(t, f, "", 4000)
	rec := recordStates(c)
	pending := goSync(testCtx(t), c, "/")
	fc.expect(jute.OpSync)
	authDone := make(chan error, 1)
	go func() { authDone <- c.AddAuth(testCtx(t), "bogus", []byte("x")) }()
	fc.expect(jute.OpAuth)
	fc.reply(jute.XidAuth, 0, jute.ErrAuthFailed, nil)
	fc.nc.Close()
	if err := <-authDone; !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("AddAuth: %v", err)
	}
	if _, err := pending.Wait(testCtx(t)); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("pending request: %v", err)
	}
	rec.waitFor(t, StateAuthFailed, 1)
	if _, _, err := c.Get(testCtx(t), "/"); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("request after auth failure: %v", err)
	}
	select {
	case <-c.loopDone:
	case <-time.After(waitTimeout):
		t.Fatal("client still reconnecting after auth failure")
	}
}

// TestProtocolOversizedFrame: a reply above WithMaxBufferSize fails its request with
// ErrReplyTooLarge and the connection stays: the next request is answered on it (a
// reconnect would retry into the same reply forever).
func TestProtocolOversizedFrame(t *testing.T) {
	f := newFakeServer(t)
	c, fc, _ := fakeConnect(t, f, "", 4000, WithMaxBufferSize(1024))
	get := goGet(testCtx(t), c, "/big")
	h, _ := fc.expect(jute.OpGetData)
	fc.reply(h.Xid, 1, jute.OK, &jute.GetDataResponse{Data: make([]byte, 2000)})
	if _, err := get.Wait(testCtx(t)); !errors.Is(err, ErrReplyTooLarge) {
		t.Fatalf("oversized reply: %v", err)
	}
	small := goGet(testCtx(t), c, "/small")
	h, _ = fc.expect(jute.OpGetData)
	fc.reply(h.Xid, 2, jute.OK, &jute.GetDataResponse{Data: []byte("ok")})
	if data, err := small.Wait(testCtx(t)); err != nil || string(data) != "ok" {
		t.Fatalf("the next request on the same connection: %q, %v", data, err)
	}
}

// TestProtocolReadOnly: WithReadOnly asks for read-only service and reports it.
func TestProtocolReadOnly(t *testing.T) {
	f := newFakeServer(t)
	res := make(chan *Conn, 1)
	go func() {
		c, err := Connect(testCtx(t), f.addr(), WithReadOnly(), WithLogger(testLogger(t)))
		if err != nil {
			t.Error(err)
		}
		res <- c
	}()
	fc := f.accept()
	req := fc.handshake(jute.ConnectResponse{TimeOut: 4000, SessionID: 0x56, ReadOnly: true})
	c := <-res
	if c == nil {
		t.FailNow()
	}
	defer c.Close()
	fc.answerAll()
	if !req.ReadOnly || c.State() != StateConnectedReadOnly || !c.State().Connected() {
		t.Fatalf("read-only: request %v, state %v", req.ReadOnly, c.State())
	}
}

// TestProtocolLongDisconnect: requests stop waiting for a reconnect once the client has been
// disconnected for a whole session timeout.
func TestProtocolLongDisconnect(t *testing.T) {
	f := newFakeServer(t)
	c, fc, _ := fakeConnect(t, f, "", 300, WithReconnectBackoff(50*time.Millisecond, 100*time.Millisecond))
	rec := recordStates(c)
	f.ln.Close() // the server is gone for good
	fc.nc.Close()
	rec.waitFor(t, StateDisconnected, 1)
	_, _, err := c.Get(testCtx(t), "/")
	if !errors.Is(err, ErrConnectionLoss) {
		t.Fatalf("request during a long disconnect: %v", err)
	}
	if err := c.AddAuth(testCtx(t), "digest", []byte("a:b")); !errors.Is(err, ErrConnectionLoss) {
		t.Fatalf("AddAuth during a long disconnect: %v", err)
	}
	if c.State() != StateDisconnected {
		t.Fatalf("state %v", c.State())
	}
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v while disconnected", d)
	}
}

// TestProtocolCloseSession: Close sends closeSession after the requests already issued.
func TestProtocolCloseSession(t *testing.T) {
	f := newFakeServer(t)
	c, fc, _ := fakeConnect(t, f, "", 4000)
	pending := goSync(testCtx(t), c, "/")
	closed := make(chan error, 1)
	h1, _ := fc.expect(jute.OpSync)
	go func() { closed <- c.Close() }()
	h2, _ := fc.expect(jute.OpCloseSession)
	if h2.Xid != h1.Xid+1 {
		t.Fatalf("closeSession xid %d after %d", h2.Xid, h1.Xid)
	}
	fc.reply(h1.Xid, 5, jute.OK, &jute.SyncResponse{Path: "/"})
	fc.reply(h2.Xid, 6, jute.OK, nil)
	fc.nc.Close()
	if _, err := pending.Wait(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if c.State() != StateClosed {
		t.Fatalf("state %v", c.State())
	}
}
