package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// errClosed is the error of calls that were outstanding, or submitted, when the connection
// went away. It wraps jute.ErrConnectionLoss so callers can test for either.
var errClosed = fmt.Errorf("zkbench: connection closed: %w", jute.ErrConnectionLoss)

// errProtocol reports a reply the client cannot match to its request.
var errProtocol = errors.New("zkbench: protocol error")

// call is one request and, once done, its reply. The session that issued it owns it again
// when it comes back on done; calls are reused, so the frame buffer is too.
type call struct {
	op    jute.OpCode
	frame []byte // length prefix, header (xid set by submit) and body
	start time.Time
	end   time.Time
	err   error  // a jute.Code from the reply header, or a lost connection
	zxid  int64  // from the reply header
	body  []byte // reply body, copied only when wantBody is set
	done  chan *call
	tag   int64 // the issuer's own bookkeeping (e.g. which key it touched)

	measured bool // issued during the measured phase

	wantBody bool
	xid      int32
}

// setRequest encodes op and body into the call's frame, reusing its buffer.
func (c *call) setRequest(op jute.OpCode, body jute.Record) {
	c.op = op
	e := jute.Encoder{Buf: c.frame[:0]}
	e.Int(0) // length, set below
	(&jute.RequestHeader{Xid: 0, Type: op}).Encode(&e)
	if body != nil {
		body.Encode(&e)
	}
	binary.BigEndian.PutUint32(e.Buf, uint32(len(e.Buf)-4))
	c.frame = e.Buf
}

// conn is a pipelined client connection with one session. Issuers encode and queue frames
// under mu (the xid order is the queue order); a writer goroutine writes whatever has queued
// up in one write; a reader goroutine matches replies to the FIFO of outstanding calls
// (ZooKeeper answers a session's requests in order) and hands notifications to onEvent.
// Neither does per-op work beyond copying bytes, so the client costs the same against any
// server.
type conn struct {
	nc        net.Conn
	sessionID int64
	timeout   time.Duration // negotiated session timeout

	onEvent func(jute.WatcherEvent, time.Time) // called on the reader goroutine

	wake chan struct{} // a frame was queued

	mu      sync.Mutex
	xid     int32
	pending []*call // from head on: queued or written, awaiting replies, in xid order
	head    int
	out     []byte // frames not yet handed to the writer
	err     error  // set once, when the connection fails or is closed

	closing   chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// dialOptions are the knobs of a new session.
type dialOptions struct {
	sessionTimeout time.Duration
	dialTimeout    time.Duration
	onEvent        func(jute.WatcherEvent, time.Time)
	tls            *tls.Config // nil: plaintext
}

// dial connects to addr and opens a new session.
func dial(ctx context.Context, addr string, o dialOptions) (*conn, error) {
	if o.dialTimeout == 0 {
		o.dialTimeout = 10 * time.Second
	}
	if o.sessionTimeout == 0 {
		o.sessionTimeout = 30 * time.Second
	}
	d := net.Dialer{Timeout: o.dialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if o.tls != nil {
		cfg := o.tls
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(nc, cfg)
		hctx, cancel := context.WithTimeout(ctx, o.dialTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	c := &conn{nc: nc, onEvent: o.onEvent, wake: make(chan struct{}, 1), closing: make(chan struct{})}
	if err := c.handshake(o); err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	c.wg.Add(2)
	go c.writeLoop()
	go c.readLoop()
	return c, nil
}

func (c *conn) handshake(o dialOptions) error {
	deadline := time.Now().Add(o.dialTimeout)
	c.nc.SetDeadline(deadline)
	defer c.nc.SetDeadline(time.Time{})
	req := jute.ConnectRequest{TimeOut: int32(o.sessionTimeout / time.Millisecond), Passwd: make([]byte, 16), HasReadOnly: true}
	e := jute.Encoder{Buf: make([]byte, 4, 64)}
	req.Encode(&e)
	binary.BigEndian.PutUint32(e.Buf, uint32(len(e.Buf)-4))
	if _, err := c.nc.Write(e.Buf); err != nil {
		return err
	}
	b, err := readFrame(c.nc, nil, jute.DefaultMaxBuffer)
	if err != nil {
		return err
	}
	var resp jute.ConnectResponse
	if err := jute.Unmarshal(b, &resp); err != nil {
		return err
	}
	if resp.SessionID == 0 || resp.TimeOut <= 0 {
		return jute.ErrSessionExpired
	}
	c.sessionID = resp.SessionID
	c.timeout = time.Duration(resp.TimeOut) * time.Millisecond
	return nil
}

// readFrame reads one length-prefixed frame into buf (grown as needed).
func readFrame(r io.Reader, buf []byte, max int) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(l[:]))
	if n < 0 || n > max+1024 {
		return nil, fmt.Errorf("%w: frame length %d", errProtocol, n)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// submit queues c; it comes back on c.done, which must have room for it, with c.err set.
// After the connection has failed, calls come back at once with its error.
func (cn *conn) submit(c *call) {
	c.start = time.Now()
	cn.mu.Lock()
	if cn.err != nil {
		err := cn.err
		cn.mu.Unlock()
		cn.complete(c, err)
		return
	}
	cn.xid++
	if cn.xid <= 0 { // skip the reserved negative xids after wrap-around
		cn.xid = 1
	}
	c.xid = cn.xid
	binary.BigEndian.PutUint32(c.frame[4:], uint32(c.xid))
	cn.pending = append(cn.pending, c)
	// Copying here, not in the writer, lets the issuer reuse the call as soon as it is
	// completed, and no reply can arrive for a call that is not yet pending.
	cn.out = append(cn.out, c.frame...)
	cn.mu.Unlock()
	select {
	case cn.wake <- struct{}{}:
	default:
	}
}

func (cn *conn) failure() error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.err == nil {
		return errClosed
	}
	return cn.err
}

// do sends one request and waits for its reply body.
func (cn *conn) do(ctx context.Context, op jute.OpCode, req jute.Record) ([]byte, error) {
	c := &call{done: make(chan *call, 1), wantBody: true}
	c.setRequest(op, req)
	cn.submit(c)
	select {
	case <-c.done:
		return c.body, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (cn *conn) writeLoop() {
	defer cn.wg.Done()
	var buf []byte
	// Only an idle connection pings: requests keep the session alive by themselves.
	tick := time.NewTicker(max(cn.timeout/3, time.Millisecond))
	defer tick.Stop()
	wrote := false
	for {
		select {
		case <-cn.wake:
		case <-tick.C:
			if !wrote {
				cn.mu.Lock()
				cn.out = appendPing(cn.out)
				cn.mu.Unlock()
			}
			wrote = false
		case <-cn.closing:
			return
		}
		cn.mu.Lock()
		buf, cn.out = cn.out, buf[:0]
		cn.mu.Unlock()
		if len(buf) == 0 {
			continue
		}
		if _, err := cn.nc.Write(buf); err != nil {
			cn.fail(fmt.Errorf("write: %w: %w", err, jute.ErrConnectionLoss))
			return
		}
		wrote = true
	}
}

func appendPing(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	xid := jute.XidPing
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	return binary.BigEndian.AppendUint32(b, uint32(jute.OpPing))
}

func (cn *conn) complete(c *call, err error) {
	c.err = err
	c.end = time.Now()
	c.done <- c
}

func (cn *conn) readLoop() {
	defer cn.wg.Done()
	r := bufio.NewReaderSize(cn.nc, 64<<10)
	var buf []byte
	for {
		b, err := readFrame(r, buf, jute.DefaultMaxBuffer*4)
		if err != nil {
			cn.fail(fmt.Errorf("read: %w: %w", err, jute.ErrConnectionLoss))
			return
		}
		buf = b
		now := time.Now()
		if len(b) < jute.ReplyHeaderSize {
			cn.fail(fmt.Errorf("%w: short reply (%d bytes)", errProtocol, len(b)))
			return
		}
		xid := int32(binary.BigEndian.Uint32(b))
		zxid := int64(binary.BigEndian.Uint64(b[4:]))
		code := jute.Code(int32(binary.BigEndian.Uint32(b[12:])))
		switch xid {
		case jute.XidNotification:
			var ev jute.WatcherEvent
			if err := jute.Unmarshal(b[jute.ReplyHeaderSize:], &ev); err != nil {
				cn.fail(fmt.Errorf("%w: notification: %w", errProtocol, err))
				return
			}
			if cn.onEvent != nil {
				cn.onEvent(ev, now)
			}
			continue
		case jute.XidPing, jute.XidAuth, jute.XidSetWatches:
			continue
		}
		cn.mu.Lock()
		c := cn.popPending(xid)
		if c == nil {
			cn.mu.Unlock()
			cn.fail(fmt.Errorf("%w: reply xid %d does not answer the oldest outstanding request", errProtocol, xid))
			return
		}
		if c.wantBody && code == jute.OK {
			c.body = append(c.body[:0], b[jute.ReplyHeaderSize:]...)
		}
		cn.mu.Unlock()
		closed := c.op == jute.OpCloseSession // c belongs to its issuer once on done
		c.zxid = zxid
		c.err = code.Err()
		c.end = now
		c.done <- c
		if closed {
			cn.fail(errClosed)
			return
		}
	}
}

// popPending removes and returns the oldest outstanding call if it has xid, else nil. The
// queue is a slice with a head index, so steady pipelining allocates nothing.
func (cn *conn) popPending(xid int32) *call {
	if cn.head == len(cn.pending) || cn.pending[cn.head].xid != xid {
		return nil
	}
	c := cn.pending[cn.head]
	cn.pending[cn.head] = nil
	cn.head++
	switch {
	case cn.head == len(cn.pending):
		cn.pending, cn.head = cn.pending[:0], 0
	case cn.head >= 1024 && cn.head*2 >= len(cn.pending):
		n := copy(cn.pending, cn.pending[cn.head:])
		clear(cn.pending[n:])
		cn.pending, cn.head = cn.pending[:n], 0
	}
	return c
}

// fail records err, closes the socket and completes every outstanding call with err, which
// always matches jute.ErrConnectionLoss.
func (cn *conn) fail(err error) {
	if !errors.Is(err, jute.ErrConnectionLoss) {
		err = fmt.Errorf("%w (%w)", err, jute.ErrConnectionLoss)
	}
	cn.mu.Lock()
	if cn.err != nil {
		cn.mu.Unlock()
		return
	}
	cn.err = err
	pending := cn.pending[cn.head:]
	cn.pending, cn.head = nil, 0
	cn.out = nil
	cn.mu.Unlock()
	cn.closeOnce.Do(func() { close(cn.closing) })
	cn.nc.Close()
	for _, c := range pending {
		cn.complete(c, err)
	}
}

// close ends the session (closeSession, waiting at most timeout for the answer) and the
// connection, and waits for both goroutines.
func (cn *conn) close(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := cn.do(ctx, jute.OpCloseSession, nil)
	if errors.Is(err, errClosed) && cn.failure() == errClosed {
		err = nil // closed by our own closeSession
	}
	cn.abort()
	return err
}

// abort drops the connection without ending the session.
func (cn *conn) abort() {
	cn.fail(errClosed)
	cn.wg.Wait()
}
