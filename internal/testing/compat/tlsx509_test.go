package compat

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
)

// TestTLSX509ByDefault: a zoo.cfg with secureClientPort, PKCS12 key and trust stores,
// ssl.clientAuth=need and no authProvider line. ZooKeeper registers the x509 provider by
// default there (QuorumPeerConfig.configureSSLAuth) and so does zkd: kazoo (use_ssl, certfile,
// keyfile, ca) and the Java client (zkCli.sh over Netty with PKCS12 stores) are served by
// both, with the certificate's subject as their x509 id: the auth scheme expands to it in an
// ACL, x509 ACLs naming it admit them, and whoami reports it.
func TestTLSX509ByDefault(t *testing.T) {
	pki := tlstest.New(t, filepath.Join(t.TempDir(), "pki"))
	targets := startTLSPair(t, true, append(sslLines(pki, "PKCS12"), "ssl.clientAuth=need")...)
	t.Run("kazoo", func(t *testing.T) {
		want := []string{"connected",
			"auth-create /kz-auth",
			"auth-acl [ACL(perms=31, acl_list=['ALL'], id=Id(scheme='x509', id='" + clientX509 + "'))]",
			"auth-delete True",
			"acl-create /kz-x509", "acl-get b'mine'", "acl-delete True", "done"}
		kazooOnBoth(t, "kazoo", targets, true, kazooTLS{true, pki.CA.CertPEM, pki.Client}, want,
			"auth-acl", "acl-create="+clientX509, "acl-get", "acl-delete")
	})

	t.Run("zkCli", func(t *testing.T) {
		cmds := []string{"whoami", "create /zkcli-x509 hello auth::cdrwa", "getAcl /zkcli-x509", "get /zkcli-x509",
			"delete /zkcli-x509", "ls /"}
		var got []string
		for _, tgt := range targets {
			out, errOut, ok := runZkCliTLS(t, tgt.secure, zkCliTLS{pki.Client.PKCS12, pki.TrustPKCS12}, cmds...)
			out = strings.ReplaceAll(out, tgt.secure, "SERVER")
			t.Logf("%s: exit ok %v, stdout:\n%s", tgt.name, ok, out)
			if !ok || !strings.Contains(errOut, "Created /zkcli-x509") {
				t.Errorf("%s: zkCli.sh did not create /zkcli-x509 (exit ok %v)", tgt.name, ok)
			}
			// getAcl prints the id URL-encoded.
			acl := "'x509,'" + strings.ReplaceAll(clientX509, ",", "%2C") + "\n: cdrwa\n"
			for _, w := range []string{"\nx509: " + clientX509 + "\n", "\nip: 127.0.0.1\n", acl, "\nhello\n", "[zookeeper]"} {
				if !strings.Contains(out, w) {
					t.Errorf("%s: zkCli.sh output lacks %q", tgt.name, w)
				}
			}
			got = append(got, strings.Join(whoamiSorted(zkCliResults(out)), "\n"))
		}
		if got[0] != got[1] {
			t.Errorf("zkCli.sh differs:\nzookeeper:\n%s\nzkd:\n%s", got[0], got[1])
		}
	})

	// Both logged the authentication.
	for _, tgt := range targets {
		want := "Authenticated Id '" + clientX509 + "' for Scheme 'x509'"
		if tgt.name == "zkd" {
			want = "x509 authentication"
		}
		if lines := linesWith(tgt.logs(), want); len(lines) == 0 || !strings.Contains(lines[0], clientX509) {
			t.Errorf("%s: no %q naming %s in the log: %s", tgt.name, want, clientX509, describe(lines))
		}
	}
}

// whoamiSorted sorts the consecutive "scheme: user" lines after whoami's "Auth scheme: User"
// header. ZooKeeper lists a connection's ids in the iteration order of the hash set it keeps
// them in (ServerCnxn.authInfo), zkd in the order they were added; the ids are what counts.
func whoamiSorted(lines []string) []string {
	out := slices.Clone(lines)
	for i, l := range out {
		if l != "Auth scheme: User" {
			continue
		}
		j := i + 1
		for j < len(out) && (strings.HasPrefix(out[j], "ip: ") || strings.HasPrefix(out[j], "x509: ")) {
			j++
		}
		slices.Sort(out[i+1 : j])
	}
	return out
}

// TestTLSX509PortUnificationOnly: with client.portUnification and no secureClientPort, the
// x509 default comes too late in ZooKeeper (NettyServerCnxnFactory's constructor sets
// zookeeper.authProvider.x509 after ProviderRegistry.initialize has read the properties), so
// without an authProvider line a TLS client that presents a certificate is disconnected ("X509
// Auth provider not found: x509"), while one without a certificate (clientAuth want) and a
// plaintext one are served. zkd does the same.
func TestTLSX509PortUnificationOnly(t *testing.T) {
	pki := tlstest.New(t, filepath.Join(t.TempDir(), "pki"))
	targets := startTLSPair(t, false, append(sslLines(pki, "PKCS12"), "ssl.clientAuth=want", "client.portUnification=true")...)
	ca := pki.CA.CertPEM
	for _, r := range []struct {
		name string
		k    kazooTLS
		want []string
	}{
		{"certificate", kazooTLS{true, ca, pki.Client}, []string{"refused"}},
		{"no-certificate", kazooTLS{true, ca, nil}, []string{"connected", "get b'over-tls'", "done"}},
		{"plaintext", kazooTLS{}, []string{"connected", "get b'over-tls'", "done"}},
	} {
		t.Run(r.name, func(t *testing.T) {
			kazooOnBoth(t, "kazoo on the unified port", targets, false, r.k, r.want, "crud")
		})
	}
	for _, tgt := range targets {
		if lines := linesWith(tgt.logs(), "X509 Auth provider not found: x509"); len(lines) == 0 {
			t.Errorf("%s: no \"X509 Auth provider not found: x509\" in the log", tgt.name)
		}
	}
}
