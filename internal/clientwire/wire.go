package clientwire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkd-io/zkd/internal/chcompress"
	"github.com/zkd-io/zkd/jute"
)

// ErrClosed is the cause of a connection killed with a nil error.
var ErrClosed = errors.New("clientwire: connection closed")

// ErrBadConnectResponse is wrapped by Handshake's error when the server's answer does not
// decode.
var ErrBadConnectResponse = errors.New("bad ConnectResponse")

// PingFrame is a ping request, framed: xid XidPing, no body.
var PingFrame = jute.AppendFrame(nil, jute.Marshal(&jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing}))

// PingFrame64 is PingFrame with a 64-bit xid (protocol version 11).
var PingFrame64 = jute.AppendFrame(nil, jute.Marshal(&jute.RequestHeader64{Xid: int64(jute.XidPing), Type: jute.OpPing}))

// Config is what a connection needs beyond its socket.
type Config struct {
	Addr       string // the server's, for errors
	MaxFrame   int    // the longest frame read; longer ones kill the connection
	ReadBuffer int    // the read buffer's size; 0 is 64 KiB
	// WriteTimeout bounds each write of a batch; 0 is none (a dead peer is found by the
	// read deadline).
	WriteTimeout time.Duration
	// Oversize, when set, is called by ReadLoop for a frame longer than MaxFrame instead of
	// ending the connection: it gets the frame's first jute.ReplyHeaderSize bytes (the
	// reply header, which says which request it answers) and the frame's length, and the
	// rest of the frame is read and dropped. A client that fails that one request keeps its
	// connection, where closing it would make the caller retry into the same reply forever
	// (the jute.maxbuffer reconnect loop). A non-nil return ends ReadLoop with it.
	Oversize func(hdr []byte, n int) error
	// XID64: the connection speaks protocol version 11 (64-bit xids): pings carry a
	// RequestHeader64, and Oversize gets a ReplyHeader64.
	XID64 bool
}

func (cfg *Config) replyHeaderSize() int {
	if cfg.XID64 {
		return jute.ReplyHeader64Size
	}
	return jute.ReplyHeaderSize
}

// Conn is one client TCP connection. Before WriteLoop runs, WriteFrame and ReadFrame speak
// to the server directly (handshake, SASL); after, frames go through Send, and ReadLoop
// reads them.
type Conn struct {
	nc  net.Conn
	br  *bufio.Reader
	cfg Config

	// maxFrame is cfg.MaxFrame, raised by SetMaxFrame while ReadLoop runs.
	maxFrame atomic.Int64
	// zw, once StartCompression ran, writes frames in ClickHouse's compressed blocks.
	zw *chcompress.Writer

	readTimeout  time.Duration // no frame for this long: the connection is dead; 0: never
	pingInterval time.Duration // nothing sent for this long: ping; 0: never

	mu    sync.Mutex
	outq  [][]byte
	spare [][]byte
	dead  bool
	err   error // why the connection ended; the first cause wins

	kick       chan struct{} // cap 1: the output queue is not empty
	stop       chan struct{} // closed when the connection dies
	writerDone chan struct{}
}

// New wraps nc, which the Conn owns from now on.
func New(nc net.Conn, cfg Config) *Conn {
	size := cfg.ReadBuffer
	if size <= 0 {
		size = 64 << 10
	}
	c := &Conn{
		nc:         nc,
		br:         bufio.NewReaderSize(nc, size),
		cfg:        cfg,
		kick:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		writerDone: make(chan struct{}),
	}
	c.maxFrame.Store(int64(cfg.MaxFrame))
	return c
}

// SetMaxFrame changes the longest frame read from the next frame on (a limit negotiated
// with the server); safe while ReadLoop runs.
func (c *Conn) SetMaxFrame(n int) { c.maxFrame.Store(int64(n)) }

// MaxFrame is the longest frame read now.
func (c *Conn) MaxFrame() int { return int(c.maxFrame.Load()) }

// NetConn is the socket, for deadlines around the handshake.
func (c *Conn) NetConn() net.Conn { return c.nc }

// SetTimeouts sets the read deadline and the ping interval; call it before the loops run.
func (c *Conn) SetTimeouts(read, ping time.Duration) {
	c.readTimeout, c.pingInterval = read, ping
}

// ReadTimeout is what SetTimeouts set.
func (c *Conn) ReadTimeout() time.Duration { return c.readTimeout }

// Handshake sends req and reads the ConnectResponse; the caller bounds it with a deadline
// on NetConn. A response that does not decode is an ErrBadConnectResponse.
func (c *Conn) Handshake(req *jute.ConnectRequest) (*jute.ConnectResponse, error) {
	frame := jute.AppendFrame(nil, jute.Marshal(req))
	if req.XID64 {
		// As ClickHouse's client counts it, so that ClickHouse Keeper takes it too.
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-jute.FrameHeaderSize-jute.XID64ConnectUndercount))
	}
	if _, err := c.nc.Write(frame); err != nil {
		return nil, err
	}
	frame, err := c.ReadFrame()
	if err != nil {
		return nil, err
	}
	var resp jute.ConnectResponse
	if err := jute.Unmarshal(frame, &resp); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConnectResponse, err)
	}
	return &resp, nil
}

// WriteFrame writes payload as one frame at once; only before WriteLoop runs.
func (c *Conn) WriteFrame(payload []byte) error {
	if c.zw != nil {
		return c.zw.Write(c.nc, jute.AppendFrame(nil, payload))
	}
	return jute.WriteFrame(c.nc, payload)
}

// StartCompression makes everything read and written from now on go in ClickHouse's
// compressed blocks (internal/chcompress): ClickHouse Keeper's compressed session, which
// starts right after a ConnectResponse with protocol version 10. Call it after Handshake,
// before the loops run.
func (c *Conn) StartCompression() {
	c.br = bufio.NewReaderSize(chcompress.NewReader(c.br), c.br.Size())
	c.zw = new(chcompress.Writer)
}

// ReadFrame reads one frame's payload; only while ReadLoop does not run. A length out of
// range is a jute.FrameSizeError.
func (c *Conn) ReadFrame() ([]byte, error) { return jute.ReadFrame(c.br, c.MaxFrame()) }

// Send queues a framed request for the writer. It fails with the cause once the connection
// is dead. Frames go out in the order of the Send calls that queued them, so a caller that
// records a request (its xid, its pending entry) under its own lock and calls Send under
// the same lock keeps its records in wire order.
func (c *Conn) Send(frame []byte) error {
	c.mu.Lock()
	if c.dead {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.outq = append(c.outq, frame)
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return nil
}

// Kill ends the connection: Send fails from now on, the socket is closed (which ends
// ReadLoop) and WriteLoop returns. The first cause is kept; nil is ErrClosed.
func (c *Conn) Kill(err error) {
	if err == nil {
		err = ErrClosed
	}
	c.mu.Lock()
	if !c.dead {
		c.dead = true
		c.err = err
		close(c.stop)
	}
	c.mu.Unlock()
	c.nc.Close()
}

// Cause is why the connection died, nil while it lives.
func (c *Conn) Cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Dead is closed when the connection dies.
func (c *Conn) Dead() <-chan struct{} { return c.stop }

// WriterDone is closed when WriteLoop has returned.
func (c *Conn) WriterDone() <-chan struct{} { return c.writerDone }

// WriteLoop writes queued frames in batches (one writev per batch) and pings when nothing
// has been sent for the ping interval, until the connection dies; a failed write kills it.
func (c *Conn) WriteLoop() {
	defer close(c.writerDone)
	var raw []byte // a compressed connection's batch, joined: reused
	var ping <-chan time.Time
	var timer *time.Timer
	if c.pingInterval > 0 {
		timer = time.NewTimer(c.pingInterval)
		defer timer.Stop()
		ping = timer.C
	}
	for {
		select {
		case <-c.kick:
		case <-ping:
			c.mu.Lock()
			if len(c.outq) == 0 {
				if c.cfg.XID64 {
					c.outq = append(c.outq, PingFrame64)
				} else {
					c.outq = append(c.outq, PingFrame)
				}
			}
			c.mu.Unlock()
		case <-c.stop:
			return
		}
		c.mu.Lock()
		batch := c.outq
		c.outq, c.spare = c.spare[:0], nil
		c.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		if c.cfg.WriteTimeout > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(c.cfg.WriteTimeout))
		}
		var err error
		if c.zw != nil {
			// One set of blocks for the batch: a block per frame would cost the 25-byte
			// header and a checksum each.
			raw = raw[:0]
			for _, f := range batch {
				raw = append(raw, f...)
			}
			err = c.zw.Write(c.nc, raw)
			if cap(raw) > 4<<20 {
				raw = nil // a big batch's buffer is not kept for the small ones after it
			}
		} else {
			bufs := net.Buffers(batch)
			_, err = bufs.WriteTo(c.nc)
		}
		if err != nil {
			c.Kill(fmt.Errorf("write to %s: %w", c.cfg.Addr, err))
			return
		}
		clear(batch)
		c.mu.Lock()
		c.spare = batch[:0]
		c.mu.Unlock()
		if timer != nil {
			timer.Reset(c.pingInterval)
		}
	}
}

// ReadLoop reads frames and hands each payload to handle until reading fails or handle
// returns an error, and returns that error: a read timeout says how long the server was
// silent. handle runs on ReadLoop's goroutine and may keep the payload.
func (c *Conn) ReadLoop(handle func(frame []byte) error) error {
	for {
		if c.readTimeout > 0 {
			if err := c.nc.SetReadDeadline(time.Now().Add(c.readTimeout)); err != nil {
				return err
			}
		}
		frame, err := c.ReadFrame()
		var fe *jute.FrameSizeError
		if err != nil && c.cfg.Oversize != nil && errors.As(err, &fe) && int(fe.Len) >= c.cfg.replyHeaderSize() {
			err = c.skipOversize(int(fe.Len))
			if err == nil {
				continue
			}
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("no reply from %s for %v: %w", c.cfg.Addr, c.readTimeout, err)
			}
			return err
		}
		if err := handle(frame); err != nil {
			return err
		}
	}
}

// skipOversize reads the header of an oversize frame whose length prefix was just read,
// drops the rest without holding it, and hands the header to cfg.Oversize.
func (c *Conn) skipOversize(n int) error {
	hdr := make([]byte, c.cfg.replyHeaderSize())
	if _, err := io.ReadFull(c.br, hdr); err != nil {
		return err
	}
	if _, err := io.CopyN(io.Discard, c.br, int64(n-len(hdr))); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	return c.cfg.Oversize(hdr, n)
}
