package recipe

import (
	"context"
	"fmt"
	"testing"

	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

// TestNoGoroutineLeak runs every recipe that starts goroutines (revocation and ownership
// watchers, Observe, Group.Watch, ConfigWatcher) and every way of stopping them (unlock,
// resign, a cancelled Lock, a cancelled context, Close, the client's Close), then checks that
// the package's goroutines are all gone. It is not parallel, so no other test's recipes are
// counted.
func TestNoGoroutineLeak(t *testing.T) {
	s := zktest.Start(t)
	base, _ := recipeGoroutines()
	ctx := testCtx(t)
	for round := range 2 {
		c, err := zk.Connect(ctx, s.Addr(), zk.WithLogger(testLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		dir := fmt.Sprintf("/leak%d", round)

		m := NewMutex(c, dir+"/lock", WithRevocation(func() {}))
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		waiter := NewMutex(c, dir+"/lock", WithRevocation(func() {}))
		wctx, cancel := context.WithCancel(ctx)
		res := make(chan error, 1)
		go func() { res <- waiter.Lock(wctx) }()
		cancel()
		<-res
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}

		el := NewElection(c, dir+"/elect")
		if err := el.Campaign(ctx, nil); err != nil {
			t.Fatal(err)
		}
		octx, ocancel := context.WithCancel(ctx)
		obs := el.Observe(octx)
		<-obs
		ocancel()
		for range obs {
		}
		if err := el.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		held := NewElection(c, dir+"/elect2")
		if err := held.Campaign(ctx, nil); err != nil {
			t.Fatal(err)
		}

		gctx, gcancel := context.WithCancel(ctx)
		ms := NewGroup(c, dir+"/g").Watch(gctx)
		<-ms
		gcancel()
		for range ms {
		}
		ms2 := NewGroup(c, dir+"/g").Watch(ctx) // ended by the client's Close

		w, err := WatchConfig(ctx, c, dir+"/cfg")
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		w2, err := WatchConfig(ctx, c, dir+"/cfg") // ended by the client's Close
		if err != nil {
			t.Fatal(err)
		}

		if n, _ := recipeGoroutines(); n <= base {
			t.Fatalf("%d recipe goroutines while watchers run: the count sees nothing", n)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		<-w2.Done()
		for range ms2 {
		}
		<-held.Done()
	}
	eventually(t, "recipe goroutines exit", func() error {
		if n, dump := recipeGoroutines(); n > base {
			return fmt.Errorf("%d recipe goroutines, %d before:\n%s", n, base, dump)
		}
		return nil
	})
}
