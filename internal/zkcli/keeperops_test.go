package zkcli

import (
	"context"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// TestKeeperOpsCommands: createWithParents and removeRecursive on a server with the
// keeper-ops extension, and the usage text stays zkCli.sh's (neither is listed).
func TestKeeperOpsCommands(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.Extensions = ext.Of(ext.KeeperOps) }))
	run := func(args ...string) (int, string, string) {
		var out, errOut syncBuffer
		code := Main(context.Background(), append([]string{"-server", srv.Addr(), "-timeout", "10000"}, args...),
			strings.NewReader(""), &out, &errOut, func(string) string { return "" })
		return code, out.take(), errOut.take()
	}
	if code, _, errOut := run("createWithParents", "/a/b/c", "leaf"); code != 0 || errOut != "Created /a/b/c\n" {
		t.Fatalf("createWithParents: %d %q", code, errOut)
	}
	if code, _, errOut := run("createWithParents", "/a/b/c"); code != 1 || errOut != "Node already exists: /a/b/c\n" {
		t.Errorf("createWithParents of an existing node: %d %q", code, errOut)
	}
	if code, _, errOut := run("removeRecursive", "-l", "2", "/a"); code != 1 || errOut != "Node not empty: /a\n" {
		t.Errorf("removeRecursive over its limit: %d %q", code, errOut)
	}
	if code, _, errOut := run("removeRecursive", "/a"); code != 0 || errOut != "" {
		t.Errorf("removeRecursive: %d %q", code, errOut)
	}
	if code, _, errOut := run("get", "/a"); code != 1 || errOut != "Node does not exist: /a\n" {
		t.Errorf("after removeRecursive: %d %q", code, errOut)
	}
	_, _, usage := run("nosuch")
	if strings.Contains(usage, "removeRecursive") || strings.Contains(usage, "createWithParents") || !strings.Contains(usage, "deleteall") {
		t.Errorf("usage lists the extension commands or misses zkCli.sh's:\n%s", usage)
	}
}
