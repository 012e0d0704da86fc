package zkcli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

// TestAddWatchSinceCommand: addWatchSince prints the events of the changes made after the
// zxid it names (a create and a delete nobody watched live), then live ones; from a zxid the
// history no longer covers it says to re-read; without the extension it names it.
func TestAddWatchSinceCommand(t *testing.T) {
	ctx := context.Background()
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.Extensions = ext.Of(ext.WatchResume)
		c.WatchHistoryMaxChanges = 4
	}))
	c, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create(ctx, "/w", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	since := c.LastZxid()
	if _, err := c.Create(ctx, "/w/a", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "/w/a", -1); err != nil {
		t.Fatal(err)
	}
	out := drive(t, "zkcli", zkcliOn(srv.Addr()), []step{
		{fmt.Sprintf("addWatchSince /w 0x%x\n", since), "type:NodeDeleted path:/w/a\n", 1},
		{"create /w/b\n", "type:NodeCreated path:/w/b\n", 1},
		{"quit\n", "state:Closed", 1},
	})
	created := strings.Index(out, "type:NodeCreated path:/w/a\n")
	deleted := strings.Index(out, "type:NodeDeleted path:/w/a\n")
	if created < 0 || deleted < created || strings.Count(out, "path:/w/a\n") != 2 {
		t.Errorf("the replay is not the create then the delete, once each:\n%s", out)
	}

	for i := range 5 {
		if _, err := c.Create(ctx, fmt.Sprintf("/w/n%d", i), nil, zk.OpenACL(), 0); err != nil {
			t.Fatal(err)
		}
	}
	run := func(addr string, args ...string) (int, string) {
		var out, errOut syncBuffer
		code := Main(ctx, append([]string{"-server", addr, "-timeout", "10000"}, args...),
			strings.NewReader(""), &out, &errOut, func(string) string { return "" })
		return code, errOut.take()
	}
	if code, errOut := run(srv.Addr(), "addWatchSince", "/w", fmt.Sprint(since)); code != 1 || !strings.Contains(errOut, "re-read /w") {
		t.Errorf("addWatchSince from a compacted zxid: %d %q", code, errOut)
	}
	if code, errOut := run(srv.Addr(), "addWatchSince", "/w", "zxid"); code != 1 || !strings.Contains(errOut, "zxid argument") {
		t.Errorf("addWatchSince with a bad zxid: %d %q", code, errOut)
	}
	plain := zktest.Start(t)
	if code, errOut := run(plain.Addr(), "addWatchSince", "/", "0"); code != 1 || !strings.Contains(errOut, "watch-resume") {
		t.Errorf("addWatchSince without the extension: %d %q", code, errOut)
	}
}
