package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// miniCA issues certificates for the TLS tests.
type miniCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newMiniCA(t *testing.T, name string) *miniCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &miniCA{cert: cert, key: key, pool: pool}
}

func (ca *miniCA) issue(t *testing.T, subject pkix.Name, server bool) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	if server {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

type tlsEnv struct {
	ca, other *miniCA
	srv       *zktest.Server
}

func startTLS(t *testing.T, clientAuth tls.ClientAuthType, providers auth.Providers, opts ...zktest.Option) *tlsEnv {
	ca, other := newMiniCA(t, "zkd test CA"), newMiniCA(t, "another CA")
	srvCert := ca.issue(t, pkix.Name{CommonName: "zkd"}, true)
	srv := zktest.Start(t, append([]zktest.Option{zktest.WithConfig(func(c *server.Config) {
		c.SecureListenAddr = "127.0.0.1:0"
		c.TLS = &tls.Config{Certificates: []tls.Certificate{srvCert}, ClientCAs: ca.pool, ClientAuth: clientAuth, MinVersion: tls.VersionTLS12}
		c.AuthProviders = providers
	})}, opts...)...)
	return &tlsEnv{ca: ca, other: other, srv: srv}
}

func (e *tlsEnv) dial(t *testing.T, cert *tls.Certificate) (net.Conn, error) {
	cfg := &tls.Config{RootCAs: e.ca.pool, ServerName: "127.0.0.1"}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", e.srv.SecureAddr(), cfg)
	if err != nil {
		return nil, err
	}
	// A client certificate the server refuses shows in the first read under TLS 1.3.
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return nc, nil
}

func whoAmI(t *testing.T, c *rawzk.Client) []jute.ClientInfo {
	t.Helper()
	var r jute.WhoAmIResponse
	if h := c.Call(jute.OpWhoAmI, nil, &r); h.Err != jute.OK {
		t.Fatalf("whoAmI: %v", h.Err)
	}
	return r.ClientInfo
}

func hasID(infos []jute.ClientInfo, scheme, id string) bool {
	for _, ci := range infos {
		if ci.AuthScheme == scheme && ci.User == id {
			return true
		}
	}
	return false
}

// TestTLSClientX509: a TLS client's certificate subject becomes its x509 id (Java's RFC 2253
// form), which x509 ACL entries match; another certificate does not.
func TestTLSClientX509(t *testing.T) {
	e := startTLS(t, tls.RequireAndVerifyClientCert, auth.Providers{X509: true, X509SuperUser: "CN=admin,O=zkd"})
	app := e.ca.issue(t, pkix.Name{CommonName: "app", Organization: []string{"zkd"}}, false)
	nc, err := e.dial(t, &app)
	if err != nil {
		t.Fatal(err)
	}
	c := rawzk.ConnectOver(t, nc)
	if infos := whoAmI(t, c); !hasID(infos, "x509", "CN=app,O=zkd") {
		t.Fatalf("whoAmI: %+v, want x509 CN=app,O=zkd", infos)
	}
	acl := []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "x509", ID: "CN=app,O=zkd"}}}
	if h := c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/app", Data: []byte("s"), ACL: acl}, &jute.CreateResponse{}); h.Err != jute.OK {
		t.Fatalf("create: %v", h.Err)
	}
	otherCert := e.ca.issue(t, pkix.Name{CommonName: "intruder", Organization: []string{"zkd"}}, false)
	nc2, err := e.dial(t, &otherCert)
	if err != nil {
		t.Fatal(err)
	}
	c2 := rawzk.ConnectOver(t, nc2)
	if h := c2.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/app"}, &jute.GetDataResponse{}); h.Err != jute.ErrNoAuth {
		t.Fatalf("read by another certificate: %v, want NOAUTH", h.Err)
	}
	admin := e.ca.issue(t, pkix.Name{CommonName: "admin", Organization: []string{"zkd"}}, false)
	nc3, err := e.dial(t, &admin)
	if err != nil {
		t.Fatal(err)
	}
	c3 := rawzk.ConnectOver(t, nc3)
	if h := c3.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/app"}, &jute.GetDataResponse{}); h.Err != jute.OK {
		t.Fatalf("read by the x509 super user: %v", h.Err)
	}
	// The plaintext port still serves, without x509 ids.
	if infos := whoAmI(t, rawzk.Connect(t, e.srv.Addr())); hasID(infos, "x509", "CN=app,O=zkd") {
		t.Fatalf("plaintext client has an x509 id: %+v", infos)
	}
}

// TestTLSBadClients: a wrong-CA or missing client certificate, a plaintext client on the TLS
// port, a TLS client on the plaintext port, a certificate without the x509 provider: that
// connection is closed, a bystander keeps working.
func TestTLSBadClients(t *testing.T) {
	e := startTLS(t, tls.RequireAndVerifyClientCert, auth.Providers{X509: true})
	good := e.ca.issue(t, pkix.Name{CommonName: "good"}, false)
	nc, err := e.dial(t, &good)
	if err != nil {
		t.Fatal(err)
	}
	bystander := rawzk.ConnectOver(t, nc)
	refused := func(name string, nc net.Conn, err error) {
		t.Helper()
		if err == nil {
			c := rawzk.Over(t, nc)
			if _, herr := c.Handshake(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}); herr == nil {
				t.Errorf("%s: session established", name)
			}
		}
		if h := bystander.Call(jute.OpExists, &jute.ExistsRequest{Path: "/"}, &jute.ExistsResponse{}); h.Err != jute.OK {
			t.Fatalf("%s: bystander: %v", name, h.Err)
		}
	}
	wrong := e.other.issue(t, pkix.Name{CommonName: "good"}, false)
	nc, err = e.dial(t, &wrong)
	refused("wrong CA", nc, err)
	nc, err = e.dial(t, nil)
	refused("no client certificate", nc, err)
	plain, err := net.Dial("tcp", e.srv.SecureAddr())
	if err != nil {
		t.Fatal(err)
	}
	plain.SetDeadline(time.Now().Add(20 * time.Second))
	refused("plaintext on the TLS port", plain, nil)
	tc, err := tls.Dial("tcp", e.srv.Addr(), &tls.Config{RootCAs: e.ca.pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{good}})
	if err == nil {
		tc.Close()
		t.Error("TLS handshake succeeded on the plaintext port")
	}
	refused("TLS on the plaintext port", nil, err)

	noProvider := startTLS(t, tls.RequireAndVerifyClientCert, auth.Providers{})
	cert := noProvider.ca.issue(t, pkix.Name{CommonName: "good"}, false)
	nc, err = noProvider.dial(t, &cert)
	if err == nil {
		c := rawzk.Over(t, nc)
		if _, herr := c.Handshake(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}); herr == nil {
			t.Error("without the x509 provider: session established (ZooKeeper closes the connection)")
		}
	}
}

// TestTLSWantWithoutCertificate: with clientAuth want, a client without a certificate is
// served with no x509 id, as ZooKeeper does.
func TestTLSWantWithoutCertificate(t *testing.T) {
	e := startTLS(t, tls.VerifyClientCertIfGiven, auth.Providers{X509: true})
	nc, err := e.dial(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := rawzk.ConnectOver(t, nc)
	for _, ci := range whoAmI(t, c) {
		if ci.AuthScheme == "x509" {
			t.Fatalf("x509 id without a certificate: %+v", ci)
		}
	}
}

// TestTLSWithoutX509Provider: a server without the x509 provider (client.portUnification
// alone, or authProvider.x509 naming another class: config.Security.X509Registered) closes a
// TLS connection that presents a certificate, logging ZooKeeper's "X509 Auth provider not
// found: x509", and serves one that presents none under clientAuth want, as
// NettyServerCnxnFactory's CertificateVerifier does.
func TestTLSWithoutX509Provider(t *testing.T) {
	var logBuf syncBuffer
	e := startTLS(t, tls.VerifyClientCertIfGiven, auth.Providers{}, zktest.WithConfig(func(c *server.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	}))
	nc, err := e.dial(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if infos := whoAmI(t, rawzk.ConnectOver(t, nc)); hasID(infos, "x509", "CN=app,O=zkd") {
		t.Fatalf("x509 id without a certificate: %+v", infos)
	}
	cert := e.ca.issue(t, pkix.Name{CommonName: "app", Organization: []string{"zkd"}}, false)
	nc, err = e.dial(t, &cert)
	if err == nil {
		if _, herr := rawzk.Over(t, nc).Handshake(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}); herr == nil {
			t.Fatal("certificate without the x509 provider: session established (ZooKeeper closes the connection)")
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logBuf.String(), "X509 Auth provider not found: x509") {
		if time.Now().After(deadline) {
			t.Fatalf("no \"X509 Auth provider not found\" in the log:\n%s", logBuf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
