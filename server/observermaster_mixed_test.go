package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/server"
)

// TestMixedObserverMasters: a ZooKeeper observer syncs from a zkd follower, and a zkd
// observer from a ZooKeeper follower. Each follower serves observers on a port of its
// own and each observer is given one of them, so only that follower answers it (the
// others, the leader among them, refuse the connection and the observer moves on).
//
//	sid 1 zkd follower        observer master on port A
//	sid 2 ZooKeeper follower  observer master on port B
//	sid 3 zkd leader
//	sid 4 ZooKeeper observer  observerMasterPort=A: syncs from sid 1
//	sid 5 zkd observer        observerMasterPort=B: syncs from sid 2
func TestMixedObserverMasters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	refzk.Require(t)
	ports := freePorts(t, 12)
	omA, omB := ports[10], ports[11]
	host := func(id int64) string { return "127.0.0." + strconv.FormatInt(id, 10) }
	var peers []config.Member
	var lines []string
	for i := int64(1); i <= 5; i++ {
		q, e := ports[2*(i-1)], ports[2*(i-1)+1]
		obs := i >= 4
		peers = append(peers, config.Member{ID: i, Host: host(i), QuorumPort: q, ElectionPort: e, Observer: obs})
		l := fmt.Sprintf("server.%d=%s:%d:%d", i, host(i), q, e)
		if obs {
			l += ":observer"
		}
		lines = append(lines, l)
	}
	omPort := map[int64]int{1: omA, 2: omB, 4: omA, 5: omB}
	addrs := map[int64]string{}
	modes := map[int64]func() string{}
	zkds := map[int64]*server.Server{}
	refs := map[int64]*refzk.Server{}
	startZkd := func(id int64) {
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		if os.Getenv("ZKTEST_LOG") != "" {
			logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("sid", id)
		}
		srv, err := server.New(server.Config{
			ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(), TickTime: 500, InitLimit: 10, SyncLimit: 5,
			ServerID: id, Peers: peers, PreAllocSize: 1 << 20, Logger: logger,
			ObserverMasterPort: omPort[id], FourLetterWhitelist: []string{"mntr", "srvr"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		zkds[id], addrs[id] = srv, srv.Addr()
		modes[id] = srv.Mode
	}
	startRef := func(id int64) {
		cfg := append([]string{"initLimit=10", "syncLimit=5", fmt.Sprintf("observerMasterPort=%d", omPort[id])}, lines...)
		if id >= 4 {
			cfg = append(cfg, "peerType=observer")
		}
		ref := refzk.StartStandalone(t, refzk.Options{TickTime: 500, MyID: int(id), NoWait: true, Config: cfg})
		refs[id], addrs[id] = ref, ref.Addr()
		modes[id] = func() string { return refMode(ref) }
		t.Cleanup(func() {
			if t.Failed() {
				if b, err := os.ReadFile(ref.LogPath()); err == nil {
					t.Logf("ZooKeeper %d's log (the end):\n%s", id, b[max(0, len(b)-6000):])
				}
			}
		})
		ep := peers[id-1].ElectionPort
		waitFor(t, "ZooKeeper's election port", func() bool {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(host(id), strconv.Itoa(ep)), time.Second)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
	// 1 and 3 elect 3 (the higher sid, equal zxids); then the others join.
	startZkd(1)
	startZkd(3)
	waitFor(t, "zkd 3 to lead", func() bool { return modes[3]() == "leader" })
	startRef(2)
	startRef(4)
	startZkd(5)
	want := map[int64]string{1: "follower", 2: "follower", 3: "leader", 4: "observer", 5: "observer"}
	waitFor(t, "the mixed ensemble to serve", func() bool {
		for id, m := range want {
			if modes[id]() != m {
				return false
			}
		}
		return true
	})

	// Each observer syncs from the follower its port names, and the leader counts only
	// the followers.
	waitFor(t, "observers to sync from their followers", func() bool {
		m4, err := refs[4].Command("mntr")
		if err != nil || !strings.Contains(m4, "zk_observer_master_id\t1\n") {
			return false
		}
		m5 := mntrLines(t, fourLetter(t, addrs[5], "mntr"))
		return m5["observer_master_id"] == "2"
	})
	leader := mntrLines(t, fourLetter(t, addrs[3], "mntr"))
	if leader["learners"] != "2" || leader["synced_observers"] != "0" {
		t.Fatalf("the leader counts learners %s, synced observers %s; want the two followers only",
			leader["learners"], leader["synced_observers"])
	}
	waitFor(t, "zkd follower 1 to count its ZooKeeper observer", func() bool {
		n, ok := mntrInt(mntrLines(t, fourLetter(t, addrs[1], "mntr")), "synced_observers")
		return ok && n == 1
	})

	// Writes, sessions and syncs through both observers; everyone reads everything.
	var clients []*zk.Conn
	for id := int64(1); id <= 5; id++ {
		clients = append(clients, connectTo(t, addrs[id]))
	}
	for _, id := range []int64{4, 5} {
		c := clients[id-1]
		for j := 0; j < 5; j++ {
			p := fmt.Sprintf("/o%d-%d", id, j)
			if _, err := c.Create(p, []byte(p), 0, open); err != nil {
				t.Fatalf("create %s through observer %d: %v", p, id, err)
			}
		}
		if _, err := c.Create(fmt.Sprintf("/eph%d", id), nil, zk.FlagEphemeral, open); err != nil {
			t.Fatalf("ephemeral through observer %d: %v", id, err)
		}
	}
	if _, err := clients[2].Create("/from-leader", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	for i, c := range clients {
		if _, err := c.Sync("/"); err != nil {
			t.Fatalf("sync through member %d: %v", i+1, err)
		}
		for _, p := range []string{"/o4-4", "/o5-4", "/eph4", "/eph5", "/from-leader"} {
			if ok, _, err := c.Exists(p); err != nil || !ok {
				t.Fatalf("member %d misses %s: %v %v", i+1, p, ok, err)
			}
		}
	}
}

func refMode(ref *refzk.Server) string {
	out, err := ref.Command("srvr")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(l, "Mode: "); ok {
			return m
		}
	}
	return ""
}
