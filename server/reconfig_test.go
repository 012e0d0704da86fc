package server_test

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/server"
)

const reconfigSuperPw = "r3config"

func reconfigEnsemble(t *testing.T, n int) *testEnsemble {
	return startEnsembleConfig(t, n, func(c *server.Config) {
		c.ReconfigEnabled = true
		c.StandaloneEnabled = true
		c.SuperDigest = auth.DigestID("super", reconfigSuperPw)
	})
}

// join starts one more server whose configuration is the first member's plus itself as a
// participant, as an operator starts a server before adding it by reconfig.
func (e *testEnsemble) join(id int64) (config.Member, *ensembleMember) {
	ports := freePorts(e.t, 2)
	p := config.Member{ID: id, Host: "127.0.0.1", QuorumPort: ports[0], ElectionPort: ports[1]}
	cfg := e.members[0].cfg
	cfg.ServerID = id
	cfg.DataDir = e.t.TempDir()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.Peers = append(slices.Clone(cfg.Peers), p)
	cfg.FS = nil
	m := &ensembleMember{cfg: cfg, io: newCoreIOFS(e.t, nil)}
	m.cfg.FS = m.io
	e.members = append(e.members, m)
	e.start(len(e.members) - 1)
	return p, m
}

func superConn(t *testing.T, addrs ...string) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect(addrs, 10*time.Second, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	waitFor(t, "a session", func() bool {
		for {
			select {
			case e := <-ev:
				if e.State == zk.StateHasSession {
					return true
				}
			default:
				return false
			}
		}
	})
	if err := c.AddAuth("digest", []byte("super:"+reconfigSuperPw)); err != nil {
		t.Fatal(err)
	}
	return c
}

// configOf reads /zookeeper/config through a member's own session: its server lines and
// version.
func configOf(t *testing.T, m *ensembleMember) (lines []string, version int64, st *zk.Stat) {
	t.Helper()
	c, _ := connect(t, m.cfg.ListenAddr, 10*time.Second)
	defer c.Close()
	data, st, err := c.Get("/zookeeper/config")
	if err != nil {
		t.Fatalf("member %d: get /zookeeper/config: %v", m.cfg.ServerID, err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "version="); ok {
			if version, err = strconv.ParseInt(v, 16, 64); err != nil {
				t.Fatalf("member %d: bad version line %q", m.cfg.ServerID, l)
			}
			continue
		}
		lines = append(lines, l)
	}
	return lines, version, st
}

func leaderID(e *testEnsemble) int64 {
	for _, m := range e.members {
		if m.srv != nil && m.srv.Mode() == "leader" {
			return m.cfg.ServerID
		}
	}
	return -1
}

// TestReconfigGrowShrinkRemoveLeader: a 3-member ensemble with reconfigEnabled versions its
// zoo.cfg configuration with the first epoch (ZOOKEEPER-1783); a 4th server started with a
// configuration naming itself follows without a vote until a super user adds it; it then
// counts in quorums; removing the leader hands leadership to another voter, and the old
// leader follows without a vote; no acknowledged write is lost on the way.
func TestReconfigGrowShrinkRemoveLeader(t *testing.T) {
	e := reconfigEnsemble(t, 3)
	e.waitServing()
	_, v0, st := configOf(t, e.members[0])
	if v0>>32 == 0 || v0&0xffffffff != 0 || st.Mzxid != v0 {
		t.Fatalf("first configuration: version %x, mzxid %x; want the first epoch's zxid", v0, st.Mzxid)
	}

	p4, m4 := e.join(4)
	waitFor(t, "server 4 to follow without a vote", func() bool { return m4.srv.Mode() == "follower" })
	c := superConn(t, e.addrs()[:3]...)
	var written []string
	write := func(what string) {
		t.Helper()
		p, err := c.Create("/w-", []byte(what), zk.FlagSequence, open)
		if err != nil {
			t.Fatalf("write %s: %v", what, err)
		}
		written = append(written, p)
	}
	write("before")

	// Not a super user: NOAUTH, after the request itself was found valid.
	plain, _ := connect(t, e.addrs()[0], 10*time.Second)
	joining := fmt.Sprintf("server.4=127.0.0.1:%d:%d:participant;%s", p4.QuorumPort, p4.ElectionPort, m4.cfg.ListenAddr)
	if _, err := plain.IncrementalReconfig([]string{joining}, nil, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("reconfig without super: %v, want ErrNoAuth", err)
	}
	// A stale version: BADVERSION.
	if _, err := c.IncrementalReconfig([]string{joining}, nil, v0-1); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("reconfig from a stale version: %v, want ErrBadVersion", err)
	}

	st, err := c.IncrementalReconfig([]string{joining}, nil, v0)
	if err != nil {
		t.Fatalf("adding server 4: %v", err)
	}
	v1 := st.Mzxid
	for _, m := range e.members {
		waitFor(t, fmt.Sprintf("member %d to activate version %x", m.cfg.ServerID, v1), func() bool {
			lines, v, _ := configOf(t, m)
			return v == v1 && len(lines) == 4
		})
	}
	write("grown")

	// Four voters: a quorum is three. With one of the original followers stopped, writes
	// commit only if server 4's acks count.
	lead := leaderID(e)
	stopped := -1
	for i, m := range e.members[:3] {
		if m.cfg.ServerID != lead {
			stopped = i
			break
		}
	}
	e.stop(stopped)
	c2 := superConn(t, e.members[lead-1].cfg.ListenAddr)
	if _, err := c2.Create("/needs-4", nil, 0, open); err != nil {
		t.Fatalf("write with server 4 voting: %v", err)
	}
	e.start(stopped)
	e.waitServing()

	// Remove the leader: another voter takes over without an election of the whole
	// ensemble, and the old leader follows without a vote.
	lead = leaderID(e)
	var others []string
	for _, m := range e.members {
		if m.cfg.ServerID != lead {
			others = append(others, m.cfg.ListenAddr)
		}
	}
	c3 := superConn(t, others...)
	if _, err := c3.IncrementalReconfig(nil, []string{strconv.FormatInt(lead, 10)}, -1); err != nil {
		t.Fatalf("removing leader %d: %v", lead, err)
	}
	waitFor(t, "a new leader", func() bool {
		l := leaderID(e)
		return l != -1 && l != lead
	})
	waitFor(t, "the old leader to follow", func() bool { return e.members[lead-1].srv.Mode() == "follower" })
	for _, m := range e.members {
		waitFor(t, fmt.Sprintf("member %d to drop server %d", m.cfg.ServerID, lead), func() bool {
			lines, _, _ := configOf(t, m)
			return len(lines) == 3 && !slices.ContainsFunc(lines, func(l string) bool {
				return strings.HasPrefix(l, fmt.Sprintf("server.%d=", lead))
			})
		})
	}
	var err3 error
	waitFor(t, "a write after the leader was removed", func() bool {
		_, err3 = c3.Create("/after-removal", nil, 0, open)
		return err3 == nil || errors.Is(err3, zk.ErrNodeExists)
	})
	for _, p := range written {
		if _, _, err := c3.Get(p); err != nil {
			t.Errorf("acknowledged write %s: %v", p, err)
		}
	}
}

// TestReconfigGrowFromOne: with standaloneEnabled=false a single server runs as a
// one-member ensemble that a reconfig grows, as ZooKeeper's documentation suggests for
// starting an ensemble from one server.
func TestReconfigGrowFromOne(t *testing.T) {
	e := startEnsembleConfig(t, 1, func(c *server.Config) {
		c.ReconfigEnabled = true
		c.StandaloneEnabled = false
		c.SuperDigest = auth.DigestID("super", reconfigSuperPw)
	})
	waitFor(t, "the lone server to lead", func() bool { return e.members[0].srv.Mode() == "leader" })
	c := superConn(t, e.addrs()[0])
	if _, err := c.Create("/one", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	p2, m2 := e.join(2)
	waitFor(t, "server 2 to follow without a vote", func() bool { return m2.srv.Mode() == "follower" })
	joining := fmt.Sprintf("server.2=127.0.0.1:%d:%d:participant;%s", p2.QuorumPort, p2.ElectionPort, m2.cfg.ListenAddr)
	if _, err := c.IncrementalReconfig([]string{joining}, nil, -1); err != nil {
		t.Fatalf("adding server 2: %v", err)
	}
	lines, _, _ := configOf(t, m2)
	if len(lines) != 2 {
		t.Fatalf("server 2's configuration after the reconfig: %q", lines)
	}
	// Two voters: the leader alone is no quorum any more, and steps down.
	e.stop(1)
	waitFor(t, "server 1 to give up leading without server 2", func() bool { return e.members[0].srv.Mode() != "leader" })
	e.start(1)
	e.waitServing()
	c2 := superConn(t, e.addrs()...)
	if _, err := c2.Create("/two", nil, 0, open); err != nil {
		t.Fatalf("write once server 2 is back: %v", err)
	}
}

// TestReconfigMovesClientPort: a reconfig that gives a member a new client address moves
// its client port there (ServerCnxnFactory.reconfigure); sessions already open stay.
func TestReconfigMovesClientPort(t *testing.T) {
	e := reconfigEnsemble(t, 3)
	e.waitServing()
	lead := leaderID(e)
	var m *ensembleMember
	for _, mm := range e.members {
		if mm.cfg.ServerID != lead {
			m = mm
			break
		}
	}
	old := m.cfg.ListenAddr
	kept, _ := connect(t, old, 10*time.Second)
	p := m.cfg.Peers[m.cfg.ServerID-1]
	newAddr := fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0])
	c := superConn(t, e.addrs()...)
	spec := fmt.Sprintf("server.%d=127.0.0.1:%d:%d:participant;%s", m.cfg.ServerID, p.QuorumPort, p.ElectionPort, newAddr)
	if _, err := c.IncrementalReconfig([]string{spec}, nil, -1); err != nil {
		t.Fatalf("reconfig: %v", err)
	}
	waitFor(t, "the member to serve on its new client address", func() bool { return m.srv.Addr() == newAddr })
	moved, _ := connect(t, newAddr, 10*time.Second)
	if _, err := moved.Create("/moved", nil, 0, open); err != nil {
		t.Fatalf("write through the new address: %v", err)
	}
	if _, _, err := kept.Get("/moved"); err != nil {
		t.Fatalf("the session opened before the move: %v", err)
	}
	if nc, err := net.DialTimeout("tcp", old, time.Second); err == nil {
		nc.Close()
		t.Fatalf("the old client address %s still accepts connections", old)
	}
}
