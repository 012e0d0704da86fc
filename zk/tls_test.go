package zk

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/tlsconf"
	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
	"github.com/zkd-io/zkd/zktest"
)

// tlsProxy listens on loopback with TLS (client certificates required) and forwards each
// connection to backend; it stands in for a TLS server port until the server has one.
func tlsProxy(t *testing.T, p *tlstest.PKI, backend string) string {
	t.Helper()
	s, err := tlsconf.Parse(map[string]string{"keyStore.location": p.Server.PEM, "trustStore.location": p.TrustPEM}, "ssl.")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.ServerConfig(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) { mu.Lock(); conns = append(conns, c); mu.Unlock() }
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			track(c)
			b, err := net.Dial("tcp", backend)
			if err != nil {
				c.Close()
				continue
			}
			track(b)
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(b, c); b.Close() }()
			go func() { defer wg.Done(); io.Copy(c, b); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func TestWithTLS(t *testing.T) {
	p := tlstest.New(t, t.TempDir())
	srv := zktest.Start(t)
	addr := tlsProxy(t, p, srv.Addr())
	pool := x509.NewCertPool()
	pool.AddCert(p.CA.Cert)

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	// ServerName comes from the connection string's host (an IP address here).
	c, err := Connect(ctx, addr, WithLogger(slog.New(slog.DiscardHandler)), WithTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{p.Client.TLS}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create(ctx, "/tls", []byte("over tls"), WorldACL(PermAll), 0); err != nil {
		t.Fatal(err)
	}
	data, _, err := c.Get(ctx, "/tls")
	if err != nil || string(data) != "over tls" {
		t.Fatalf("get: %q, %v", data, err)
	}

	// The client side of tlsconf, from ZooKeeper-style settings.
	cs, err := tlsconf.Parse(map[string]string{"keyStore.location": p.Client.PKCS12, "keyStore.password": tlstest.Password,
		"trustStore.location": p.TrustJKS, "trustStore.password": tlstest.Password}, "ssl.")
	if err != nil {
		t.Fatal(err)
	}
	ccfg, err := cs.ClientConfig("127.0.0.1", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c2, err := Connect(ctx, addr, WithLogger(slog.New(slog.DiscardHandler)), WithTLS(ccfg))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if data, _, err := c2.Get(ctx, "/tls"); err != nil || string(data) != "over tls" {
		t.Fatalf("get: %q, %v", data, err)
	}
}

// A server whose certificate the client does not trust is never talked to: every attempt
// fails its handshake until Connect's context ends.
func TestWithTLSRefusesUntrustedServer(t *testing.T) {
	p := tlstest.New(t, t.TempDir())
	srv := zktest.Start(t)
	addr := tlsProxy(t, p, srv.Addr())
	other := x509.NewCertPool()
	other.AddCert(p.OtherCARoot.Cert)
	// A bound on a failure, not a timing assertion: nothing can succeed within it.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := Connect(ctx, addr, WithLogger(slog.New(slog.DiscardHandler)),
		WithTLS(&tls.Config{RootCAs: other, Certificates: []tls.Certificate{p.Client.TLS}}))
	if err == nil {
		c.Close()
		t.Fatal("connected to a server from an untrusted CA")
	}
	if !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Connect failed, but not for the certificate: %v", err)
	}
}
