package zk

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/faultnet"
)

// TestNoGoroutineLeak exercises every kind of goroutine the client starts (connection loop,
// writer, Go, event pumps, reconnects, a failed Connect) and checks that after
// Close, with the application having drained or stopped its watches, the number of the
// client's goroutines returns to where it was. It is not parallel, so no other test's clients
// are counted.
func TestNoGoroutineLeak(t *testing.T) {
	s := startZKD(t)
	p, err := faultnet.Start(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()

	base, _ := zkGoroutines()
	ctx := testCtx(t)
	for round := range 3 {
		c, err := Connect(ctx, p.Addr(), WithLogger(testLogger(t)), WithReconnectBackoff(10*time.Millisecond, 50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		rec := recordStates(c)
		root := fmt.Sprintf("/leak%d", round)
		mustCreate(t, c, root, nil, ModePersistent)
		drained, err := c.AddWatch(ctx, root, AddWatchPersistentRecursive)
		if err != nil {
			t.Fatal(err)
		}
		stopped, err := c.AddWatch(ctx, root, AddWatchPersistent)
		if err != nil {
			t.Fatal(err)
		}
		_, _, fired, _ := c.GetW(ctx, root)
		_, _, pending, _ := c.ExistsW(ctx, root+"/never")

		sets := make([]*Pending[*Stat], 200) // enough events to overflow the watch buffers and start pumps
		for i := range sets {
			sets[i] = Go(ctx, func(ctx context.Context) (*Stat, error) { return c.Set(ctx, root, []byte(fmt.Sprint(i)), AnyVersion) })
		}
		for _, s := range sets {
			s.Wait(ctx)
		}
		<-fired

		p.DropAll()
		rec.waitFor(t, StateConnected, 2)
		if _, _, err := c.Get(ctx, root); err != nil {
			t.Fatal(err)
		}
		stopped.Stop()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		for range drained.Events() {
		}
		for range pending {
		}
		rec.waitFor(t, StateClosed, 1)

		// A Connect that never succeeds.
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		if _, err := Connect(short, dead, WithLogger(testLogger(t))); err == nil {
			t.Fatal("connected to nothing")
		}
		cancel()
	}
	eventually(t, "client goroutines exit", func() error {
		if n, dump := zkGoroutines(); n > base {
			return fmt.Errorf("%d client goroutines, %d before:\n%s", n, base, dump)
		}
		return nil
	})
}
