package zkcli

import (
	"context"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// TestSetMaxBufferCommand: setMaxBuffer prints the grant, capped by zkd.maxBufferLimit, and
// names the extension when the server lacks it.
func TestSetMaxBufferCommand(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.Extensions = ext.Of(ext.LargeReplies)
		c.MaxBufferLimit = 8 << 20
	}))
	run := func(addr string, args ...string) (int, string, string) {
		var out, errOut syncBuffer
		code := Main(context.Background(), append([]string{"-server", addr, "-timeout", "10000"}, args...),
			strings.NewReader(""), &out, &errOut, func(string) string { return "" })
		return code, out.take(), errOut.take()
	}
	if code, out, errOut := run(srv.Addr(), "setMaxBuffer", "1073741824"); code != 0 || !strings.Contains(out, "granted 8388608 bytes") {
		t.Fatalf("setMaxBuffer: %d %q %q", code, out, errOut)
	}
	plain := zktest.Start(t)
	if code, _, errOut := run(plain.Addr(), "setMaxBuffer", "8388608"); code != 1 || !strings.Contains(errOut, "large-replies") {
		t.Fatalf("setMaxBuffer without the extension: %d %q", code, errOut)
	}
}
