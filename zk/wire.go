package zk

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/zkd-io/zkd/internal/clientwire"
	"github.com/zkd-io/zkd/jute"
)

// errProtocol reports a reply the client cannot match to a request; the connection is
// dropped, as Java's client does on "Xid out of order".
var errProtocol = errors.New("zk: protocol error")

// wire is one TCP connection of a session, on the shared client loop (internal/clientwire):
// its reader runs on the connection loop's goroutine, its writer on its own. What is zk's
// is the meaning of the frames: requests enter through enqueue, which appends them to the
// pending FIFO (matched against replies by xid) and queues their frames in one critical
// section, so the FIFO is in wire order.
type wire struct {
	c    *Conn
	wc   *clientwire.Conn
	nc   net.Conn
	addr string

	readTimeout  time.Duration // no byte for this long: the connection is dead
	pingInterval time.Duration // nothing sent for this long: send a ping
	connResp     *jute.ConnectResponse
	// xid64: the connection speaks protocol version 11 (WithXID64): every header's xid
	// is a long. Set by the handshake, before the loops run.
	xid64      bool
	compressed bool // the server granted ClickHouse Keeper's compressed session

	mu      sync.Mutex
	pending []*request
	authq   []*authCred // auth packets in flight (xid -4), answered in the order sent

	stop       <-chan struct{} // closed when the wire dies
	writerDone <-chan struct{}
}

func newWire(c *Conn, nc net.Conn, addr string, xid64 bool) *wire {
	w := &wire{c: c, nc: nc, addr: addr, xid64: xid64}
	w.wc = clientwire.New(nc, clientwire.Config{Addr: addr, MaxFrame: int(c.maxFrame.Load()), Oversize: w.oversize, XID64: xid64})
	w.stop, w.writerDone = w.wc.Dead(), w.wc.WriterDone()
	return w
}

// replyHeader is a reply's header, its xid widened.
type replyHeader struct {
	Xid  int64
	Zxid int64
	Err  Code
}

// decodeHeader reads a reply's header as the connection speaks it.
func (w *wire) decodeHeader(d *jute.Decoder) replyHeader {
	if w.xid64 {
		var h jute.ReplyHeader64
		h.Decode(d)
		return replyHeader(h)
	}
	var h jute.ReplyHeader
	h.Decode(d)
	return replyHeader{Xid: int64(h.Xid), Zxid: h.Zxid, Err: h.Err}
}

// oversize fails the request a reply longer than the client's limit answers with a
// ReplyTooLargeError and keeps the connection: closing it would only have the caller
// retry into the same reply (ZooKeeper's jute.maxbuffer reconnect loop). A frame that
// answers no pending request is a protocol error, as any reply the client cannot place.
func (w *wire) oversize(hdr []byte, n int) error {
	d := jute.Decoder{B: hdr}
	h := w.decodeHeader(&d)
	if d.Err() != nil || h.Xid < 0 {
		return fmt.Errorf("%w: %d-byte frame over the %d-byte limit (xid %d)", errProtocol, n, w.wc.MaxFrame(), h.Xid)
	}
	w.mu.Lock()
	if len(w.pending) == 0 || w.pending[0].xid != h.Xid {
		w.mu.Unlock()
		return fmt.Errorf("%w: %d-byte frame over the %d-byte limit, reply xid %d not the next pending", errProtocol, n, w.wc.MaxFrame(), h.Xid)
	}
	r := w.pending[0]
	w.pending[0] = nil
	w.pending = w.pending[1:]
	w.mu.Unlock()
	if h.Zxid > 0 {
		w.c.lastZxid.Store(h.Zxid)
	}
	r.zxid = h.Zxid
	if h.Err != jute.OK {
		r.err = h.Err
	} else {
		// A watch the request set is on the server all the same; the client drops it as it
		// drops a failed request's.
		r.err = &ReplyTooLargeError{Size: n, Max: w.wc.MaxFrame()}
	}
	w.c.complete(r)
	return nil
}

// setTimeouts derives the liveness timers from the negotiated session timeout, as Java's
// client does: a connection that receives nothing for 2/3 of the session timeout is dead,
// and an idle one pings after half of that (at most every 10 s), so a healthy connection is
// never idle long enough to be declared dead, and the server hears from the client well
// within the timeout.
func (w *wire) setTimeouts(session time.Duration) {
	w.readTimeout = session * 2 / 3
	w.pingInterval = min(w.readTimeout/2, 10*time.Second)
	w.wc.SetTimeouts(w.readTimeout, w.pingInterval)
}

// handshake sends the ConnectRequest and reads the ConnectResponse; the caller bounds it
// with a deadline.
func (w *wire) handshake(req *jute.ConnectRequest) (*jute.ConnectResponse, error) {
	resp, err := w.wc.Handshake(req)
	return resp, protocolErr(err)
}

// readFrame reads one frame before the loops run (SASL).
func (w *wire) readFrame() ([]byte, error) {
	frame, err := w.wc.ReadFrame()
	return frame, protocolErr(err)
}

// protocolErr marks what says the stream cannot be trusted (a length out of range, a
// response that does not decode) as a protocol error, like any reply the client cannot
// place.
func protocolErr(err error) error {
	if errors.Is(err, jute.ErrFrameSize) || errors.Is(err, clientwire.ErrBadConnectResponse) {
		return fmt.Errorf("%w: %w", errProtocol, err)
	}
	return err
}

// enqueue appends r to the pending FIFO and queues its frame, in one critical section.
func (w *wire) enqueue(r *request) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.wc.Send(r.frame); err != nil {
		return err
	}
	w.pending = append(w.pending, r)
	return nil
}

// enqueueAuth sends an auth packet; its reply is matched through authq.
func (w *wire) enqueueAuth(a *authCred) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wc.Send(a.frame(w.xid64)) == nil {
		w.authq = append(w.authq, a)
	}
}

// kill ends the wire: no more requests are accepted, the socket is closed (which ends the
// reader), and the writer stops. The first error is kept as the cause.
func (w *wire) kill(err error) { w.wc.Kill(err) }

// cause is why the wire died.
func (w *wire) cause() error { return w.wc.Cause() }

// takePending returns the requests that were sent (or queued to be sent) and not answered.
// Call it after kill, so nothing more is appended.
func (w *wire) takePending() []*request {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pending
	w.pending = nil
	w.authq = nil
	return p
}

// writeLoop writes queued frames in batches and pings when nothing has been sent for
// pingInterval.
func (w *wire) writeLoop() { w.wc.WriteLoop() }

// readLoop reads and dispatches frames until the connection fails. It never blocks on
// anything but the socket: replies close their callers' channels, notifications go
// to non-blocking event queues.
func (w *wire) readLoop() error { return protocolErr(w.wc.ReadLoop(w.handle)) }

func (w *wire) handle(frame []byte) error {
	c := w.c
	d := jute.Decoder{B: frame}
	h := w.decodeHeader(&d)
	if d.Err() != nil {
		return fmt.Errorf("%w: short reply header", errProtocol)
	}
	switch h.Xid {
	case int64(jute.XidNotification):
		var ev jute.WatcherEvent
		ev.Decode(&d)
		if d.Err() != nil {
			return fmt.Errorf("%w: bad notification: %w", errProtocol, d.Err())
		}
		c.notify(ev)
		return nil
	case int64(jute.XidPing):
		return nil
	case int64(jute.XidAuth):
		w.mu.Lock()
		var a *authCred
		if len(w.authq) > 0 {
			a = w.authq[0]
			w.authq = w.authq[1:]
		}
		w.mu.Unlock()
		if h.Err == ErrAuthFailed {
			return errAuthFailed
		}
		if a != nil {
			c.authDone(a, h.Err)
		}
		return nil
	}

	w.mu.Lock()
	if len(w.pending) == 0 {
		w.mu.Unlock()
		return fmt.Errorf("%w: reply xid %d with nothing pending", errProtocol, h.Xid)
	}
	r := w.pending[0]
	if r.xid != h.Xid {
		w.mu.Unlock()
		return fmt.Errorf("%w: reply xid %d, expected %d (%v)", errProtocol, h.Xid, r.xid, r.op)
	}
	w.pending[0] = nil
	w.pending = w.pending[1:]
	w.mu.Unlock()

	if h.Zxid > 0 {
		c.lastZxid.Store(h.Zxid)
	}
	r.zxid = h.Zxid
	if h.Err != jute.OK {
		r.err = h.Err
	} else if r.resp != nil && !r.abandoned.Load() {
		r.resp.Decode(&d)
		if err := d.Err(); err != nil {
			r.err = fmt.Errorf("%w: %v reply: %w", ErrMarshallingError, r.op, err)
		}
	}
	if r.watch != nil && !r.abandoned.Load() {
		switch {
		case r.err == nil:
			c.watches.add(r.watch)
		case r.op == jute.OpExists && r.err == ErrNoNode:
			// The server keeps an exists watch on a missing node.
			r.watch.kind = kindExist
			c.watches.add(r.watch)
		}
	}
	c.complete(r)
	return nil
}

// errAuthFailed ends the session's usability, as in Java's client (AUTH_FAILED is final).
var errAuthFailed = fmt.Errorf("%w: server rejected credentials", ErrAuthFailed)
