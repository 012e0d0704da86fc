package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/server"
)

// mixedMember is one server of a mixed ensemble: zkd in process or Apache ZooKeeper.
type mixedMember struct {
	id   int64
	zkd  *server.Server
	ref  *refzk.Server
	addr string
	// quorumPort is the member's quorum (Zab) port.
	quorumPort int
}

func (m *mixedMember) mode(t *testing.T) string {
	if m.zkd != nil {
		return m.zkd.Mode()
	}
	out, err := m.ref.Command("srvr")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Mode: ") {
			return strings.TrimPrefix(l, "Mode: ")
		}
	}
	return ""
}

// startMixed starts a 3-member ensemble in the given order; zkdIDs says which members
// are zkd. The first two form a quorum and elect a leader (the higher sid of the two, as
// their zxids are equal) before the third starts, so the test decides who leads.
func startMixed(t *testing.T, zkdIDs map[int64]bool, order []int64) []*mixedMember {
	return startMixedWith(t, zkdIDs, order, nil, nil)
}

// startMixedWith is startMixed with extra settings: zkdCfg changes the zkd members'
// configuration, refLines are added to the ZooKeeper members' zoo.cfg.
func startMixedWith(t *testing.T, zkdIDs map[int64]bool, order []int64, zkdCfg func(*server.Config), refLines []string) []*mixedMember {
	return startMixedPer(t, zkdIDs, order, zkdCfg, func(_ int64, o *refzk.Options) { o.Config = append(o.Config, refLines...) })
}

// startMixedOpts is startMixedWith with Java system properties for the ZooKeeper members.
func startMixedOpts(t *testing.T, zkdIDs map[int64]bool, order []int64, zkdCfg func(*server.Config), refLines, refProps []string) []*mixedMember {
	return startMixedPer(t, zkdIDs, order, zkdCfg, func(_ int64, o *refzk.Options) {
		o.Config = append(o.Config, refLines...)
		o.SystemProperties = append(o.SystemProperties, refProps...)
	})
}

// startMixedPer is startMixedWith with the ZooKeeper members' options set per member:
// refOpts(sid, options) may add to them.
func startMixedPer(t *testing.T, zkdIDs map[int64]bool, order []int64, zkdCfg func(*server.Config), refOpts func(int64, *refzk.Options)) []*mixedMember {
	refzk.Require(t)
	ports := freePorts(t, 6)
	var peers []config.Member
	var lines []string
	for i := int64(1); i <= 3; i++ {
		q, e := ports[2*(i-1)], ports[2*(i-1)+1]
		peers = append(peers, config.Member{ID: i, Host: "127.0.0.1", QuorumPort: q, ElectionPort: e})
		lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i, q, e))
	}
	members := make([]*mixedMember, 3)
	for n, i := range order {
		if n == 2 {
			waitFor(t, "the first two members to elect a leader", func() bool {
				for _, m := range members {
					if m != nil && m.mode(t) == "leader" {
						return true
					}
				}
				return false
			})
		}
		m := &mixedMember{id: i, quorumPort: peers[i-1].QuorumPort}
		if zkdIDs[i] {
			logger := slog.New(slog.NewTextHandler(io.Discard, nil))
			if os.Getenv("ZKTEST_LOG") != "" {
				logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("sid", i)
			}
			cfg := server.Config{
				ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(), TickTime: 500, InitLimit: 10, SyncLimit: 5,
				ServerID: i, Peers: peers, PreAllocSize: 1 << 20, Logger: logger,
				// Every extension on: with a ZooKeeper member in the ensemble nothing of
				// them may reach the peer protocol, and the clients here are stock ones.
				Extensions: allExtensions,
			}
			if zkdCfg != nil {
				zkdCfg(&cfg)
			}
			srv, err := server.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			m.zkd, m.addr = srv, srv.Addr()
		} else {
			opts := refzk.Options{
				TickTime: 500, MyID: int(i), NoWait: true,
				Config: append([]string{"initLimit=10", "syncLimit=5"}, lines...),
			}
			if refOpts != nil {
				refOpts(i, &opts)
			}
			m.ref = refzk.StartStandalone(t, opts)
			m.addr = m.ref.Addr()
			ref := m.ref
			t.Cleanup(func() {
				if t.Failed() {
					if b, err := os.ReadFile(ref.LogPath()); err == nil {
						var keep []string
						for _, l := range strings.Split(string(b), "\n") {
							if !strings.Contains(l, "Processing srvr command") {
								keep = append(keep, l)
							}
						}
						text := strings.Join(keep, "\n")
						t.Logf("ZooKeeper %d's log (the end, without srvr lines):\n%s", i, text[max(0, len(text)-8000):])
					}
				}
			})
			// Wait until it takes part in elections (its election port is open).
			ep := peers[i-1].ElectionPort
			waitFor(t, "ZooKeeper's election port", func() bool {
				c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", ep), time.Second)
				if err == nil {
					c.Close()
				}
				return err == nil
			})
		}
		members[i-1] = m
	}
	waitFor(t, "the mixed ensemble to elect a leader", func() bool {
		leaders, followers := 0, 0
		for _, m := range members {
			switch m.mode(t) {
			case "leader":
				leaders++
			case "follower":
				followers++
			}
		}
		return leaders == 1 && followers == 2
	})
	return members
}

// checkMixed writes through every member and reads everything back from every member.
func checkMixed(t *testing.T, members []*mixedMember) {
	var clients []*zk.Conn
	for _, m := range members {
		clients = append(clients, connectTo(t, m.addr))
	}
	for i, c := range clients {
		for j := 0; j < 5; j++ {
			p := fmt.Sprintf("/m%d-%d", members[i].id, j)
			if _, err := c.Create(p, []byte(p), 0, open); err != nil {
				t.Fatalf("create %s through member %d (%s): %v", p, members[i].id, members[i].mode(t), err)
			}
		}
		if _, err := c.Create(fmt.Sprintf("/seq%d-", members[i].id), nil, zk.FlagSequence|zk.FlagEphemeral, open); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range clients {
		if _, err := c.Sync("/"); err != nil {
			t.Fatal(err)
		}
		for _, m := range members {
			for j := 0; j < 5; j++ {
				p := fmt.Sprintf("/m%d-%d", m.id, j)
				d, st, err := c.Get(p)
				if err != nil || string(d) != p || st.Version != 0 {
					t.Fatalf("member %d reading %s: %q %+v %v", members[i].id, p, d, st, err)
				}
			}
		}
		kids, _, err := c.Children("/")
		if err != nil || len(kids) != 1+15+3 {
			t.Fatalf("member %d sees %d children of /: %v %v", members[i].id, len(kids), kids, err)
		}
	}
}

func TestMixedEnsembleZkdLeads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	// zkd (sid 3) and ZooKeeper 1 elect zkd; ZooKeeper 2 joins it.
	members := startMixed(t, map[int64]bool{3: true}, []int64{1, 3, 2})
	if m := members[2].mode(t); m != "leader" {
		t.Fatalf("zkd (sid 3) is %q", m)
	}
	checkMixed(t, members)
}

func TestMixedEnsembleZooKeeperLeads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	// ZooKeeper (sid 3) and zkd 1 elect ZooKeeper; zkd 2 joins it.
	members := startMixed(t, map[int64]bool{1: true, 2: true}, []int64{3, 1, 2})
	if m := members[2].mode(t); m != "leader" {
		t.Fatalf("ZooKeeper (sid 3) is %q", m)
	}
	checkMixed(t, members)
	// Kill the ZooKeeper leader: the two zkd servers elect a new leader among themselves.
	members[2].ref.Kill()
	waitFor(t, "a zkd leader after the ZooKeeper leader died", func() bool {
		return members[0].mode(t) == "leader" || members[1].mode(t) == "leader"
	})
	c := connectTo(t, members[0].addr)
	if _, err := c.Create("/after-failover", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c.Exists("/m3-4"); err != nil || !ok {
		t.Fatalf("write made through the dead ZooKeeper leader lost: %v %v", ok, err)
	}
}
