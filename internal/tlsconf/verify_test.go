package tlsconf

import (
	"crypto/x509"
	"os"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
)

// TestChainVerifier: a client chain is checked against the truststore (not the keystore,
// which may be missing), and the truststore is reread when its file changes.
func TestChainVerifier(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	dir := t.TempDir()
	trust := dir + "/trust.pem"
	if err := os.WriteFile(trust, mustRead(t, pki.TrustPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	st, err := Parse(map[string]string{
		"trustStore.location": trust,
		// A keystore that does not open: the verifier needs none.
		"keyStore.location": dir + "/missing.p12",
	}, "ssl.")
	if err != nil {
		t.Fatal(err)
	}
	st.Now = func() time.Time { return now }
	verify, err := st.ChainVerifier(nil)
	if err != nil {
		t.Fatal(err)
	}
	chain := func(id *tlstest.Identity) []*x509.Certificate { return []*x509.Certificate{id.Cert} }
	if err := verify(chain(pki.Client)); err != nil {
		t.Errorf("client of the CA: %v", err)
	}
	for name, id := range map[string]*tlstest.Identity{
		"other CA": pki.OtherCA, "self-signed": pki.SelfSigned, "expired": pki.Expired,
	} {
		if err := verify(chain(id)); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
	if err := verify(nil); err == nil {
		t.Error("an empty chain verified")
	}

	// The truststore now holds the other CA only: after the reload pause, the CA's client
	// no longer passes and the other CA's does.
	if err := os.WriteFile(trust, mustRead(t, pki.OtherCARoot.CertPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Hour) // a modification time of its own, whatever the clock granularity
	os.Chtimes(trust, later, later)
	now = now.Add(2 * reloadEvery)
	if err := verify(chain(pki.Client)); err == nil {
		t.Error("the CA's client still verifies after the truststore dropped the CA")
	}
	if err := verify(chain(pki.OtherCA)); err != nil {
		t.Errorf("the other CA's client after the reload: %v", err)
	}

	if _, err := (Settings{Prefix: "ssl."}).ChainVerifier(nil); err == nil {
		t.Error("a verifier without a truststore")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
