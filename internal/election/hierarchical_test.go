package election

import (
	"testing"

	"github.com/zkd-io/zkd/internal/quorum"
)

// hierarchicalQuorumTestShape is ZooKeeper's HierarchicalQuorumTest: group.1=1:2:3,
// group.2=4:5, weight.4=weight.5=0.
func hierarchicalQuorumTestShape(t *testing.T) quorum.Verifier {
	t.Helper()
	qv, err := quorum.NewHierarchical([]int64{1, 2, 3, 4, 5},
		map[int64][]int64{1: {1, 2, 3}, 2: {4, 5}}, map[int64]int64{4: 0, 5: 0})
	if err != nil {
		t.Fatal(err)
	}
	return qv
}

func TestTotalOrderPredicateZeroWeight(t *testing.T) {
	e := New(Config{ID: 1, Voters: []int64{1, 2, 3, 4, 5}, QV: hierarchicalQuorumTestShape(t)})
	if e.totalOrderPredicate(4, 100, 100, 1, 0, 0) {
		t.Error("a vote for a server of weight 0 won")
	}
	if !e.totalOrderPredicate(3, 1, 1, 1, 0, 0) {
		t.Error("a better vote for a weighted server lost")
	}
}

// TestSimZeroWeightNeverLeads is FLEZeroWeightTest's point: servers of weight 0 with the
// best logs and highest sids are never elected; the weighted servers elect the best of
// themselves and the zero-weight ones follow it.
func TestSimZeroWeightNeverLeads(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		servers := []*simServer{{id: 1, zxid: 3}, {id: 2, zxid: 4}, {id: 3, zxid: 2}, {id: 4, zxid: 1 << 40, epoch: 256}, {id: 5, zxid: 1 << 41, epoch: 512}}
		s := newSim(t, seed, simOpts{maxDelay: 40, dup: 0.3},
			Config{Voters: []int64{1, 2, 3, 4, 5}, QV: hierarchicalQuorumTestShape(t)}, servers)
		s.run(60000, func() bool {
			for _, sv := range servers {
				if len(sv.decisions) == 0 {
					return false
				}
			}
			return true
		})
		for _, sv := range servers {
			want := Following
			if sv.id == 2 {
				want = Leading
			}
			if len(sv.decisions) != 1 || sv.decisions[0].Leader != 2 || sv.decisions[0].State != want {
				t.Fatalf("seed %d: server %d decided %+v, want %v of 2\n%s", seed, sv.id, sv.decisions, want, s.dump())
			}
		}
	}
}

// TestSimHierarchicalGroups: with groups {1,2} {3,4} {5}, servers 1, 2 and 5 (two whole
// groups) elect a leader; servers 1, 3 and 5 (three of five, but a majority of no
// two-member group) do not.
func TestSimHierarchicalGroups(t *testing.T) {
	qv, err := quorum.NewHierarchical([]int64{1, 2, 3, 4, 5},
		map[int64][]int64{1: {1, 2}, 2: {3, 4}, 3: {5}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := func(up map[int64]bool) []*simServer {
		var servers []*simServer
		for id := int64(1); id <= 5; id++ {
			sv := &simServer{id: id, zxid: id}
			if !up[id] {
				sv.startAt = -1
			}
			servers = append(servers, sv)
		}
		s := newSim(t, 9, simOpts{maxDelay: 30}, Config{Voters: []int64{1, 2, 3, 4, 5}, QV: qv, MaxNotificationIntervalMs: 5000}, servers)
		s.run(5*60*1000, func() bool {
			for _, sv := range servers {
				if up[sv.id] && len(sv.decisions) == 0 {
					return false
				}
			}
			return true
		})
		return servers
	}
	for _, sv := range run(map[int64]bool{1: true, 2: true, 5: true}) {
		if sv.startAt >= 0 && (len(sv.decisions) != 1 || sv.decisions[0].Leader != 5) {
			t.Errorf("groups 1 and 3 up: server %d decided %+v, want leader 5", sv.id, sv.decisions)
		}
	}
	for _, sv := range run(map[int64]bool{1: true, 3: true, 5: true}) {
		if len(sv.decisions) != 0 {
			t.Errorf("one member of each group up: server %d decided %+v", sv.id, sv.decisions)
		}
	}
}
