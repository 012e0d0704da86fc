package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// fakeServer accepts one connection, answers the handshake with the given session timeout
// and hands the test each request frame (header decoded) to answer as it likes.
type fakeServer struct {
	t        *testing.T
	ln       net.Listener
	accepted chan struct{} // closed once nc is set
	nc       net.Conn
	reqs     chan fakeReq // closed when the client hangs up
	quit     chan struct{}
}

type fakeReq struct {
	hdr  jute.RequestHeader
	body []byte
}

func newFakeServer(t *testing.T, timeoutMs int32) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{t: t, ln: ln, accepted: make(chan struct{}), reqs: make(chan fakeReq, 16), quit: make(chan struct{})}
	go func() {
		defer close(f.reqs)
		nc, err := ln.Accept()
		if err != nil {
			close(f.accepted)
			return
		}
		f.nc = nc
		close(f.accepted)
		b, err := readFrame(nc, nil, 1<<20)
		if err != nil {
			return
		}
		var req jute.ConnectRequest
		if jute.Unmarshal(b, &req) != nil {
			return
		}
		f.send(&jute.ConnectResponse{TimeOut: timeoutMs, SessionID: 0x1234, Passwd: make([]byte, 16)})
		for {
			b, err := readFrame(nc, nil, 1<<20)
			if err != nil {
				return
			}
			d := jute.NewDecoder(b)
			var h jute.RequestHeader
			h.Decode(d)
			select {
			case f.reqs <- fakeReq{hdr: h, body: d.Rest()}:
			case <-f.quit:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(f.quit)
		ln.Close()
		<-f.accepted
		if f.nc != nil {
			f.nc.Close()
		}
	})
	return f
}

// conn is the accepted connection.
func (f *fakeServer) conn() net.Conn {
	<-f.accepted
	return f.nc
}

// hangup waits until the client closes the connection, skipping pings.
func (f *fakeServer) hangup() {
	f.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case r, ok := <-f.reqs:
			if !ok {
				return
			}
			if r.hdr.Type != jute.OpPing {
				f.t.Errorf("request %+v after close", r.hdr)
			}
		case <-timeout:
			f.t.Fatal("fake server: client did not hang up")
		}
	}
}

func (f *fakeServer) send(recs ...jute.Record) {
	e := jute.Encoder{Buf: make([]byte, 4)}
	for _, r := range recs {
		r.Encode(&e)
	}
	binary.BigEndian.PutUint32(e.Buf, uint32(len(e.Buf)-4))
	f.conn().Write(e.Buf)
}

func (f *fakeServer) reply(xid int32, code jute.Code, body jute.Record) {
	recs := []jute.Record{&jute.ReplyHeader{Xid: xid, Zxid: 7, Err: code}}
	if body != nil {
		recs = append(recs, body)
	}
	f.send(recs...)
}

func (f *fakeServer) next() fakeReq {
	f.t.Helper()
	select {
	case r, ok := <-f.reqs:
		if !ok {
			f.t.Fatal("fake server: connection ended")
		}
		return r
	case <-time.After(20 * time.Second):
		f.t.Fatal("fake server: no request")
	}
	return fakeReq{}
}

func dialFake(t *testing.T, f *fakeServer, onEvent func(jute.WatcherEvent, time.Time)) *conn {
	t.Helper()
	c, err := dial(context.Background(), f.ln.Addr().String(), dialOptions{onEvent: onEvent})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.abort)
	if c.sessionID != 0x1234 {
		t.Fatalf("session %x", c.sessionID)
	}
	return c
}

func TestConnPipelinesAndMatchesReplies(t *testing.T) {
	f := newFakeServer(t, 30000)
	events := make(chan jute.WatcherEvent, 1)
	c := dialFake(t, f, func(ev jute.WatcherEvent, _ time.Time) { events <- ev })
	done := make(chan *call, 3)
	calls := make([]*call, 3)
	for i := range calls {
		calls[i] = &call{done: done, wantBody: true, tag: int64(i)}
		calls[i].setRequest(jute.OpGetData, &jute.GetDataRequest{Path: keyPath("/k", i)})
		c.submit(calls[i])
	}
	// All three are on the wire before any reply: the client pipelines.
	var xids []int32
	for i := range 3 {
		r := f.next()
		var req jute.GetDataRequest
		if r.hdr.Type != jute.OpGetData || jute.Unmarshal(r.body, &req) != nil || req.Path != keyPath("/k", i) {
			t.Fatalf("request %d: %+v %q", i, r.hdr, r.body)
		}
		xids = append(xids, r.hdr.Xid)
	}
	if !(xids[0] < xids[1] && xids[1] < xids[2]) {
		t.Errorf("xids not increasing: %v", xids)
	}
	// A notification between replies goes to onEvent, not to a call.
	f.reply(xids[0], jute.OK, &jute.GetDataResponse{Data: []byte("zero")})
	f.send(&jute.ReplyHeader{Xid: jute.XidNotification, Zxid: -1}, &jute.WatcherEvent{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/k"})
	f.reply(xids[1], jute.ErrNoNode, nil)
	f.reply(xids[2], jute.OK, &jute.GetDataResponse{Data: []byte("two")})
	for i := range 3 {
		got := <-done
		if got.tag != int64(i) {
			t.Fatalf("completion %d is call %d: replies out of order", i, got.tag)
		}
		switch i {
		case 1:
			if !errors.Is(got.err, jute.ErrNoNode) {
				t.Errorf("call 1 err = %v, want no node", got.err)
			}
		default:
			var resp jute.GetDataResponse
			if got.err != nil || jute.Unmarshal(got.body, &resp) != nil {
				t.Errorf("call %d: err %v body %q", i, got.err, got.body)
			}
			if want := map[int]string{0: "zero", 2: "two"}[i]; string(resp.Data) != want {
				t.Errorf("call %d data %q, want %q", i, resp.Data, want)
			}
		}
		if got.end.Before(got.start) || got.zxid != 7 {
			t.Errorf("call %d: start %v end %v zxid %d", i, got.start, got.end, got.zxid)
		}
	}
	select {
	case ev := <-events:
		if ev.Type != jute.EventNodeDataChanged || ev.Path != "/k" {
			t.Errorf("event %+v", ev)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no event")
	}
}

func TestConnFailsOutstandingOnLoss(t *testing.T) {
	f := newFakeServer(t, 30000)
	c := dialFake(t, f, nil)
	done := make(chan *call, 2)
	for range 2 {
		cl := &call{done: done}
		cl.setRequest(jute.OpExists, &jute.ExistsRequest{Path: "/"})
		c.submit(cl)
	}
	f.next()
	f.next()
	f.conn().Close()
	for range 2 {
		if got := <-done; !errors.Is(got.err, jute.ErrConnectionLoss) {
			t.Errorf("outstanding call err = %v, want connection loss", got.err)
		}
	}
	// Later calls fail at once instead of hanging.
	cl := &call{done: done}
	cl.setRequest(jute.OpExists, &jute.ExistsRequest{Path: "/"})
	c.submit(cl)
	if got := <-done; !errors.Is(got.err, jute.ErrConnectionLoss) {
		t.Errorf("call after loss err = %v", got.err)
	}
}

func TestConnRejectsUnexpectedXid(t *testing.T) {
	f := newFakeServer(t, 30000)
	c := dialFake(t, f, nil)
	done := make(chan *call, 1)
	cl := &call{done: done}
	cl.setRequest(jute.OpExists, &jute.ExistsRequest{Path: "/"})
	c.submit(cl)
	r := f.next()
	f.reply(r.hdr.Xid+5, jute.OK, nil)
	got := <-done
	if !errors.Is(got.err, jute.ErrConnectionLoss) {
		t.Errorf("err = %v, want the connection dropped", got.err)
	}
	if !errors.Is(c.failure(), errProtocol) {
		t.Errorf("connection failure = %v, want a protocol error", c.failure())
	}
}

func TestConnPingsWhenIdle(t *testing.T) {
	// A 30 ms session means a ping every 10 ms of idleness; the test only waits for one.
	f := newFakeServer(t, 30)
	dialFake(t, f, nil)
	r := f.next()
	if r.hdr.Xid != jute.XidPing || r.hdr.Type != jute.OpPing || len(r.body) != 0 {
		t.Errorf("idle connection sent %+v %q, want a ping", r.hdr, r.body)
	}
	f.reply(jute.XidPing, jute.OK, nil) // ignored by the reader
}

func TestConnClose(t *testing.T) {
	f := newFakeServer(t, 30000)
	c := dialFake(t, f, nil)
	errc := make(chan error, 1)
	go func() { errc <- c.close(20 * time.Second) }()
	r := f.next()
	if r.hdr.Type != jute.OpCloseSession {
		t.Fatalf("close sent %+v", r.hdr)
	}
	f.reply(r.hdr.Xid, jute.OK, nil)
	if err := <-errc; err != nil {
		t.Errorf("close: %v", err)
	}
	f.hangup() // the client hangs up after the answer
}

// TestConnLatencyBracketsServer checks what a call's latency spans: its start is no later
// than the server's receipt of the request, and its end no earlier than the server's reply,
// for calls completed through a callback, whose follow-up requests the reader writes.
func TestConnLatencyBracketsServer(t *testing.T) {
	f := newFakeServer(t, 30000)
	c := dialFake(t, f, nil)
	type outcome struct {
		start, end time.Time
		err        error
	}
	got := make(chan outcome, 2)
	reissued := false
	cl := &call{cb: func(cl *call) {
		got <- outcome{cl.start, cl.end, cl.err} // before the call is reused
		// Re-issued once, from the reader, which must then write it itself.
		if !reissued {
			reissued = true
			cl.setRequest(jute.OpExists, &jute.ExistsRequest{Path: "/b"})
			if !c.enqueue(cl, false) {
				t.Error("enqueue on a live connection failed")
			}
		}
	}}
	cl.setRequest(jute.OpExists, &jute.ExistsRequest{Path: "/a"})
	c.submit(cl)
	for i := range 2 {
		r := f.next()
		received := time.Now()
		replied := time.Now()
		f.reply(r.hdr.Xid, jute.OK, &jute.ExistsResponse{})
		var done outcome
		select {
		case done = <-got:
		case <-time.After(20 * time.Second):
			t.Fatalf("call %d: no completion", i)
		}
		if done.err != nil || done.start.After(received) || done.end.Before(replied) {
			t.Errorf("call %d: err %v, start %v after receipt %v or end %v before reply %v",
				i, done.err, done.start, received, done.end, replied)
		}
	}
}
