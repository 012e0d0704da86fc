package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
	"github.com/zkd-io/zkd/jute"
)

// TestTLSFromZooCfg: zkd started from a zoo.cfg with ZooKeeper's TLS keys (PKCS12 stores,
// clientAuth need, with or without an authProvider line: a secure client port has the x509
// provider by default, as in ZooKeeper) serves TLS on secureClientPort with the client's x509
// id, plaintext on clientPort, and both on clientPort with client.portUnification.
func TestTLSFromZooCfg(t *testing.T) {
	dir := t.TempDir()
	pki := tlstest.New(t, filepath.Join(dir, "pki"))
	for _, tc := range []struct{ unify, provider bool }{{false, true}, {true, true}, {false, false}, {true, false}} {
		t.Run(fmt.Sprintf("portUnification=%v,authProvider=%v", tc.unify, tc.provider), func(t *testing.T) {
			unify := tc.unify
			dir := t.TempDir()
			secure := freePort(t)
			extra := fmt.Sprintf("secureClientPort=%d\nsecureClientPortAddress=127.0.0.1\n"+
				"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"+
				"ssl.keyStore.location=%s\nssl.keyStore.password=%s\nssl.trustStore.location=%s\nssl.trustStore.password=%s\n"+
				"ssl.clientAuth=need\nclient.portUnification=%v\n",
				secure, pki.Server.PKCS12, tlstest.Password, pki.TrustPKCS12, tlstest.Password, unify)
			if tc.provider {
				extra += "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n"
			}
			p, _ := startFromZooCfg(t, dir, extra)
			roots := x509.NewCertPool()
			roots.AddCert(pki.CA.Cert)
			cfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", Certificates: []tls.Certificate{pki.Client.TLS}}
			addrs := []string{fmt.Sprintf("127.0.0.1:%d", secure)}
			if unify {
				addrs = append(addrs, p.addr)
			}
			for _, addr := range addrs {
				nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
				if err != nil {
					t.Fatalf("TLS to %s: %v", addr, err)
				}
				nc.SetDeadline(time.Now().Add(30 * time.Second))
				c := rawzk.ConnectOver(t, nc)
				var r jute.WhoAmIResponse
				if h := c.Call(jute.OpWhoAmI, nil, &r); h.Err != jute.OK {
					t.Fatalf("whoAmI over TLS on %s: %v", addr, h.Err)
				}
				found := false
				for _, ci := range r.ClientInfo {
					found = found || (ci.AuthScheme == "x509" && ci.User == "CN=client,OU=clients,O=zkd-test")
				}
				if !found {
					t.Errorf("whoAmI over TLS on %s: %+v, want x509 CN=client,OU=clients,O=zkd-test", addr, r.ClientInfo)
				}
			}
			// Plaintext keeps working on clientPort.
			c := rawzk.Connect(t, p.addr)
			if h := c.Call(jute.OpExists, &jute.ExistsRequest{Path: "/"}, &jute.ExistsResponse{}); h.Err != jute.OK {
				t.Fatalf("plaintext exists: %v", h.Err)
			}
		})
	}
}

// TestSecurityConfigFailsClosed: a zoo.cfg asking for what zkd cannot honour (a bad keystore
// password, quorum TLS without a usable keystore, quorum SASL) stops zkd at start with an
// error naming it, without the password in it.
func TestSecurityConfigFailsClosed(t *testing.T) {
	dir := t.TempDir()
	pki := tlstest.New(t, filepath.Join(dir, "pki"))
	for name, extra := range map[string]string{
		"ssl.keyStore":                 fmt.Sprintf("secureClientPort=%d\nssl.keyStore.location=%s\nssl.keyStore.password=not-the-pw-123\n", freePort(t), pki.Server.PKCS12),
		"ssl.crl":                      fmt.Sprintf("secureClientPort=%d\nssl.keyStore.location=%s\nssl.keyStore.password=%s\nssl.crl=true\n", freePort(t), pki.Server.PKCS12, tlstest.Password),
		"quorum.auth.enableSasl":       "quorum.auth.enableSasl=true\n",
		"ssl.quorum.keyStore":          fmt.Sprintf("sslQuorum=true\nssl.quorum.keyStore.location=%s\nssl.quorum.keyStore.password=not-the-pw-123\n", pki.Server.PKCS12),
		"ssl.quorum.keyStore.location": "portUnification=true\n",
		// Issue 26: values and keys ZooKeeper would read as "off" without a word.
		"enforce.auth.enabled":           "enforce.auth.enabled=ture\nenforce.auth.schemes=digest\n",
		"sessionRequireClientSASLAuth":   "sessionRequireClientSASLAuth=yes\n",
		"enforce.auth.enable=":           "enforce.auth.enable=true\n",
		"zkd.sesionSecretFile":           "zkd.sesionSecretFile=/etc/zkd/session.secret\n",
		"admin.forceHttps":               "admin.enableServer=true\nadmin.forceHttps=ture\n",
		"ssl.hostnameVerification":       "ssl.hostnameVerification=ture\n",
		"ssl.quorum.hostnameVerificaton": "ssl.quorum.hostnameVerificaton=false\n",
		// ZooKeeper does not start either: no authProvider.foo for the scheme.
		"ssl.authProvider": fmt.Sprintf("secureClientPort=%d\nssl.keyStore.location=%s\nssl.keyStore.password=%s\nssl.authProvider=foo\n",
			freePort(t), pki.Server.PKCS12, tlstest.Password),
	} {
		t.Run(name, func(t *testing.T) {
			d := t.TempDir()
			text := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n%s", filepath.Join(d, "data"), freePort(t), extra)
			path := filepath.Join(d, "zoo.cfg")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(zkdBinary(t), "--config", path)
			done := make(chan struct{})
			var out []byte
			var err error
			go func() { out, err = cmd.CombinedOutput(); close(done) }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("zkd did not stop; output:\n%s", out)
			}
			if err == nil {
				t.Fatalf("zkd started (exit 0); output:\n%s", out)
			}
			if !strings.Contains(string(out), name) {
				t.Errorf("error does not name %s:\n%s", name, out)
			}
			if strings.Contains(string(out), "not-the-pw-123") {
				t.Errorf("output shows the password:\n%s", out)
			}
		})
	}
}

// TestExpiredServerCertificateWarns: a secure client port whose certificate has expired
// starts (clients will refuse it, as they refuse ZooKeeper's) with a WARN naming the keystore
// and the certificate's dates.
func TestExpiredServerCertificateWarns(t *testing.T) {
	dir := t.TempDir()
	pki := tlstest.New(t, filepath.Join(dir, "pki"))
	p, _ := startFromZooCfg(t, dir, fmt.Sprintf("secureClientPort=%d\nssl.keyStore.location=%s\nssl.keyStore.password=%s\n"+
		"ssl.trustStore.location=%s\nssl.trustStore.password=%s\n",
		freePort(t), pki.Expired.PKCS12, tlstest.Password, pki.TrustPKCS12, tlstest.Password))
	notAfter := pki.Expired.Cert.NotAfter.UTC().Format(time.RFC3339)
	waitForLog(t, p.logText, "the expired certificate's warning", func(log string) bool {
		return strings.Contains(log, "TLS server certificate has expired") &&
			strings.Contains(log, "file="+pki.Expired.PKCS12) && strings.Contains(log, "notAfter="+notAfter)
	})
}
