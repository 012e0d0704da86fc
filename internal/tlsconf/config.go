package tlsconf

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"
)

// reloadEvery is the most often the store files are looked at.
const reloadEvery = time.Second

// material is what the store files give: our certificate and the CAs we trust.
type material struct {
	cert *tls.Certificate    // nil without a keystore
	pool *x509.CertPool      // nil = the system roots
	cas  []*x509.Certificate // the pool's certificates
}

// fileStamp tells a store file's versions apart. The content's hash is part of it because
// file times are coarse (a kernel tick): a certificate rewritten within the tick of the
// last look, with the same size, would otherwise never be reloaded. Store files are a few
// kilobytes, read at most once per reloadEvery.
type fileStamp struct {
	mod  time.Time
	size int64
	sum  [sha256.Size]byte
	ok   bool
}

// source holds the current material and reloads it when the files change; it is shared by
// every handshake of one tls.Config.
type source struct {
	s      Settings
	logger *slog.Logger
	now    func() time.Time
	server bool // the certificate is a server's: its validity is checked when loaded

	mu      sync.Mutex
	cur     *material
	checked time.Time   // last look at the files
	stamps  []fileStamp // of files(), as last loaded (or last failed to load)
}

func newSource(s Settings, server bool, logger *slog.Logger) (*source, error) {
	if logger == nil {
		logger = slog.Default()
	}
	src := &source{s: s, logger: logger, now: s.Now, server: server}
	if src.now == nil {
		src.now = time.Now
	}
	src.stamps = src.stampFiles()
	m, err := s.load()
	if err != nil {
		return nil, err
	}
	src.cur = m
	src.checked = src.now()
	src.checkValidity(m)
	return src, nil
}

// checkValidity warns when a server certificate just loaded is outside its validity period:
// clients refuse it, so the server is as good as down to them, yet it starts (or keeps
// serving after a reload) as ZooKeeper's does, and the log is where an operator looks.
func (src *source) checkValidity(m *material) {
	if !src.server || m.cert == nil || m.cert.Leaf == nil {
		return
	}
	leaf, now := m.cert.Leaf, src.now()
	var msg string
	switch {
	case now.After(leaf.NotAfter):
		msg = "TLS server certificate has expired"
	case now.Before(leaf.NotBefore):
		msg = "TLS server certificate is not valid yet"
	default:
		return
	}
	src.logger.Warn(msg, "file", src.s.KeyStore.Location, "key", src.s.Prefix+"keyStore.location",
		"subject", leaf.Subject.String(), "notBefore", leaf.NotBefore.UTC().Format(time.RFC3339),
		"notAfter", leaf.NotAfter.UTC().Format(time.RFC3339))
}

// files are the files the material comes from, in a fixed order.
func (src *source) files() []string {
	var fs []string
	for _, f := range []string{src.s.KeyStore.Location, src.s.KeyStore.PasswordPath,
		src.s.TrustStore.Location, src.s.TrustStore.PasswordPath} {
		if f != "" {
			fs = append(fs, f)
		}
	}
	return fs
}

func (src *source) stampFiles() []fileStamp {
	fs := src.files()
	st := make([]fileStamp, len(fs))
	for i, f := range fs {
		fi, err := os.Stat(f)
		if err != nil {
			continue
		}
		st[i] = fileStamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
		if b, err := os.ReadFile(f); err == nil {
			st[i].sum = sha256.Sum256(b)
		}
	}
	return st
}

// get returns the current material, first reloading it when a second has passed since the
// last look and a file's modification time or size changed. A failed reload is logged once
// per change and the old material kept.
func (src *source) get() *material {
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.s.DisableReload {
		return src.cur
	}
	now := src.now()
	if now.Sub(src.checked) < reloadEvery && !now.Before(src.checked) {
		return src.cur
	}
	src.checked = now
	st := src.stampFiles()
	changed := false
	for i := range st {
		if st[i] != src.stamps[i] {
			changed = true
		}
	}
	if !changed {
		return src.cur
	}
	src.stamps = st
	m, err := src.s.load()
	if err != nil {
		src.logger.Warn("TLS certificate reload failed; keeping the previous certificates",
			"keys", src.s.Prefix+"*", "err", err)
		return src.cur
	}
	src.logger.Info("TLS certificates reloaded", "keys", src.s.Prefix+"*")
	src.checkValidity(m)
	src.cur = m
	return m
}

func (s Settings) load() (*material, error) {
	m := &material{}
	if s.KeyStore.Location != "" {
		c, err := LoadKeyPair(s.KeyStore)
		if err != nil {
			return nil, fmt.Errorf("%skeyStore: %w", s.Prefix, err)
		}
		m.cert = &c
	}
	if s.TrustStore.Location != "" {
		cas, err := LoadTrust(s.TrustStore)
		if err != nil {
			return nil, fmt.Errorf("%strustStore: %w", s.Prefix, err)
		}
		m.pool = x509.NewCertPool()
		for _, c := range cas {
			m.pool.AddCert(c)
		}
		m.cas = cas
	}
	return m, nil
}

func (s Settings) base() *tls.Config {
	return &tls.Config{
		MinVersion:   s.MinVersion,
		MaxVersion:   s.MaxVersion,
		CipherSuites: s.CipherSuites,
		// Client-initiated renegotiation stays off, as ZooKeeper sets it (Go servers never
		// renegotiate).
		Renegotiation: tls.RenegotiateNever,
	}
}

// ServerConfig returns the configuration of a TLS server: the keystore's certificate (one is
// required), client certificates asked for per ClientAuth and verified against the
// truststore, and with ClientHostnameVerification the client's certificate checked against
// its address. The files are reread on a handshake when they changed (see Settings).
func (s Settings) ServerConfig(logger *slog.Logger) (*tls.Config, error) {
	if s.KeyStore.Location == "" {
		return nil, fmt.Errorf("%skeyStore.location: a TLS server needs a certificate", s.Prefix)
	}
	src, err := newSource(s, true, logger)
	if err != nil {
		return nil, err
	}
	var auth tls.ClientAuthType
	switch s.ClientAuth {
	case ClientAuthNeed:
		auth = tls.RequireAndVerifyClientCert
	case ClientAuthWant:
		auth = tls.VerifyClientCertIfGiven
	default:
		auth = tls.NoClientCert
	}
	cfg := s.base()
	cfg.ClientAuth = auth
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		m := src.get()
		c := s.base()
		c.ClientAuth = auth
		c.Certificates = []tls.Certificate{*m.cert}
		c.ClientCAs = m.pool
		if s.ClientHostnameVerification && auth != tls.NoClientCert {
			remote := hello.Conn.RemoteAddr()
			c.VerifyConnection = func(cs tls.ConnectionState) error {
				if len(cs.PeerCertificates) == 0 {
					return nil // clientAuth=want and none given
				}
				return verifyPeerHost(cs.PeerCertificates[0], remote)
			}
		}
		return c, nil
	}
	// For callers that look at it (e.g. to log the server's certificate).
	cfg.Certificates = []tls.Certificate{*src.cur.cert}
	return cfg, nil
}

// ClientConfig returns the configuration of a TLS client: the keystore's certificate offered
// when the server asks (none without a keystore), the server's chain verified against the
// truststore (the system roots without one) and, with HostnameVerification, its certificate
// checked against serverName (a host name or an IP address). With serverName empty, the
// name is the config's ServerName as a caller sets it on a clone (crypto/tls sends it as SNI),
// which works for host names only: to reach an IP address, pass it as serverName. The files
// are reread on a handshake when they changed.
func (s Settings) ClientConfig(serverName string, logger *slog.Logger) (*tls.Config, error) {
	src, err := newSource(s, false, logger)
	if err != nil {
		return nil, err
	}
	cfg := s.base()
	cfg.ServerName = serverName
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if m := src.get(); m.cert != nil {
			return m.cert, nil
		}
		return &tls.Certificate{}, nil // no certificate: the server decides
	}
	// The chain is verified here, against the truststore of the moment, not by crypto/tls,
	// whose RootCAs cannot change per handshake.
	cfg.InsecureSkipVerify = true
	verifyName := s.HostnameVerification
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		m := src.get()
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: m.pool, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		if verifyName {
			// cs.ServerName is the SNI sent, which is empty for an IP address.
			opts.DNSName = serverName
			if opts.DNSName == "" {
				opts.DNSName = cs.ServerName
			}
			if opts.DNSName == "" {
				return errors.New("tls: no server name to verify the certificate against (hostnameVerification is on)")
			}
		}
		if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
			return fmt.Errorf("tls: server certificate: %w", err)
		}
		return nil
	}
	return cfg, nil
}

// verifyPeerHost checks a client certificate against the client's address as ZooKeeper's
// ZKTrustManager does: the IP address first, then the names reverse DNS gives for it.
func verifyPeerHost(cert *x509.Certificate, remote net.Addr) error {
	host, _, err := net.SplitHostPort(remote.String())
	if err != nil {
		return fmt.Errorf("tls: client address %v: %w", remote, err)
	}
	ipErr := cert.VerifyHostname(host)
	if ipErr == nil {
		return nil
	}
	names, _ := net.LookupAddr(host)
	for _, n := range names {
		if cert.VerifyHostname(n) == nil {
			return nil
		}
	}
	return fmt.Errorf("tls: client certificate does not match the client's address: %w", ipErr)
}
