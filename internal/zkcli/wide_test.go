package zkcli

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// TestCreateSeq64: createSeq64 makes 64-bit sequential nodes on a server with wide, fails
// as an unsupported extension on one without, and is not in the usage text.
func TestCreateSeq64(t *testing.T) {
	for _, wide := range []bool{true, false} {
		set := ext.Of(ext.Capabilities)
		if wide {
			set = ext.Of(ext.Wide)
		}
		srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.Extensions = set }))
		run := func(args ...string) (int, string, string) {
			var out, errOut syncBuffer
			code := Main(context.Background(), append([]string{"-server", srv.Addr(), "-timeout", "10000"}, args...),
				strings.NewReader(""), &out, &errOut, func(string) string { return "" })
			return code, out.take(), errOut.take()
		}
		code, _, errOut := run("createSeq64", "/n-", "x")
		if !wide {
			if code != 1 || !strings.Contains(errOut, "wide") {
				t.Errorf("without wide: %d %q", code, errOut)
			}
			continue
		}
		if code != 0 || !regexp.MustCompile(`^Created /n-\d{19}\n$`).MatchString(errOut) {
			t.Fatalf("createSeq64: %d %q", code, errOut)
		}
		if code, _, errOut := run("createSeq64", "-e", "/e-"); code != 0 || !regexp.MustCompile(`^Created /e-\d{19}\n$`).MatchString(errOut) {
			t.Fatalf("createSeq64 -e: %d %q", code, errOut)
		}
		_, _, usage := run("nosuch")
		if strings.Contains(usage, "createSeq64") {
			t.Errorf("usage lists createSeq64:\n%s", usage)
		}
	}
}
