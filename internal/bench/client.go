package bench

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
// when it comes back (on done, or through cb); calls are reused, so the frame buffer is too.
type call struct {
	op    jute.OpCode
	frame []byte // length prefix, header (xid set by submit) and body
	enc   jute.Encoder
	start time.Time // when the frame was handed to the socket
	end   time.Time // when the read that completed its reply returned
	err   error     // a jute.Code from the reply header, or a lost connection
	zxid  int64     // from the reply header
	body  []byte    // reply body, copied only when wantBody is set
	// A done call is sent on done, or, if cb is set, passed to cb instead: on the
	// connection's reader goroutine for a reply, on whichever goroutine failed the
	// connection for a loss. cb must not block.
	done chan *call
	cb   func(*call)
	tag  int64 // the issuer's own bookkeeping (e.g. which key it touched)

	measured bool // issued during the measured phase

	wantBody bool
	xid      int32
}

// setRequest encodes op and body into the call's frame, reusing its buffer. The encoder
// lives in the call so that passing it to body's Encode method does not allocate.
func (c *call) setRequest(op jute.OpCode, body jute.Record) {
	c.op = op
	var start int
	c.enc.Buf, start = jute.StartFrame(c.frame[:0])
	e := &c.enc
	(&jute.RequestHeader{Xid: 0, Type: op}).Encode(e)
	if body != nil {
		body.Encode(e)
	}
	jute.EndFrame(e.Buf, start)
	c.frame = e.Buf
	e.Buf = nil
}

// conn is a pipelined client connection with one session. Issuers encode frames and queue
// them under mu (the xid order is the queue order); whatever has queued up goes out in one
// write, either from a writer goroutine (woken by submit) or, for calls re-issued by a
// callback while the reader handles a batch of replies, from the reader itself once it has
// handled every complete reply it has buffered: one read and one write per batch, and no
// goroutine hand-off per request. The reader matches replies to the FIFO of outstanding
// calls (ZooKeeper answers a session's requests in order), skips the bodies nobody asked for
// and hands notifications to onEvent. Neither does per-op work beyond that, so the client
// costs the same against any server.
//
// It is not the shared client loop (internal/clientwire) that zk and the nemesis harness
// use, because that one costs zkbench more than the server it measures should: its reader
// hands over each reply in a fresh buffer (zk keeps them), its writer needs a goroutine
// hand-off per batch, and its frames cannot be reused until written. On the same echo
// server, 8 sessions of 32 outstanding getData of 1 KiB (go test -bench PipelineGet
// -benchmem ./internal/bench/, 2 shared cores, 3 runs each): this conn 1733-1894
// cpu-ns/op, 6 B/op, 0 allocs/op; clientwire 2056-2830 cpu-ns/op, 1153 B/op, 1 allocs/op.
type conn struct {
	nc        net.Conn
	sessionID int64
	timeout   time.Duration // negotiated session timeout

	onEvent    func(jute.WatcherEvent, time.Time) // called on the reader goroutine
	readBuffer int

	wake chan struct{} // a frame was queued for the writer goroutine

	mu      sync.Mutex
	xid     int32
	pending []*call // from head on: queued or written, awaiting replies, in xid order
	head    int
	unsent  int    // pending[unsent:] are queued in out, not yet handed to the socket
	out     []byte // frames not yet handed to the socket
	err     error  // set once, when the connection fails or is closed

	// writeMu orders writes: whoever takes out writes it before anyone takes the next.
	writeMu sync.Mutex
	wbuf    []byte // the buffer being written; swapped with out

	readerQueued bool // the reader's callbacks queued frames it has to flush (reader only)

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
	readBuffer     int         // bytes of the reader's buffer (0: 256 KB, for pipelined replies)
}

// dial connects to addr and opens a new session.
func dial(ctx context.Context, addr string, o dialOptions) (*conn, error) {
	o = o.withDefaults()
	nc, err := connect(ctx, addr, o)
	if err != nil {
		return nil, err
	}
	c := &conn{nc: nc, onEvent: o.onEvent, wake: make(chan struct{}, 1), closing: make(chan struct{}), readBuffer: o.readBuffer}
	if c.sessionID, c.timeout, err = handshake(nc, o); err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	c.wg.Add(2)
	go c.writeLoop()
	go c.readLoop()
	return c, nil
}

func (o dialOptions) withDefaults() dialOptions {
	if o.dialTimeout == 0 {
		o.dialTimeout = 10 * time.Second
	}
	if o.sessionTimeout == 0 {
		o.sessionTimeout = 30 * time.Second
	}
	return o
}

// connect opens the TCP (and TLS) connection to addr, without a session.
func connect(ctx context.Context, addr string, o dialOptions) (net.Conn, error) {
	d := net.Dialer{Timeout: o.dialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if o.tls == nil {
		return nc, nil
	}
	cfg := o.tls
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tc := tls.Client(nc, cfg)
	hctx, cancel := context.WithTimeout(ctx, o.dialTimeout)
	err = tc.HandshakeContext(hctx)
	cancel()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}

// handshake opens a new session on nc and returns its id and negotiated timeout.
func handshake(nc net.Conn, o dialOptions) (int64, time.Duration, error) {
	deadline := time.Now().Add(o.dialTimeout)
	nc.SetDeadline(deadline)
	defer nc.SetDeadline(time.Time{})
	req := jute.ConnectRequest{TimeOut: int32(o.sessionTimeout / time.Millisecond), Passwd: make([]byte, 16), HasReadOnly: true}
	if err := jute.WriteFrame(nc, jute.Marshal(&req)); err != nil {
		return 0, 0, err
	}
	b, err := readFrame(nc, nil, jute.DefaultMaxBuffer)
	if err != nil {
		return 0, 0, err
	}
	var resp jute.ConnectResponse
	if err := jute.Unmarshal(b, &resp); err != nil {
		return 0, 0, err
	}
	if resp.SessionID == 0 || resp.TimeOut <= 0 {
		return 0, 0, jute.ErrSessionExpired
	}
	return resp.SessionID, time.Duration(resp.TimeOut) * time.Millisecond, nil
}

// readFrame reads one frame into buf (grown as needed). A reply may exceed the server's
// jute.maxbuffer by its header and a little more, hence the slack.
func readFrame(r io.Reader, buf []byte, max int) ([]byte, error) {
	b, err := jute.ReadFrameInto(r, buf, max+1024)
	if errors.Is(err, jute.ErrFrameSize) {
		return nil, fmt.Errorf("%w: %w", errProtocol, err)
	}
	return b, err
}

// submit queues c for the writer goroutine; it comes back on c.done (which must have room
// for it) or through c.cb, with c.err set. After the connection has failed, calls come back
// at once, on the caller's goroutine, with its error.
func (cn *conn) submit(c *call) {
	if !cn.enqueue(c, true) {
		cn.complete(c, cn.failure())
	}
}

// enqueue queues c and reports whether it did: not once the connection has failed, and then
// c is the caller's again. With wake, the writer goroutine sends it; without, the reader
// does once it has handled the replies it has buffered, so only a callback running on the
// reader may enqueue without wake.
func (cn *conn) enqueue(c *call, wake bool) bool {
	cn.mu.Lock()
	if cn.err != nil {
		cn.mu.Unlock()
		return false
	}
	cn.xid++
	if cn.xid <= 0 { // skip the reserved negative xids after wrap-around
		cn.xid = 1
	}
	c.xid = cn.xid
	binary.BigEndian.PutUint32(c.frame[4:], uint32(c.xid))
	cn.pending = append(cn.pending, c)
	// Copying here, not at the write, lets the issuer reuse the call as soon as it is
	// completed, and no reply can arrive for a call that is not yet pending.
	cn.out = append(cn.out, c.frame...)
	cn.mu.Unlock()
	if !wake {
		cn.readerQueued = true
		return true
	}
	select {
	case cn.wake <- struct{}{}:
	default:
	}
	return true
}

// flush writes whatever has queued up, stamping the calls in it with the time they were
// handed to the socket: latency runs from there to the read of the reply.
func (cn *conn) flush() error {
	cn.writeMu.Lock()
	defer cn.writeMu.Unlock()
	cn.mu.Lock()
	if len(cn.out) == 0 {
		cn.mu.Unlock()
		return nil
	}
	buf := cn.out
	cn.out = cn.wbuf[:0]
	if cn.unsent < len(cn.pending) {
		now := time.Now()
		for _, c := range cn.pending[cn.unsent:] {
			c.start = now
		}
		cn.unsent = len(cn.pending)
	}
	cn.mu.Unlock()
	_, err := cn.nc.Write(buf)
	cn.wbuf = buf
	if err != nil {
		err = fmt.Errorf("write: %w: %w", err, jute.ErrConnectionLoss)
		cn.fail(err)
	}
	return err
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
	// Only an idle connection pings: requests keep the session alive by themselves.
	tick := time.NewTicker(max(cn.timeout/3, time.Millisecond))
	defer tick.Stop()
	var sent int32 // the last xid queued by the previous tick
	for {
		select {
		case <-cn.wake:
		case <-tick.C:
			cn.mu.Lock()
			if cn.xid == sent {
				cn.out = appendPing(cn.out)
			}
			sent = cn.xid
			cn.mu.Unlock()
		case <-cn.closing:
			return
		}
		if cn.flush() != nil {
			return
		}
	}
}

var pingRequest = jute.Marshal(&jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing})

func appendPing(b []byte) []byte { return jute.AppendFrame(b, pingRequest) }

func (cn *conn) complete(c *call, err error) {
	c.err = err
	c.end = time.Now()
	if c.cb != nil {
		c.cb(c)
		return
	}
	c.done <- c
}

// flushLimit is the most the reader writes itself after a batch of replies: a larger
// batch goes to the writer goroutine, so that the reader goes on reading replies while it
// is written (a server that stops reading until its replies are read cannot block us).
const flushLimit = 64 << 10

func (cn *conn) readLoop() {
	defer cn.wg.Done()
	size := cn.readBuffer
	if size <= 0 {
		size = 256 << 10
	}
	r := bufio.NewReaderSize(cn.nc, size)
	var buf []byte
	var now time.Time
	for {
		if !frameBuffered(r) {
			// The next frame needs a read: first send what the replies so far caused.
			if cn.readerQueued {
				cn.readerQueued = false
				if cn.queuedLen() > flushLimit {
					select {
					case cn.wake <- struct{}{}:
					default:
					}
				} else if cn.flush() != nil {
					return
				}
			}
			now = time.Time{}
		}
		xid, zxid, code, n, err := readReplyHeader(r)
		if err != nil {
			cn.fail(fmt.Errorf("read: %w: %w", err, jute.ErrConnectionLoss))
			return
		}
		switch xid {
		case jute.XidNotification:
			if buf, err = readBody(r, buf, n); err != nil {
				cn.fail(fmt.Errorf("read: %w: %w", err, jute.ErrConnectionLoss))
				return
			}
			if now.IsZero() {
				now = time.Now()
			}
			var ev jute.WatcherEvent
			if err := jute.Unmarshal(buf, &ev); err != nil {
				cn.fail(fmt.Errorf("%w: notification: %w", errProtocol, err))
				return
			}
			if cn.onEvent != nil {
				cn.onEvent(ev, now)
			}
			continue
		case jute.XidPing, jute.XidAuth, jute.XidSetWatches:
			if _, err := r.Discard(n); err != nil {
				cn.fail(fmt.Errorf("read: %w: %w", err, jute.ErrConnectionLoss))
				return
			}
			continue
		}
		cn.mu.Lock()
		c := cn.popPending(xid)
		cn.mu.Unlock()
		if c == nil {
			cn.fail(fmt.Errorf("%w: reply xid %d does not answer the oldest outstanding request", errProtocol, xid))
			return
		}
		// Only this goroutine completes a popped call, so its body is ours to fill.
		if c.wantBody && code == jute.OK {
			c.body, err = readBody(r, c.body, n)
		} else {
			_, err = r.Discard(n)
		}
		if err != nil {
			cn.fail(fmt.Errorf("read: %w: %w", err, jute.ErrConnectionLoss))
			cn.complete(c, cn.failure())
			return
		}
		if now.IsZero() {
			// Every reply completed by the read just done arrived then.
			now = time.Now()
		}
		closed := c.op == jute.OpCloseSession // c belongs to its issuer once done
		c.zxid = zxid
		c.err = code.Err()
		c.end = now
		if c.cb != nil {
			c.cb(c)
		} else {
			c.done <- c
		}
		if closed {
			cn.fail(errClosed)
			return
		}
	}
}

func (cn *conn) queuedLen() int {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return len(cn.out)
}

// frameBuffered reports whether r holds a whole frame, so reading it needs no read call.
func frameBuffered(r *bufio.Reader) bool {
	n := r.Buffered()
	if n < jute.FrameHeaderSize {
		return false
	}
	l, _ := r.Peek(jute.FrameHeaderSize)
	// A bad length is reported by readReplyHeader, which may need a read to see it.
	m, err := jute.FrameLen(l, maxReply)
	return err == nil && n-jute.FrameHeaderSize >= m
}

// maxReply bounds a reply frame: anything longer is taken for a corrupt stream. Servers
// bound what they read (jute.maxbuffer), not what they send: getChildren of a node with a
// million children of 8-byte names is a 12 MB reply (the children workload), and with longer
// names more.
const maxReply = 64 << 20

// readReplyHeader reads a reply's length and header, leaving its n-byte body in r.
func readReplyHeader(r *bufio.Reader) (xid int32, zxid int64, code jute.Code, n int, err error) {
	b, err := r.Peek(jute.FrameHeaderSize + jute.ReplyHeaderSize)
	if err != nil {
		// A frame shorter than a header is an error too, but only if it ends the stream
		// here; one followed by more bytes is caught below.
		return 0, 0, 0, 0, err
	}
	l, err := jute.FrameLen(b, maxReply)
	if err != nil || l < jute.ReplyHeaderSize {
		return 0, 0, 0, 0, fmt.Errorf("%w: reply length %d", errProtocol, l)
	}
	b = b[jute.FrameHeaderSize:]
	xid = int32(binary.BigEndian.Uint32(b))
	zxid = int64(binary.BigEndian.Uint64(b[4:]))
	code = jute.Code(int32(binary.BigEndian.Uint32(b[12:])))
	if _, err := r.Discard(jute.FrameHeaderSize + jute.ReplyHeaderSize); err != nil {
		return 0, 0, 0, 0, err
	}
	return xid, zxid, code, l - jute.ReplyHeaderSize, nil
}

// readBody reads n bytes from r into buf, grown as needed.
func readBody(r io.Reader, buf []byte, n int) ([]byte, error) {
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
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
	// A reply cannot come before its request was written, so unsent >= head.
	switch {
	case cn.head == len(cn.pending):
		cn.pending, cn.head, cn.unsent = cn.pending[:0], 0, 0
	case cn.head >= 1024 && cn.head*2 >= len(cn.pending):
		n := copy(cn.pending, cn.pending[cn.head:])
		clear(cn.pending[n:])
		cn.unsent -= cn.head
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
	cn.pending, cn.head, cn.unsent = nil, 0, 0
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
