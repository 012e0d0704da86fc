package server_test

import (
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/server"
)

// TestEnsembleHierarchicalQuorum: five members in groups {1} {2} {3,4,5}. Two whole groups
// are a quorum even though they are two servers of five: with 3, 4 and 5 down, 1 and 2 elect
// a leader and commit writes, which majority counting would refuse. With one group left,
// nobody leads.
func TestEnsembleHierarchicalQuorum(t *testing.T) {
	h := config.Hierarchy{Groups: map[int64][]int64{1: {1}, 2: {2}, 3: {3, 4, 5}}}
	e := startEnsembleConfig(t, 5, func(c *server.Config) { c.Hierarchy = h })
	e.waitServing()

	c := connectTo(t, e.members[0].cfg.ListenAddr)
	data, _, err := c.Get("/zookeeper/config")
	if err != nil {
		t.Fatal(err)
	}
	const tail = "\ngroup.1=1\ngroup.2=2\ngroup.3=3:4:5\nweight.1=1\nweight.2=1\nweight.3=1\nweight.4=1\nweight.5=1\nversion=0"
	if !strings.HasSuffix(string(data), tail) || strings.Count(string(data), "server.") != 5 {
		t.Errorf("/zookeeper/config:\n%s\nwant the server lines, then%s", data, tail)
	}
	if _, err := c.Create("/before", nil, 0, open); err != nil {
		t.Fatal(err)
	}

	for i := 2; i < 5; i++ {
		e.stop(i)
	}
	waitFor(t, "members 1 and 2 to serve without group {3,4,5}", func() bool {
		m := e.modes()
		return (m[0] == "leader" && m[1] == "follower") || (m[0] == "follower" && m[1] == "leader")
	})
	if _, err := c.Create("/two-of-five", nil, 0, open); err != nil {
		t.Fatalf("write with two of three groups up: %v", err)
	}
	c2 := connectTo(t, e.members[1].cfg.ListenAddr)
	if _, err := c2.Sync("/"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c2.Exists("/two-of-five"); err != nil || !ok {
		t.Fatalf("member 2 lacks the write: %v %v", ok, err)
	}
	c.Close()
	c2.Close()

	e.stop(1)
	waitFor(t, "member 1 to stop serving with one group of three", func() bool {
		m := e.modes()[0]
		return m != "leader" && m != "follower"
	})
}
