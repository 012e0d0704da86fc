package server_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/server"
)

// wantConfigText is /zookeeper/config's text for peers as ZooKeeper 3.8 prints it (ids
// below 16 list in ascending order).
func wantConfigText(peers []config.Member) string {
	peers = slices.Clone(peers)
	slices.SortFunc(peers, func(a, b config.Member) int { return int(a.ID - b.ID) })
	var b strings.Builder
	for _, p := range peers {
		role := "participant"
		if p.Observer {
			role = "observer"
		}
		fmt.Fprintf(&b, "server.%d=%s:%d:%d:%s", p.ID, p.Host, p.QuorumPort, p.ElectionPort, role)
		if p.ClientPort != 0 {
			host := p.ClientHost
			if host == "" {
				host = "0.0.0.0"
			}
			fmt.Fprintf(&b, ";%s:%d", host, p.ClientPort)
		}
		b.WriteString("\n")
	}
	b.WriteString("version=0")
	return b.String()
}

// checkConfigNode reads /zookeeper/config through c and checks it as ZooKeeper 3.8 serves a
// static configuration: the text, Mzxid 0 (the config's version), Version -1, a wall-clock
// Mtime, the READ-only world ACL, and no write allowed.
func checkConfigNode(t *testing.T, who string, c *zk.Conn, want string) {
	t.Helper()
	d, st, err := c.Get("/zookeeper/config")
	if err != nil {
		t.Fatalf("%s: get /zookeeper/config: %v", who, err)
	}
	if string(d) != want {
		t.Errorf("%s: /zookeeper/config =\n%s\nwant\n%s", who, d, want)
	}
	got := *st
	if got.Mtime <= 0 {
		t.Errorf("%s: Mtime %d, want the time the member filled the node", who, got.Mtime)
	}
	got.Mtime = 0
	if wantSt := (zk.Stat{Version: -1, Aversion: -1, DataLength: int32(len(want))}); got != wantSt {
		t.Errorf("%s: stat %+v, want %+v", who, got, wantSt)
	}
	acl, _, err := c.GetACL("/zookeeper/config")
	if err != nil || len(acl) != 1 || acl[0] != (zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}) {
		t.Errorf("%s: ACL %+v %v, want world:anyone READ", who, acl, err)
	}
	if _, err := c.Set("/zookeeper/config", []byte("x"), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("%s: setData /zookeeper/config: %v, want NOAUTH", who, err)
	}
	if _, err := c.Create("/zookeeper/config/x", nil, 0, open); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("%s: create under /zookeeper/config: %v, want NOAUTH", who, err)
	}
	if err := c.Delete("/zookeeper/config", -1); !errors.Is(err, zk.ErrBadArguments) {
		t.Errorf("%s: delete /zookeeper/config: %v, want BADARGUMENTS", who, err)
	}
}

func TestEnsembleConfigNode(t *testing.T) {
	var peers []config.Member
	e := startEnsembleFull(t, 3, 1, func(c *server.Config) {
		if peers == nil {
			// Client parts in the forms ZooKeeper prints differently: host:port, a lone
			// port (all interfaces), none.
			peers = slices.Clone(c.Peers)
			peers[0].ClientHost, peers[0].ClientPort = "127.0.0.1", 21811
			peers[1].ClientPort = 21812
		}
		c.Peers = peers
	})
	e.waitServing()
	want := wantConfigText(peers)
	for i, a := range e.addrs() {
		checkConfigNode(t, fmt.Sprintf("member %d (%s)", i+1, e.modes()[i]), connectTo(t, a), want)
	}

	// A member that restarts and syncs (DIFF) fills it again, as does the new leader after
	// the old one stops.
	l := e.leaderIndex()
	f := (l + 1) % 3
	e.stop(f)
	e.start(f)
	e.stop(l)
	waitFor(t, "a new leader", func() bool {
		for i, m := range e.modes() {
			if i != l && m == "leader" {
				return true
			}
		}
		return false
	})
	waitFor(t, "the restarted member to serve", func() bool {
		m := e.modes()[f]
		return m == "leader" || m == "follower"
	})
	checkConfigNode(t, fmt.Sprintf("restarted member %d", f+1), connectTo(t, e.members[f].cfg.ListenAddr), want)
}

func TestStandaloneConfigNodeEmpty(t *testing.T) {
	c, _ := connect(t, startStock(t).Addr(), 10*time.Second)
	d, st, err := c.Get("/zookeeper/config")
	if err != nil || len(d) != 0 || *st != (zk.Stat{Aversion: -1}) {
		t.Errorf("standalone /zookeeper/config = %q %+v %v, want empty with Aversion -1 (ZooKeeper 3.8's)", d, st, err)
	}
}

// TestMixedEnsembleConfigNode compares /zookeeper/config on zkd and Apache ZooKeeper members
// of one ensemble: the same text, Stat (but for Mtime, each member's own) and ACL.
func TestMixedEnsembleConfigNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	for _, tc := range []struct {
		name  string
		zkd   map[int64]bool
		order []int64
	}{
		{"zkd leads", map[int64]bool{3: true}, []int64{1, 3, 2}},
		{"ZooKeeper leads", map[int64]bool{1: true, 2: true}, []int64{3, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			members := startMixed(t, tc.zkd, tc.order)
			var want string
			for _, m := range members {
				if m.ref != nil {
					d, _, err := connectTo(t, m.addr).Get("/zookeeper/config")
					if err != nil {
						t.Fatal(err)
					}
					want = string(d)
				}
			}
			if !strings.HasPrefix(want, "server.1=127.0.0.1:") || !strings.HasSuffix(want, "\nversion=0") {
				t.Fatalf("ZooKeeper's /zookeeper/config is %q", want)
			}
			for _, m := range members {
				kind := "ZooKeeper"
				if m.zkd != nil {
					kind = "zkd"
				}
				checkConfigNode(t, fmt.Sprintf("%s member %d (%s)", kind, m.id, m.mode(t)), connectTo(t, m.addr), want)
			}
		})
	}
}
