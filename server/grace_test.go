package server_test

import (
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/clock"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// TestSessionGraceStall: the core is stalled for ten minutes (the clock jumps while it
// cannot tick) under a two-minute session. As ZooKeeper's leader does, zkd without
// session-grace expires the session at the first tick after the stall; with it, the stall
// is added to the deadline, the session lives on when it heartbeats afterwards, and a
// session that then goes silent still expires after its timeout.
func TestSessionGraceStall(t *testing.T) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		t.Run(name, func(t *testing.T) {
			fake := clock.NewFake(time.Now())
			srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
				c.Clock = fake
				c.TickTime = 60000 // sessions of 2 to 20 minutes, a core tick every 30 s
				if on {
					c.Extensions = ext.Of(ext.SessionGrace)
				}
			}))
			victim := rawzk.Connect(t, srv.Addr())
			victim.Call(jute.OpCreate, &jute.CreateRequest{Path: "/eph", ACL: jute.OpenACLUnsafe, Flags: jute.FlagEphemeral}, &jute.CreateResponse{})
			exists := func() bool {
				c := rawzk.Connect(t, srv.Addr())
				defer c.NC.Close()
				return c.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/eph"}, &jute.StatResponse{}).Err == jute.OK
			}
			fake.Advance(10 * time.Minute)
			if !on {
				waitFor(t, "the session to expire after the stall", func() bool { return !exists() })
				if _, on := server.GraceLost(srv.Server); on {
					t.Fatal("session-grace is on without being enabled")
				}
				return
			}
			// The first tick after the stall has run once the lost time is counted.
			waitFor(t, "the tick after the stall", func() bool {
				ms, _ := server.GraceLost(srv.Server)
				return ms > 0
			})
			if ms, _ := server.GraceLost(srv.Server); ms < 9*60000 {
				t.Fatalf("lost %d ms of a 10-minute stall, want at least 9 minutes", ms)
			}
			// The heartbeat that was queued during the stall.
			if r := victim.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/eph"}, &jute.StatResponse{}); r.Err != jute.OK {
				t.Fatalf("the session's own request after the stall: %v", r.Err)
			}
			if !exists() {
				t.Fatal("the session expired for the server's stall")
			}
			// From here the clock moves one tick at a time, each handled before the next,
			// as a server that is not stalled sees it.
			step := func(d time.Duration) {
				for ; d > 0; d -= 30 * time.Second {
					n := server.Ticks(srv.Server)
					fake.Advance(30 * time.Second)
					waitFor(t, "the core's tick", func() bool { return server.Ticks(srv.Server) > n })
				}
			}
			lost, _ := server.GraceLost(srv.Server)
			step(time.Minute)
			if !exists() {
				t.Fatal("session expired a minute after its heartbeat")
			}
			step(3 * time.Minute)
			waitFor(t, "the silent session to expire", func() bool { return !exists() })
			if now, _ := server.GraceLost(srv.Server); now != lost {
				t.Fatalf("ordinary ticks counted as stalls: lost %d then %d", lost, now)
			}
		})
	}
}
