package zk

import (
	"errors"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// received is the number of packets the server at addr has received, from srvr (which
// counts itself).
func received(t *testing.T, addr string) int64 {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(waitTimeout))
	if _, err := nc.Write([]byte("srvr")); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^Received: (\d+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("srvr without Received: %q", b)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

func capsServer(t *testing.T, set ext.Set, more ...func(*server.Config)) *zktest.Server {
	return zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.Extensions = set
		for _, f := range more {
			f(c)
		}
	}))
}

// TestCapabilitiesOff: a zkd without extensions has none, and require fails with an
// *UnsupportedError before sending anything of the call (after the one read of the
// capability node, nothing reaches the server).
func TestCapabilitiesOff(t *testing.T) {
	srv := capsServer(t, ext.Set{})
	c := dial(t, srv.Addr())
	ctx := testCtx(t)
	caps, err := c.Capabilities(ctx)
	if err != nil || caps.Version != 0 || len(caps.Extensions) != 0 {
		t.Fatalf("Capabilities = %+v, %v; want none", caps, err)
	}
	before := received(t, srv.Addr())
	for _, n := range []ext.Name{ext.KeeperOps, ext.PagedList} {
		err := c.require(ctx, n)
		var ue *UnsupportedError
		if !errors.Is(err, ErrUnsupported) || !errors.As(err, &ue) || ue.Extension != n || ue.Server != srv.Addr() {
			t.Errorf("require(%s) = %v, want an UnsupportedError for it", n, err)
		}
	}
	if after := received(t, srv.Addr()); after != before+1 { // srvr itself
		t.Errorf("the server received %d packets during two refused calls; want none", after-before-1)
	}
}

// TestCapabilitiesOn: every extension on is listed, require lets calls through, and the
// answer is read once per connection.
func TestCapabilitiesOn(t *testing.T) {
	srv := capsServer(t, ext.Of(ext.All...))
	c := dial(t, srv.Addr()+"/chroot") // the capability node is read outside the chroot
	ctx := testCtx(t)
	caps, err := c.Capabilities(ctx)
	if err != nil || caps.Version != 1 || !slices.Equal(caps.Extensions, ext.All) || len(caps.Server) < 5 || caps.Server[:4] != "zkd " {
		t.Fatalf("Capabilities = %+v, %v", caps, err)
	}
	before := received(t, srv.Addr())
	for _, n := range ext.All {
		if err := c.require(ctx, n); err != nil {
			t.Errorf("require(%s) = %v", n, err)
		}
	}
	if after := received(t, srv.Addr()); after != before+1 {
		t.Errorf("require asked the server again (%d packets); the answer is cached per connection", after-before-1)
	}
}

// TestCapabilitiesAfterReconnect: the session moves to a server with other settings (the
// same one restarted on its address and data) and the capabilities are read again there.
func TestCapabilitiesAfterReconnect(t *testing.T) {
	a := capsServer(t, ext.Set{})
	c := dial(t, a.Addr(), WithSessionTimeout(30*time.Second))
	ctx := testCtx(t)
	if caps, err := c.Capabilities(ctx); err != nil || len(caps.Extensions) != 0 {
		t.Fatalf("Capabilities on a = %+v, %v", caps, err)
	}
	if err := c.require(ctx, ext.KeeperOps); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("require on a = %v", err)
	}
	addr, dir := a.Addr(), a.DataDir()
	a.Stop()
	waitState(t, c, StateDisconnected)
	capsServer(t, ext.Of(ext.KeeperOps), func(cfg *server.Config) { cfg.ListenAddr, cfg.DataDir = addr, dir })
	waitState(t, c, StateConnected)
	if err := c.require(ctx, ext.KeeperOps); err != nil {
		t.Errorf("require after reconnecting to a server with keeper-ops = %v", err)
	}
	if err := c.require(ctx, ext.Capabilities); !errors.Is(err, ErrUnsupported) {
		t.Errorf("require(capabilities) there = %v", err)
	}
}

// waitState reads the session's events until one in state s.
func waitState(t *testing.T, c *Conn, s State) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				t.Fatalf("session ended waiting for %v", s)
			}
			if ev.State == s {
				return
			}
		case <-deadline:
			t.Fatalf("no %v within %v", s, waitTimeout)
		}
	}
}

// TestCapabilitiesApacheZK: Apache ZooKeeper has no capability node, so no extensions.
func TestCapabilitiesApacheZK(t *testing.T) {
	s := refzk.StartStandalone(t, refzk.Options{})
	c := dial(t, s.Addr())
	ctx := testCtx(t)
	if caps, err := c.Capabilities(ctx); err != nil || caps.Version != 0 || len(caps.Extensions) != 0 {
		t.Fatalf("Capabilities on ZooKeeper = %+v, %v", caps, err)
	}
	if err := c.require(ctx, ext.KeeperOps); !errors.Is(err, ErrUnsupported) {
		t.Errorf("require on ZooKeeper = %v", err)
	}
}
