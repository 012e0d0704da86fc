package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
	"github.com/zkd-io/zkd/server"
)

// TestAdminHTTPSFromZooCfg: a zoo.cfg with ZooKeeper's keys for an HTTPS-only AdminServer
// that requires client certificates, and the x509 provider, serves the snapshot command
// to the certificate's subject over HTTPS.
func TestAdminHTTPSFromZooCfg(t *testing.T) {
	dir := t.TempDir()
	pki := tlstest.New(t, filepath.Join(dir, "pki"))
	adminPort := freePort(t)
	p, _ := startFromZooCfg(t, dir, fmt.Sprintf(`admin.enableServer=true
admin.serverPort=%d
admin.forceHttps=true
admin.needClientAuth=true
admin.rateLimiterIntervalInMS=0
ssl.quorum.keyStore.location=%s
ssl.quorum.keyStore.password=%s
ssl.quorum.trustStore.location=%s
ssl.quorum.trustStore.password=%s
ssl.trustStore.location=%s
ssl.trustStore.password=%s
authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider
`, adminPort, pki.Server.JKS, tlstest.Password, pki.TrustJKS, tlstest.Password, pki.TrustPKCS12, tlstest.Password))
	pool := x509.NewCertPool()
	pool.AddCert(pki.CA.Cert)
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{pki.Client.TLS}}}}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/commands/snapshot?streaming=false", adminPort), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "x509")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%v\n%s", err, p.logText())
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || resp.StatusCode != http.StatusOK || m["command"] != "snapshot" || m["error"] != nil {
		t.Errorf("x509 snapshot: %d %s\n%s", resp.StatusCode, body, p.logText())
	}
}

// TestAdminTLSStopsStartUp: HTTPS whose stores do not load stops start-up, naming the key.
func TestAdminTLSStopsStartUp(t *testing.T) {
	dir := t.TempDir()
	pki := tlstest.New(t, dir)
	cfg, err := config.Parse(strings.NewReader(fmt.Sprintf(`dataDir=%s
clientPort=2181
admin.enableServer=true
admin.portUnification=true
ssl.quorum.keyStore.location=%s
ssl.quorum.keyStore.password=wrong
ssl.quorum.trustStore.location=%s
`, dir, pki.Server.PKCS12, pki.TrustPEM)))
	if err != nil {
		t.Fatal(err)
	}
	sc := server.FromConfig(cfg, 0, slog.New(slog.DiscardHandler))
	err = applyAdminTLS(cfg, &sc, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "ssl.quorum.keyStore") || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("err = %v, want one naming ssl.quorum.keyStore without the password", err)
	}
	if sc.AdminTLS != nil {
		t.Error("AdminTLS set despite the error")
	}
	var zero server.Config
	if err := applyAdminTLS(cfg, &zero, slog.New(slog.DiscardHandler)); err != nil || zero.AdminTLS != nil {
		t.Errorf("AdminServer off: %v, %v", err, zero.AdminTLS)
	}
}
