package zkcli

import (
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

func TestCapabilitiesCommand(t *testing.T) {
	off := zktest.Start(t)
	sh := newShell(t, off.Addr(), false)
	sh.run("capabilities", 0, "server: (no capability node: Apache ZooKeeper, or zkd with no extension enabled)\nextensions: none\n", "")

	on := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.Extensions = ext.Of(ext.Capabilities, ext.KeeperOps) }))
	sh = newShell(t, on.Addr(), false)
	if code := sh.s.Run(t.Context(), "capabilities"); code != 0 {
		t.Fatalf("capabilities: exit %d, stderr %q", code, sh.err.take())
	}
	if out := sh.out.take(); !strings.HasPrefix(out, "server: zkd ") || !strings.HasSuffix(out, "\nextensions: capabilities,keeper-ops\n") {
		t.Errorf("capabilities = %q", out)
	}
	js := newShell(t, on.Addr(), true)
	if code := js.s.Run(t.Context(), "capabilities"); code != 0 {
		t.Fatalf("capabilities --json: exit %d", code)
	}
	if out := js.out.take(); !strings.Contains(out, `"extensions":["capabilities","keeper-ops"]`) || !strings.Contains(out, `"version":1`) {
		t.Errorf("capabilities --json = %q", out)
	}
	// zkCli.sh's usage text stays zkCli.sh's.
	for _, n := range CommandNames() {
		if n == "capabilities" {
			t.Error("capabilities is in zkCli.sh's usage listing")
		}
	}
}
