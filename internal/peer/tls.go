package peer

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/zkd-io/zkd/internal/tlsconf"
)

// TLS makes the quorum's connections (election and learner-to-leader) TLS, as ZooKeeper's
// sslQuorum and portUnification do: a dialer uses TLS when Client is set (sslQuorum); a
// listener serves TLS only when Server is set, and with AllowPlaintext plaintext as well,
// told apart by the first bytes (portUnification, ZooKeeper's UnifiedServerSocket). The zero
// value, or a nil *TLS, is plaintext both ways.
//
// The handshakes run on the connection's own goroutine (the caller's), bounded by the
// timeout the caller passes, so a slow or hostile peer holds up nothing else.
type TLS struct {
	// Server serves the listening side; it should require and verify a client certificate.
	// nil = the listener is plaintext.
	Server *tls.Config
	// AllowPlaintext, with Server, also accepts plaintext peers (portUnification). Without
	// Server a listener is plaintext anyway.
	AllowPlaintext bool
	// DetectTimeout bounds the wait for the first bytes that tell TLS from plaintext
	// (ssl.quorum.handshakeDetectionTimeoutMillis); 0 = the caller's timeout alone.
	DetectTimeout time.Duration
	// Client returns the configuration to dial a peer at host (its name or IP address as
	// configured). nil = dial plaintext.
	Client func(host string) (*tls.Config, error)
	// HostnameVerification checks a listener's certificate as ZooKeeper's ZKTrustManager
	// does, after Client's configuration accepted its chain: against the IP address dialed,
	// then against the host name (the configured one, or the address's reverse-DNS names).
	HostnameVerification bool
}

// NewTLS makes the quorum's TLS from the ssl.quorum.* settings, as ZooKeeper's QuorumPeer
// uses them: the listeners serve TLS (and plaintext too with portUnification) with the
// keystore's certificate, requiring a client certificate per st.ClientAuth; with sslQuorum
// the dialers use TLS, checking the listener's chain against the truststore and, with
// st.HostnameVerification, its name as ZKTrustManager does. The stores are read now, so a
// bad one is an error here rather than at every connection.
func NewTLS(st tlsconf.Settings, sslQuorum, portUnification bool, logger *slog.Logger) (*TLS, error) {
	srv, err := st.ServerConfig(logger)
	if err != nil {
		return nil, err
	}
	t := &TLS{Server: srv, AllowPlaintext: portUnification, DetectTimeout: st.HandshakeDetectionTimeout}
	if sslQuorum {
		chainOnly := st
		chainOnly.HostnameVerification = false
		cc, err := chainOnly.ClientConfig("", logger)
		if err != nil {
			return nil, err
		}
		t.Client = func(string) (*tls.Config, error) { return cc, nil }
		t.HostnameVerification = st.HostnameVerification
	}
	return t, nil
}

// Dials reports whether dialed connections are TLS.
func (t *TLS) Dials() bool { return t != nil && t.Client != nil }

// Listens reports whether the listener serves TLS (perhaps beside plaintext).
func (t *TLS) Listens() bool { return t != nil && t.Server != nil }

// Accepted secures a connection a listener accepted: a TLS handshake as the server (when
// Server is set and, with AllowPlaintext, the peer starts one), finished within timeout or
// by ctx. It returns the connection to use, which for plaintext replays the bytes looked
// at. On error nc is closed. The deadlines of nc are cleared on success.
func (t *TLS) Accepted(ctx context.Context, nc net.Conn, timeout time.Duration) (net.Conn, error) {
	if !t.Listens() {
		return nc, nil
	}
	deadline := time.Now().Add(timeout)
	conn := nc
	if t.AllowPlaintext {
		dd := deadline
		if t.DetectTimeout > 0 {
			dd = time.Now().Add(t.DetectTimeout)
		}
		if err := nc.SetReadDeadline(dd); err != nil {
			nc.Close()
			return nil, fmt.Errorf("peer: %w", err)
		}
		isTLS, pc, err := detectTLS(nc)
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("peer: telling TLS from plaintext on the connection from %v: %w", nc.RemoteAddr(), err)
		}
		if !isTLS {
			if err := nc.SetReadDeadline(time.Time{}); err != nil {
				nc.Close()
				return nil, fmt.Errorf("peer: %w", err)
			}
			return pc, nil
		}
		conn = pc
	}
	tc := tls.Server(conn, t.Server)
	if err := handshake(ctx, tc, nc, deadline); err != nil {
		return nil, fmt.Errorf("peer: TLS handshake with %v: %w", nc.RemoteAddr(), err)
	}
	return quickClose{tc}, nil
}

// Dialed secures a connection dialed to addr ("host:port"): a TLS handshake as the client
// when Client is set, finished within timeout or by ctx. On error nc is closed.
func (t *TLS) Dialed(ctx context.Context, nc net.Conn, addr string, timeout time.Duration) (net.Conn, error) {
	if !t.Dials() {
		return nc, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("peer: address %q: %w", addr, err)
	}
	cfg, err := t.Client(host)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("peer: TLS configuration for %s: %w", host, err)
	}
	if t.HostnameVerification {
		cfg = cfg.Clone()
		chain, remote := cfg.VerifyConnection, nc.RemoteAddr()
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if chain != nil {
				if err := chain(cs); err != nil {
					return err
				}
			}
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server sent no certificate")
			}
			return verifyServerHost(cs.PeerCertificates[0], host, remote, net.LookupAddr)
		}
	}
	tc := tls.Client(nc, cfg)
	if err := handshake(ctx, tc, nc, time.Now().Add(timeout)); err != nil {
		return nil, fmt.Errorf("peer: TLS handshake with %s: %w", addr, err)
	}
	return quickClose{tc}, nil
}

// verifyServerHost checks a listener's certificate against the address dialed, then the
// host: the configured name, or for a configured address the names lookup gives for it.
func verifyServerHost(cert *x509.Certificate, host string, remote net.Addr, lookup func(string) ([]string, error)) error {
	var ip string
	if ta, ok := remote.(*net.TCPAddr); ok {
		ip = ta.IP.String()
	} else if h, _, err := net.SplitHostPort(remote.String()); err == nil {
		ip = h
	}
	ipErr := cert.VerifyHostname(ip)
	if ipErr == nil {
		return nil
	}
	names := []string{host}
	if net.ParseIP(host) != nil {
		names, _ = lookup(ip)
	}
	for _, n := range names {
		if n != "" && cert.VerifyHostname(strings.TrimSuffix(n, ".")) == nil {
			return nil
		}
	}
	return fmt.Errorf("tls: the certificate of %s matches neither its address nor its name: %w", host, ipErr)
}

// handshake runs tc's handshake with raw's deadlines at deadline and ctx able to cut it
// short, then clears them; raw is closed on failure.
func handshake(ctx context.Context, tc *tls.Conn, raw net.Conn, deadline time.Time) error {
	if err := raw.SetDeadline(deadline); err != nil {
		raw.Close()
		return err
	}
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return err
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		raw.Close()
		return err
	}
	return nil
}

// detectTLS reads the first bytes of nc and reports whether they start a TLS handshake
// record: 0x16 (handshake), 0x03, 0x00..0x04 (SSL 3.0 to TLS 1.3). A plaintext election
// header starts with a negative protocol version (0xff) or an old server's sid (0x00); a
// learner's first QuorumPacket with its type (0x00). The returned conn replays the bytes.
func detectTLS(nc net.Conn) (bool, net.Conn, error) {
	br := bufio.NewReaderSize(nc, 16)
	pc := &peekedConn{Conn: nc, r: br}
	for n := 1; n <= 3; n++ {
		b, err := br.Peek(n)
		if err != nil {
			// b, shorter than n, was a TLS prefix: the peer stopped (or timed out) mid-way.
			if errors.Is(err, io.EOF) && len(b) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return false, nil, err
		}
		if !isTLSPrefix(b) {
			return false, pc, nil
		}
	}
	return true, pc, nil
}

// isTLSPrefix reports whether b can start a TLS handshake record.
func isTLSPrefix(b []byte) bool {
	return (len(b) < 1 || b[0] == 0x16) && (len(b) < 2 || b[1] == 0x03) && (len(b) < 3 || b[2] <= 0x04)
}

// quickClose is a TLS connection whose Close closes the socket at once, without the
// close_notify alert crypto/tls first writes (waiting up to 5 s for a peer that does not
// read): connections are closed from goroutines that must not wait, such as the server's
// core, and neither quorum protocol needs the alert.
type quickClose struct{ *tls.Conn }

func (c quickClose) Close() error { return c.Conn.NetConn().Close() }

// peekedConn reads through the buffer that holds the bytes detection looked at.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }
