package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// TestRunOverTLS: with --tls-ca (and a client certificate for a server that needs one) the
// workloads run over TLS; without them, or with the wrong CA, the TLS port is not usable.
func TestRunOverTLS(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	roots := x509.NewCertPool()
	roots.AddCert(pki.CA.Cert)
	srv := zktest.Start(t, zktest.WithTLS(&tls.Config{
		Certificates: []tls.Certificate{pki.Server.TLS}, ClientCAs: roots, ClientAuth: tls.RequireAndVerifyClientCert,
	}), zktest.WithConfig(func(c *server.Config) { c.AuthProviders.X509 = true }))
	jsonPath := filepath.Join(t.TempDir(), "out.jsonl")
	base := []string{"run", "--servers", srv.SecureAddr(), "--progress", "0", "--ops", "40", "--warmup", "50ms",
		"--clients", "2", "--outstanding", "4", "--keys", "50", "--data-size", "16"}
	var stdout, stderr bytes.Buffer
	args := append(append([]string{}, base...), "--json", jsonPath, "--tls-ca", pki.CA.CertPEM,
		"--tls-cert", pki.Client.CertPEM, "--tls-key", pki.Client.PEM, "-w", "set,get")
	if err := cli(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run over TLS: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	results, err := readResultsFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Ops <= 0 || r.Errors != 0 {
			t.Errorf("%s over TLS: ops %d errors %d %v", r.Workload, r.Ops, r.Errors, r.ErrorKinds)
		}
	}
	if len(results) != 2 {
		t.Fatalf("%d results, want 2", len(results))
	}
	wrong := append(append([]string{}, base...), "--tls-ca", pki.OtherCARoot.CertPEM,
		"--tls-cert", pki.Client.CertPEM, "--tls-key", pki.Client.PEM, "-w", "get")
	stdout.Reset()
	stderr.Reset()
	if err := cli(context.Background(), wrong, &stdout, &stderr); err == nil || !strings.Contains(err.Error()+stderr.String(), "certificate") {
		t.Errorf("run with the wrong CA: err %v, stderr %s; want a certificate error", err, stderr.String())
	}
}
