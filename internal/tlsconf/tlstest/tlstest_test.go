package tlstest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/testing/needs"
)

// Java must read the keystores and truststores New writes (zoo.cfg points ZooKeeper at them).
func TestKeytoolReadsStores(t *testing.T) {
	keytool := needs.Command(t, "keytool", "default-jre-headless")
	p := New(t, t.TempDir())
	for _, c := range []struct{ path, want string }{
		{p.Server.PKCS12, "PrivateKeyEntry"},
		{p.Server.JKS, "PrivateKeyEntry"},
		{p.Client.PKCS12, "PrivateKeyEntry"},
		{p.TrustPKCS12, "trustedCertEntry"},
		{p.TrustJKS, "trustedCertEntry"},
	} {
		out, err := exec.Command(keytool, "-list", "-keystore", c.path, "-storepass", Password).CombinedOutput()
		if err != nil {
			t.Fatalf("keytool -list %s: %v\n%s", c.path, err, out)
		}
		if !strings.Contains(string(out), c.want) {
			t.Errorf("keytool -list %s: no %s:\n%s", c.path, c.want, out)
		}
	}
	// A wrong password must fail, or the test above proves nothing about the password.
	if out, err := exec.Command(keytool, "-list", "-keystore", p.Server.PKCS12, "-storepass", "wrong-password").CombinedOutput(); err == nil {
		t.Fatalf("keytool accepted a wrong password:\n%s", out)
	}
}
