package server_test

import (
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/server"
)

// startMultiAddrEnsemble starts n members electing over TCP whose server.N lines, as the
// others see them, list a dead address (127.0.0.1, a port nobody listens on) before the live
// one (127.0.0.2). Each member's own line lists only its live address, so nothing listens on
// the dead one. f adjusts every member's configuration.
func startMultiAddrEnsemble(t *testing.T, n int, f func(*server.Config)) []*tcpMember {
	ports := freePorts(t, 4*n)
	live := func(i int) config.Member {
		return config.Member{ID: int64(i + 1), Host: "127.0.0.2", QuorumPort: ports[4*i], ElectionPort: ports[4*i+1]}
	}
	return startTCPEnsembleFull(t, n, func(i int, c *server.Config) {
		c.Peers = nil
		for j := range n {
			p := live(j)
			if j != i {
				p = config.Member{ID: int64(j + 1), Host: "127.0.0.1", QuorumPort: ports[4*j+2], ElectionPort: ports[4*j+3],
					MoreAddrs: []config.MemberAddr{{Host: p.Host, QuorumPort: p.QuorumPort, ElectionPort: p.ElectionPort}}}
			}
			c.Peers = append(c.Peers, p)
		}
		if f != nil {
			f(c)
		}
	})
}

// TestMultiAddressEnsemble: with every member's first address dead, election runs over the
// second addresses, learners reach the leader through its second quorum address, and the
// ensemble replicates, also after the leader fails over.
func TestMultiAddressEnsemble(t *testing.T) {
	members := startMultiAddrEnsemble(t, 3, nil)
	waitTCPServing(t, members, 0, 1, 2)
	writeAndReadEverywhere(t, members, "multi", 0, 1, 2)

	l := leaderOf(members)
	members[l].stop()
	rest := []int{}
	for i := range members {
		if i != l {
			rest = append(rest, i)
		}
	}
	waitTCPServing(t, members, rest...)
	writeAndReadEverywhere(t, members, "failover", rest...)

	// /zookeeper/config shows ZooKeeper's form: both addresses, sorted by host.
	c := connectTo(t, members[rest[0]].srv.Addr())
	data, _, err := c.Get("/zookeeper/config")
	if err != nil {
		t.Fatal(err)
	}
	other := members[rest[0]].cfg.Peers[rest[1]]
	want := "server." + strconv.Itoa(rest[1]+1) + "=127.0.0.1:" + strconv.Itoa(other.QuorumPort) + ":" +
		strconv.Itoa(other.ElectionPort) + "|127.0.0.2:" + strconv.Itoa(other.MoreAddrs[0].QuorumPort) + ":" +
		strconv.Itoa(other.MoreAddrs[0].ElectionPort) + ":participant"
	if !strings.Contains(string(data), want+"\n") {
		t.Errorf("/zookeeper/config = %q, want a line %q", data, want)
	}
}

// TestQuorumListenOnAllIPs: the quorum and election ports listen on the wildcard address, so
// that another loopback address (127.0.0.3, not in any server.N line) reaches them, while the
// members still find each other at their configured addresses.
func TestQuorumListenOnAllIPs(t *testing.T) {
	members := startTCPEnsembleConfig(t, 3, func(c *server.Config) { c.QuorumListenOnAllIPs = true })
	waitTCPServing(t, members, 0, 1, 2)
	writeAndReadEverywhere(t, members, "allips", 0, 1, 2)
	l := leaderOf(members)
	self := members[l].cfg.Peers[l]
	for _, port := range []int{self.QuorumPort, self.ElectionPort} {
		nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.3", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d does not listen on every address: %v", port, err)
		}
		nc.Close()
	}
}

// TestQuorumListensOnConfiguredAddress is the control for TestQuorumListenOnAllIPs: without
// the key, another loopback address is refused.
func TestQuorumListensOnConfiguredAddress(t *testing.T) {
	members := startTCPEnsembleConfig(t, 3, nil)
	waitTCPServing(t, members, 0, 1, 2)
	self := members[0].cfg.Peers[0]
	if nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.3", strconv.Itoa(self.ElectionPort))); err == nil {
		nc.Close()
		t.Fatal("the election port answers on 127.0.0.3 without quorumListenOnAllIPs")
	}
}

// TestElectionPortBindRetry: an election port held by someone else fails Start after the
// configured number of attempts, naming the key.
func TestElectionPortBindRetry(t *testing.T) {
	ports := freePorts(t, 4)
	busy, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])))
	if err != nil {
		t.Skipf("cannot hold the port: %v", err)
	}
	defer busy.Close()
	srv, err := server.New(server.Config{
		ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(), TickTime: 200, InitLimit: 20, SyncLimit: 10,
		ServerID: 1, PreAllocSize: 1 << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ElectionPortBindRetry: 2,
		Peers: []config.Member{
			{ID: 1, Host: "127.0.0.1", QuorumPort: ports[0], ElectionPort: ports[1]},
			{ID: 2, Host: "127.0.0.1", QuorumPort: ports[2], ElectionPort: ports[3]},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	err = srv.Start()
	if err == nil {
		t.Fatal("Start succeeded with the election port taken")
	}
	if !strings.Contains(err.Error(), "after 2 attempts") || !strings.Contains(err.Error(), "electionPortBindRetry") {
		t.Errorf("error %q does not name the attempts and the key", err)
	}
}
