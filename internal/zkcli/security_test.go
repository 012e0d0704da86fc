package zkcli

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/tlsconf"
	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTLSClientConfiguration: the Java client's TLS keys, from a -client-configuration file
// and from -D properties in CLIENT_JVMFLAGS, connect zkcli to a TLS port that requires a
// client certificate; without them the connection fails.
func TestTLSClientConfiguration(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	st, err := tlsconf.Parse(map[string]string{"keyStore.location": pki.Server.PEM, "trustStore.location": pki.TrustPEM}, "ssl.")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := st.ServerConfig(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := zktest.Start(t, zktest.WithTLS(cfg), zktest.WithConfig(func(c *server.Config) { c.AuthProviders.X509 = true }))
	addr := srv.SecureAddr()
	props := "zookeeper.client.secure=true\nzookeeper.ssl.keyStore.location=" + pki.Client.PKCS12 +
		"\nzookeeper.ssl.keyStore.password=" + tlstest.Password +
		"\nzookeeper.ssl.trustStore.location=" + pki.TrustJKS + "\nzookeeper.ssl.trustStore.password=" + tlstest.Password + "\n"
	file := writeFile(t, "client.properties", props)
	run := func(getenv func(string) string, args ...string) (int, string, string) {
		var out, errOut syncBuffer
		code := Main(context.Background(), append([]string{"-server", addr, "-timeout", "5000", "-waitforconnection"}, args...),
			strings.NewReader(""), &out, &errOut, getenv)
		return code, out.take(), errOut.take()
	}
	none := func(string) string { return "" }
	if code, _, errOut := run(none, "-client-configuration", file, "create", "/tls", "x"); code != 0 || errOut != "Created /tls\n" {
		t.Errorf("with -client-configuration: exit %d, stderr %q", code, errOut)
	}
	flags := "-Xmx64m -D" + strings.ReplaceAll(strings.TrimSpace(props), "\n", " -D")
	env := func(k string) string {
		if k == "CLIENT_JVMFLAGS" {
			return flags
		}
		return ""
	}
	if code, out, _ := run(env, "get", "/tls"); code != 0 || !strings.HasSuffix(out, "x\n") {
		t.Errorf("with CLIENT_JVMFLAGS: exit %d, stdout %q", code, out)
	}
	if code, _, _ := run(none, "get", "/tls"); code == 0 {
		t.Error("connected to a TLS port without TLS")
	}
}

// TestSASLDigest: a JAAS Client section with DigestLoginModule logs zkcli in with SASL;
// whoami shows the sasl identity.
func TestSASLDigest(t *testing.T) {
	srv := zktest.Start(t, zktest.WithSASLUsers(map[string]string{"bob": "bobsecret"}))
	jaas := writeFile(t, "jaas.conf", "Client {\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n"+
		"    username=\"bob\"\n    password=\"bobsecret\";\n};\n")
	var out, errOut syncBuffer
	code := Main(context.Background(), []string{"-server", srv.Addr(), "-timeout", "5000", "-Djava.security.auth.login.config=" + jaas, "whoami"},
		strings.NewReader(""), &out, &errOut, func(string) string { return "" })
	if o := out.take(); code != 0 || !strings.Contains(o, "Auth scheme: User\n") || !strings.Contains(o, "sasl: bob\n") {
		t.Errorf("whoami: exit %d, stdout %q, stderr %q", code, o, errOut.take())
	}
}
