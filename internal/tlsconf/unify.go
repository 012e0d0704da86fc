package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// IsTLSHandshake reports whether the first bytes of a connection start a TLS handshake
// record: content type 22 (handshake), then major version 3 (SSL 3.0 to TLS 1.3 all put
// 0x03 0x00..0x04 there). It needs 3 bytes; with fewer it reports whether they could
// still be one (a plaintext ZooKeeper request starts with a 4-byte length below 2^24, or
// a four-letter word, so its first byte is never 0x16).
func IsTLSHandshake(b []byte) bool {
	if len(b) >= 1 && b[0] != 0x16 {
		return false
	}
	if len(b) >= 2 && b[1] != 0x03 {
		return false
	}
	if len(b) >= 3 && b[2] > 0x04 {
		return false
	}
	return true
}

// Unify returns a listener whose connections are TLS (served with cfg) when the client
// starts a TLS handshake and plaintext otherwise, as ZooKeeper's port unification
// (UnifiedServerSocket, Netty's OptionalSslHandler) does. Accept does not wait for the
// client: the detection happens in the connection's first Read or Write, so one slow client
// holds up no other. A client that has not sent enough to tell, or not finished its TLS
// handshake, within detectTimeout is closed (that Read or Write returns the error).
func Unify(ln net.Listener, cfg *tls.Config, detectTimeout time.Duration) net.Listener {
	if detectTimeout <= 0 {
		detectTimeout = DefaultHandshakeDetectionTimeout
	}
	return &unifiedListener{Listener: ln, cfg: cfg, timeout: detectTimeout}
}

type unifiedListener struct {
	net.Listener
	cfg     *tls.Config
	timeout time.Duration
}

func (l *unifiedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &UnifiedConn{raw: c, cfg: l.cfg, timeout: l.timeout}, nil
}

// UnifiedConn is a connection accepted by a Unify listener. Until its first Read or Write it
// does not know whether it is TLS.
type UnifiedConn struct {
	raw     net.Conn
	cfg     *tls.Config
	timeout time.Duration

	once sync.Once
	err  error    // of the detection
	conn net.Conn // the plaintext conn (prefix replayed) or the *tls.Conn

	dmu             sync.Mutex
	detected        bool
	readDL, writeDL time.Time // deadlines the caller set before detection
}

// detect reads the first bytes and sets up the connection; a failure closes it.
func (c *UnifiedConn) detect() error {
	c.once.Do(func() {
		err := c.doDetect()
		if err != nil {
			c.raw.Close()
		}
		c.dmu.Lock()
		defer c.dmu.Unlock()
		c.err, c.detected = err, true
		if err == nil {
			// The caller's own deadlines, which detection overrode.
			c.raw.SetReadDeadline(c.readDL)
			c.raw.SetWriteDeadline(c.writeDL)
		}
	})
	return c.err
}

func (c *UnifiedConn) doDetect() error {
	if err := c.raw.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return fmt.Errorf("port unification: %w", err)
	}
	var buf [3]byte
	n := 0
	for n < len(buf) && IsTLSHandshake(buf[:n]) {
		m, err := c.raw.Read(buf[n:])
		n += m
		if err != nil {
			if n > 0 && !IsTLSHandshake(buf[:n]) {
				break // plaintext whose first bytes came with the error (EOF)
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("port unification: %v sent too little to tell TLS from plaintext in %v: %w", c.raw.RemoteAddr(), c.timeout, err)
			}
			if n == 0 && errors.Is(err, io.EOF) {
				return io.EOF
			}
			return fmt.Errorf("port unification: %w", err)
		}
	}
	pc := &prefixConn{Conn: c.raw, prefix: append([]byte(nil), buf[:n]...)}
	if !IsTLSHandshake(buf[:n]) {
		c.conn = pc
		return nil
	}
	tc := tls.Server(pc, c.cfg)
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("TLS handshake with %v: %w", c.raw.RemoteAddr(), err)
	}
	c.conn = tc
	return nil
}

// Read detects the protocol on the first call, then reads.
func (c *UnifiedConn) Read(b []byte) (int, error) {
	if err := c.detect(); err != nil {
		return 0, err
	}
	return c.conn.Read(b)
}

// Write detects the protocol on the first call (waiting for the client), then writes.
func (c *UnifiedConn) Write(b []byte) (int, error) {
	if err := c.detect(); err != nil {
		return 0, err
	}
	return c.conn.Write(b)
}

// Close closes the connection (without a TLS close_notify before detection).
func (c *UnifiedConn) Close() error {
	c.dmu.Lock()
	ok := c.detected && c.err == nil
	c.dmu.Unlock()
	if ok {
		return c.conn.Close()
	}
	return c.raw.Close()
}

func (c *UnifiedConn) LocalAddr() net.Addr  { return c.raw.LocalAddr() }
func (c *UnifiedConn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

// SetDeadline sets both deadlines; before detection they take effect after it.
func (c *UnifiedConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *UnifiedConn) SetReadDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if !c.detected {
		c.readDL = t
		return nil
	}
	return c.raw.SetReadDeadline(t)
}

func (c *UnifiedConn) SetWriteDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if !c.detected {
		c.writeDL = t
		return nil
	}
	return c.raw.SetWriteDeadline(t)
}

// TLS returns the TLS connection, or nil for a plaintext one or before detection.
func (c *UnifiedConn) TLS() *tls.Conn {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if !c.detected || c.err != nil {
		return nil
	}
	tc, _ := c.conn.(*tls.Conn)
	return tc
}

// Detect runs the detection (and the TLS handshake) now rather than on the first Read.
func (c *UnifiedConn) Detect() error { return c.detect() }

// prefixConn replays the bytes read for detection before the rest of the stream.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// PeerCertificates returns the certificate chain a TLS client presented on c, a *tls.Conn or
// a connection from Unify, after the handshake; nil for plaintext, no certificate or a
// handshake not yet done.
func PeerCertificates(c net.Conn) []*x509.Certificate {
	var tc *tls.Conn
	switch v := c.(type) {
	case *tls.Conn:
		tc = v
	case *UnifiedConn:
		tc = v.TLS()
	}
	if tc == nil {
		return nil
	}
	cs := tc.ConnectionState()
	if !cs.HandshakeComplete || len(cs.PeerCertificates) == 0 {
		return nil
	}
	return cs.PeerCertificates
}

// NetConn returns the underlying connection (for socket options such as TCP_NODELAY).
func (c *UnifiedConn) NetConn() net.Conn { return c.raw }
