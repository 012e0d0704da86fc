package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/testing/needs"
	"github.com/zkd-io/zkd/internal/tlsconf"
	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

// adminTLSEnv is a server whose AdminServer speaks HTTPS with the test PKI's stores.
type adminTLSEnv struct {
	pki  *tlstest.PKI
	srv  *zktest.Server
	host string // host:port of the AdminServer
}

// quorumSettings are ssl.quorum.* settings naming the PKI's server keystore and CA
// truststore (PKCS12), as a zoo.cfg would.
func quorumSettings(t *testing.T, pki *tlstest.PKI) tlsconf.Settings {
	t.Helper()
	st, err := tlsconf.Parse(map[string]string{
		"keyStore.location": pki.Server.PKCS12, "keyStore.password": tlstest.Password,
		"trustStore.location": pki.TrustPKCS12, "trustStore.password": tlstest.Password,
	}, tlsconf.QuorumPrefix)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// clientTrust are ssl.* settings whose truststore holds the CAs of trustPath (PKCS12).
func clientTrust(t *testing.T, trustPath string) *tlsconf.Settings {
	t.Helper()
	st, err := tlsconf.Parse(map[string]string{
		"trustStore.location": trustPath, "trustStore.password": tlstest.Password,
	}, "ssl.")
	if err != nil {
		t.Fatal(err)
	}
	return &st
}

func startAdminTLS(t *testing.T, pki *tlstest.PKI, o server.AdminTLSOptions, providers auth.Providers) *adminTLSEnv {
	t.Helper()
	o.Quorum = quorumSettings(t, pki)
	a, err := server.NewAdminTLS(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.AdminAddr = "127.0.0.1:0"
		c.AdminSnap = server.AdminSnapConfig{RestoreEnabled: true, RateLimitMs: -1}
		c.AdminTLS = a
		c.AuthProviders = providers
	}))
	return &adminTLSEnv{pki: pki, srv: srv, host: srv.AdminAddr()}
}

// client is an HTTPS client trusting the PKI's CA and presenting cert (nil: none). Each
// client has its own connections, so that a test sees each connection's fate.
func (e *adminTLSEnv) client(cert *tls.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(e.pki.CA.Cert)
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
}

// get sends one request; err is the transport's (a refused handshake, say).
func get(c *http.Client, url, authz string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// wantCommand checks a 200 answer of cmd without an error.
func wantCommand(t *testing.T, what string, resp *http.Response, body []byte, err error, cmd string) map[string]any {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || resp.StatusCode != http.StatusOK || m["command"] != cmd || m["error"] != nil {
		t.Fatalf("%s: %d %s (%v), want command %s without error", what, resp.StatusCode, body, err, cmd)
	}
	return m
}

func insecureCount(t *testing.T, m map[string]any) float64 {
	t.Helper()
	n, ok := m["insecure_admin_count"].(float64)
	if !ok {
		t.Fatalf("monitor has no insecure_admin_count: %v", m)
	}
	return n
}

// TestAdminHTTPSForce: with admin.forceHttps the AdminServer answers HTTPS (with Jetty's
// Strict-Transport-Security header) and refuses plain HTTP; no client certificate is asked
// for without admin.needClientAuth.
func TestAdminHTTPSForce(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	e := startAdminTLS(t, pki, server.AdminTLSOptions{ForceHTTPS: true}, auth.Providers{})
	resp, body, err := get(e.client(nil), "https://"+e.host+"/commands/ruok", "")
	wantCommand(t, "ruok over HTTPS", resp, body, err, "ruok")
	if sts := resp.Header.Get("Strict-Transport-Security"); sts != "max-age=86400; includeSubDomains" {
		t.Errorf("Strict-Transport-Security = %q", sts)
	}
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 || resp.TLS.PeerCertificates[0].Subject.CommonName != "localhost" {
		t.Errorf("not served with the ssl.quorum keystore's certificate: %+v", resp.TLS)
	}
	resp, body, err = get(&http.Client{Timeout: time.Minute}, "http://"+e.host+"/commands/ruok", "")
	if err == nil && resp.StatusCode == http.StatusOK {
		t.Errorf("plain HTTP on an HTTPS-only AdminServer answered: %d %s", resp.StatusCode, body)
	}
	// A client that does not trust the server's CA does not get through either.
	_, _, err = get(&http.Client{Timeout: time.Minute}, "https://"+e.host+"/commands/ruok", "")
	if err == nil {
		t.Error("a client without the CA accepted the AdminServer's certificate")
	}
}

// TestAdminHTTPSPortUnification: with admin.portUnification one port serves HTTP and
// HTTPS, and each plain-HTTP connection counts in insecure_admin_count.
func TestAdminHTTPSPortUnification(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	e := startAdminTLS(t, pki, server.AdminTLSOptions{}, auth.Providers{})
	resp, body, err := get(e.client(nil), "https://"+e.host+"/commands/monitor", "")
	m := wantCommand(t, "monitor over HTTPS", resp, body, err, "monitor")
	if n := insecureCount(t, m); n != 0 {
		t.Errorf("insecure_admin_count after HTTPS only = %v, want 0", n)
	}
	if resp.Header.Get("Strict-Transport-Security") == "" {
		t.Error("no Strict-Transport-Security header over HTTPS")
	}
	plain := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, body, err = get(plain, "http://"+e.host+"/commands/monitor", "")
	m = wantCommand(t, "monitor over HTTP", resp, body, err, "monitor")
	if n := insecureCount(t, m); n != 1 {
		t.Errorf("insecure_admin_count after one HTTP connection = %v, want 1", n)
	}
	if sts := resp.Header.Get("Strict-Transport-Security"); sts != "" {
		t.Errorf("Strict-Transport-Security over plain HTTP: %q", sts)
	}
	// The command list answers both ways.
	for _, url := range []string{"http://" + e.host + "/commands", "https://" + e.host + "/commands"} {
		resp, body, err := get(e.client(nil), url, "")
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `href="/commands/ruok"`) {
			t.Errorf("%s: %v %s", url, err, body)
		}
	}
}

// TestAdminHTTPSNeedClientAuth: admin.needClientAuth refuses HTTPS clients without a
// certificate from the ssl.quorum truststore's CAs.
func TestAdminHTTPSNeedClientAuth(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	e := startAdminTLS(t, pki, server.AdminTLSOptions{ForceHTTPS: true, NeedClientAuth: true}, auth.Providers{})
	url := "https://" + e.host + "/commands/ruok"
	resp, body, err := get(e.client(&pki.Client.TLS), url, "")
	wantCommand(t, "ruok with a client certificate", resp, body, err, "ruok")
	for name, cert := range map[string]*tls.Certificate{
		"no certificate": nil, "another CA": &pki.OtherCA.TLS, "self-signed": &pki.SelfSigned.TLS,
		"expired": &pki.Expired.TLS,
	} {
		if resp, body, err := get(e.client(cert), url, ""); err == nil {
			t.Errorf("%s: answered %d %s, want the handshake refused", name, resp.StatusCode, body)
		}
	}
}

// TestAdminHTTPSX509Auth: the snapshot command authenticated by the x509 scheme, from the
// HTTPS client certificate, checked against the client truststore and / 's ACL.
func TestAdminHTTPSX509Auth(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	clientID, err := server.X509ID(pki.Client.Cert)
	if err != nil {
		t.Fatal(err)
	}
	otherID, err := server.X509ID(pki.Client2.Cert)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func(e *adminTLSEnv, cert *tls.Certificate, authz string) (*http.Response, []byte) {
		t.Helper()
		resp, body, err := get(e.client(cert), "https://"+e.host+"/commands/snapshot?streaming=false", authz)
		if err != nil {
			t.Fatalf("snapshot (%s): %v", authz, err)
		}
		return resp, body
	}
	opts := server.AdminTLSOptions{ForceHTTPS: true, NeedClientAuth: true, Client: clientTrust(t, pki.TrustPKCS12)}
	e := startAdminTLS(t, pki, opts, auth.Providers{X509: true})

	// / is world:anyone: any authenticated identity holds every permission.
	resp, body := snapshot(e, &pki.Client.TLS, "x509")
	wantAdminError(t, "x509 snapshot, open /", resp, body, http.StatusOK, "snapshot", nil)
	if resp.Header.Get("last_zxid") == "" {
		t.Errorf("snapshot answer without last_zxid: %v", resp.Header)
	}

	c := connectZK(t, e.srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acl := append([]zk.ACL{{Perms: zk.PermAll, ID: zk.ID{Scheme: "x509", ID: clientID}}}, zk.DigestACL(zk.PermAll, "root", "pw")...)
	if _, err := c.SetACL(ctx, "/", acl, -1); err != nil {
		t.Fatal(err)
	}
	resp, body = snapshot(e, &pki.Client.TLS, "x509")
	wantAdminError(t, "x509 snapshot by the ACL's subject", resp, body, http.StatusOK, "snapshot", nil)
	resp, body = snapshot(e, &pki.Client2.TLS, "x509")
	wantAdminError(t, "x509 snapshot by another subject", resp, body, http.StatusForbidden, "snapshot", "Not authorized")
	resp, body = snapshot(e, &pki.Client2.TLS, "digest root:pw")
	wantAdminError(t, "digest over HTTPS", resp, body, http.StatusOK, "snapshot", nil)
	resp, body = snapshot(e, &pki.Client.TLS, "sasl")
	wantAdminError(t, "a scheme without a provider", resp, body, http.StatusUnauthorized, "snapshot", "Not authenticated")

	// Without the x509 provider the scheme is unknown, as in ZooKeeper.
	e2 := startAdminTLS(t, pki, opts, auth.Providers{})
	resp, body = snapshot(e2, &pki.Client.TLS, "x509")
	wantAdminError(t, "x509 without its provider", resp, body, http.StatusUnauthorized, "snapshot", "Not authenticated")

	// The certificate passed the handshake (ssl.quorum's CAs) but not the client
	// truststore (ssl.*, another CA): X509AuthenticationProvider refuses it.
	otherP12, _ := tlstest.TrustStores(t, t.TempDir(), "other", pki.OtherCARoot.Cert)
	e3 := startAdminTLS(t, pki, server.AdminTLSOptions{ForceHTTPS: true, NeedClientAuth: true, Client: clientTrust(t, otherP12)},
		auth.Providers{X509: true})
	resp, body = snapshot(e3, &pki.Client.TLS, "x509")
	wantAdminError(t, "x509 not trusted by ssl.trustStore", resp, body, http.StatusUnauthorized, "snapshot", "Not authenticated")
	// No client truststore at all: nobody authenticates by x509.
	e4 := startAdminTLS(t, pki, server.AdminTLSOptions{ForceHTTPS: true, NeedClientAuth: true}, auth.Providers{X509: true})
	resp, body = snapshot(e4, &pki.Client.TLS, "x509")
	wantAdminError(t, "x509 without ssl.trustStore", resp, body, http.StatusUnauthorized, "snapshot", "Not authenticated")

	// X509AuthenticationProvider.superUser: that subject is super, whatever / 's ACL says.
	e5 := startAdminTLS(t, pki, opts, auth.Providers{X509: true, X509SuperUser: otherID})
	c5 := connectZK(t, e5.srv.Addr())
	if _, err := c5.SetACL(ctx, "/", zk.DigestACL(zk.PermAll, "root", "pw"), -1); err != nil {
		t.Fatal(err)
	}
	resp, body = snapshot(e5, &pki.Client2.TLS, "x509")
	wantAdminError(t, "x509 super user", resp, body, http.StatusOK, "snapshot", nil)
	resp, body = snapshot(e5, &pki.Client.TLS, "x509")
	wantAdminError(t, "x509 user not in the ACL", resp, body, http.StatusForbidden, "snapshot", "Not authorized")
}

// TestAdminHTTPSX509NeedsCertificate: on a unified port a plain-HTTP request, and an HTTPS
// one without a certificate (no admin.needClientAuth), have no x509 identity.
func TestAdminHTTPSX509NeedsCertificate(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	e := startAdminTLS(t, pki, server.AdminTLSOptions{Client: clientTrust(t, pki.TrustPKCS12)}, auth.Providers{X509: true})
	// The digest identity the requests fall back on is one / 's ACL names with ADMIN (a
	// made-up one would be refused whatever the transport).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := connectZK(t, e.srv.Addr()).SetACL(ctx, "/", append(zk.WorldACL(zk.PermAll), zk.DigestACL(zk.PermAll, "a", "b")...), -1); err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"http://" + e.host, "https://" + e.host} {
		resp, body, err := get(e.client(&pki.Client.TLS), url+"/commands/snapshot?streaming=false", "x509")
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		wantAdminError(t, url+" x509 without a certificate", resp, body, http.StatusUnauthorized, "snapshot", "Not authenticated")
		resp, body, err = get(e.client(nil), url+"/commands/snapshot?streaming=false", "digest a:b")
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		wantAdminError(t, url+" digest", resp, body, http.StatusOK, "snapshot", nil)
	}
}

// TestNewAdminTLSRefusesMissingStores: HTTPS is not served without both quorum stores, or
// with one that does not open.
func TestNewAdminTLSRefusesMissingStores(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	for name, props := range map[string]map[string]string{
		"no keystore":   {"trustStore.location": pki.TrustPKCS12, "trustStore.password": tlstest.Password},
		"no truststore": {"keyStore.location": pki.Server.PKCS12, "keyStore.password": tlstest.Password},
		"wrong password": {"keyStore.location": pki.Server.PKCS12, "keyStore.password": "nope",
			"trustStore.location": pki.TrustPKCS12, "trustStore.password": tlstest.Password},
		"missing file": {"keyStore.location": filepath.Join(t.TempDir(), "none.p12"), "keyStore.password": tlstest.Password,
			"trustStore.location": pki.TrustPKCS12, "trustStore.password": tlstest.Password},
	} {
		st, err := tlsconf.Parse(props, tlsconf.QuorumPrefix)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := server.NewAdminTLS(server.AdminTLSOptions{Quorum: st, ForceHTTPS: true}); err == nil {
			t.Errorf("%s: NewAdminTLS succeeded", name)
		}
	}
}

// TestAdminHTTPSCurl runs curl, as an operator would, against an HTTPS-only AdminServer
// with admin.needClientAuth: a client certificate (PEM) gets the snapshot by x509, none
// and plain HTTP are refused.
func TestAdminHTTPSCurl(t *testing.T) {
	curl := needs.Command(t, "curl", "curl")
	pki := tlstest.New(t, t.TempDir())
	e := startAdminTLS(t, pki, server.AdminTLSOptions{ForceHTTPS: true, NeedClientAuth: true, Client: clientTrust(t, pki.TrustPKCS12)},
		auth.Providers{X509: true})
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, curl, append([]string{"-sS", "--max-time", "50"}, args...)...).CombinedOutput()
		return string(out), err
	}
	url := "https://127.0.0.1:" + e.host[strings.LastIndex(e.host, ":")+1:] + "/commands"
	out, err := run("--cacert", pki.CA.CertPEM, "--cert", pki.Client.PEM, "-H", "Authorization: x509", url+"/snapshot?streaming=false")
	var m map[string]any
	if err != nil || json.Unmarshal([]byte(out), &m) != nil || m["command"] != "snapshot" || m["error"] != nil {
		t.Errorf("curl with a client certificate: %v\n%s", err, out)
	}
	out, err = run("--cacert", pki.CA.CertPEM, "-o", "/dev/null", "-w", "%{http_code}", url+"/snapshot?streaming=true")
	if err == nil {
		t.Errorf("curl without a client certificate got through: %s", out)
	}
	out, err = run("-o", "/dev/null", "-w", "%{http_code}", "http://"+e.host+"/commands/ruok")
	if err == nil && strings.TrimSpace(out) == "200" {
		t.Errorf("curl over plain HTTP got through: %s", out)
	}
}
