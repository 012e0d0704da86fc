package httpadmin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/zkd-io/zkd/internal/tlsconf"
)

// The AdminServer over HTTPS (ZooKeeper 3.9's JettyAdminServer with admin.forceHttps or
// admin.portUnification): the key and trust stores are the quorum's (ssl.quorum.*, read as
// QuorumX509Util names them), client certificates are required with admin.needClientAuth
// and not asked for otherwise (Jetty's SslContextFactory), and an HTTPS request's client
// certificate is what the x509 scheme of the snapshot and restore commands authenticates,
// checked again against the client port's truststore (ssl.trustStore) as
// X509AuthenticationProvider does.

// TLS is the AdminServer's HTTPS configuration; build it with NewTLS.
type TLS struct {
	// Config serves the TLS side.
	Config *tls.Config
	// ForceHTTPS serves TLS only (admin.forceHttps); otherwise TLS and plain HTTP share the
	// port, told apart by the first byte (admin.portUnification).
	ForceHTTPS bool
	// DetectTimeout bounds how long a client on a unified port may take to show which it
	// speaks and to finish its TLS handshake.
	DetectTimeout time.Duration
	// VerifyX509 checks an HTTPS client's certificate chain before it becomes an x509 id
	// (X509AuthenticationProvider's trust manager, from ssl.trustStore). nil: the x509
	// scheme authenticates nobody, as ZooKeeper's provider without a truststore.
	VerifyX509 func(chain []*x509.Certificate) error
}

// TLSOptions are the settings NewTLS combines.
type TLSOptions struct {
	// Quorum is the ssl.quorum.* settings (tlsconf.Parse with tlsconf.QuorumPrefix): their
	// key and trust stores serve HTTPS. Both stores are required, as JettyAdminServer
	// loads both. Their clientAuth, protocol, enabledProtocols, ciphersuites and host name
	// settings do not apply: Jetty keeps its own defaults (TLSv1.2 and TLSv1.3, no host
	// name check of clients).
	Quorum tlsconf.Settings
	// Client is the ssl.* settings, whose truststore checks x509 identities; nil (or one
	// without a truststore) leaves VerifyX509 nil.
	Client *tlsconf.Settings
	// ForceHTTPS is admin.forceHttps, NeedClientAuth admin.needClientAuth.
	ForceHTTPS, NeedClientAuth bool
	Logger                     *slog.Logger
}

// NewTLS loads the stores and builds the AdminServer's HTTPS configuration. Any store that
// does not load is an error: the AdminServer is not served without the TLS it was
// configured with.
func NewTLS(o TLSOptions) (*TLS, error) {
	q := o.Quorum
	if q.KeyStore.Location == "" {
		return nil, fmt.Errorf("admin server HTTPS: %skeyStore.location is not set", q.Prefix)
	}
	if q.TrustStore.Location == "" {
		return nil, fmt.Errorf("admin server HTTPS: %strustStore.location is not set", q.Prefix)
	}
	q.ClientAuth = tlsconf.ClientAuthNone
	if o.NeedClientAuth {
		q.ClientAuth = tlsconf.ClientAuthNeed
	}
	q.ClientHostnameVerification = false
	q.MinVersion, q.MaxVersion, q.CipherSuites = tls.VersionTLS12, tls.VersionTLS13, nil
	cfg, err := q.ServerConfig(o.Logger)
	if err != nil {
		return nil, fmt.Errorf("admin server HTTPS: %w", err)
	}
	a := &TLS{Config: cfg, ForceHTTPS: o.ForceHTTPS, DetectTimeout: q.HandshakeDetectionTimeout}
	if o.Client != nil && o.Client.TrustStore.Location != "" {
		if a.VerifyX509, err = o.Client.ChainVerifier(o.Logger); err != nil {
			return nil, fmt.Errorf("admin server x509 authentication: %w", err)
		}
	}
	return a, nil
}

// stsHeader is what Jetty's SecureRequestCustomizer adds to every HTTPS answer in
// ZooKeeper's AdminServer (a day, subdomains included).
const stsHeader = "max-age=86400; includeSubDomains"

// connKey keys the accepted connection in a request's context: a request on a unified
// port learns from it whether it came over TLS, and with which certificates.
type connKey struct{}

// WrapListener makes the AdminServer's listener speak TLS per a (nil: plain HTTP). On a
// unified port, insecure is called for each plain-HTTP connection, as
// UnifiedConnectionFactory counts them in insecure_admin_count.
func WrapListener(ln net.Listener, a *TLS, insecure func(), log *slog.Logger) net.Listener {
	if a == nil {
		return ln
	}
	if a.ForceHTTPS {
		return tls.NewListener(ln, a.Config)
	}
	return &insecureCounter{Listener: tlsconf.Unify(ln, a.Config, a.DetectTimeout), insecure: insecure, log: log}
}

// insecureCounter counts when the connection's protocol is known, on the connection's own
// goroutine (its first Read).
type insecureCounter struct {
	net.Listener
	insecure func()
	log      *slog.Logger
}

func (l *insecureCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if uc, ok := c.(*tlsconf.UnifiedConn); ok {
		return &countingConn{UnifiedConn: uc, l: l}, nil
	}
	return c, nil
}

type countingConn struct {
	*tlsconf.UnifiedConn
	l    *insecureCounter
	once sync.Once
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.UnifiedConn.Read(b)
	c.once.Do(func() {
		switch derr := c.UnifiedConn.Detect(); {
		case derr == nil:
			if c.UnifiedConn.TLS() == nil {
				c.l.insecure()
			}
		case !errors.Is(derr, io.EOF) && !errors.Is(derr, net.ErrClosed):
			// A failed handshake, or a client that sent too little to tell.
			c.l.log.Warn("admin server connection closed", "remote", c.RemoteAddr().String(), "err", derr)
		}
	})
	return n, err
}

// ConnState is the TLS state of the connection a request came on, nil for plain HTTP.
func ConnState(r *http.Request) *tls.ConnectionState {
	if r.TLS != nil {
		return r.TLS
	}
	var c net.Conn
	switch v := r.Context().Value(connKey{}).(type) {
	case *countingConn:
		c = v.UnifiedConn
	case net.Conn:
		c = v
	}
	if uc, ok := c.(*tlsconf.UnifiedConn); ok {
		if tc := uc.TLS(); tc != nil {
			st := tc.ConnectionState()
			return &st
		}
	}
	return nil
}

// ConnContext records the connection in each of its requests' contexts (http.Server's
// ConnContext): ConnState reads it.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}
