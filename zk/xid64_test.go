package zk

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/sasl"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
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

// TestSequential64: the 64-bit sequential modes against zkd with wide: the suffix is the
// create's zxid in 19 digits (the Stat's czxid), the ephemeral one is ephemeral, a Multi
// makes one per parent; on a server without wide the calls fail with ErrUnsupported before
// anything is sent.
func TestSequential64(t *testing.T) {
	ctx := testCtx(t)
	srv := capsServer(t, ext.Of(ext.Wide, ext.KeeperOps))
	c := dial(t, srv.Addr())
	mustCreate(t, c, "/s64", nil, ModePersistent)
	p, st, err := c.Create2(ctx, "/s64/n-", nil, WorldACL(PermAll), ModePersistentSequential64)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("/s64/n-%019d", st.Czxid); p != want {
		t.Fatalf("path %q, want %q", p, want)
	}
	p2, err := c.Create(ctx, "/s64/e-", nil, WorldACL(PermAll), ModeEphemeralSequential64)
	if err != nil {
		t.Fatal(err)
	}
	if _, st, err := c.Get(ctx, p2); err != nil || st.EphemeralOwner != c.SessionID() || len(p2) != len("/s64/e-")+19 || p2[len(p2)-19:] <= p[len(p)-19:] {
		t.Fatalf("ephemeral %q: %+v %v", p2, st, err)
	}
	p3, _, err := c.CreateWithParents(ctx, "/s64/deep/x-", nil, WorldACL(PermAll), ModePersistentSequential64)
	if err != nil || len(p3) != len("/s64/deep/x-")+19 {
		t.Fatalf("createWithParents: %q %v", p3, err)
	}
	_, err = c.Multi(ctx,
		&CreateOp{Path: "/s64/m-", ACL: WorldACL(PermAll), Mode: ModePersistentSequential64},
		&CreateOp{Path: "/s64/m-", ACL: WorldACL(PermAll), Mode: ModePersistentSequential64})
	if !errors.Is(err, ErrBadArguments) {
		t.Fatalf("two under one parent in a multi: %v, want ErrBadArguments", err)
	}
	res, err := c.Multi(ctx,
		&CreateOp{Path: "/s64/m-", ACL: WorldACL(PermAll), Mode: ModePersistentSequential64},
		&CreateOp{Path: "/s64/deep/m-", ACL: WorldACL(PermAll), Mode: ModePersistentSequential64})
	if err != nil || res[0].Path[len(res[0].Path)-19:] != res[1].Path[len(res[1].Path)-19:] {
		t.Fatalf("one per parent: %+v %v", res, err)
	}

	off := capsServer(t, ext.Of(ext.Capabilities))
	c2 := dial(t, off.Addr())
	mustCreate(t, c2, "/s64", nil, ModePersistent)
	if _, err := c2.Capabilities(ctx); err != nil {
		t.Fatal(err)
	}
	before := received(t, off.Addr())
	_, err = c2.Create(ctx, "/s64/n-", nil, WorldACL(PermAll), ModePersistentSequential64)
	_, err2 := c2.Multi(ctx, &CreateOp{Path: "/s64/m-", ACL: WorldACL(PermAll), Mode: ModeEphemeralSequential64})
	for _, e := range []error{err, err2} {
		if !errors.Is(e, ErrUnsupported) {
			t.Errorf("without wide: %v, want ErrUnsupported", e)
		}
	}
	if after := received(t, off.Addr()); after != before+1 {
		t.Errorf("the server received %d packets for refused calls", after-before-1)
	}
}

// TestXID64SASL: with SASL (enforced), the exchange runs on the ZooKeeper connection and
// again on the version-11 one, whose sasl requests carry 64-bit xids.
func TestXID64SASL(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.Extensions = ext.Of(ext.Wide)
		c.AuthProviders.SASL = true
		c.EnforceAuthSchemes = []string{"sasl"}
		c.NewSASLServer = func() (server.SASLServer, error) {
			return sasl.NewServer(sasl.DigestMD5, sasl.ServerConfig{Users: saslUsers})
		}
	}))
	ctx := testCtx(t)
	c := dial(t, srv.Addr(), WithDigestSASL("bob", "secret"), WithXID64(), withFirstXID(1<<31+1))
	if !c.XID64() {
		t.Fatal("XID64() = false")
	}
	ids, err := c.WhoAmI(ctx)
	if err != nil || !slices.Contains(ids, ClientInfo{AuthScheme: "sasl", User: "bob"}) {
		t.Fatalf("WhoAmI %v, %v", ids, err)
	}
}

// TestXID64ServerLosesWide: a server known to enable wide restarts without it: the
// client's version-11 request is closed unanswered, and the same attempt connects again
// with ZooKeeper's version and resumes the session with 32-bit xids.
func TestXID64ServerLosesWide(t *testing.T) {
	a := capsServer(t, ext.Of(ext.Wide))
	ctx := testCtx(t)
	c := dial(t, a.Addr(), WithXID64())
	states := recordStates(c)
	mustCreate(t, c, "/lose", []byte("x"), ModePersistent)
	if !c.XID64() {
		t.Fatal("XID64() = false on a server with wide")
	}
	cfg := a.Config()
	a.Stop()
	capsServer(t, ext.Set{}, func(nc *server.Config) { nc.DataDir, nc.ListenAddr = cfg.DataDir, cfg.ListenAddr })
	states.waitFor(t, StateConnected, 2)
	if c.XID64() {
		t.Fatal("XID64() = true on a server without wide")
	}
	if d, _, err := c.Get(ctx, "/lose"); err != nil || string(d) != "x" {
		t.Fatalf("get: %q %v", d, err)
	}
	if n := states.count(StateExpired); n != 0 {
		t.Fatalf("session expired: %v", states.states())
	}
}
