package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	hexenc "encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/zkd-io/zkd/internal/tlsconf"
	"github.com/zkd-io/zkd/jute"
)

// Client TLS (issue 12): the secure client port, and the x509 authentication of a client by
// its certificate, as ZooKeeper's NettyServerCnxnFactory does it on handshake completion.

// listenSecure binds the secure client port when one is configured.
func (s *Server) listenSecure() error {
	if s.cfg.SecureListenAddr == "" || s.secureLn != nil {
		return nil
	}
	if s.cfg.TLS == nil {
		return fmt.Errorf("server: secure client port %s configured without TLS settings", s.cfg.SecureListenAddr)
	}
	ln, err := net.Listen("tcp", s.cfg.SecureListenAddr)
	if err != nil {
		return fmt.Errorf("server: listen on secure client port %s: %w", s.cfg.SecureListenAddr, err)
	}
	s.secureLn = tls.NewListener(ln, s.cfg.TLS)
	return nil
}

// SecureAddr is the address TLS clients connect to, "" when there is no secure port.
func (s *Server) SecureAddr() string {
	if s.secureLn == nil {
		return ""
	}
	return s.secureLn.Addr().String()
}

// tlsHandshake completes a TLS connection's handshake (bounded by the connect timeout the
// caller set) and derives the x509 ids its client certificate gives. ok false means the
// connection must be closed; the reason is logged.
func (c *conn) tlsHandshake(tc *tls.Conn) (ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), c.srv.cfg.ConnectTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.srv.counters.add(cntUnsuccessfulHandshake, 1)
		if errors.Is(err, context.DeadlineExceeded) {
			// A bare "context deadline exceeded" does not tell an operator what happened.
			err = fmt.Errorf("no complete TLS handshake within %v (a client that is not speaking TLS, or a stalled one): %w",
				c.srv.cfg.ConnectTimeout, err)
		}
		c.srv.log.Warn("TLS handshake failed: closing connection", "remote", c.remote, "err", err)
		return false
	}
	st := tc.ConnectionState()
	if c.srv.cfg.TLS.ClientAuth == tls.NoClientCert {
		return true
	}
	if len(st.PeerCertificates) == 0 {
		// Asked for (want) and not given: ZooKeeper keeps the connection with no x509 id.
		return true
	}
	if !c.srv.cfg.AuthProviders.X509 {
		// NettyServerCnxnFactory's CertificateVerifier: "X509 Auth provider not found". The
		// provider is there by default with a secure client port (config.X509Registered);
		// this is client.portUnification alone, or authProvider.x509 naming another class.
		c.srv.log.Error("X509 Auth provider not found: x509 (set authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider): closing connection",
			"remote", c.remote)
		return false
	}
	id, err := X509ID(st.PeerCertificates[0])
	if err != nil {
		c.srv.log.Error("x509 authentication failed: closing connection", "remote", c.remote, "err", err)
		return false
	}
	c.certIDs = []jute.ID{{Scheme: "x509", ID: id}}
	if su := c.srv.cfg.AuthProviders.X509SuperUser; su != "" && su == id {
		c.certIDs = append(c.certIDs, jute.ID{Scheme: "super", ID: id})
	}
	c.srv.log.Info("x509 authentication", "remote", c.remote, "id", id)
	return true
}

// isTLS reports whether the connection is TLS (the secure port, or TLS detected on a unified
// port).
func (c *conn) isTLS() bool {
	switch tc := c.nc.(type) {
	case *tls.Conn:
		return true
	case *tlsconf.UnifiedConn:
		return tc.TLS() != nil
	}
	return false
}

// looksLikeTLS reports whether the first four bytes a plaintext connection sent are the start
// of a TLS handshake: a TLS client on the plaintext port.
func looksLikeTLS(first [4]byte) bool { return tlsconf.IsTLSHandshake(first[:3]) }

// X509ID is the x509 scheme's id for a client certificate: its subject as Java's
// X500Principal.getName() renders it (RFC 2253: the most specific RDN first, the keywords
// RFC 2253 defines, other attributes as dotted OIDs with the value's DER in hex).
func X509ID(cert *x509.Certificate) (string, error) {
	var seq pkix.RDNSequence
	if rest, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil || len(rest) != 0 {
		return "", fmt.Errorf("x509: certificate subject does not parse: %v", err)
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if b.Len() > 0 || i < len(seq)-1 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeATV(&b, atv)
		}
	}
	return b.String(), nil
}

// rfc2253Keywords are the attribute types X500Principal's RFC 2253 form names by keyword.
var rfc2253Keywords = map[string]string{
	"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O",
	"2.5.4.11": "OU", "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1": "UID",
}

func writeATV(b *strings.Builder, atv pkix.AttributeTypeAndValue) {
	oid := atv.Type.String()
	kw, known := rfc2253Keywords[oid]
	s, isString := atv.Value.(string)
	if !known || !isString {
		// Other attribute types: the OID and "#" + the value's DER encoding in hex.
		der, err := asn1.Marshal(atv.Value)
		if err != nil {
			der = nil
		}
		fmt.Fprintf(b, "%s=#%s", oid, hexenc.EncodeToString(der))
		return
	}
	b.WriteString(kw)
	b.WriteByte('=')
	for i, r := range s {
		switch {
		case strings.ContainsRune(",+\"\\<>;", r),
			i == 0 && (r == '#' || r == ' '),
			i == len(s)-1 && r == ' ':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
}
