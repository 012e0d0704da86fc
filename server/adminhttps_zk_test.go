package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
	"github.com/zkd-io/zkd/server"
)

// TestAdminHTTPSMatchesZooKeeper starts Apache ZooKeeper 3.8's AdminServer and zkd's with
// the same keys (admin.forceHttps or admin.portUnification and the ssl.quorum.* stores)
// and asks both the same requests: ruok over HTTPS, and over plain HTTP, which the
// HTTPS-only servers refuse and the unified ones serve. 3.8.0 has no admin.needClientAuth
// (its Jetty asks for no client certificate) and no snapshot command, so those are
// checked against 3.9's source only (TestAdminHTTPSNeedClientAuth, TestAdminHTTPSX509Auth).
func TestAdminHTTPSMatchesZooKeeper(t *testing.T) {
	refzk.Require(t)
	pki := tlstest.New(t, t.TempDir())
	stores := []string{
		"ssl.quorum.keyStore.location=" + pki.Server.PKCS12, "ssl.quorum.keyStore.password=" + tlstest.Password,
		"ssl.quorum.trustStore.location=" + pki.TrustPKCS12, "ssl.quorum.trustStore.password=" + tlstest.Password,
	}
	pool := x509.NewCertPool()
	pool.AddCert(pki.CA.Cert)
	httpsClient := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}, DisableKeepAlives: true}}
	plainClient := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}

	for _, force := range []bool{true, false} {
		key := "admin.portUnification=true"
		if force {
			key = "admin.forceHttps=true"
		}
		t.Run(key, func(t *testing.T) {
			ref := refzk.StartStandalone(t, refzk.Options{AdminServer: true, Config: append([]string{key}, stores...)})
			e := startAdminTLS(t, pki, server.AdminTLSOptions{ForceHTTPS: force}, auth.Providers{})
			for _, s := range []struct{ name, host string }{{"zookeeper", ref.AdminAddr()}, {"zkd", e.host}} {
				// ZooKeeper's Jetty may start after its client port serves.
				var keys []string
				deadline := time.Now().Add(time.Minute)
				for {
					resp, body, err := get(httpsClient, "https://"+s.host+"/commands/ruok", "")
					if err == nil {
						var m map[string]any
						if err := json.Unmarshal(body, &m); err != nil || resp.StatusCode != http.StatusOK || m["command"] != "ruok" || m["error"] != nil {
							t.Fatalf("%s: ruok over HTTPS: %d %s", s.name, resp.StatusCode, body)
						}
						for k := range m {
							keys = append(keys, k)
						}
						if got := resp.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(got, "max-age=86400") {
							t.Errorf("%s: Strict-Transport-Security %q", s.name, got)
						}
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: ruok over HTTPS: %v", s.name, err)
					}
					time.Sleep(200 * time.Millisecond) // polling for Jetty to listen, not synchronising
				}
				slices.Sort(keys)
				if !slices.Equal(keys, []string{"command", "error"}) {
					t.Errorf("%s: ruok keys %v", s.name, keys)
				}
				resp, body, err := get(plainClient, "http://"+s.host+"/commands/ruok", "")
				served := err == nil && resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"ruok"`)
				if served == force {
					t.Errorf("%s with %s: plain HTTP served = %v (%v)", s.name, key, served, err)
				}
			}
		})
	}
}
