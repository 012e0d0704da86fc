package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/server"
)

// TestMixedEnsembleWideZooKeeperLeads: zkd members with wide on follow an Apache ZooKeeper
// 3.8 leader, sending the wide advertisement after their LearnerInfo, which ZooKeeper's
// LearnerHandler must ignore: the ensemble replicates as without it.
func TestMixedEnsembleWideZooKeeperLeads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	members := startMixedWith(t, map[int64]bool{1: true, 2: true}, []int64{3, 1, 2}, func(c *server.Config) {
		c.Extensions = ext.Of(ext.Wide)
	}, nil)
	if m := members[2].mode(t); m != "leader" {
		t.Fatalf("ZooKeeper (sid 3) is %q", m)
	}
	checkMixed(t, members)
}

// TestMixedEnsembleWideRolloverKeepsStepDown: a zkd leader with wide, a zkd follower with
// wide and an Apache ZooKeeper follower (which never advertises wide, and is sent
// LEADERINFO as ZooKeeper sends it): when the counter runs out, the leader steps down and
// an election starts the next epoch, as in ZooKeeper; nothing is rolled over in place and
// every write is on every member, ZooKeeper's included.
func TestMixedEnsembleWideRolloverKeepsStepDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	members := startMixedWith(t, map[int64]bool{2: true, 3: true}, []int64{1, 3, 2}, func(c *server.Config) {
		c.Extensions = ext.Of(ext.Wide)
		server.SetZxidCounterStart(c, 0xfffffff0)
	}, nil)
	if m := members[2].mode(t); m != "leader" {
		t.Fatalf("zkd (sid 3) is %q", m)
	}
	var addrs []string
	for _, m := range members {
		addrs = append(addrs, m.addr)
	}
	c, _, err := zk.Connect(addrs, 10*time.Second, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 30
	var first int64 = -1
	var last int64
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("/r%d", i)
		waitFor(t, "create "+p, func() bool {
			_, err := c.Create(p, nil, 0, open)
			if err == zk.ErrNodeExists {
				ok, _, err := c.Exists(p)
				return err == nil && ok
			}
			return err == nil
		})
		_, st, err := c.Exists(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Czxid&0xffffffff == 0xffffffff {
			t.Fatalf("%s at the bump's counter 0x%x", p, st.Czxid)
		}
		if first < 0 {
			first = st.Czxid >> 32
		}
		last = st.Czxid >> 32
	}
	if last == first {
		t.Fatalf("30 writes from counter 0xfffffff0 stayed in epoch %d", first)
	}
	for _, m := range members {
		ci := connectTo(t, m.addr)
		if _, err := ci.Sync("/"); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if ok, _, err := ci.Exists(fmt.Sprintf("/r%d", i)); err != nil || !ok {
				t.Fatalf("member %d misses /r%d: %v %v", m.id, i, ok, err)
			}
		}
	}
}
