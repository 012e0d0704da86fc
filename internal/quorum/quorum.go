// Package quorum owns the rule that decides whether a set of servers is a quorum: ZooKeeper's
// QuorumVerifier, with its majority (QuorumMaj) and hierarchical (QuorumHierarchical: group.N
// and weight.N) shapes. Election, Zab's commits and the leader's checks all ask a Verifier,
// so an ensemble decides with one rule everywhere. The package is pure: no I/O, no clock.
package quorum

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Verifier decides whether a set of servers is a quorum.
type Verifier interface {
	// IsQuorum reports whether the voters marked true in sids form a quorum; other sids
	// are ignored (ZooKeeper's SyncedLearnerTracker adds only voting members).
	IsQuorum(sids map[int64]bool) bool
	// IsVoter reports whether sid is a participant (observers are not).
	IsVoter(sid int64) bool
	// Weight is sid's weight: FLE never adopts a vote for a server of weight 0.
	Weight(sid int64) int64
}

// Majority is QuorumMaj: more than half of the voters, each of weight 1.
type Majority struct {
	Voters map[int64]bool
}

// NewMajority returns a majority verifier over voters.
func NewMajority(voters ...int64) Majority {
	m := Majority{Voters: make(map[int64]bool, len(voters))}
	for _, v := range voters {
		m.Voters[v] = true
	}
	return m
}

// IsVoter implements Verifier.
func (m Majority) IsVoter(sid int64) bool { return m.Voters[sid] }

// Weight implements Verifier. QuorumMaj.getWeight answers 1 for any id.
func (m Majority) Weight(int64) int64 { return 1 }

// IsQuorum implements Verifier.
func (m Majority) IsQuorum(sids map[int64]bool) bool {
	n := 0
	for sid, ok := range sids {
		if ok && m.Voters[sid] {
			n++
		}
	}
	return n*2 > len(m.Voters)
}

// Hierarchical is QuorumHierarchical: the voters are split into groups, and a set is a
// quorum when it holds more than half of the weight of more than half of the groups. Groups
// whose total weight is 0 are not counted; a member of weight 0 is a voter (it takes part in
// elections and acks proposals) whose ack adds nothing.
type Hierarchical struct {
	group       map[int64]int64 // voter -> group id
	weight      map[int64]int64 // voter -> weight
	groupWeight map[int64]int64 // group id -> total weight
	numGroups   int             // groups of nonzero weight
}

// ErrShape matches (with errors.Is) every error NewHierarchical returns.
var ErrShape = errors.New("quorum: invalid hierarchical quorum")

// NewHierarchical builds a hierarchical verifier. voters are the participants; groups maps
// each group id to its members; weights gives members' weights (those left out weigh 1).
// Every voter must be in exactly one group and nothing else may be; weights must not be
// negative and at least one group must weigh something, or no set would ever be a quorum.
// Weights of sids that are not voters (ZooKeeper accepts weight.N for an observer) are
// ignored.
func NewHierarchical(voters []int64, groups map[int64][]int64, weights map[int64]int64) (*Hierarchical, error) {
	h := &Hierarchical{
		group:       make(map[int64]int64, len(voters)),
		weight:      make(map[int64]int64, len(voters)),
		groupWeight: make(map[int64]int64, len(groups)),
	}
	isVoter := make(map[int64]bool, len(voters))
	for _, v := range voters {
		isVoter[v] = true
	}
	var errs []error
	for _, gid := range slices.Sorted(maps.Keys(groups)) {
		for _, sid := range groups[gid] {
			if g, dup := h.group[sid]; dup {
				errs = append(errs, fmt.Errorf("%w: server %d is in multiple groups (group.%d and group.%d)", ErrShape, sid, g, gid))
				continue
			}
			if !isVoter[sid] {
				errs = append(errs, fmt.Errorf("%w: group.%d lists server %d, which is not a participant", ErrShape, gid, sid))
				continue
			}
			h.group[sid] = gid
		}
	}
	for _, sid := range slices.Sorted(maps.Keys(weights)) {
		if w := weights[sid]; w < 0 {
			errs = append(errs, fmt.Errorf("%w: weight.%d is %d, must not be negative", ErrShape, sid, w))
		}
	}
	for _, v := range slices.Sorted(maps.Keys(isVoter)) {
		gid, ok := h.group[v]
		if !ok {
			errs = append(errs, fmt.Errorf("%w: server %d is not in a group", ErrShape, v))
			continue
		}
		w, ok := weights[v]
		if !ok {
			w = 1
		}
		h.weight[v] = w
		h.groupWeight[gid] += w
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// Every group was given members, so each has an entry; empty ones were never valid
	// (group.N= with no ids fails to parse).
	for _, gid := range slices.Sorted(maps.Keys(groups)) {
		if h.groupWeight[gid] > 0 {
			h.numGroups++
		}
	}
	if h.numGroups == 0 {
		return nil, fmt.Errorf("%w: every group weighs 0, so no set of servers is a quorum", ErrShape)
	}
	return h, nil
}

// IsVoter implements Verifier.
func (h *Hierarchical) IsVoter(sid int64) bool {
	_, ok := h.group[sid]
	return ok
}

// Weight implements Verifier; 0 for a sid that is not a voter.
func (h *Hierarchical) Weight(sid int64) int64 { return h.weight[sid] }

// IsQuorum implements Verifier (QuorumHierarchical.containsQuorum).
func (h *Hierarchical) IsQuorum(sids map[int64]bool) bool {
	got := make(map[int64]int64, len(h.groupWeight))
	for sid, ok := range sids {
		if gid, voter := h.group[sid]; ok && voter {
			got[gid] += h.weight[sid]
		}
	}
	majorities := 0
	for gid, w := range got {
		// Integer halving as ZooKeeper does: a group of weight 3 needs 2, of weight 4 needs 3.
		if w > h.groupWeight[gid]/2 {
			majorities++
		}
	}
	return majorities > h.numGroups/2
}
