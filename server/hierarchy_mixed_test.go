package server_test

import (
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/server"
)

// TestMixedEnsembleHierarchicalQuorum: zkd members 1 and 3 and ZooKeeper member 2 share the
// lines group.1=1:2:3 and weight.3=0, so only 1 and 2 count. All three print the same
// /zookeeper/config, and when ZooKeeper 2 goes, zkd 1 and 3 (two servers of three, a
// majority by count) elect nobody.
func TestMixedEnsembleHierarchicalQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	h := config.Hierarchy{Groups: map[int64][]int64{1: {1, 2, 3}}, Weights: map[int64]int64{3: 0}}
	members := startMixedWith(t, map[int64]bool{1: true, 3: true}, []int64{1, 2, 3},
		func(c *server.Config) { c.Hierarchy = h }, []string{"group.1=1:2:3", "weight.3=0"})
	if m := members[1].mode(t); m != "leader" {
		t.Fatalf("ZooKeeper (sid 2) is %q", m)
	}
	checkMixed(t, members)

	var texts []string
	for _, m := range members {
		c := connectTo(t, m.addr)
		if _, err := c.Sync("/zookeeper/config"); err != nil {
			t.Fatal(err)
		}
		data, _, err := c.Get("/zookeeper/config")
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(data))
		c.Close()
	}
	if texts[0] != texts[1] || texts[2] != texts[1] {
		t.Errorf("/zookeeper/config differs:\nzkd 1:\n%s\nZooKeeper 2:\n%s\nzkd 3:\n%s", texts[0], texts[1], texts[2])
	}

	// Stop ZooKeeper 2: zkd 1 and 3 are two servers of three, but 3 weighs nothing.
	members[1].ref.Kill()
	waitFor(t, "zkd 1 to stop serving without ZooKeeper 2", func() bool {
		m := members[0].mode(t)
		return m != "leader" && m != "follower"
	})
	// Two election rounds take well under this; zkd 1 must stay without a leader.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if m := members[0].mode(t); m == "leader" || m == "follower" {
			t.Fatalf("zkd 1 became %s with only itself and a server of weight 0", m)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
