package zk

import (
	"context"
	"encoding/binary"
	"math"
	"sync/atomic"

	"github.com/zkd-io/zkd/jute"
)

// request is one outstanding operation. Its frame is encoded by the caller's goroutine; the
// xid is patched in when the request is handed to a connection, in the same critical section
// that appends it to the connection's pending FIFO, so xids follow wire order.
type request struct {
	op   jute.OpCode
	path string // client path, for errors
	// buf is the frame with xidRoom bytes of room in front: buf[xidRoom:] is the frame with
	// a 32-bit xid (length prefix + RequestHeader + body), and buf itself has room for the
	// frame with a 64-bit one (RequestHeader64), made in place by setXid when the
	// connection it goes out on speaks protocol version 11.
	buf   []byte
	frame []byte // what goes out: set by setXid
	resp  jute.Record
	xid   int64
	zxid  int64
	err   error // a Code, or connLoss/ErrClosed/... set by the connection

	// watch is registered when the reply succeeds (or, for exists, reports NONODE), before
	// the reader looks at the next frame, so no notification can slip past it.
	watch *watchEntry

	done chan struct{} // closed on completion

	// abandoned is set when the caller's context ended: a queued request is not sent, a
	// sent one's reply is dropped and its watch not registered.
	abandoned atomic.Bool
}

const requestHeaderLen = jute.FrameHeaderSize + 8 // length prefix + RequestHeader{xid, type}

// xidRoom is what a 64-bit xid adds to a request header.
const xidRoom = jute.RequestHeader64Size - 8

// newRequest encodes body behind a RequestHeader whose xid is filled in at send time.
func newRequest(op jute.OpCode, path string, body jute.Record, resp jute.Record, sizeHint int) *request {
	e := jute.Encoder{Buf: make([]byte, xidRoom, xidRoom+requestHeaderLen+sizeHint+len(path)+16)}
	var start int
	e.Buf, start = jute.StartFrame(e.Buf)
	(&jute.RequestHeader{Type: op}).Encode(&e)
	if body != nil {
		body.Encode(&e)
	}
	jute.EndFrame(e.Buf, start)
	return &request{op: op, path: path, buf: e.Buf, frame: e.Buf[xidRoom:], resp: resp, done: make(chan struct{})}
}

// setXid gives r its xid, in the header wide or not: with wide, the length prefix moves
// xidRoom bytes to the front and the xid takes its and the 32-bit xid's place.
func (r *request) setXid(xid int64, wide bool) {
	r.xid = xid
	if !wide {
		r.frame = r.buf[xidRoom:]
		binary.BigEndian.PutUint32(r.frame[4:8], uint32(xid))
		return
	}
	r.frame = r.buf
	binary.BigEndian.PutUint32(r.frame, uint32(len(r.buf)-jute.FrameHeaderSize))
	binary.BigEndian.PutUint64(r.frame[4:12], uint64(xid))
}

func (r *request) wrap(err error) error {
	return &OpError{Op: r.op.String(), Path: r.path, Err: err}
}

// complete hands the finished request to its waiter.
func (c *Conn) complete(r *request) { close(r.done) }

// fail completes r with err.
func (c *Conn) fail(r *request, err error) {
	r.err = err
	c.complete(r)
}

// await hands r to send, which queues it for the wire, and waits for its completion or the
// end of ctx. Every request of the application goes through it.
func (c *Conn) await(ctx context.Context, r *request, send func(*request)) error {
	if err := ctx.Err(); err != nil {
		return r.wrap(err)
	}
	send(r)
	markSent(ctx) // r has its place in line: a Go waiting for that may return
	select {
	case <-r.done:
	case <-ctx.Done():
		r.abandoned.Store(true)
		// The reply may have raced the cancellation; prefer it.
		select {
		case <-r.done:
		default:
			return r.wrap(ctx.Err())
		}
	}
	if r.err != nil {
		return r.wrap(r.err)
	}
	return nil
}

// spec is what one operation adds to the common call path: its request record, the path it
// names and the watch it sets.
type spec struct {
	op   jute.OpCode
	path string // as the caller named it: errors and watches use it

	// body builds the request record from path as the server sees it (nil: no body).
	body func(serverPath string) (jute.Record, error)

	raw   bool        // path goes to the server as is, outside the chroot
	seq   bool        // the server appends a sequence number to path
	watch *watchEntry // registered once the reply arrives (see wire.handle)
	size  int         // expected body size beyond path, so encoding does not regrow
	err   error       // an argument the caller got wrong, reported before the path is looked at
}

// record is a body for requests whose record does not depend on the path.
func record(r jute.Record) func(string) (jute.Record, error) {
	return func(string) (jute.Record, error) { return r, nil }
}

// do runs the operation s on c: chroot, encoding, submission, waiting with ctx, and errors as
// *OpError. It returns the decoded reply, of type R.
func do[R any, P interface {
	*R
	jute.Record
}](ctx context.Context, c *Conn, s spec) (*R, error) {
	resp := P(new(R))
	r, err := c.encode(s, resp)
	if err != nil {
		return nil, err
	}
	if err := c.await(ctx, r, c.submit); err != nil {
		return nil, err
	}
	return (*R)(resp), nil
}

// encode checks s and builds its request, to be answered in resp.
func (c *Conn) encode(s spec, resp jute.Record) (*request, error) {
	if s.err != nil {
		return nil, pathErr(s.op, s.path, s.err)
	}
	sp := s.path
	if !s.raw {
		var err error
		if sp, err = c.chroot.toServer(s.path, s.seq); err != nil {
			return nil, pathErr(s.op, s.path, err)
		}
	}
	var body jute.Record
	if s.body != nil {
		var err error
		if body, err = s.body(sp); err != nil {
			return nil, pathErr(s.op, s.path, err)
		}
	}
	r := newRequest(s.op, s.path, body, resp, s.size)
	r.watch = s.watch
	return r, nil
}

// noReply is the reply of requests whose reply is a header only.
type noReply struct{}

func (*noReply) Encode(*jute.Encoder) {}
func (*noReply) Decode(*jute.Decoder) {}

// submit hands r to the live connection, or queues it until there is one. It never blocks
// on the network.
func (c *Conn) submit(r *request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.termErr != nil:
		c.fail(r, c.termErr)
	case c.closing:
		c.fail(r, ErrClosed)
	case c.w != nil:
		c.sendLocked(c.w, r)
	case c.lossy:
		c.fail(r, ErrConnectionLoss)
	default:
		c.queued = append(c.queued, r)
	}
}

// nextXidLocked is the next xid for a request on w. A 32-bit connection wraps as Java's
// client does (negative xids are reserved); a 64-bit one (protocol version 11) does not
// wrap before 2^63.
func (c *Conn) nextXidLocked(w *wire) int64 {
	c.xid++
	if c.xid <= 0 || (!w.xid64 && c.xid > math.MaxInt32) {
		c.xid = 1
	}
	return c.xid
}

// sendLocked assigns r the next xid and appends it to w's pending FIFO and output queue.
func (c *Conn) sendLocked(w *wire, r *request) {
	r.setXid(c.nextXidLocked(w), w.xid64)
	if err := w.enqueue(r); err != nil {
		c.fail(r, connLoss(err))
	}
}
