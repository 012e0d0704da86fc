package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// FuzzAdminAuthorization feeds the snapshot command any Authorization header and, over
// "HTTPS", any client certificate (accepted by the truststore check, so that any subject
// reaches the x509 id): the answer is always a JSON refusal (401, 403) or, once
// authorized, the disabled command's 503; nothing panics.
func FuzzAdminAuthorization(f *testing.F) {
	pki := tlstest.New(f, f.TempDir())
	for _, h := range []string{"x509", "x509 ", "digest a:b", "digest a:b c", "ip", "", " ", "sasl x", "digest :", "x509 junk"} {
		f.Add(h, pki.Client.Cert.Raw)
		f.Add(h, []byte(nil))
	}
	f.Add("x509", pki.SelfSigned.Cert.Raw)
	srv := zktest.Start(f, zktest.WithConfig(func(c *server.Config) {
		c.AdminSnap = server.AdminSnapConfig{SnapshotDisabled: true, RateLimitMs: -1}
		c.AdminTLS = &server.AdminTLS{VerifyX509: func([]*x509.Certificate) error { return nil }}
		c.AuthProviders = auth.Providers{X509: true}
	}))
	h := srv.AdminHandler("")
	f.Fuzz(func(t *testing.T, header string, der []byte) {
		r := httptest.NewRequest(http.MethodGet, "/commands/snapshot", nil)
		r.RemoteAddr = "127.0.0.1:40000"
		r.Header["Authorization"] = []string{header}
		if len(der) > 0 {
			st := &tls.ConnectionState{HandshakeComplete: true}
			if cert, err := x509.ParseCertificate(der); err == nil {
				st.PeerCertificates = []*x509.Certificate{cert}
			}
			r.TLS = st
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch w.Code {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusServiceUnavailable:
		default:
			t.Fatalf("header %q: status %d %s", header, w.Code, w.Body)
		}
		var m map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil || m["command"] != "snapshot" {
			t.Fatalf("header %q: answer %s (%v)", header, w.Body, err)
		}
	})
}
