package tlsconf

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
)

// syncBuffer is a log destination for the handshakes' goroutines and the test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServerCertificateValidityWarning: a server certificate that has expired or is not
// valid yet is loaded (the server starts, as ZooKeeper's does) with a WARN naming the file and
// the dates, at start and when a reload brings one in; a valid one logs nothing of the sort,
// and a client's own certificate is not a server's.
func TestServerCertificateValidityWarning(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, filepath.Join(dir, "pki"))
	stamp := func(tm time.Time) string { return tm.UTC().Format(time.RFC3339) }
	start := func(t *testing.T, keystore string, now func() time.Time) (*syncBuffer, func() string) {
		t.Helper()
		var log syncBuffer
		s := storeSettings(t, Store{Location: keystore}, Store{Location: p.TrustPEM}, map[string]string{"clientAuth": "none"})
		s.Now = now
		srv, err := s.ServerConfig(slog.New(slog.NewTextHandler(&log, nil)))
		if err != nil {
			t.Fatal(err)
		}
		return &log, func() string { return servedSerial(t, srv) }
	}
	wantWarning := func(t *testing.T, log string, msg, file string, c *tlstest.Identity) {
		t.Helper()
		for _, want := range []string{"level=WARN", msg, "file=" + file, "notBefore=" + stamp(c.Cert.NotBefore), "notAfter=" + stamp(c.Cert.NotAfter)} {
			if !strings.Contains(log, want) {
				t.Fatalf("log lacks %q:\n%s", want, log)
			}
		}
	}

	t.Run("expired", func(t *testing.T) {
		log, _ := start(t, p.Expired.PEM, nil)
		wantWarning(t, log.String(), "TLS server certificate has expired", p.Expired.PEM, p.Expired)
	})
	t.Run("not valid yet", func(t *testing.T) {
		before := p.Server.Cert.NotBefore.Add(-time.Hour)
		log, _ := start(t, p.Server.PEM, func() time.Time { return before })
		wantWarning(t, log.String(), "TLS server certificate is not valid yet", p.Server.PEM, p.Server)
	})
	t.Run("valid", func(t *testing.T) {
		log, serve := start(t, p.Server.PEM, nil)
		serve()
		if strings.Contains(log.String(), "level=WARN") {
			t.Fatalf("a valid certificate warned:\n%s", log)
		}
	})
	t.Run("reload", func(t *testing.T) {
		ks := filepath.Join(t.TempDir(), "server.pem")
		copyFile(t, p.Server.PEM, ks)
		var mu sync.Mutex
		now := time.Now()
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		log, serve := start(t, ks, clock)
		if strings.Contains(log.String(), "level=WARN") {
			t.Fatalf("a valid certificate warned:\n%s", log)
		}
		copyFile(t, p.Expired.PEM, ks)
		mu.Lock()
		now = now.Add(2 * reloadEvery)
		mu.Unlock()
		if got := serve(); got != p.Expired.Cert.SerialNumber.String() {
			t.Fatalf("served %s, want the reloaded (expired) certificate", got)
		}
		wantWarning(t, log.String(), "TLS server certificate has expired", ks, p.Expired)
	})
	t.Run("client side", func(t *testing.T) {
		var log syncBuffer
		s := storeSettings(t, Store{Location: p.Expired.PEM}, Store{Location: p.TrustPEM}, nil)
		if _, err := s.ClientConfig("127.0.0.1", slog.New(slog.NewTextHandler(&log, nil))); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(log.String(), "server certificate") {
			t.Fatalf("a client's certificate was reported as a server's:\n%s", log.String())
		}
	})
}
