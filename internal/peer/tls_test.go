package peer

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/tlsconf"
	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
)

// quorumTLS builds a TLS as cmd/zkd does from ssl.quorum.* keys: id's keystore, the
// truststore trust; server side always, dialing side when dial (sslQuorum).
func quorumTLS(t *testing.T, keystore, truststore string, dial, allowPlaintext bool) *TLS {
	t.Helper()
	st, err := tlsconf.Parse(map[string]string{
		"keyStore.location": keystore, "keyStore.password": tlstest.Password,
		"trustStore.location": truststore, "trustStore.password": tlstest.Password,
	}, tlsconf.QuorumPrefix)
	if err != nil {
		t.Fatal(err)
	}
	qt, err := NewTLS(st, dial, allowPlaintext, nil)
	if err != nil {
		t.Fatal(err)
	}
	return qt
}

// logBuffer collects a transport's log, so a test can wait for a line.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) waitFor(t *testing.T, what string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		l.mu.Lock()
		s := l.b.String()
		l.mu.Unlock()
		if strings.Contains(s, what) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q in:\n%s", what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTLSElectionChannels: two members with sslQuorum exchange messages both ways, whichever
// side dials (the smaller sid's dial is answered by a connection back).
func TestTLSElectionChannels(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	for _, store := range []struct{ name, ks, ts string }{
		{"JKS", pki.Server.JKS, pki.TrustJKS},
		{"PKCS12", pki.Server.PKCS12, pki.TrustPKCS12},
		{"PEM", pki.Server.PEM, pki.TrustPEM},
	} {
		t.Run(store.name, func(t *testing.T) {
			ln1, ln2 := listen(t), listen(t)
			peers := map[int64]string{1: ln1.Addr().String(), 2: ln2.Addr().String()}
			a := newTCP(t, TCPConfig{ID: 1, Listener: ln1, Peers: peers, TLS: quorumTLS(t, store.ks, store.ts, true, false)})
			b := newTCP(t, TCPConfig{ID: 2, Listener: ln2, Peers: peers, TLS: quorumTLS(t, store.ks, store.ts, true, false)})
			a.Send(2, []byte("vote from 1"))
			if m := recvWithin(t, b); m.From != 1 || string(m.Payload) != "vote from 1" {
				t.Fatalf("b received %+v", m)
			}
			b.Send(1, []byte("vote from 2"))
			if m := recvWithin(t, a); m.From != 2 || string(m.Payload) != "vote from 2" {
				t.Fatalf("a received %+v", m)
			}
			b.mu.Lock()
			c := b.links[1].conn
			b.mu.Unlock()
			if c == nil {
				t.Fatal("b has no connection to 1")
			}
			if _, ok := c.nc.(quickClose); !ok {
				t.Fatalf("b's connection to 1 is %T, not TLS", c.nc)
			}
		})
	}
}

// TestTLSWrongCARefused: a member whose certificate another CA signed cannot open an
// election channel; the refusal is logged and nothing is delivered.
func TestTLSWrongCARefused(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	ln1, ln2 := listen(t), listen(t)
	peers := map[int64]string{1: ln1.Addr().String(), 2: ln2.Addr().String()}
	var logA logBuffer
	a := newTCP(t, TCPConfig{ID: 1, Listener: ln1, Peers: peers, Logger: slog.New(slog.NewTextHandler(&logA, nil)),
		TLS: quorumTLS(t, pki.Server.JKS, pki.TrustJKS, true, false)})
	// b trusts a's CA, so only a's check of b's certificate can stop it.
	b := newTCP(t, TCPConfig{ID: 2, Listener: ln2, Peers: peers, TLS: quorumTLS(t, pki.OtherCA.JKS, pki.TrustJKS, true, false)})
	b.Send(1, []byte("let me in"))
	logA.waitFor(t, "election connection rejected")
	if a.Connected(2) {
		t.Fatal("a accepted a channel from a member with another CA's certificate")
	}
	// With TLS 1.3 the client's handshake completes before the server checks the client's
	// certificate: b learns of the refusal from a's alert, which may still be on its way.
	for deadline := time.Now().Add(20 * time.Second); b.Connected(1); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("b keeps a channel to a member that refused its certificate")
		}
	}
	select {
	case m := <-a.Recv():
		t.Fatalf("a received %+v from an untrusted member", m)
	default:
	}
}

// TestTLSListenerRefusesPlaintext: without portUnification a TLS listener closes a
// plaintext peer (which sends its header in the clear).
func TestTLSListenerRefusesPlaintext(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	var logA logBuffer
	a := newTCP(t, TCPConfig{ID: 1, Logger: slog.New(slog.NewTextHandler(&logA, nil)),
		TLS: quorumTLS(t, pki.Server.PEM, pki.TrustPEM, true, false)})
	c := dialRaw(t, a.Addr().String(), append(AppendHeader(nil, ProtocolVersionV1, 9, "127.0.0.1:1"), frame([]byte("hi"))...))
	expectClosed(t, c)
	logA.waitFor(t, "election connection rejected")
	select {
	case m := <-a.Recv():
		t.Fatalf("a TLS-only listener delivered %+v from a plaintext peer", m)
	default:
	}
}

// TestTLSPortUnification: a member with portUnification (and sslQuorum off, the rolling
// upgrade's middle step) takes both a plaintext member and a TLS member.
func TestTLSPortUnification(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	ln1, ln2, ln3 := listen(t), listen(t), listen(t)
	peers := map[int64]string{1: ln1.Addr().String(), 2: ln2.Addr().String(), 3: ln3.Addr().String()}
	a := newTCP(t, TCPConfig{ID: 1, Listener: ln1, Peers: peers, TLS: quorumTLS(t, pki.Server.JKS, pki.TrustJKS, false, true)})
	plain := newTCP(t, TCPConfig{ID: 2, Listener: ln2, Peers: peers})
	secure := newTCP(t, TCPConfig{ID: 3, Listener: ln3, Peers: peers, TLS: quorumTLS(t, pki.Server.JKS, pki.TrustJKS, true, false)})
	plain.Send(1, []byte("plain"))
	secure.Send(1, []byte("secure"))
	got := map[int64]string{}
	for range 2 {
		m := recvWithin(t, a)
		got[m.From] = string(m.Payload)
	}
	if got[2] != "plain" || got[3] != "secure" {
		t.Fatalf("the unified member received %v", got)
	}
	a.Send(2, []byte("to plain"))
	a.Send(3, []byte("to secure"))
	if m := recvWithin(t, plain); m.From != 1 || string(m.Payload) != "to plain" {
		t.Fatalf("plain received %+v", m)
	}
	if m := recvWithin(t, secure); m.From != 1 || string(m.Payload) != "to secure" {
		t.Fatalf("secure received %+v", m)
	}
}

// TestTLSAcceptedDetection: what the unified listener makes of a connection's first bytes,
// and that a plaintext stream reaches its reader whole.
func TestTLSAcceptedDetection(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	qt := quorumTLS(t, pki.Server.PEM, pki.TrustPEM, false, true)
	for _, tc := range []struct {
		name    string
		send    []byte
		closeW  bool // the peer stops sending after send
		wantErr bool
	}{
		{"election header", AppendHeader(nil, ProtocolVersionV1, 2, "127.0.0.1:1"), false, false},
		{"quorum packet", []byte{0, 0, 0, 11, 0, 0}, false, false},
		{"one plaintext byte decides", []byte{0}, false, false},
		{"TLS prefix then EOF", []byte{0x16, 0x03}, true, true},
		{"nothing", nil, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			go func() {
				client.Write(tc.send)
				if tc.closeW {
					client.Close()
				}
			}()
			nc, err := qt.Accepted(t.Context(), server, waitLong)
			if tc.wantErr {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			got := make([]byte, len(tc.send))
			if _, err := io.ReadFull(nc, got); err != nil || !bytes.Equal(got, tc.send) {
				t.Fatalf("read %x, %v; want %x", got, err, tc.send)
			}
		})
	}
}

// FuzzDetectTLS: the first bytes of any stream are classified as a TLS handshake exactly
// when they start one, and a plaintext stream is replayed byte for byte.
func FuzzDetectTLS(f *testing.F) {
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x05})
	f.Add([]byte{0x16, 0x03, 0x05})
	f.Add(AppendHeader(nil, ProtocolVersionV1, 1, "127.0.0.1:3888"))
	f.Add([]byte{0x16})
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		defer server.Close()
		go func() {
			client.Write(data)
			client.Close()
		}()
		isTLS, pc, err := detectTLS(server)
		n := min(len(data), 3)
		switch {
		case err != nil:
			if !isTLSPrefix(data[:n]) || n == 3 {
				t.Fatalf("%x: error %v for a stream that tells", data, err)
			}
		case isTLS:
			if n < 3 || !isTLSPrefix(data[:3]) {
				t.Fatalf("%x classified as TLS", data)
			}
		default:
			if isTLSPrefix(data[:n]) {
				t.Fatalf("%x classified as plaintext", data)
			}
			got, _ := io.ReadAll(pc)
			if !bytes.Equal(got, data) {
				t.Fatalf("replayed %x, want %x", got, data)
			}
		}
	})
}

// TestVerifyServerHost: a listener's certificate is checked as ZKTrustManager checks it:
// the IP address dialed first, then the configured host name, or for a configured address
// the names reverse DNS gives.
func TestVerifyServerHost(t *testing.T) {
	remote := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 2888}
	byIP := &x509.Certificate{IPAddresses: []net.IP{net.IPv4(10, 0, 0, 7)}}
	byName := &x509.Certificate{DNSNames: []string{"zk1.example.org"}}
	lookup := func(ip string) ([]string, error) {
		if ip == "10.0.0.7" {
			return []string{"zk1.example.org."}, nil
		}
		return nil, errors.New("no PTR")
	}
	noLookup := func(string) ([]string, error) { return nil, errors.New("no PTR") }
	for _, tc := range []struct {
		name   string
		cert   *x509.Certificate
		host   string
		lookup func(string) ([]string, error)
		ok     bool
	}{
		{"IP SAN, dialled by name", byIP, "zk1.example.org", noLookup, true},
		{"IP SAN, dialled by address", byIP, "10.0.0.7", noLookup, true},
		{"DNS SAN, dialled by name", byName, "zk1.example.org", noLookup, true},
		{"DNS SAN, dialled by address, reverse DNS names it", byName, "10.0.0.7", lookup, true},
		{"DNS SAN, dialled by address, no reverse DNS", byName, "10.0.0.7", noLookup, false},
		{"DNS SAN of another host", byName, "zk2.example.org", lookup, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := verifyServerHost(tc.cert, tc.host, remote, tc.lookup)
			if (err == nil) != tc.ok {
				t.Fatalf("verifyServerHost: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// TestTLSDialerChecksListenerName: with hostname verification a member refuses a listener
// whose certificate (from the right CA) names another host; without it, it connects.
func TestTLSDialerChecksListenerName(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	for _, verify := range []bool{true, false} {
		t.Run(fmt.Sprintf("hostnameVerification=%v", verify), func(t *testing.T) {
			ln1, ln2 := listen(t), listen(t)
			peers := map[int64]string{1: ln1.Addr().String(), 2: ln2.Addr().String()}
			// Member 1 listens with a certificate for elsewhere.invalid and does not check
			// names itself; member 2 dials it (the larger sid keeps its connection).
			lax := quorumTLS(t, pki.WrongHost.JKS, pki.TrustJKS, true, false)
			lax.HostnameVerification = false
			a := newTCP(t, TCPConfig{ID: 1, Listener: ln1, Peers: peers, TLS: lax})
			strict := quorumTLS(t, pki.Server.JKS, pki.TrustJKS, true, false)
			strict.HostnameVerification = verify
			var logB logBuffer
			b := newTCP(t, TCPConfig{ID: 2, Listener: ln2, Peers: peers, TLS: strict, Logger: slog.New(slog.NewTextHandler(&logB, nil))})
			b.Send(1, []byte("hello"))
			if verify {
				logB.waitFor(t, "matches neither its address nor its name")
				if a.Connected(2) {
					t.Fatal("member 2 connected to a listener whose certificate names another host")
				}
				return
			}
			if m := recvWithin(t, a); string(m.Payload) != "hello" {
				t.Fatalf("received %+v", m)
			}
		})
	}
}
