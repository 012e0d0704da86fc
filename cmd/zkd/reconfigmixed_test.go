package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd-io/zkd/internal/testing/refzk"
)

// startMixedRC starts members 1-3 of a reconfigurable ensemble, the java ones Apache
// ZooKeeper, and waits until they serve with lead leading (0: any). All three start at once
// when anyone may lead. Otherwise lead starts with one other member first, so that the two
// elect lead (the higher sid of two with equal zxids), then the third: started together, two
// JVMs up before a zkd's next notification elect one of them (seen with lead 3).
func startMixedRC(t *testing.T, java map[int]bool, lead int) *rcEnsemble {
	refzk.Require(t)
	e := newRCEnsemble(t, 5, java)
	e.plain = true
	for id := 1; id <= 3; id++ {
		e.configure(id, []int{1, 2, 3})
	}
	if lead == 0 {
		for id := 1; id <= 3; id++ {
			e.start(id)
		}
	} else {
		var others []int
		for id := 1; id <= 3; id++ {
			if id != lead {
				others = append(others, id)
			}
		}
		if others[0] > lead {
			t.Fatalf("server %d cannot win against %d", lead, others[0])
		}
		e.start(lead)
		e.start(others[0])
		e.waitFor(fmt.Sprintf("server %d to lead", lead), func() bool { return e.leader() == lead })
		e.start(others[1])
	}
	e.waitFor("three members serving", func() bool {
		n := 0
		for id := 1; id <= 3; id++ {
			if m := e.nodes[id-1].mode(); m == "leader" || m == "follower" {
				n++
			}
		}
		return n == 3
	})
	if l := e.leader(); lead != 0 && l != lead {
		t.Fatalf("server %d leads, want %d", l, lead)
	}
	return e
}

// restartAs stops node id and starts the other kind of server on its data directory and
// the zoo.cfg (and dynamic file) its predecessor rewrote: ZooKeeper reads what zkd wrote
// and zkd what ZooKeeper wrote.
func (e *rcEnsemble) restartAs(id int) {
	e.t.Helper()
	n := e.nodes[id-1]
	cfgText, err := os.ReadFile(n.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	began := time.Now()
	e.stop(id)
	e.t.Logf("server %d stopped in %v", id, time.Since(began).Round(time.Millisecond))
	if n.java {
		// zkd runs the ZooKeeper's zoo.cfg as it is, on the same client port.
		n.java = false
		n.p = spawn(e.t, n.addr(), []string{"--config", n.cfg, "--log-level", "info"})
		return
	}
	// ZooKeeper on zkd's data directory with zkd's zoo.cfg settings (refzk chooses the client
	// port and writes dataDir).
	var lines []string
	for _, l := range strings.Split(string(cfgText), "\n") {
		k, _, _ := strings.Cut(l, "=")
		switch strings.TrimSpace(k) {
		case "", "dataDir", "clientPort", "clientPortAddress", "tickTime":
			continue
		}
		lines = append(lines, l)
	}
	n.java, n.refCfg = true, lines
	e.start(id)
}

// TestMixedReconfigZkdLeads: zkd leads ZooKeeper followers; a ZooKeeper and a zkd join by
// reconfig (3 -> 5) and leave, a ZooKeeper follower becomes an observer and back, the zkd leader is removed
// (a ZooKeeper takes over) and added back, under a client load. Then a ZooKeeper member's
// files are run by zkd, which comes back with the same configuration.
func TestMixedReconfigZkdLeads(t *testing.T) {
	e := startMixedRC(t, map[int]bool{1: true, 2: true, 4: true}, 3)
	cur, v := e.scenario([]int{4, 5}, 2)
	e.restartAs(1)
	began := time.Now()
	if got := e.waitConfig(cur.ids(), cur.lines()); got != v {
		t.Fatalf("after zkd took over ZooKeeper 1's files: version %x, want %x", got, v)
	}
	e.waitFor("zkd on ZooKeeper 1's files to follow", func() bool { return e.nodes[0].mode() == "follower" })
	t.Logf("zkd on ZooKeeper 1's files follows after %v", time.Since(began).Round(time.Millisecond))
}

// TestMixedReconfigZooKeeperLeads: ZooKeeper leads zkd followers; a zkd and a ZooKeeper
// join by reconfig (3 -> 5) and leave, a zkd follower becomes an observer and back, the ZooKeeper leader is removed
// (a zkd takes over) and added back, under a client load. Then a zkd member's files are
// run by ZooKeeper, which comes back with the same configuration.
func TestMixedReconfigZooKeeperLeads(t *testing.T) {
	e := startMixedRC(t, map[int]bool{3: true, 5: true}, 3)
	cur, v := e.scenario([]int{4, 5}, 2)
	e.restartAs(1)
	if got := e.waitConfig(cur.ids(), cur.lines()); got != v {
		t.Fatalf("after ZooKeeper took over zkd 1's files: version %x, want %x", got, v)
	}
	e.waitFor("ZooKeeper on zkd 1's files to follow", func() bool { return e.nodes[0].mode() == "follower" })
}

// joinOther: a server of the other kind joins an ensemble of one kind by reconfig, gets
// the configuration and its files from the leader, and its acknowledgements count: with a
// member of the old three stopped, the four-voter ensemble commits only with the joiner's.
func joinOther(t *testing.T, java map[int]bool) {
	e := startMixedRC(t, java, 0)
	e.configure(4, []int{1, 2, 3, 4})
	e.start(4)
	e.waitFor("server 4 to follow without a vote", func() bool { return e.nodes[3].mode() == "follower" })
	su := e.superConn(1, 2, 3)
	e.reconfig(su, []string{e.nodes[3].line("participant")}, nil)
	want := rcState{4: e.nodes[3].line("participant")}
	for id := 1; id <= 3; id++ {
		want[id] = e.nodes[id-1].plain()
	}
	v := e.waitConfig(want.ids(), want.lines())
	e.checkFiles(4, v, want.lines())

	lead := e.leader()
	down := 1
	if lead == 1 {
		down = 2
	}
	e.stop(down)
	c := connectAll(t, []string{e.nodes[3].addr()})
	e.waitFor(fmt.Sprintf("a write through server 4 with server %d down", down), func() bool {
		_, err := c.Create("/needs-4", nil, 0, zk.WorldACL(zk.PermAll))
		return err == nil || errors.Is(err, zk.ErrNodeExists)
	})
	c3 := connectAll(t, []string{e.nodes[lead-1].addr()})
	if _, err := c3.Sync("/"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c3.Exists("/needs-4"); err != nil || !ok {
		t.Fatalf("the leader does not have the write made through server 4: %v %v", ok, err)
	}
}

// TestReconfigZkdJoinsZooKeeper: a zkd joins an Apache ZooKeeper ensemble by reconfig.
func TestReconfigZkdJoinsZooKeeper(t *testing.T) {
	joinOther(t, map[int]bool{1: true, 2: true, 3: true})
}

// TestReconfigZooKeeperJoinsZkd: an Apache ZooKeeper joins a zkd ensemble by reconfig.
func TestReconfigZooKeeperJoinsZkd(t *testing.T) {
	joinOther(t, map[int]bool{4: true})
}
