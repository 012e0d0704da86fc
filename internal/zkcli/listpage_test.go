package zkcli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// TestLsPagedCommand: lsPaged lists every child through pages smaller than the list, and
// says so when the server lacks the extension.
func TestLsPagedCommand(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.Extensions = ext.Of(ext.PagedList) }))
	run := func(addr string, args ...string) (int, string, string) {
		var out, errOut syncBuffer
		code := Main(context.Background(), append([]string{"-server", addr, "-timeout", "10000"}, args...),
			strings.NewReader(""), &out, &errOut, func(string) string { return "" })
		return code, out.take(), errOut.take()
	}
	if code, _, errOut := run(srv.Addr(), "create", "/d"); code != 0 {
		t.Fatalf("create: %d %q", code, errOut)
	}
	var want []string
	for i := 0; i < 25; i++ {
		name := fmt.Sprintf("c%02d", i)
		want = append(want, name)
		if code, _, errOut := run(srv.Addr(), "create", "/d/"+name); code != 0 {
			t.Fatalf("create: %d %q", code, errOut)
		}
	}
	code, out, errOut := run(srv.Addr(), "lsPaged", "-n", "4", "/d")
	var got []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "c") {
			got = append(got, line)
		}
	}
	slices.Sort(got)
	if code != 0 || !slices.Equal(got, want) || !strings.HasPrefix(errOut, "listed 25 of 25 children at zxid 0x") {
		t.Fatalf("lsPaged: %d %q %q", code, out, errOut)
	}
	plain := zktest.Start(t)
	if code, _, errOut := run(plain.Addr(), "lsPaged", "/"); code != 1 || !strings.Contains(errOut, "paged-list") {
		t.Fatalf("lsPaged without the extension: %d %q", code, errOut)
	}
}
