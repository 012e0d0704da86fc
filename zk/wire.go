package zk

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// errProtocol reports a reply the client cannot match to a request; the connection is
// dropped, as Java's client does on "Xid out of order".
var errProtocol = errors.New("zk: protocol error")

// wire is one TCP connection of a session: the reader runs on the connection loop's
// goroutine, the writer on its own. Requests enter through enqueue, which appends them to
// both the pending FIFO (matched against replies by xid) and the output queue.
type wire struct {
	c    *Conn
	nc   net.Conn
	br   *bufio.Reader
	addr string

	readTimeout  time.Duration // no byte for this long: the connection is dead
	pingInterval time.Duration // nothing sent for this long: send a ping
	maxFrame     int
	connResp     *jute.ConnectResponse

	mu      sync.Mutex
	pending []*request
	authq   []*authCred // auth packets in flight (xid -4), answered in the order sent
	outq    [][]byte
	spare   [][]byte
	dead    bool
	err     error // why the connection ended; the first error wins

	kick       chan struct{} // cap 1: the output queue is not empty
	stop       chan struct{} // closed when the wire dies
	writerDone chan struct{}
}

var pingFrame = jute.AppendFrame(nil, jute.Marshal(&jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing}))

func newWire(c *Conn, nc net.Conn, addr string) *wire {
	return &wire{
		c:          c,
		nc:         nc,
		br:         bufio.NewReaderSize(nc, 64<<10),
		addr:       addr,
		maxFrame:   c.cfg.maxBufferSize,
		kick:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		writerDone: make(chan struct{}),
	}
}

// setTimeouts derives the liveness timers from the negotiated session timeout, as Java's
// client does: a connection that receives nothing for 2/3 of the session timeout is dead,
// and an idle one pings after half of that (at most every 10 s), so a healthy connection is
// never idle long enough to be declared dead, and the server hears from the client well
// within the timeout.
func (w *wire) setTimeouts(session time.Duration) {
	w.readTimeout = session * 2 / 3
	w.pingInterval = min(w.readTimeout/2, 10*time.Second)
}

// handshake sends the ConnectRequest and reads the ConnectResponse; the caller bounds it
// with a deadline.
func (w *wire) handshake(req *jute.ConnectRequest) (*jute.ConnectResponse, error) {
	if err := jute.WriteFrame(w.nc, jute.Marshal(req)); err != nil {
		return nil, err
	}
	frame, err := w.readFrame()
	if err != nil {
		return nil, err
	}
	var resp jute.ConnectResponse
	if err := jute.Unmarshal(frame, &resp); err != nil {
		return nil, fmt.Errorf("%w: bad ConnectResponse: %w", errProtocol, err)
	}
	return &resp, nil
}

// readFrame reads one frame; a length out of range means the stream cannot be trusted, as
// for any reply the client cannot place.
func (w *wire) readFrame() ([]byte, error) {
	frame, err := jute.ReadFrame(w.br, w.maxFrame)
	if errors.Is(err, jute.ErrFrameSize) {
		return nil, fmt.Errorf("%w: %w", errProtocol, err)
	}
	return frame, err
}

// enqueue appends r to the pending FIFO and its frame to the output queue.
func (w *wire) enqueue(r *request) error {
	w.mu.Lock()
	if w.dead {
		err := w.err
		w.mu.Unlock()
		return err
	}
	w.pending = append(w.pending, r)
	w.outq = append(w.outq, r.frame)
	w.mu.Unlock()
	w.signal()
	return nil
}

// enqueueAuth sends an auth packet; its reply is matched through authq.
func (w *wire) enqueueAuth(a *authCred) {
	w.mu.Lock()
	if !w.dead {
		w.authq = append(w.authq, a)
		w.outq = append(w.outq, a.frame())
	}
	w.mu.Unlock()
	w.signal()
}

func (w *wire) signal() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// kill ends the wire: no more requests are accepted, the socket is closed (which ends the
// reader), and the writer stops. The first error is kept as the cause.
func (w *wire) kill(err error) {
	w.mu.Lock()
	if !w.dead {
		w.dead = true
		w.err = err
		close(w.stop)
	}
	w.mu.Unlock()
	w.nc.Close()
}

// cause is why the wire died.
func (w *wire) cause() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

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

// writeLoop writes queued frames in batches (one writev per batch) and pings when nothing
// has been sent for pingInterval.
func (w *wire) writeLoop() {
	defer close(w.writerDone)
	ping := time.NewTimer(w.pingInterval)
	defer ping.Stop()
	for {
		select {
		case <-w.kick:
		case <-ping.C:
			w.mu.Lock()
			if len(w.outq) == 0 {
				w.outq = append(w.outq, pingFrame)
			}
			w.mu.Unlock()
		case <-w.stop:
			return
		}
		w.mu.Lock()
		batch := w.outq
		w.outq, w.spare = w.spare[:0], nil
		w.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		bufs := net.Buffers(batch)
		if _, err := bufs.WriteTo(w.nc); err != nil {
			w.kill(fmt.Errorf("write to %s: %w", w.addr, err))
			return
		}
		clear(batch)
		w.mu.Lock()
		w.spare = batch[:0]
		w.mu.Unlock()
		ping.Reset(w.pingInterval)
	}
}

// readLoop reads and dispatches frames until the connection fails. It never blocks on
// anything but the socket: replies complete channels or queue callbacks, notifications go
// to non-blocking event queues.
func (w *wire) readLoop() error {
	for {
		if err := w.nc.SetReadDeadline(time.Now().Add(w.readTimeout)); err != nil {
			return err
		}
		frame, err := w.readFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("no reply from %s for %v: %w", w.addr, w.readTimeout, err)
			}
			return err
		}
		if err := w.handle(frame); err != nil {
			return err
		}
	}
}

func (w *wire) handle(frame []byte) error {
	c := w.c
	d := jute.Decoder{B: frame}
	var h jute.ReplyHeader
	h.Decode(&d)
	if d.Err() != nil {
		return fmt.Errorf("%w: short reply header", errProtocol)
	}
	switch h.Xid {
	case jute.XidNotification:
		var ev jute.WatcherEvent
		ev.Decode(&d)
		if d.Err() != nil {
			return fmt.Errorf("%w: bad notification: %w", errProtocol, d.Err())
		}
		c.notify(ev)
		return nil
	case jute.XidPing:
		return nil
	case jute.XidAuth:
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
