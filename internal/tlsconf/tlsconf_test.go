package tlsconf

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestParseDefaults(t *testing.T) {
	s, err := Parse(map[string]string{}, "ssl.")
	if err != nil {
		t.Fatal(err)
	}
	if s.ClientAuth != ClientAuthNeed || s.MinVersion != tls.VersionTLS12 || s.MaxVersion != tls.VersionTLS13 ||
		!s.HostnameVerification || s.ClientHostnameVerification || s.HandshakeDetectionTimeout != 5*time.Second {
		t.Fatalf("client defaults: %+v", s)
	}
	q, err := Parse(map[string]string{}, QuorumPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if !q.ClientHostnameVerification {
		t.Fatal("quorum side: servers verify the peer's host by default")
	}
	q, _ = Parse(map[string]string{"hostnameVerification": "false"}, QuorumPrefix)
	if q.ClientHostnameVerification || q.HostnameVerification {
		t.Fatal("hostnameVerification=false turns off both checks")
	}
}

func TestParseValues(t *testing.T) {
	s, err := Parse(map[string]string{
		"keyStore.location": "/x/server.jks", "trustStore.location": "/x/ca.p12",
		"keyStore.type": "", "trustStore.type": "", "clientAuth": "WANT", "protocol": "TLSv1.2",
		"ciphersuites":                    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
		"handshakeDetectionTimeoutMillis": "250",
	}, "ssl.")
	if err != nil {
		t.Fatal(err)
	}
	if s.KeyStore.Type != StoreJKS || s.TrustStore.Type != StorePKCS12 || s.ClientAuth != ClientAuthWant ||
		s.MaxVersion != tls.VersionTLS12 || len(s.CipherSuites) != 2 || s.HandshakeDetectionTimeout != 250*time.Millisecond {
		t.Fatalf("%+v", s)
	}
	s, _ = Parse(map[string]string{"enabledProtocols": "TLSv1.3", "keyStore.location": "k", "keyStore.type": "pem"}, "ssl.")
	if s.MinVersion != tls.VersionTLS13 || s.KeyStore.Type != StorePEM {
		t.Fatalf("%+v", s)
	}
	s, _ = Parse(map[string]string{"handshakeDetectionTimeoutMillis": "0"}, "ssl.")
	if s.HandshakeDetectionTimeout != DefaultHandshakeDetectionTimeout {
		t.Fatal("a timeout below 1 ms takes the default, as in ZooKeeper")
	}
}

// Every key that asks for what zkd cannot do stops start-up, naming the full key.
func TestParseFailsClosed(t *testing.T) {
	for _, c := range []struct{ key, val, want string }{
		{"crl", "true", "ssl.quorum.crl"},
		{"ocsp", "TRUE", "ssl.quorum.ocsp"},
		{"context.supplier.class", "com.example.Supplier", "ssl.quorum.context.supplier.class"},
		{"keyStore.type", "BCFKS", "ssl.quorum.keyStore.type"},
		{"keyStore.type", "PKCS11", "ssl.quorum.keyStore.type"},
		{"trustStore.location", "/x/ca.crt", "ssl.quorum.trustStore.location"},
		{"trustStore.location", "/x/ca.bcfks", "BCFKS"},
		{"clientAuth", "sometimes", "ssl.quorum.clientAuth"},
		{"protocol", "TLSv1.1", "ssl.quorum.protocol"},
		{"enabledProtocols", "TLSv1.2,SSLv3", "ssl.quorum.enabledProtocols"},
		{"ciphersuites", "TLS_RSA_WITH_RC4_128_SHA", "ssl.quorum.ciphersuites"},
		{"ciphersuites", "TLS_AES_128_GCM_SHA256", "TLS 1.3 suites"},
		{"hostnameVerification", "yes", "ssl.quorum.hostnameVerification"},
		{"handshakeDetectionTimeoutMillis", "5s", "ssl.quorum.handshakeDetectionTimeoutMillis"},
		{"keystore.location", "/x/k.jks", "ssl.quorum.keystore.location"},
		{"sslProvider", "BOGUS", "ssl.quorum.sslProvider"},
	} {
		_, err := Parse(map[string]string{c.key: c.val}, QuorumPrefix)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%s: error %v, want it to name %q", c.key, c.val, err, c.want)
		}
	}
}

func TestParseCipherSuitesTLS13(t *testing.T) {
	s, err := Parse(map[string]string{"ciphersuites": "TLS_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256,TLS_CHACHA20_POLY1305_SHA256"}, "ssl.")
	if err != nil {
		t.Fatal(err)
	}
	if s.MinVersion != tls.VersionTLS13 || s.CipherSuites != nil {
		t.Fatalf("only TLS 1.3 suites named: want TLS 1.3 only, got %+v", s)
	}
	s, err = Parse(map[string]string{"ciphersuites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}, "ssl.")
	if err != nil || s.MaxVersion != tls.VersionTLS12 {
		t.Fatalf("no TLS 1.3 suite named: want TLS 1.2 at most, got %+v, %v", s, err)
	}
}

func storeSettings(t *testing.T, key, trust Store, extra map[string]string) Settings {
	t.Helper()
	props := map[string]string{
		"keyStore.location": key.Location, "keyStore.password": key.Password,
		"trustStore.location": trust.Location, "trustStore.password": trust.Password,
	}
	for k, v := range extra {
		props[k] = v
	}
	s, err := Parse(props, "ssl.")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// handshake runs a TLS handshake over a loopback connection and returns both sides' errors.
func handshake(t *testing.T, server, client *tls.Config) (serverErr, clientErr error, sc *tls.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	var srv *tls.Conn
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		srv = tls.Server(c, server)
		srv.SetDeadline(time.Now().Add(30 * time.Second))
		err = srv.Handshake()
		if err == nil {
			// TLS 1.3 clients learn of a refused certificate on their first read.
			_, err = srv.Write([]byte("ok"))
		}
		done <- err
		if err != nil {
			srv.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cc := tls.Client(c, client)
	defer cc.Close()
	cc.SetDeadline(time.Now().Add(30 * time.Second))
	clientErr = cc.Handshake()
	if clientErr == nil {
		buf := make([]byte, 2)
		_, clientErr = io.ReadFull(cc, buf)
	}
	serverErr = <-done
	if srv != nil {
		t.Cleanup(func() { srv.Close() })
	}
	return serverErr, clientErr, srv
}

func TestStoreTypesRoundTrip(t *testing.T) {
	p := tlstest.New(t, t.TempDir())
	pw := tlstest.Password
	for _, c := range []struct {
		name       string
		key, trust Store
	}{
		{"PEM", Store{Location: p.Server.PEM}, Store{Location: p.TrustPEM}},
		{"encrypted PEM", Store{Location: p.Server.EncryptedPEM, Type: StorePEM, Password: pw}, Store{Location: p.TrustPEM}},
		{"PKCS12", Store{Location: p.Server.PKCS12, Password: pw}, Store{Location: p.TrustPKCS12, Password: pw}},
		{"JKS", Store{Location: p.Server.JKS, Password: pw}, Store{Location: p.TrustJKS, Password: pw}},
	} {
		t.Run(c.name, func(t *testing.T) {
			props := map[string]string{"keyStore.location": c.key.Location, "keyStore.password": c.key.Password,
				"trustStore.location": c.trust.Location, "trustStore.password": c.trust.Password}
			if c.key.Type != "" {
				props["keyStore.type"] = string(c.key.Type)
			}
			s, err := Parse(props, "ssl.")
			if err != nil {
				t.Fatal(err)
			}
			srv, err := s.ServerConfig(quiet())
			if err != nil {
				t.Fatal(err)
			}
			cli, err := s.ClientConfig("127.0.0.1", quiet())
			if err != nil {
				t.Fatal(err)
			}
			serr, cerr, sc := handshake(t, srv, cli)
			if serr != nil || cerr != nil {
				t.Fatalf("server %v, client %v", serr, cerr)
			}
			if got := PeerCertificates(sc); len(got) == 0 || got[0].Subject.CommonName != "localhost" {
				t.Fatalf("peer certificates %v", got)
			}
		})
	}
}

func TestWrongPassword(t *testing.T) {
	p := tlstest.New(t, t.TempDir())
	const wrong = "not-the-password-4711"
	for _, st := range []Store{
		{Location: p.Server.EncryptedPEM, Type: StorePEM, Password: wrong},
		{Location: p.Server.PKCS12, Type: StorePKCS12, Password: wrong},
		{Location: p.Server.JKS, Type: StoreJKS, Password: wrong},
	} {
		_, err := LoadKeyPair(st)
		if err == nil {
			t.Fatalf("%s: loaded with a wrong password", st.Type)
		}
		if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), tlstest.Password) {
			t.Fatalf("%s: error names the password: %v", st.Type, err)
		}
	}
	for _, st := range []Store{
		{Location: p.TrustPKCS12, Type: StorePKCS12, Password: wrong},
		{Location: p.TrustJKS, Type: StoreJKS, Password: wrong},
	} {
		_, err := LoadTrust(st)
		if err == nil || strings.Contains(err.Error(), wrong) {
			t.Fatalf("%s truststore with a wrong password: %v", st.Type, err)
		}
	}
	// An encrypted key without a password.
	if _, err := LoadKeyPair(Store{Location: p.Server.EncryptedPEM, Type: StorePEM}); !errors.Is(err, errNoPassword) {
		t.Fatalf("encrypted PEM without password: %v", err)
	}
}

func TestPasswordPath(t *testing.T) {
	p := tlstest.New(t, t.TempDir())
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte(tlstest.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Parse(map[string]string{"keyStore.location": p.Server.JKS, "keyStore.password": "ignored",
		"keyStore.passwordPath": pwFile}, "ssl.")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ServerConfig(quiet()); err != nil {
		t.Fatal(err)
	}
}

// openssl's own encrypted PKCS#8 (the way ZooKeeper's docs make PEM keystores) loads.
func TestOpenSSLEncryptedKey(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed")
	}
	p := tlstest.New(t, t.TempDir())
	out := filepath.Join(t.TempDir(), "key.pem")
	for _, v2 := range []string{"aes-256-cbc", "aes-128-cbc", "des3"} {
		cmd := exec.Command(openssl, "pkcs8", "-topk8", "-v2", v2, "-in", p.Server.PEM, "-out", out, "-passout", "pass:"+tlstest.Password)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %s: %v\n%s", v2, err, b)
		}
		data, _ := os.ReadFile(out)
		if _, err := ParsePEMPrivateKey(data, tlstest.Password); err != nil {
			t.Fatalf("%s: %v", v2, err)
		}
		if _, err := ParsePEMPrivateKey(data, "wrong-password"); err == nil {
			t.Fatalf("%s: decrypted with a wrong password", v2)
		}
	}
}

func serverAndClient(t *testing.T, p *tlstest.PKI, clientAuth string, client *tlstest.Identity) (serr, cerr error, sc *tls.Conn) {
	t.Helper()
	s := storeSettings(t, Store{Location: p.Server.PEM}, Store{Location: p.TrustPEM}, map[string]string{"clientAuth": clientAuth})
	srv, err := s.ServerConfig(quiet())
	if err != nil {
		t.Fatal(err)
	}
	cs := Settings{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13, HostnameVerification: true,
		TrustStore: Store{Location: p.TrustPEM, Type: StorePEM}}
	if client != nil {
		cs.KeyStore = Store{Location: client.PEM, Type: StorePEM}
	}
	cli, err := cs.ClientConfig("localhost", quiet())
	if err != nil {
		t.Fatal(err)
	}
	return handshake(t, srv, cli)
}

func TestClientAuth(t *testing.T) {
	p := tlstest.New(t, t.TempDir())
	if serr, _, _ := serverAndClient(t, p, "need", nil); serr == nil {
		t.Fatal("clientAuth=need accepted a client without a certificate")
	}
	if serr, cerr, sc := serverAndClient(t, p, "want", nil); serr != nil || cerr != nil || PeerCertificates(sc) != nil {
		t.Fatalf("clientAuth=want without a certificate: server %v, client %v", serr, cerr)
	}
	if serr, cerr, sc := serverAndClient(t, p, "need", p.Client); serr != nil || cerr != nil {
		t.Fatalf("clientAuth=need with a good certificate: server %v, client %v", serr, cerr)
	} else if pc := PeerCertificates(sc); len(pc) == 0 || pc[0].Subject.String() != "CN=client,OU=clients,O=zkd-test" {
		t.Fatalf("peer certificates: %v", pc)
	}
	for _, c := range []struct {
		name string
		id   *tlstest.Identity
	}{{"expired", p.Expired}, {"self-signed", p.SelfSigned}, {"other CA", p.OtherCA}} {
		for _, auth := range []string{"need", "want"} {
			if serr, _, _ := serverAndClient(t, p, auth, c.id); serr == nil {
				t.Errorf("clientAuth=%s accepted a client with an %s certificate", auth, c.name)
			}
		}
	}
}

func TestServerVerification(t *testing.T) {
	p := tlstest.New(t, t.TempDir())
	check := func(server *tlstest.Identity, name string, verify bool) error {
		srv, err := (Settings{KeyStore: Store{Location: server.PEM, Type: StorePEM}, ClientAuth: ClientAuthNone,
			MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}).ServerConfig(quiet())
		if err != nil {
			t.Fatal(err)
		}
		cli, err := (Settings{TrustStore: Store{Location: p.TrustPEM, Type: StorePEM}, HostnameVerification: verify,
			MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}).ClientConfig(name, quiet())
		if err != nil {
			t.Fatal(err)
		}
		_, cerr, _ := handshake(t, srv, cli)
		return cerr
	}
	if err := check(p.Server, "127.0.0.1", true); err != nil {
		t.Fatal(err)
	}
	if err := check(p.WrongHost, "127.0.0.1", true); err == nil {
		t.Fatal("a certificate for another host was accepted")
	}
	if err := check(p.WrongHost, "127.0.0.1", false); err != nil {
		t.Fatalf("hostnameVerification=false still checked the name: %v", err)
	}
	for _, id := range []*tlstest.Identity{p.Expired, p.SelfSigned, p.OtherCA} {
		if err := check(id, "127.0.0.1", false); err == nil {
			t.Fatalf("server certificate %s accepted", id.Cert.Subject)
		}
	}
}

// On the quorum side the server checks the client's certificate against its address.
func TestClientHostnameVerification(t *testing.T) {
	p := tlstest.New(t, t.TempDir())
	s, err := Parse(map[string]string{"keyStore.location": p.Server.PEM, "trustStore.location": p.TrustPEM}, QuorumPrefix)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := s.ServerConfig(quiet())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id *tlstest.Identity
		ok bool
	}{{p.Client, true}, {p.WrongHost, false}} {
		cs := s
		cs.KeyStore.Location = c.id.PEM
		cli, err := cs.ClientConfig("127.0.0.1", quiet())
		if err != nil {
			t.Fatal(err)
		}
		serr, _, _ := handshake(t, srv, cli)
		if (serr == nil) != c.ok {
			t.Errorf("client %s: server error %v, want ok=%v", c.id.Cert.Subject, serr, c.ok)
		}
	}
}

// A rewritten keystore is served from the next handshake a second later; a broken one is
// refused and the old certificate kept.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	p := tlstest.New(t, filepath.Join(dir, "a"))
	p2 := tlstest.New(t, filepath.Join(dir, "b")) // another CA and server certificate
	ks := filepath.Join(dir, "server.pem")
	ts := filepath.Join(dir, "trust.pem")
	copyFile(t, p.Server.PEM, ks)
	copyFile(t, p.TrustPEM, ts)

	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	s := storeSettings(t, Store{Location: ks}, Store{Location: ts}, map[string]string{"clientAuth": "none"})
	s.Now = clock
	srv, err := s.ServerConfig(quiet())
	if err != nil {
		t.Fatal(err)
	}
	first := servedSerial(t, srv)
	if first != p.Server.Cert.SerialNumber.String() {
		t.Fatalf("served %s, want the first certificate", first)
	}
	copyFile(t, p2.Server.PEM, ks)
	if got := servedSerial(t, srv); got != first {
		t.Fatal("reloaded within the second")
	}
	advance(time.Second)
	if got := servedSerial(t, srv); got != p2.Server.Cert.SerialNumber.String() {
		t.Fatalf("after a second: served %s, want the rewritten certificate", got)
	}
	// A broken file: the previous certificate stays.
	if err := os.WriteFile(ks, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	advance(time.Second)
	if got := servedSerial(t, srv); got != p2.Server.Cert.SerialNumber.String() {
		t.Fatalf("after a broken rewrite: served %s, want the previous certificate", got)
	}

	// The client side reloads its truststore: with the new CA it trusts the new server.
	cs := storeSettings(t, Store{Location: p.Client.PEM}, Store{Location: ts}, nil)
	cs.Now = clock
	cli, err := cs.ClientConfig("127.0.0.1", quiet())
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, p2.Server.PEM, ks)
	advance(time.Second)
	if _, cerr, _ := handshake(t, srv, cli); cerr == nil {
		t.Fatal("client trusted a server from a CA not in its truststore")
	}
	copyFile(t, p2.TrustPEM, ts)
	advance(time.Second)
	if serr, cerr, _ := handshake(t, srv, cli); serr != nil || cerr != nil {
		t.Fatalf("after the truststore rewrite: server %v, client %v", serr, cerr)
	}
}

// servedSerial handshakes with srv and returns the serial number of the certificate served.
func servedSerial(t *testing.T, srv *tls.Config) string {
	t.Helper()
	var serial string
	cli := &tls.Config{InsecureSkipVerify: true, VerifyConnection: func(cs tls.ConnectionState) error {
		serial = cs.PeerCertificates[0].SerialNumber.String()
		return nil
	}}
	serr, cerr, _ := handshake(t, srv, cli)
	if serr != nil || cerr != nil {
		t.Fatalf("server %v, client %v", serr, cerr)
	}
	return serial
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	// Through a rename, so a handshake never reads half a file.
	tmp := to + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, to); err != nil {
		t.Fatal(err)
	}
}
