package server_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/server"
)

// TestEnsembleWideRolloverWithoutElection runs writes, from clients of every member at
// once, through an all-zkd ensemble with wide on whose zxid counter starts 14 short of its
// end: the epoch must roll over several times with no election (no member changes role,
// no client is disconnected, the leader stays), every acknowledged write must be on every
// member, and every member's persisted epochs must follow.
func TestEnsembleWideRolloverWithoutElection(t *testing.T) {
	e := startEnsembleFull(t, 3, 1, func(c *server.Config) {
		server.SetZxidCounterStart(c, 0xfffffff0)
		c.Extensions = ext.Of(ext.Wide)
	})
	e.waitServing()
	leader := e.leaderIndex()
	// Every member's clients: an election would disconnect them.
	var clients []*zk.Conn
	var mu sync.Mutex
	var disconnects []string
	for i, a := range e.addrs() {
		c, ev, err := zk.Connect([]string{a}, 10*time.Second, quiet)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		waitFor(t, "session on member", func() bool { return c.State() == zk.StateHasSession })
		go func(i int) {
			for x := range ev {
				if x.State == zk.StateDisconnected {
					mu.Lock()
					disconnects = append(disconnects, fmt.Sprintf("member %d at %v", i+1, time.Now()))
					mu.Unlock()
				}
			}
		}(i)
		clients = append(clients, c)
	}
	// The first write sets the epoch; role counts are taken once everyone serves it.
	if _, err := clients[0].Create("/start", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	_, st, err := clients[0].Exists("/start")
	if err != nil {
		t.Fatal(err)
	}
	firstEpoch := st.Czxid >> 32
	roles := make([]int, len(e.members))
	for i, m := range e.members {
		roles[i] = server.RoleChanges(m.srv)
	}
	// A watch set before the rollovers fires after them: watches survive.
	_, _, watch, err := clients[1].ExistsW("/watched")
	if err != nil {
		t.Fatal(err)
	}
	const perClient = 25 // 100 writes: about seven rollovers
	var wg sync.WaitGroup
	errs := make(chan error, len(clients))
	for i, c := range clients {
		wg.Add(1)
		go func(i int, c *zk.Conn) {
			defer wg.Done()
			for j := 0; j < perClient; j++ {
				p := fmt.Sprintf("/w%d-%d", i, j)
				if _, err := c.Create(p, []byte(p), 0, open); err != nil {
					errs <- fmt.Errorf("create %s on member %d: %w", p, i+1, err)
					return
				}
			}
		}(i, c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := e.leaderIndex(); got != leader {
		t.Fatalf("leader moved from member %d to %d", leader+1, got+1)
	}
	for i, m := range e.members {
		if n := server.RoleChanges(m.srv); n != roles[i] {
			t.Fatalf("member %d changed role %d times during the writes: an election ran", i+1, n-roles[i])
		}
	}
	if _, err := clients[2].Create("/watched", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-watch:
		if ev.Type != zk.EventNodeCreated || ev.Path != "/watched" {
			t.Fatalf("watch set before the rollovers got %+v", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watch set before the rollovers never fired")
	}
	mu.Lock()
	if len(disconnects) > 0 {
		t.Fatalf("clients were disconnected: %v", disconnects)
	}
	mu.Unlock()
	// Every write on every member, czxids strictly increasing per client, epochs moved.
	var lastEpoch int64
	for i, c := range clients {
		if _, err := c.Sync("/"); err != nil {
			t.Fatal(err)
		}
		for w := range clients {
			var prev int64
			for j := 0; j < perClient; j++ {
				p := fmt.Sprintf("/w%d-%d", w, j)
				d, st, err := c.Get(p)
				if err != nil || string(d) != p {
					t.Fatalf("member %d reading %s: %q %v", i+1, p, d, err)
				}
				if st.Czxid <= prev {
					t.Fatalf("%s has czxid 0x%x after 0x%x", p, st.Czxid, prev)
				}
				if st.Czxid&0xffffffff == 0xffffffff {
					t.Fatalf("%s has the bump's counter: 0x%x", p, st.Czxid)
				}
				prev = st.Czxid
				lastEpoch = max(lastEpoch, st.Czxid>>32)
			}
		}
	}
	if lastEpoch < firstEpoch+5 {
		t.Fatalf("epochs went from %d to %d over %d writes; want at least five rollovers", firstEpoch, lastEpoch, perClient*len(clients))
	}
	for i, m := range e.members {
		waitFor(t, "epochs persisted", func() bool {
			a, c := server.Epochs(m.srv)
			return a == c && c == lastEpoch
		})
		_ = i
	}
	// A member restarted now syncs across the boundaries and serves every write.
	f := (leader + 1) % 3
	e.stop(f)
	e.start(f)
	e.waitServing()
	c := connectTo(t, e.addrs()[f])
	if _, err := c.Sync("/"); err != nil {
		t.Fatal(err)
	}
	for w := range clients {
		for j := 0; j < perClient; j++ {
			if ok, _, err := c.Exists(fmt.Sprintf("/w%d-%d", w, j)); err != nil || !ok {
				t.Fatalf("restarted member %d misses /w%d-%d: %v %v", f+1, w, j, ok, err)
			}
		}
	}
}

// TestEnsembleWideRolloverNeedsEveryMember: with one member running without wide, or one
// member down, the leader keeps ZooKeeper's step-down when its counter runs out (a new
// epoch by election).
func TestEnsembleWideRolloverNeedsEveryMember(t *testing.T) {
	for _, tc := range []struct {
		name         string
		narrow, down bool
	}{{"member without wide", true, false}, {"member down", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := startEnsembleConfig(t, 3, func(c *server.Config) {
				server.SetZxidCounterStart(c, 0xfffffff0)
				c.Extensions = ext.Of(ext.Wide)
				if c.ServerID == 3 && tc.narrow {
					c.Extensions = ext.Set{}
				}
			})
			e.waitServing()
			if tc.down {
				// A follower goes: two members still make a quorum.
				f := (e.leaderIndex() + 1) % 3
				e.stop(f)
			}
			roles := 0
			for _, m := range e.members {
				if m.srv != nil {
					roles += server.RoleChanges(m.srv)
				}
			}
			c, _, err := zk.Connect(e.addrs(), 10*time.Second, quiet)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for i := 0; i < 20; i++ {
				p := fmt.Sprintf("/n%d", i)
				waitFor(t, "create "+p, func() bool {
					_, err := c.Create(p, nil, 0, open)
					if err == zk.ErrNodeExists {
						ok, _, err := c.Exists(p)
						return err == nil && ok
					}
					return err == nil
				})
			}
			after := 0
			for _, m := range e.members {
				if m.srv != nil {
					after += server.RoleChanges(m.srv)
				}
			}
			if after == roles {
				t.Fatal("the counter ran out and no member changed role: the leader rolled over in place without every member")
			}
		})
	}
}
