package tlsconf

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
)

// echoServer serves ln until it is closed: each connection gets its first 4 bytes echoed,
// prefixed by "tls:" or "raw:". Errors of a connection go to errs.
func echoServer(t *testing.T, ln net.Listener, errs chan<- error) {
	t.Helper()
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4)
				if _, err := io.ReadFull(c, buf); err != nil {
					errs <- err
					return
				}
				kind := "raw:"
				if PeerCertificates(c) != nil || c.(*UnifiedConn).TLS() != nil {
					kind = "tls:"
				}
				if _, err := c.Write(append([]byte(kind), buf...)); err != nil {
					errs <- err
				}
			}()
		}
	}()
}

func TestUnifyServesTLSAndPlaintext(t *testing.T) {
	p := tlstest.New(t, t.TempDir())
	s := storeSettings(t, Store{Location: p.Server.PEM}, Store{Location: p.TrustPEM}, map[string]string{"clientAuth": "want"})
	srv, err := s.ServerConfig(quiet())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 10)
	echoServer(t, Unify(raw, srv, 30*time.Second), errs)
	addr := raw.Addr().String()

	// A silent plaintext client first: it must not hold up the others.
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	exchange := func(c net.Conn, msg string) string {
		t.Helper()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 8)
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatalf("read: %v (server: %v)", err, drain(errs))
		}
		return string(buf)
	}
	pc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	// A ZooKeeper ConnectRequest starts with its length.
	if got := exchange(pc, "\x00\x00\x00\x2c"); got != "raw:\x00\x00\x00\x2c" {
		t.Fatalf("plaintext: %q", got)
	}
	cs := storeSettings(t, Store{Location: p.Client.PEM}, Store{Location: p.TrustPEM}, nil)
	cli, err := cs.ClientConfig("127.0.0.1", quiet())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := tls.Dial("tcp", addr, cli)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if got := exchange(tc, "ruok"); got != "tls:ruok" {
		t.Fatalf("TLS: %q", got)
	}
	// A four-letter word is plaintext too.
	fc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	if got := exchange(fc, "srvr"); got != "raw:srvr" {
		t.Fatalf("four-letter word: %q", got)
	}
}

func drain(ch <-chan error) []error {
	var out []error
	for {
		select {
		case e := <-ch:
			out = append(out, e)
		default:
			return out
		}
	}
}

// A client that sends nothing, or only the first byte of a TLS record, is closed after the
// detection timeout.
func TestUnifyClosesSilentConnection(t *testing.T) {
	p := tlstest.New(t, t.TempDir())
	srv, err := storeSettings(t, Store{Location: p.Server.PEM}, Store{}, nil).ServerConfig(quiet())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 10)
	echoServer(t, Unify(raw, srv, 200*time.Millisecond), errs)
	for _, first := range [][]byte{nil, {0x16}} {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if len(first) > 0 {
			if _, err := c.Write(first); err != nil {
				t.Fatal(err)
			}
		}
		// The server closes it: the read ends with EOF (or a reset) well before this deadline.
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, err = c.Read(make([]byte, 1))
		var ne net.Error
		if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
			t.Fatalf("first bytes %x: read %v, want the connection closed by the server", first, err)
		}
		select {
		case err := <-errs:
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("server side error %v, want a timeout", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("server reported nothing")
		}
	}
}

// A plaintext client that says something and hangs up at once is still served its bytes.
func TestUnifyShortPlaintext(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	uc := &UnifiedConn{raw: b, timeout: 30 * time.Second}
	go func() { a.Write([]byte{0x16}); a.Write([]byte("x")); a.Close() }()
	got, err := io.ReadAll(uc)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte{0x16, 'x'}) {
		t.Fatalf("read %q", got)
	}
	uc.Close()
}

func TestIsTLSHandshake(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		want bool
	}{
		{[]byte{0x16, 0x03, 0x01}, true},
		{[]byte{0x16, 0x03, 0x03}, true},
		{[]byte{0x16, 0x03}, true},
		{[]byte{0x16, 0x03, 0x05}, false},
		{[]byte{0x16, 0x02}, false},
		{[]byte{0x00, 0x00, 0x00}, false},
		{[]byte("srv"), false},
	} {
		if got := IsTLSHandshake(c.b); got != c.want {
			t.Errorf("%x: %v", c.b, got)
		}
	}
}

func FuzzIsTLSHandshake(f *testing.F) {
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x10})
	f.Add([]byte{0, 0, 0, 0x2c})
	f.Add([]byte("ruok"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := IsTLSHandshake(b)
		if len(b) >= 3 {
			want := b[0] == 0x16 && b[1] == 3 && b[2] <= 4
			if got != want {
				t.Fatalf("%x: %v", b, got)
			}
		}
		// Detection over a connection agrees, and replays every byte.
		a, c := net.Pipe()
		defer a.Close()
		uc := &UnifiedConn{raw: c, timeout: 10 * time.Second, cfg: &tls.Config{}}
		go func() { a.Write(b); a.Close() }()
		if !IsTLSHandshake(b[:min(len(b), 3)]) || len(b) == 0 {
			got, _ := io.ReadAll(uc)
			if !bytes.Equal(got, b) {
				t.Fatalf("plaintext %x replayed as %x", b, got)
			}
		} else {
			// A TLS start that is not a valid handshake: the handshake fails, no panic.
			uc.Read(make([]byte, 1))
		}
		uc.Close()
	})
}

func FuzzPEM(f *testing.F) {
	// One small identity: a whole tlstest PKI is slow under the fuzzer's instrumentation.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		f.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		f.Fatal(err)
	}
	enc, err := tlstest.EncryptPKCS8(p8, tlstest.Password)
	if err != nil {
		f.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	for _, b := range [][]byte{
		append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}), certPEM...),
		append(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: enc}), certPEM...),
		certPEM,
	} {
		f.Add(b, "")
		f.Add(b, tlstest.Password)
	}
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"), "pw")
	maxPBKDF2Iterations = 5000 // keep each run quick
	f.Fuzz(func(t *testing.T, data []byte, pw string) {
		certs, err := ParsePEMCertificates(data)
		if err == nil {
			for _, c := range certs {
				if c == nil {
					t.Fatal("nil certificate")
				}
			}
		}
		key, err := ParsePEMPrivateKey(data, pw)
		if err == nil && key == nil {
			t.Fatal("nil key without an error")
		}
	})
}

// Deadlines set before detection do not cut it short, and apply once it is done.
func TestUnifyKeepsCallerDeadlines(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := Unify(raw, &tls.Config{}, 30*time.Second)
	defer ln.Close()
	cli, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Unix(1, 0)); err != nil { // long past
		t.Fatal(err)
	}
	if _, err := cli.Write([]byte("srvr")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "srv" {
		t.Fatalf("detection under a past deadline: %q, %v", buf, err)
	}
	// The replayed bytes are gone; the next read meets the caller's deadline.
	var ne net.Error
	if _, err := c.Read(buf); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read after detection: %v, want the caller's deadline", err)
	}
}

// A TLS client the server refuses (no certificate, clientAuth need) gets its connection
// closed; the server's Read reports the handshake failure.
func TestUnifyRefusedHandshake(t *testing.T) {
	p := tlstest.New(t, t.TempDir())
	srv, err := storeSettings(t, Store{Location: p.Server.PEM}, Store{Location: p.TrustPEM}, nil).ServerConfig(quiet())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 10)
	echoServer(t, Unify(raw, srv, 30*time.Second), errs)
	cli, err := (Settings{TrustStore: Store{Location: p.TrustPEM, Type: StorePEM}, HostnameVerification: true,
		MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}).ClientConfig("127.0.0.1", quiet())
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.Dial("tcp", raw.Addr().String(), cli)
	if err == nil {
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		c.Write([]byte("ruok"))
		_, err = c.Read(make([]byte, 1))
	}
	if err == nil {
		t.Fatal("a client without a certificate was served")
	}
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), "TLS handshake") {
			t.Fatalf("server error %v, want the handshake failure", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("server reported nothing")
	}
}
