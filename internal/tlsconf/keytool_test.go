package tlsconf

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/zkd-io/zkd/internal/testing/needs"
	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
)

// Stores made by Java's keytool, as existing ZooKeeper deployments have them, load: RSA and
// EC keys in JKS and PKCS12 keystores, and the CA imported into JKS and PKCS12 truststores.
func TestKeytoolMadeStores(t *testing.T) {
	keytool := needs.Command(t, "keytool", "default-jre-headless")
	dir := t.TempDir()
	p := tlstest.New(t, filepath.Join(dir, "pki"))
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(keytool, args...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %v: %v\n%s", args, err, out)
		}
	}
	pw := tlstest.Password
	for _, typ := range []StoreType{StoreJKS, StorePKCS12} {
		for _, alg := range []string{"RSA", "EC"} {
			path := filepath.Join(dir, alg+"."+string(typ))
			run("-genkeypair", "-keystore", path, "-storetype", string(typ), "-storepass", pw, "-keypass", pw,
				"-alias", "zk", "-keyalg", alg, "-dname", "CN=localhost,O=zkd-test", "-ext", "SAN=ip:127.0.0.1", "-validity", "2")
			c, err := LoadKeyPair(Store{Location: path, Type: typ, Password: pw})
			if err != nil {
				t.Fatalf("%s %s keystore: %v", typ, alg, err)
			}
			if c.Leaf.Subject.CommonName != "localhost" {
				t.Fatalf("%s %s keystore: leaf %v", typ, alg, c.Leaf.Subject)
			}
			if _, err := LoadKeyPair(Store{Location: path, Type: typ, Password: "wrong-password"}); err == nil {
				t.Fatalf("%s %s keystore loaded with a wrong password", typ, alg)
			}
		}
		trust := filepath.Join(dir, "trust."+string(typ))
		run("-importcert", "-noprompt", "-keystore", trust, "-storetype", string(typ), "-storepass", pw,
			"-alias", "ca", "-file", p.CA.CertPEM)
		certs, err := LoadTrust(Store{Location: trust, Type: typ, Password: pw})
		if err != nil {
			t.Fatalf("%s truststore: %v", typ, err)
		}
		if len(certs) != 1 || !certs[0].Equal(p.CA.Cert) {
			t.Fatalf("%s truststore: %d certificates", typ, len(certs))
		}
	}
}

// openssl's PKCS12 keystores load, and serve as a truststore trusting their certificate.
func TestOpenSSLMadePKCS12(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed")
	}
	dir := t.TempDir()
	p := tlstest.New(t, filepath.Join(dir, "pki"))
	pw := tlstest.Password
	ks := filepath.Join(dir, "server.p12")
	if out, err := exec.Command(openssl, "pkcs12", "-export", "-in", p.Server.PEM, "-out", ks, "-passout", "pass:"+pw).CombinedOutput(); err != nil {
		t.Fatalf("openssl: %v\n%s", err, out)
	}
	if _, err := LoadKeyPair(Store{Location: ks, Type: StorePKCS12, Password: pw}); err != nil {
		t.Fatal(err)
	}
	certs, err := LoadTrust(Store{Location: ks, Type: StorePKCS12, Password: pw})
	if err != nil || len(certs) != 1 || !certs[0].Equal(p.Server.Cert) {
		t.Fatalf("keystore as truststore: %d certificates, %v", len(certs), err)
	}
	if _, err := LoadTrust(Store{Location: ks, Type: StorePKCS12, Password: "wrong-password"}); err == nil {
		t.Fatal("loaded with a wrong password")
	}
}
