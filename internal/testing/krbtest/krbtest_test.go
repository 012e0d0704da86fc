package krbtest

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestKinit checks the realm with MIT's own client: the client logs in with its password and
// with its keytab, and gets a ticket for the service.
func TestKinit(t *testing.T) {
	k := Start(t)
	kinit, err := exec.LookPath("kinit")
	if err != nil {
		t.Skip("kinit (krb5-user) not installed: the KDC started, nothing more to check here")
	}
	run := func(stdin string, name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = k.Env()
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s\nKDC log:\n%s", name, args, err, out, k.Log())
		}
		return string(out)
	}
	run(ClientPassword+"\n", kinit, ClientPrincipal)
	run("", kinit, "-k", "-t", k.ClientKeytab, ClientPrincipal)
	run("", "kvno", ServicePrincipal)
	if out := run("", "klist"); !strings.Contains(out, ServicePrincipal) {
		t.Fatalf("klist does not show a ticket for %s:\n%s", ServicePrincipal, out)
	}
}
