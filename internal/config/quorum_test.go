package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const ensembleHead = "tickTime=2000\ninitLimit=5\nsyncLimit=2\ndataDir=/tmp/x\nclientPort=2181\n"

// HierarchicalQuorumTest's shape with an observer that has a weight; the wanted text is what
// ZooKeeper 3.8's QuorumHierarchical.toString printed for these lines.
const hierarchyCfg = ensembleHead + `server.1=127.0.0.1:2888:3888;2181
server.2=127.0.0.1:2889:3889
server.3=127.0.0.1:2890:3890
server.4=127.0.0.1:2891:3891
server.5=127.0.0.1:2892:3892
server.6=127.0.0.1:2893:3893:observer
group.1=1:2:3
group.2=4:5
weight.4=0
weight.5=0
weight.6=3
`

func TestHierarchyParseAndText(t *testing.T) {
	c := mustParse(t, hierarchyCfg)
	want := Hierarchy{
		Groups:  map[int64][]int64{1: {1, 2, 3}, 2: {4, 5}},
		Weights: map[int64]int64{4: 0, 5: 0, 6: 3},
	}
	if !reflect.DeepEqual(c.Hierarchy, want) {
		t.Fatalf("Hierarchy = %+v, want %+v", c.Hierarchy, want)
	}
	const zk = "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n" +
		"server.2=127.0.0.1:2889:3889:participant\n" +
		"server.3=127.0.0.1:2890:3890:participant\n" +
		"server.4=127.0.0.1:2891:3891:participant\n" +
		"server.5=127.0.0.1:2892:3892:participant\n" +
		"server.6=127.0.0.1:2893:3893:observer\n" +
		"group.1=1:2:3\ngroup.2=4:5\n" +
		"weight.1=1\nweight.2=1\nweight.3=1\nweight.4=0\nweight.5=0\nweight.6=3\nversion=0"
	if got := HierarchicalText(c.Servers, c.Hierarchy, 0); got != zk {
		t.Errorf("HierarchicalText:\n%s\nZooKeeper:\n%s", got, zk)
	}
	qv, err := c.Hierarchy.Verifier(c.Servers)
	if err != nil {
		t.Fatal(err)
	}
	if !qv.IsQuorum(map[int64]bool{1: true, 2: true}) || qv.IsQuorum(map[int64]bool{1: true, 4: true, 5: true}) || qv.IsVoter(6) {
		t.Error("the verifier does not follow the groups and weights")
	}
	if back := mustParse(t, c.String()); !reflect.DeepEqual(back, c) {
		t.Errorf("String does not round-trip:\n%s", c.String())
	}
	// Without group or weight lines: majority, and QuorumText's text.
	m := mustParse(t, ensembleHead+"server.1=h:1:2\nserver.2=h:1:2\nserver.3=h:1:2\n")
	if m.Hierarchy.Hierarchical() || HierarchicalText(m.Servers, m.Hierarchy, 0) != QuorumText(m.Servers, 0) {
		t.Error("a majority ensemble is not printed as QuorumMaj")
	}
}

// Ids that share a Java HashMap bucket: a group's ids come as written, and the groups in
// the order their first member comes (ZooKeeper printed group.20=33:1:17 then group.4=2:18).
func TestHierarchicalTextGroupOrder(t *testing.T) {
	c := mustParse(t, ensembleHead+"server.17=h:1:2\nserver.1=h:1:2\nserver.2=h:1:2\nserver.33=h:1:2\nserver.18=h:1:2\n"+
		"group.20=33:1:17\ngroup.4=2:18\nweight.17=2\n")
	got := HierarchicalText(c.Servers, c.Hierarchy, 0)
	if !strings.Contains(got, "\ngroup.20=33:1:17\ngroup.4=2:18\nweight.17=2\n") {
		t.Errorf("HierarchicalText:\n%s", got)
	}
}

func TestHierarchyInvalid(t *testing.T) {
	servers := "server.1=h:1:2\nserver.2=h:1:2\nserver.3=h:1:2\nserver.4=h:1:2:observer\n"
	for _, tc := range []struct {
		lines, key string
	}{
		{"group.1=1:2\n", "server.3"},                                      // ZooKeeper: "Server 3is not in a group"
		{"weight.1=2\n", "server.1"},                                       // weight alone makes it hierarchical
		{"group.1=1:2\ngroup.2=2:3\n", "group.2"},                          // "Server 2is in multiple groups"
		{"group.1=1:2:3:4\n", "group.1"},                                   // an observer
		{"group.1=1:2:3:9\n", "group.1"},                                   // no server.9
		{"group.1=1:2:3\nweight.2=-1\n", "weight.2"},                       // negative
		{"group.1=1:2:x\n", "group.1"},                                     // not a number
		{"group.1=1:2:3\nweight.3=1.5\n", "weight.3"},                      // not a number
		{"group.1=1:2:3\ngroupX=1\n", "groupX"},                            // ZooKeeper fails on it too
		{"group.1=1:2:3\nweight.1=0\nweight.2=0\nweight.3=0\n", "group.N"}, // nothing weighs
	} {
		_, err := Parse(strings.NewReader(ensembleHead + servers + tc.lines))
		var ke *KeyError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &ke) || ke.Key != tc.key {
			t.Errorf("%q: err = %v, want one naming %s", tc.lines, err, tc.key)
		}
	}
	// Standalone: ZooKeeper has no members to check the lines against, and neither does zkd.
	if _, err := Parse(strings.NewReader(ensembleHead + "group.1=1:2\n")); err != nil {
		t.Errorf("standalone with a group line: %v", err)
	}
}
