package server

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkd-io/zkd/internal/chcompress"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/tlsconf"
	"github.com/zkd-io/zkd/internal/watch"
	"github.com/zkd-io/zkd/jute"
)

// outMsg is one frame queued for a connection. Encoding happens on the connection's writer
// goroutine, so the core never spends time on it; bodies are immutable once queued.
type outMsg struct {
	hdr  jute.ReplyHeader
	body jute.Record
	raw  []byte // pre-encoded frame body (no length prefix), used instead of hdr+body
	// rawText is written as is, without a length prefix (four-letter-word answers).
	rawText []byte
	// compressAfter marks a compressed session's ConnectResponse: it is written as it is,
	// and every frame after it in ClickHouse's compressed blocks (compress.go).
	compressAfter bool
}

func (m *outMsg) size() int {
	return 64 + len(m.raw) + len(m.rawText) + bodySize(m.body)
}

// bodySize estimates the bytes of the bodies that can grow large (values and names); the
// rest is within size's slack.
func bodySize(body jute.Record) int {
	n := 0
	switch b := body.(type) {
	case *jute.MultiResponse:
		for i := range b.Results {
			n += 16 + bodySize(b.Results[i].Body)
		}
	case *jute.ListPageResponse:
		for _, s := range b.Names {
			n += 4 + len(s)
		}
		n += 80*len(b.Stats) + len(b.Cursor)
	case *jute.GetDataResponse:
		n += len(b.Data)
	case *jute.GetChildrenResponse:
		for _, s := range b.Strings {
			n += 4 + len(s)
		}
	case *jute.GetChildren2Response:
		for _, s := range b.Children {
			n += 4 + len(s)
		}
	}
	return n
}

// conn is one client TCP connection. Fields under "core-owned" are touched only by the
// core goroutine; the queue is shared between the core (producer) and the writer.
type conn struct {
	srv    *Server
	nc     net.Conn
	remote string
	ip     string

	// core-owned
	sess      *clientSession
	authIDs   []jute.ID
	watcher   watch.WatcherID
	hasWatch  bool
	gone      bool
	lastOp    jute.OpCode
	lastCxid  int32
	lastZxid  int64
	connected time.Time
	accepted  time.Time

	// certIDs are the x509 ids of a TLS client's certificate, set by the reader before
	// the ConnectRequest is handed to the core, which adds them to authIDs.
	certIDs []jute.ID

	// reader-owned: the SASL exchange, when SASL is configured and the client started one
	saslx SASLServer

	// established carries the core's answer to the ConnectRequest: true to go on reading.
	established chan bool

	// xid64: the connection negotiated 64-bit xids (protocol version 11, xid64.go), set by
	// the reader before the ConnectRequest reaches the core; xids maps them to the 32-bit
	// tokens the rest of the server sees.
	xid64 atomic.Bool
	xids  xidMap

	mu        sync.Mutex
	queue     []outMsg
	queued    int
	closing   bool // close after the queue drains
	closed    bool
	wake      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	recv, sent atomic.Int64
	stats      latencyStats

	// compressed: the session is ClickHouse Keeper's compressed one (compress.go); set by
	// the core before it answers on established, read by the reader after.
	compressed bool

	// maxBuf is the limit the connection negotiated with setMaxBuffer (large-replies
	// extension), 0 if none: set by the core, read by the reader for request frames.
	maxBuf atomic.Int32
}

var errSlowConsumer = errors.New("outgoing queue overflow: client is not reading")

// send queues a frame without blocking. A connection whose unsent bytes pass the limit is
// closed: one slow reader must not hold memory or slow the others.
func (c *conn) send(m outMsg) {
	c.mu.Lock()
	if c.closed || c.closing {
		c.mu.Unlock()
		return
	}
	c.queue = append(c.queue, m)
	c.queued += m.size()
	over := c.queued > c.srv.cfg.MaxOutgoingBytes
	c.mu.Unlock()
	if over {
		c.srv.log.Warn("closing connection", "remote", c.remote, "err", errSlowConsumer)
		c.close()
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// sendAndClose queues a last frame and closes the connection once it is written.
func (c *conn) sendAndClose(m *outMsg) {
	c.mu.Lock()
	if c.closed || c.closing {
		c.mu.Unlock()
		return
	}
	if m != nil {
		c.queue = append(c.queue, *m)
	}
	c.closing = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.queue = nil
		c.mu.Unlock()
		c.srv.connsMu.Lock()
		delete(c.srv.allConns, c)
		c.srv.connsMu.Unlock()
		c.nc.Close()
		close(c.done)
		if c.srv.cfg.MaxClientCnxns > 0 {
			c.srv.perIPMu.Lock()
			c.srv.perIP[c.ip]--
			if c.srv.perIP[c.ip] <= 0 {
				delete(c.srv.perIP, c.ip)
			}
			c.srv.perIPMu.Unlock()
		}
	})
}

// closeUnlessFlushing closes the connection unless a last answer is queued (an expired
// session's connect response, an error before close): its writer closes it once the
// answer is out.
func (c *conn) closeUnlessFlushing() {
	c.mu.Lock()
	flushing := c.closing
	c.mu.Unlock()
	if !flushing {
		c.close()
	}
}

func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// writeLoop encodes and writes queued frames, batching everything queued since the last
// write into one syscall.
func (c *conn) writeLoop() {
	defer c.srv.wg.Done()
	var batch []outMsg
	// One encoder for the connection's life: a local one would escape (the body's Encode
	// is an interface call) and cost an allocation per frame.
	e := new(jute.Encoder)
	var segs net.Buffers
	// zw compresses everything after a compressed session's ConnectResponse.
	var zw *chcompress.Writer
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		for {
			c.mu.Lock()
			batch, c.queue = c.queue, batch[:0]
			c.queued = 0
			closing := c.closing
			c.mu.Unlock()
			if len(batch) == 0 {
				if closing {
					c.close()
					return
				}
				break
			}
			// The buffer is the pool's between writes: an idle session holds none.
			bp := getBigBuf()
			buf := (*bp)[:0]
			var sz replySizes
			// segs holds the write's pieces when a big value goes out from the node's own
			// bytes; segStart is where the batch buffer's next piece begins.
			segs, segStart := segs[:0], 0
			c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.WriteTimeout))
			var err error
			for i := range batch {
				start := len(buf)
				if data := bigReplyData(&batch[i]); data != nil && zw == nil {
					buf, segs, segStart = c.appendBigFrame(e, buf, segs, segStart, &batch[i], data)
					sz.add(&batch[i], len(buf)-start+len(data))
				} else {
					buf = c.appendFrame(e, buf, &batch[i])
					sz.add(&batch[i], len(buf)-start)
				}
				if batch[i].compressAfter && err == nil {
					// The connection's first frame, so nothing is in segs.
					_, err = c.nc.Write(buf)
					buf = buf[:0]
					zw = new(chcompress.Writer)
				}
				batch[i] = outMsg{}
			}
			// Counted as serialized, before the write, as ZooKeeper counts them.
			sz.record(c.srv)
			switch {
			case err != nil:
			case zw != nil:
				err = zw.Write(c.nc, buf)
			case len(segs) == 0:
				_, err = c.nc.Write(buf)
			default:
				segs = append(segs, buf[segStart:])
				v := segs // WriteTo consumes its receiver
				_, err = v.WriteTo(c.nc)
				clear(segs)
			}
			e.Buf = nil
			*bp = buf
			putBigBuf(bp)
			if err != nil {
				c.close()
				return
			}
			c.sent.Add(int64(len(batch)))
			c.srv.packetsSent.Add(int64(len(batch)))
		}
	}
}

// bigReply is the size from which a getData reply's value is written from the node's own
// bytes (writev) instead of being copied into the batch buffer: for a 1 MiB value the copy,
// and the pooled buffer grown to hold it, cost more than the write.
const bigReply = 16 << 10

// bigReplyData is m's value when it goes out on its own.
func bigReplyData(m *outMsg) []byte {
	if gd, ok := m.body.(*jute.GetDataResponse); ok && len(gd.Data) >= bigReply && m.raw == nil && m.rawText == nil {
		return gd.Data
	}
	return nil
}

// appendBigFrame appends m's frame with its value, data, left out of buf: the pieces up to
// the value and the value go to segs, and the frame's rest starts the next piece.
func (c *conn) appendBigFrame(e *jute.Encoder, buf []byte, segs net.Buffers, segStart int, m *outMsg, data []byte) ([]byte, net.Buffers, int) {
	gd := m.body.(*jute.GetDataResponse)
	var stat [128]byte
	e.Buf = stat[:0]
	gd.Stat.Encode(e)
	tail := e.Buf
	buf, start := jute.StartFrame(buf)
	e.Buf = buf
	c.encodeHeader(e, &m.hdr)
	e.Int(int32(len(data)))
	buf = e.Buf
	e.Buf = nil
	// The length goes in before the piece is cut: a later append may move buf.
	binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-jute.FrameHeaderSize+len(data)+len(tail)))
	segs = append(segs, buf[segStart:], data)
	buf = append(buf, tail...)
	return buf, segs, len(buf) - len(tail)
}

func (c *conn) appendFrame(e *jute.Encoder, buf []byte, m *outMsg) []byte {
	if m.rawText != nil {
		return append(buf, m.rawText...)
	}
	buf, start := jute.StartFrame(buf)
	if m.raw != nil {
		buf = append(buf, m.raw...)
	} else {
		e.Buf = buf
		c.encodeHeader(e, &m.hdr)
		if m.body != nil {
			m.body.Encode(e)
		}
		buf = e.Buf
		e.Buf = nil
	}
	jute.EndFrame(buf, start)
	return buf
}

// readLoop reads frames and hands them to the core in order.
func (c *conn) readLoop() {
	defer c.srv.wg.Done()
	defer func() { c.srv.submit(event{kind: evClosed, c: c}) }()
	br := newConnReader(c.nc)
	defer br.release()
	var lenBuf [4]byte
	// in is br, or after a compressed session's handshake the blocks' data read from br.
	var in io.Reader = br
	first := true
	switch tc := c.nc.(type) {
	case *tls.Conn:
		if !c.tlsHandshake(tc) {
			c.close()
			return
		}
	case *tlsconf.UnifiedConn:
		// Detection and the handshake are bounded by the listener's detect timeout.
		if err := tc.Detect(); err != nil {
			c.srv.log.Info("closing connection before its protocol was known", "remote", c.remote, "err", err)
			c.close()
			return
		}
		if t := tc.TLS(); t != nil && !c.tlsHandshake(t) {
			c.close()
			return
		}
	}
	for {
		if first {
			c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.ConnectTimeout))
		}
		if _, err := io.ReadFull(in, lenBuf[:]); err != nil {
			if first && errors.Is(err, os.ErrDeadlineExceeded) {
				// No ConnectRequest within the connect timeout: ZooKeeper's connection
				// expirer closes such a connection.
				c.srv.counters.add(cntSessionlessConnectionsExpired, 1)
			}
			c.readFailed(err)
			return
		}
		n, lenErr := jute.FrameLen(lenBuf[:], c.srv.replyLimit(c))
		if first {
			if cmd, ok := c.srv.fourLetterWord(int32(n)); ok {
				c.fourLetter(cmd, br)
				return
			}
		}
		if lenErr != nil {
			if first && !c.isTLS() && looksLikeTLS(lenBuf) {
				c.srv.log.Warn("closing connection: a TLS client on a plaintext client port (use secureClientPort or client.portUnification)",
					"remote", c.remote)
				c.close()
				return
			}
			c.srv.log.Warn("closing connection", "remote", c.remote,
				"err", fmt.Errorf("%w (jute.maxbuffer)", lenErr))
			c.close()
			return
		}
		frame := make([]byte, n)
		var err error
		if _, err = io.ReadFull(in, frame); err != nil {
			c.readFailed(err)
			return
		}
		c.recv.Add(1)
		c.srv.packetsReceived.Add(1)
		c.srv.counters.add(cntBytesReceived, int64(n)+jute.FrameHeaderSize)
		if first {
			first = false
			// Under the connect timeout still: a version-11 request has one byte more.
			req, ok := c.readConnect(br, frame)
			if !ok {
				c.close()
				return
			}
			c.nc.SetReadDeadline(time.Time{})
			c.srv.submit(event{kind: evConnect, c: c, connect: req})
			select {
			case ok := <-c.established:
				if !ok {
					return
				}
				if c.compressed {
					in = chcompress.NewReader(br)
				}
			case <-c.done:
				return
			}
			continue
		}
		if c.xid64.Load() {
			if frame, err = c.narrowXID64(frame); err != nil {
				c.srv.log.Warn("closing connection", "remote", c.remote, "err", err)
				c.close()
				return
			}
		}
		r, err := decodeRequest(frame, c.srv.cfg.Extensions)
		if err == nil && n > c.srv.cfg.JuteMaxBuffer {
			// Only a connection that negotiated a larger limit gets here. The limit lets
			// reads grow (a setWatches or multiRead of many paths), never writes: every
			// member, Apache ZooKeeper followers included, and the log reader read txns
			// with jute.maxbuffer. So a write this long is refused as ZooKeeper refuses
			// any frame over jute.maxbuffer.
			if row := jute.LookupOp(r.hdr.Type); row == nil || row.Write {
				err = fmt.Errorf("%w: a %s request of %d bytes (writes stay within jute.maxbuffer, %d)",
					jute.ErrBadArguments, r.hdr.Type, n, c.srv.cfg.JuteMaxBuffer)
			}
		}
		if err != nil {
			c.srv.log.Warn("closing connection", "remote", c.remote, "err", err)
			c.close()
			return
		}
		if r.hdr.Type == jute.OpSASL && c.srv.cfg.NewSASLServer != nil {
			if b, ok := r.body.(*jute.SASLToken); ok && r.bodyErr == nil && b.Token != nil {
				r.sasl = c.saslStep(b.Token)
			}
		}
		r.recv = time.Now()
		if !c.srv.acquire(c) {
			return
		}
		c.srv.submit(event{kind: evRequest, c: c, req: r})
	}
}

// readConnect decodes the first frame, a ConnectRequest: ZooKeeper's, or with the wide
// extension a version-11 one in ClickHouse's layout (xid64.go). ok is false when the
// connection is to be closed (it logged why).
func (c *conn) readConnect(br io.Reader, frame []byte) (*jute.ConnectRequest, bool) {
	if c.srv.cfg.Extensions.Has(ext.Wide) {
		req, is, err := readXID64Connect(frame, func(b []byte) error { _, err := io.ReadFull(br, b); return err })
		switch {
		case err != nil:
			c.srv.log.Warn("closing connection", "remote", c.remote, "err", err)
			return nil, false
		case is && req.Compression:
			// ClickHouse's client asks for compression with 64-bit xids, and without it
			// when the connection fails; zkd compresses only version 10 sessions
			// (docs/beyond.md).
			c.srv.log.Info("closing connection: compression requested, not served", "remote", c.remote)
			return nil, false
		case is:
			c.xid64.Store(true)
			return req, true
		}
	}
	var req jute.ConnectRequest
	d := jute.Decoder{B: frame}
	req.Decode(&d)
	if d.Err() != nil || d.Remaining() != 0 {
		c.srv.log.Warn("closing connection", "remote", c.remote, "err", fmt.Errorf("bad ConnectRequest: %w", errOr(d.Err(), "trailing bytes")))
		return nil, false
	}
	return &req, true
}

func errOr(err error, s string) error {
	if err != nil {
		return err
	}
	return errors.New(s)
}

func (c *conn) readFailed(err error) {
	c.mu.Lock()
	ours := c.closed || c.closing
	c.mu.Unlock()
	if !ours && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		// The client closed the socket without being told to: NIOServerCnxn's
		// handleFailedRead.
		c.srv.counters.add(cntConnectionDrop, 1)
	}
	if errors.Is(err, io.EOF) || c.isClosed() {
		c.closeUnlessFlushing()
		return
	}
	if errors.Is(err, chcompress.ErrChecksum) || errors.Is(err, chcompress.ErrBadBlock) {
		// Only this connection is lost: its stream cannot be trusted past the block.
		c.srv.log.Warn("closing connection: bad compressed block", "remote", c.remote, "err", err)
	} else if errors.Is(err, io.ErrUnexpectedEOF) {
		c.srv.log.Info("connection closed mid-frame", "remote", c.remote)
	} else if c.isTLS() && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, net.ErrClosed) {
		// A bad TLS record (not sealed with the session's keys, not a record at all) is
		// bad input from the client, worth an operator's attention.
		c.srv.log.Warn("closing connection: TLS error", "remote", c.remote, "err", err)
	} else {
		c.srv.log.Debug("connection read error", "remote", c.remote, "err", err)
	}
	c.close()
}
