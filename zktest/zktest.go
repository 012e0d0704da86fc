// Package zktest starts an in-process zkd server for tests: on a free loopback port, with
// its data in the test's temporary directory, stopped when the test ends.
package zktest

import (
	"crypto/tls"
	"io"
	"log/slog"
	"maps"
	"testing"

	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/zkd-io/zkd/internal/sasl"
	"github.com/zkd-io/zkd/internal/sasl/gssapi"
	"github.com/zkd-io/zkd/server"
)

// Server is a running in-process zkd.
type Server struct {
	*server.Server
	cfg server.Config
	tb  testing.TB
}

// Option adjusts the server's configuration.
type Option func(*server.Config)

// WithConfig lets a test set any server setting.
func WithConfig(f func(*server.Config)) Option { return Option(f) }

// Start starts a server and registers its shutdown with tb.Cleanup. Logs go to tb.Log only
// when the ZKTEST_LOG environment variable is set, so passing tests stay quiet.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	cfg := server.Config{
		ListenAddr:     "127.0.0.1:0",
		DataDir:        tb.TempDir(),
		TickTime:       200,
		PreAllocSize:   1 << 20,
		MaxClientCnxns: 0,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if testLogging() {
		cfg.Logger = slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	for _, o := range opts {
		o(&cfg)
	}
	s := &Server{cfg: cfg, tb: tb}
	s.start()
	tb.Cleanup(func() { s.Stop() })
	return s
}

func (s *Server) start() {
	s.tb.Helper()
	srv, err := server.New(s.cfg)
	if err != nil {
		s.tb.Fatalf("zktest: start server: %v", err)
	}
	if err := srv.Start(); err != nil {
		s.tb.Fatalf("zktest: start server: %v", err)
	}
	s.Server = srv
	// Restarts keep the ports, so clients can reconnect to the same address.
	s.cfg.ListenAddr = srv.Addr()
	if a := srv.SecureAddr(); a != "" {
		s.cfg.SecureListenAddr = a
	}
}

// Stop shuts the server down cleanly; it may be called more than once.
func (s *Server) Stop() {
	if s.Server != nil {
		if err := s.Server.Close(); err != nil {
			s.tb.Errorf("zktest: stop server: %v", err)
		}
		s.Server = nil
	}
}

// Restart stops the server and starts it again on the same data directory and port.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	s.start()
}

// WithTLS serves a secure client port (on a free loopback port, see SecureAddr) with cfg,
// next to the plaintext one.
func WithTLS(cfg *tls.Config) Option {
	return func(c *server.Config) {
		c.SecureListenAddr = "127.0.0.1:0"
		c.TLS = cfg
	}
}

// Config returns the server's configuration (with the bound address).
func (s *Server) Config() server.Config { return s.cfg }

// DataDir is the server's data directory.
func (s *Server) DataDir() string { return s.cfg.DataDir }

// WithSASLUsers serves SASL DIGEST-MD5 with these users and passwords, as a JAAS "Server"
// section with DigestLoginModule user_NAME="password" entries does, with the sasl ACL
// scheme enabled (authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider):
// an authenticated user gets the sasl ACL id of its name.
func WithSASLUsers(users map[string]string) Option {
	users = maps.Clone(users)
	return func(c *server.Config) {
		c.AuthProviders.SASL = true
		c.NewSASLServer = func() (server.SASLServer, error) {
			return sasl.NewServer(sasl.DigestMD5, sasl.ServerConfig{Users: users})
		}
	}
}

// WithKerberos serves SASL GSSAPI with the service principal's keys (as a JAAS "Server"
// section with Krb5LoginModule, useKeyTab=true, keyTab and principal), with the sasl ACL
// scheme enabled: an authenticated client gets the sasl ACL id of its whole principal,
// "client@EXAMPLE.COM" (ZooKeeper's default, without kerberos.removeHostFromPrincipal or
// removeRealmFromPrincipal).
func WithKerberos(kt *keytab.Keytab, principal string) Option {
	return func(c *server.Config) {
		c.AuthProviders.SASL = true
		c.NewSASLServer = func() (server.SASLServer, error) {
			return gssapi.NewServer(gssapi.ServerConfig{Keytab: kt, Principal: principal})
		}
	}
}
