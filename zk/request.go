package zk

import (
	"context"
	"encoding/binary"
	"sync/atomic"

	"github.com/zkd-io/zkd/jute"
)

// request is one outstanding operation. Its frame is encoded by the caller's goroutine; the
// xid is patched in when the request is handed to a connection, in the same critical section
// that appends it to the connection's pending FIFO, so xids follow wire order.
type request struct {
	op    jute.OpCode
	path  string // client path, for errors
	frame []byte // length prefix + RequestHeader + body
	resp  jute.Record
	xid   int32
	zxid  int64
	err   error // a Code, or connLoss/ErrClosed/... set by the connection

	// watch is registered when the reply succeeds (or, for exists, reports NONODE), before
	// the reader looks at the next frame, so no notification can slip past it.
	watch *watchEntry

	done chan struct{} // closed on completion (blocking calls)
	cb   func()        // run on the callback queue on completion (async calls)

	// abandoned is set when the caller's context ended: a queued request is not sent, a
	// sent one's reply is dropped and its watch not registered.
	abandoned atomic.Bool
}

const requestHeaderLen = jute.FrameHeaderSize + 8 // length prefix + RequestHeader{xid, type}

// newRequest encodes body behind a RequestHeader whose xid is filled in at send time.
func newRequest(op jute.OpCode, path string, body jute.Record, resp jute.Record, sizeHint int) *request {
	e := jute.Encoder{Buf: make([]byte, 0, requestHeaderLen+sizeHint+len(path)+16)}
	var start int
	e.Buf, start = jute.StartFrame(e.Buf)
	(&jute.RequestHeader{Type: op}).Encode(&e)
	if body != nil {
		body.Encode(&e)
	}
	jute.EndFrame(e.Buf, start)
	return &request{op: op, path: path, frame: e.Buf, resp: resp}
}

func (r *request) setXid(xid int32) {
	r.xid = xid
	binary.BigEndian.PutUint32(r.frame[4:8], uint32(xid))
}

func (r *request) wrap(err error) error {
	return &OpError{Op: r.op.String(), Path: r.path, Err: err}
}

// complete hands the finished request to its waiter. It runs no user code: async callbacks
// go to the callback queue.
func (c *Conn) complete(r *request) {
	switch {
	case r.cb != nil:
		c.callbacks.push(r.cb)
	case r.done != nil:
		close(r.done)
	}
}

// fail completes r with err.
func (c *Conn) fail(r *request, err error) {
	r.err = err
	c.complete(r)
}

// call sends r and waits for its reply or the end of ctx.
func (c *Conn) call(ctx context.Context, r *request) error {
	if err := ctx.Err(); err != nil {
		return r.wrap(err)
	}
	r.done = make(chan struct{})
	c.submit(r)
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

// callAsync sends r; done runs on the callback queue with r's wrapped error.
func (c *Conn) callAsync(r *request, done func(error)) {
	r.cb = func() {
		if r.err != nil {
			done(r.wrap(r.err))
			return
		}
		done(nil)
	}
	c.submit(r)
}

// asyncErr reports an error found before sending, still on the callback queue, so callbacks
// never run on the caller's goroutine.
func (c *Conn) asyncErr(f func()) { c.callbacks.push(f) }

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

// sendLocked assigns r the next xid and appends it to w's pending FIFO and output queue.
func (c *Conn) sendLocked(w *wire, r *request) {
	c.xid++
	if c.xid <= 0 {
		c.xid = 1 // wrap as Java's client does; negative xids are reserved
	}
	r.setXid(c.xid)
	if err := w.enqueue(r); err != nil {
		c.fail(r, connLoss(err))
	}
}
