package compat

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
)

// clientX509 is pki.Client's x509 id (its subject as Java renders it).
const clientX509 = "CN=client,OU=clients,O=zkd-test"

// TestTLSKazoo: kazoo over TLS (use_ssl, ca, certfile, keyfile, verify_certs) on the secure
// client port of zkd and ZooKeeper 3.8 with clientAuth=need and the x509 provider: a client
// with a certificate from the CA creates, reads and deletes; an x509 ACL admits that
// certificate's subject only; certificates from another CA, expired, self-signed, and none at
// all are refused. Both servers answer the same.
func TestTLSKazoo(t *testing.T) {
	pki := tlstest.New(t, filepath.Join(t.TempDir(), "pki"))
	targets := startTLSPair(t, true, append(sslLines(pki, "PKCS12"), "ssl.clientAuth=need", x509Provider)...)
	ca := pki.CA.CertPEM
	runs := []struct {
		name  string
		k     kazooTLS
		steps []string
		want  []string // lines that must be in the output (both servers)
	}{
		{"client", kazooTLS{true, ca, pki.Client}, []string{"crud", "acl-create=" + clientX509, "acl-get"},
			[]string{"connected", "create /kz-tls", "get b'over-tls'", "exists None", "acl-get b'mine'", "done"}},
		{"other-client", kazooTLS{true, ca, pki.Client2}, []string{"acl-get"},
			[]string{"connected", "acl-get NoAuthError", "done"}},
		{"client-again", kazooTLS{true, ca, pki.Client}, []string{"acl-get", "acl-delete"},
			[]string{"acl-get b'mine'", "acl-delete True", "done"}},
		{"other-ca", kazooTLS{true, ca, pki.OtherCA}, nil, []string{"refused"}},
		{"expired", kazooTLS{true, ca, pki.Expired}, nil, []string{"refused"}},
		{"self-signed", kazooTLS{true, ca, pki.SelfSigned}, nil, []string{"refused"}},
		{"no-certificate", kazooTLS{true, ca, nil}, nil, []string{"refused"}},
		// The server's certificate is not from a CA the client trusts.
		{"untrusted-server", kazooTLS{true, pki.OtherCARoot.CertPEM, pki.Client}, nil, []string{"refused"}},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			kazooOnBoth(t, "kazoo over TLS", targets, true, r.k, r.want, r.steps...)
		})
	}
}

// TestTLSJavaClient: ZooKeeper's own Java client, zkCli.sh with zookeeper.client.secure,
// ClientCnxnSocketNetty and the zookeeper.ssl.* key and trust stores (PKCS12 and JKS),
// creates, reads, lists and deletes over TLS on zkd and ZooKeeper 3.8 (serving a PEM
// keystore with an encrypted key); a keystore from another CA, or a truststore without the
// server's CA, cannot connect.
func TestTLSJavaClient(t *testing.T) {
	pki := tlstest.New(t, filepath.Join(t.TempDir(), "pki"))
	otherP12, otherJKS := tlstest.TrustStores(t, t.TempDir(), "other-trust", pki.OtherCARoot.Cert)
	targets := startTLSPair(t, true, append(sslLines(pki, "PEM"), "ssl.clientAuth=need", x509Provider)...)
	cmds := []string{"create /zkcli-tls hello", "get /zkcli-tls", "ls /", "delete /zkcli-tls", "ls /"}
	for _, c := range []struct {
		name string
		s    zkCliTLS
		ok   bool
	}{
		{"PKCS12", zkCliTLS{pki.Client.PKCS12, pki.TrustPKCS12}, true},
		{"JKS", zkCliTLS{pki.Client.JKS, pki.TrustJKS}, true},
		{"other-CA-keystore", zkCliTLS{pki.OtherCA.JKS, pki.TrustJKS}, false},
		{"expired-keystore", zkCliTLS{pki.Expired.PKCS12, pki.TrustPKCS12}, false},
		{"other-truststore", zkCliTLS{pki.Client.PKCS12, otherP12}, false},
		{"other-truststore-JKS", zkCliTLS{pki.Client.JKS, otherJKS}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, tgt := range targets {
				out, errOut, ok := runZkCliTLS(t, tgt.secure, c.s, cmds...)
				out = strings.ReplaceAll(out, tgt.secure, "SERVER")
				t.Logf("%s: exit ok %v, stdout:\n%s", tgt.name, ok, out)
				created := strings.Contains(errOut, "Created /zkcli-tls")
				if c.ok {
					if !created {
						t.Errorf("%s: zkCli.sh did not print Created /zkcli-tls", tgt.name)
					}
					for _, w := range []string{"\nhello\n", "[zkcli-tls, zookeeper]", "[zookeeper]"} {
						if !strings.Contains(out, w) {
							t.Errorf("%s: zkCli.sh output lacks %q", tgt.name, w)
						}
					}
				} else if ok || created {
					t.Errorf("%s: zkCli.sh with %s connected (exit ok %v)", tgt.name, c.name, ok)
				}
				got = append(got, strings.Join(zkCliResults(out), "\n"))
			}
			if got[0] != got[1] {
				t.Errorf("zkCli.sh over TLS differs:\nzookeeper:\n%s\nzkd:\n%s", got[0], got[1])
			}
		})
	}
}

// zkCliResults keeps the lines of zkCli.sh's stdout that commands print (not the banner,
// prompts or connection events, whose wording and timing vary).
func zkCliResults(out string) []string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if i := strings.LastIndex(l, "] "); strings.HasPrefix(l, "[zk:") && i >= 0 {
			l = strings.TrimSpace(l[i+2:]) // a prompt echoed before the output
		}
		switch {
		case l == "", strings.HasPrefix(l, "Connecting to"), strings.HasPrefix(l, "WATCHER::"),
			strings.HasPrefix(l, "WatchedEvent"), strings.HasPrefix(l, "Welcome"),
			strings.HasPrefix(l, "JLine"), strings.HasPrefix(l, "[zk:"):
			continue
		}
		keep = append(keep, l)
	}
	return keep
}

// TestTLSPortUnification: with client.portUnification=true one port serves kazoo with and
// without TLS, on zkd and ZooKeeper 3.8 alike; a TLS client with a certificate from another
// CA is refused there too.
func TestTLSPortUnification(t *testing.T) {
	pki := tlstest.New(t, filepath.Join(t.TempDir(), "pki"))
	targets := startTLSPair(t, false, append(sslLines(pki, "JKS"), "ssl.clientAuth=need", x509Provider,
		"client.portUnification=true")...)
	ca := pki.CA.CertPEM
	for _, r := range []struct {
		name string
		k    kazooTLS
		want []string
	}{
		{"tls", kazooTLS{true, ca, pki.Client}, []string{"connected", "get b'over-tls'", "acl-get b'mine'", "acl-delete True", "done"}},
		{"plaintext", kazooTLS{}, []string{"connected", "get b'over-tls'", "acl-get NoAuthError", "done"}},
		{"other-ca", kazooTLS{true, ca, pki.OtherCA}, []string{"refused"}},
	} {
		t.Run(r.name, func(t *testing.T) {
			kazooOnBoth(t, "kazoo on the unified port", targets, false, r.k, r.want,
				"crud", "acl-create="+clientX509, "acl-get", "acl-delete")
		})
	}
}

// tlsClientConfig is a Go TLS client trusting pki's CA, with cert when not nil.
func tlsClientConfig(pki *tlstest.PKI, cert *tlstest.Identity) *tls.Config {
	roots := x509.NewCertPool()
	roots.AddCert(pki.CA.Cert)
	cfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{cert.TLS}
	}
	return cfg
}

// dialTLS opens a TLS connection (handshake done) with a generous deadline.
func dialTLS(t *testing.T, addr string, cfg *tls.Config) *tls.Conn {
	t.Helper()
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatalf("TLS to %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(60 * time.Second))
	return nc
}

// TestTLSBadInput: bad input on the TLS and plaintext ports of zkd and ZooKeeper 3.8 (both
// logged for comparison): a plaintext client on the TLS port, a TLS client on the plaintext
// port, a ClientHello cut short then closed or then silent, and bytes that are not TLS
// records after a completed handshake. Each such connection is closed, a TLS session opened
// before keeps working (reads), and zkd logs a line naming the connection's address.
func TestTLSBadInput(t *testing.T) {
	pki := tlstest.New(t, filepath.Join(t.TempDir(), "pki"))
	targets := startTLSPair(t, true, append(sslLines(pki, "PKCS12"), "ssl.clientAuth=need", x509Provider)...)
	// The first bytes of a ClientHello: a handshake record header and the start of its body.
	clientHello := []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}
	cases := []struct {
		name   string
		secure bool // on the secure port, else the plaintext one
		// bad talks on a fresh TCP connection to addr and returns it.
		bad func(t *testing.T, addr string) net.Conn
	}{
		{"plaintext-on-tls-port", true, func(t *testing.T, addr string) net.Conn {
			nc := dialTCP(t, addr)
			writeAll(t, nc, connectFrame())
			return nc
		}},
		{"four-letter-word-on-tls-port", true, func(t *testing.T, addr string) net.Conn {
			nc := dialTCP(t, addr)
			writeAll(t, nc, []byte("ruok"))
			return nc
		}},
		{"tls-on-plaintext-port", false, func(t *testing.T, addr string) net.Conn {
			nc := dialTCP(t, addr)
			tc := tls.Client(nc, tlsClientConfig(pki, pki.Client))
			if err := tc.Handshake(); err == nil {
				t.Errorf("TLS handshake on the plaintext port succeeded")
			}
			return nc
		}},
		{"truncated-hello-then-close", true, func(t *testing.T, addr string) net.Conn {
			nc := dialTCP(t, addr)
			writeAll(t, nc, clientHello)
			nc.(*net.TCPConn).CloseWrite()
			return nc
		}},
		{"truncated-hello-then-silence", true, func(t *testing.T, addr string) net.Conn {
			nc := dialTCP(t, addr)
			writeAll(t, nc, clientHello)
			return nc
		}},
		{"garbage-after-handshake", true, func(t *testing.T, addr string) net.Conn {
			tc := dialTLS(t, addr, tlsClientConfig(pki, pki.Client))
			writeAll(t, tc.NetConn(), []byte("\x00\x00\x00\x2dnot a TLS record at all, just bytes\r\n"))
			return tc.NetConn()
		}},
		{"garbage-record-after-handshake", true, func(t *testing.T, addr string) net.Conn {
			// A well-formed application-data record header whose payload is not sealed.
			tc := dialTLS(t, addr, tlsClientConfig(pki, pki.Client))
			writeAll(t, tc.NetConn(), append([]byte{0x17, 0x03, 0x03, 0x00, 0x20}, make([]byte, 0x20)...))
			return tc.NetConn()
		}},
	}
	for _, tgt := range targets {
		for _, c := range cases {
			t.Run(tgt.name+"/"+c.name, func(t *testing.T) {
				// The bystander: a TLS session opened before the bad input (its 30 s
				// session timeout is not at risk while one bad connection is open).
				bystander := rawzkTLS(t, tgt.secure, tlsClientConfig(pki, pki.Client))
				addr := tgt.addr
				if c.secure {
					addr = tgt.secure
				}
				before := len(tgt.logs())
				nc := c.bad(t, addr)
				local := nc.LocalAddr().String()
				got := closedWithin(nc, 90*time.Second)
				if got != "closed" {
					t.Errorf("%s: the connection was not closed: %s", tgt.name, got)
				}
				if err := bystanderWorks(bystander); err != nil {
					t.Fatalf("%s: the bystander session broke: %v", tgt.name, err)
				}
				// Log lines for the connection, zkd's checked, ZooKeeper's shown.
				var lines []string
				deadline := time.Now().Add(30 * time.Second)
				for {
					lines = linesWith(tgt.logs()[before:], local)
					if len(lines) > 0 || tgt.name != "zkd" || time.Now().After(deadline) {
						break
					}
					time.Sleep(50 * time.Millisecond) // polling the log for the line, bounded
				}
				t.Logf("%s: %s; log:\n%s", tgt.name, got, strings.Join(lines, "\n"))
				if tgt.name == "zkd" && !slices.ContainsFunc(lines, func(l string) bool {
					return strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR")
				}) {
					t.Errorf("zkd logged no line at WARN or above for %s", local)
				}
			})
		}
	}
}
