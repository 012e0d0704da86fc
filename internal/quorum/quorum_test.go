package quorum

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// set makes a sid set.
func set(sids ...int64) map[int64]bool {
	m := make(map[int64]bool, len(sids))
	for _, s := range sids {
		m[s] = true
	}
	return m
}

func TestMajority(t *testing.T) {
	m := NewMajority(1, 2, 3, 4, 5)
	for _, tc := range []struct {
		sids []int64
		want bool
	}{
		{nil, false}, {[]int64{1, 2}, false}, {[]int64{1, 2, 3}, true},
		{[]int64{1, 2, 6, 7}, false}, // 6 and 7 are not voters
		{[]int64{1, 2, 3, 4, 5}, true},
	} {
		if got := m.IsQuorum(set(tc.sids...)); got != tc.want {
			t.Errorf("IsQuorum(%v) = %v, want %v", tc.sids, got, tc.want)
		}
	}
	if m.IsQuorum(map[int64]bool{1: true, 2: true, 3: false}) {
		t.Error("a sid marked false counted")
	}
	if m.Weight(9) != 1 || !m.IsVoter(5) || m.IsVoter(6) {
		t.Error("Weight or IsVoter wrong")
	}
}

// HierarchicalQuorumTest's shape: group.1=1:2:3, group.2=4:5, 4 and 5 weigh 0. Group 2
// does not count, so a quorum is a majority of group 1, whatever 4 and 5 do.
func TestHierarchicalZeroWeightGroup(t *testing.T) {
	h, err := NewHierarchical([]int64{1, 2, 3, 4, 5},
		map[int64][]int64{1: {1, 2, 3}, 2: {4, 5}},
		map[int64]int64{1: 1, 2: 1, 3: 1, 4: 0, 5: 0})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sids []int64
		want bool
	}{
		{[]int64{1, 2}, true}, {[]int64{2, 3}, true}, {[]int64{1, 4, 5}, false},
		{[]int64{4, 5}, false}, {[]int64{1}, false}, {[]int64{1, 2, 3, 4, 5}, true},
	} {
		if got := h.IsQuorum(set(tc.sids...)); got != tc.want {
			t.Errorf("IsQuorum(%v) = %v, want %v", tc.sids, got, tc.want)
		}
	}
	if !h.IsVoter(4) || h.Weight(4) != 0 || h.Weight(1) != 1 {
		t.Error("zero-weight members must be voters of weight 0")
	}
}

// FLEZeroWeightTest's shape: three groups of three, groups 2 and 3 weigh 0 (sid 0 exists).
func TestHierarchicalFLEZeroWeightShape(t *testing.T) {
	w := map[int64]int64{0: 1, 1: 1, 2: 1}
	for s := int64(3); s <= 8; s++ {
		w[s] = 0
	}
	h, err := NewHierarchical([]int64{0, 1, 2, 3, 4, 5, 6, 7, 8},
		map[int64][]int64{1: {0, 1, 2}, 2: {3, 4, 5}, 3: {6, 7, 8}}, w)
	if err != nil {
		t.Fatal(err)
	}
	if !h.IsQuorum(set(0, 1)) || h.IsQuorum(set(0, 3, 4, 5, 6, 7, 8)) {
		t.Error("only group 1 decides")
	}
}

// Two groups of weight: a majority of groups is both of them.
func TestHierarchicalTwoGroups(t *testing.T) {
	h, err := NewHierarchical([]int64{1, 2, 3, 4, 5},
		map[int64][]int64{1: {1, 2, 3}, 2: {4, 5}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Group 2 weighs 2, so it needs both 4 and 5 (2 > 2/2).
	if h.IsQuorum(set(1, 2, 3, 4)) || !h.IsQuorum(set(1, 2, 4, 5)) {
		t.Error("two groups: both need a majority of their weight")
	}
	// Three groups: losing a whole group keeps a quorum.
	h, err = NewHierarchical([]int64{1, 2, 3, 4, 5},
		map[int64][]int64{1: {1, 2}, 2: {3, 4}, 3: {5}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !h.IsQuorum(set(1, 2, 3, 4)) || !h.IsQuorum(set(1, 2, 5)) || h.IsQuorum(set(1, 3, 5)) {
		t.Error("three groups")
	}
}

func TestHierarchicalWeights(t *testing.T) {
	// Group 1: 1 weighs 3, 2 and 3 weigh 1 (total 5, needs 3): 1 alone is a majority of it.
	h, err := NewHierarchical([]int64{1, 2, 3, 4, 5, 6},
		map[int64][]int64{1: {1, 2, 3}, 2: {4}, 3: {5, 6}}, map[int64]int64{1: 3, 5: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sids []int64
		want bool
	}{
		{[]int64{1, 4}, true}, {[]int64{2, 3, 4}, false}, {[]int64{1, 5}, true},
		{[]int64{4, 5}, true}, {[]int64{4, 6}, false}, {[]int64{1, 2, 3, 6}, false},
	} {
		if got := h.IsQuorum(set(tc.sids...)); got != tc.want {
			t.Errorf("IsQuorum(%v) = %v, want %v", tc.sids, got, tc.want)
		}
	}
}

func TestHierarchicalInvalid(t *testing.T) {
	for name, tc := range map[string]struct {
		voters  []int64
		groups  map[int64][]int64
		weights map[int64]int64
	}{
		"voter in no group":    {[]int64{1, 2, 3}, map[int64][]int64{1: {1, 2}}, nil},
		"in two groups":        {[]int64{1, 2, 3}, map[int64][]int64{1: {1, 2}, 2: {2, 3}}, nil},
		"twice in one group":   {[]int64{1, 2, 3}, map[int64][]int64{1: {1, 1, 2, 3}}, nil},
		"non-voter in a group": {[]int64{1, 2, 3}, map[int64][]int64{1: {1, 2, 3, 4}}, nil},
		"negative weight":      {[]int64{1, 2, 3}, map[int64][]int64{1: {1, 2, 3}}, map[int64]int64{2: -1}},
		"everything weighs 0":  {[]int64{1, 2}, map[int64][]int64{1: {1}, 2: {2}}, map[int64]int64{1: 0, 2: 0}},
		"no groups at all":     {[]int64{1, 2, 3}, nil, map[int64]int64{1: 2}},
	} {
		if _, err := NewHierarchical(tc.voters, tc.groups, tc.weights); !errors.Is(err, ErrShape) {
			t.Errorf("%s: err = %v, want ErrShape", name, err)
		}
	}
}

// javaContainsQuorum is a line-by-line port of QuorumHierarchical.containsQuorum and
// computeGroupWeight (3.9.4), the reference the verifier is checked against.
func javaContainsQuorum(groups map[int64][]int64, weight map[int64]int64, s map[int64]bool) bool {
	serverGroup := map[int64]int64{}
	numGroups := 0
	for gid, members := range groups {
		numGroups++
		for _, sid := range members {
			serverGroup[sid] = gid
		}
	}
	groupWeight := map[int64]int64{}
	for sid, gid := range serverGroup {
		groupWeight[gid] += weight[sid]
	}
	for _, w := range groupWeight {
		if w == 0 {
			numGroups--
		}
	}
	if len(s) == 0 {
		return false
	}
	expansion := map[int64]int64{}
	for sid := range s {
		if gid, ok := serverGroup[sid]; ok {
			expansion[gid] += weight[sid]
		}
	}
	maj := 0
	for gid, w := range expansion {
		if w > groupWeight[gid]/2 {
			maj++
		}
	}
	return maj > numGroups/2
}

// Random shapes, every subset: the verifier agrees with ZooKeeper's code, and any two
// quorums share a member of nonzero weight (what makes Zab safe under this rule).
func TestHierarchicalMatchesZooKeeperAndIntersects(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	for shape := 0; shape < 300; shape++ {
		n := 1 + rng.IntN(8)
		voters := make([]int64, n)
		groups := map[int64][]int64{}
		weights := map[int64]int64{}
		ngroups := 1 + rng.IntN(n)
		for i := range voters {
			sid := int64(i + 1)
			voters[i] = sid
			gid := int64(1 + rng.IntN(ngroups))
			if i < ngroups { // every group gets a member
				gid = int64(i + 1)
			}
			groups[gid] = append(groups[gid], sid)
			weights[sid] = int64(rng.IntN(4)) // 0..3
		}
		h, err := NewHierarchical(voters, groups, weights)
		if err != nil {
			if errors.Is(err, ErrShape) && h == nil {
				continue // all groups weigh 0
			}
			t.Fatal(err)
		}
		var quorums []uint
		for mask := uint(0); mask < 1<<n; mask++ {
			s := map[int64]bool{}
			for i := 0; i < n; i++ {
				if mask&(1<<i) != 0 {
					s[int64(i+1)] = true
				}
			}
			got, want := h.IsQuorum(s), javaContainsQuorum(groups, weights, s)
			if got != want {
				t.Fatalf("groups %v weights %v set %v: IsQuorum %v, ZooKeeper %v", groups, weights, s, got, want)
			}
			if got {
				quorums = append(quorums, mask)
			}
		}
		for _, a := range quorums {
			for _, b := range quorums {
				common, weighty := a&b, false
				for i := 0; i < n; i++ {
					if common&(1<<i) != 0 && weights[int64(i+1)] > 0 {
						weighty = true
					}
				}
				if !weighty {
					t.Fatalf("groups %v weights %v: quorums %b and %b share no weighted member", groups, weights, a, b)
				}
			}
		}
	}
}
