package zk

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/zkd-io/zkd/internal/ext"
)

func (c *Conn) lastXid() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.xid
}

// TestXID64 runs a session with 64-bit xids past 2^31: replies matched (pipelined
// included), a watch's event, pings on an idle connection, auth, and a reconnect that asks
// for version 11 directly.
func TestXID64(t *testing.T) {
	srv := capsServer(t, ext.Of(ext.Wide))
	ctx := testCtx(t)
	const first = int64(math.MaxInt32) - 2
	c := dial(t, srv.Addr(), WithXID64(), withFirstXID(first), WithSessionTimeout(3e9))
	states := recordStates(c)
	if !c.XID64() {
		t.Fatal("XID64() = false on a server with wide")
	}
	other := dial(t, srv.Addr())

	mustCreate(t, c, "/x64", []byte("a"), ModePersistent)
	// Pipelined, across 2^31.
	var ps []*Pending[[]byte]
	for range 8 {
		ps = append(ps, Go(ctx, func(ctx context.Context) ([]byte, error) {
			d, _, err := c.Get(ctx, "/x64")
			return d, err
		}))
	}
	for i, p := range ps {
		if d, err := p.Wait(ctx); err != nil || string(d) != "a" {
			t.Fatalf("get %d: %q %v", i, d, err)
		}
	}
	if x := c.lastXid(); x <= math.MaxInt32 {
		t.Fatalf("last xid %d, want past 2^31", x)
	}
	_, _, w, err := c.GetW(ctx, "/x64")
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, other, "/x64", []byte("b"))
	if ev := nextEvent(t, w); ev.Type != EventNodeDataChanged || ev.Path != "/x64" {
		t.Fatalf("event %+v", ev)
	}
	if err := c.AddAuth(ctx, "digest", []byte("u:p")); err != nil {
		t.Fatalf("auth: %v", err)
	}

	// Idle: the pings (xid -2, 64-bit) keep the connection; a connection that could not
	// read their replies would drop.
	start, calls := received(t, srv.Addr()), int64(0)
	eventually(t, "three pings", func() error {
		calls++ // srvr counts itself
		if n := received(t, srv.Addr()) - start - calls; n < 3 {
			return fmt.Errorf("%d packets", n)
		}
		return nil
	})
	if n := states.count(StateDisconnected); n != 0 {
		t.Fatalf("%d disconnects while idle: %v", n, states.states())
	}

	// A reconnect to a server known to enable wide asks for version 11 at once.
	c.mu.Lock()
	cw := c.w
	c.mu.Unlock()
	cw.kill(errors.New("test: drop the connection"))
	states.waitFor(t, StateConnected, 2)
	if !c.XID64() {
		t.Fatal("XID64() = false after a reconnect")
	}
	if d, _, err := c.Get(ctx, "/x64"); err != nil || string(d) != "b" {
		t.Fatalf("get after reconnect: %q %v", d, err)
	}
	if st := c.wideState(srv.Addr()); st != wideYes {
		t.Fatalf("wide state %v", st)
	}
}

// TestXID64Fallback: on a server without wide the option uses 32-bit xids, wrapping
// past 2^31-1 to 1 as without it, and says so.
func TestXID64Fallback(t *testing.T) {
	for name, set := range map[string]ext.Set{"none": {}, "capabilities": ext.Of(ext.Capabilities)} {
		t.Run(name, func(t *testing.T) {
			srv := capsServer(t, set)
			c := dial(t, srv.Addr(), WithXID64(), withFirstXID(math.MaxInt32-1))
			if c.XID64() {
				t.Fatal("XID64() = true without wide")
			}
			mustCreate(t, c, "/x32", nil, ModePersistent)
			for range 4 {
				if _, _, err := c.Get(testCtx(t), "/x32"); err != nil {
					t.Fatal(err)
				}
			}
			if x := c.lastXid(); x <= 0 || x > 8 {
				t.Fatalf("last xid %d, want wrapped to a small one", x)
			}
		})
	}
}
