package server_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// TestShutdownDrains: requests in flight when Shutdown begins are answered before the
// server stops (its fsyncs are slow, so they are still in flight). Close, by contrast,
// drops them: with Close in its place this test fails.
func TestShutdownDrains(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.FS = slowSyncFS{delay: 50 * time.Millisecond} }))
	c := connectTo(t, srv.Addr())
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Create(fmt.Sprintf("/d%02d", i), nil, 0, open); err != nil {
				errs <- fmt.Errorf("/d%02d: %w", i, err)
			}
		}()
	}
	waitFor(t, "requests in flight", func() bool { return server.Outstanding(srv.Server) > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Server.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	srv.Server = nil // stopped: zktest's cleanup has nothing to close
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a request in flight at Shutdown was not answered: %v", err)
	}
}

// TestShutdownBoundsSnapshot: a clean stop writes a snapshot when the log since the last
// one is long, but Shutdown skips it when the deadline leaves no room, and the next start
// replays the log instead: nothing is lost either way.
func TestShutdownBoundsSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name     string
		timeout  time.Duration
		snapshot bool
	}{{"ample deadline", time.Minute, true}, {"deadline too near", time.Nanosecond, false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := zktest.Start(t)
			c := connectTo(t, srv.Addr())
			for i := range 1100 { // worth a snapshot at the stop: 1000 txns and 1% of the nodes
				if _, err := c.Create(fmt.Sprintf("/s%04d", i), nil, 0, open); err != nil {
					t.Fatal(err)
				}
			}
			dir := filepath.Join(srv.Config().DataDir, "version-2")
			before := snapNames(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			if !tc.snapshot {
				<-ctx.Done() // let the nanosecond deadline pass
			}
			if err := srv.Server.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Shutdown: %v", err)
			}
			srv.Server = nil
			after := snapNames(t, dir)
			if wrote := len(after) > len(before); wrote != tc.snapshot {
				t.Fatalf("snapshots before %v, after %v: want a new one %v", before, after, tc.snapshot)
			}
			srv2 := zktest.Start(t, zktest.WithConfig(func(cfg *server.Config) { cfg.DataDir = filepath.Dir(dir) }))
			kids, _, err := connectTo(t, srv2.Addr()).Children("/")
			if err != nil || len(kids) < 1100 {
				t.Fatalf("after the restart / has %d children (%v), want the 1100 created", len(kids), err)
			}
		})
	}
}

func snapNames(t *testing.T, dir string) []string {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if _, _, ok := storage.ParseSnapName(n.Name()); ok && !strings.HasPrefix(n.Name(), "tmp.") {
			out = append(out, n.Name())
		}
	}
	return out
}
