package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/zkd-io/zkd/internal/quorum"
)

// Hierarchy is a hierarchical quorum's shape: zoo.cfg's group.N=sid:sid:... and weight.N=W
// lines. ZooKeeper switches from majority quorums to QuorumHierarchical when any key starts
// with "group" or "weight"; so does zkd.
type Hierarchy struct {
	// Groups maps a group id to its members, in the order written.
	Groups map[int64][]int64
	// Weights maps a server id to its weight, as written; participants not listed weigh 1.
	Weights map[int64]int64
}

// Hierarchical reports whether the configuration asks for a hierarchical quorum.
func (h Hierarchy) Hierarchical() bool { return len(h.Groups) > 0 || len(h.Weights) > 0 }

// setHierarchyKey parses group.N and weight.N. It matches what ZooKeeper takes for them:
// every key starting with "group" or "weight".
func (h *Hierarchy) setHierarchyKey(key, v string) (bool, error) {
	var isGroup bool
	switch {
	case strings.HasPrefix(key, "group"):
		isGroup = true
	case strings.HasPrefix(key, "weight"):
	default:
		return false, nil
	}
	_, n, ok := strings.Cut(key, ".")
	id, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil {
		return true, errors.New("the key must be group.N or weight.N with a numeric N")
	}
	if !isGroup {
		w, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return true, numError(err)
		}
		if h.Weights == nil {
			h.Weights = make(map[int64]int64)
		}
		h.Weights[id] = w
		return true, nil
	}
	var sids []int64
	for part := range strings.SplitSeq(v, ":") {
		sid, err := strconv.ParseInt(part, 10, 64)
		if err != nil {
			return true, fmt.Errorf("server ids separated by ':': %w", numError(err))
		}
		sids = append(sids, sid)
	}
	if h.Groups == nil {
		h.Groups = make(map[int64][]int64)
	}
	h.Groups[id] = sids
	return true, nil
}

// validate checks ZooKeeper's rules for the shape against the server.N lines (every
// participant in exactly one group), plus what ZooKeeper does not check but cannot work:
// observers or unknown ids in a group (ZooKeeper fails with a NullPointerException for
// them), negative weights, and groups that all weigh 0 (no quorum could ever form).
func (h Hierarchy) validate(servers map[int]Member, bad func(key string, value any, format string, args ...any)) {
	if !h.Hierarchical() || len(servers) == 0 {
		return
	}
	problems := 0
	count := func(key string, value any, format string, args ...any) {
		problems++
		bad(key, value, format, args...)
	}
	in := map[int64]int64{}
	for _, gid := range slices.Sorted(maps.Keys(h.Groups)) {
		key := fmt.Sprintf("group.%d", gid)
		value := joinSids(h.Groups[gid])
		for _, sid := range h.Groups[gid] {
			s, known := servers[int(sid)]
			switch g, dup := in[sid]; {
			case dup:
				count(key, value, "server %d is in multiple groups (also group.%d)", sid, g)
				continue
			case !known || int64(int(sid)) != sid:
				count(key, value, "server %d has no server.%d line", sid, sid)
			case s.Observer:
				count(key, value, "server %d is an observer; only participants belong to groups", sid)
			}
			in[sid] = gid
		}
	}
	for _, sid := range slices.Sorted(maps.Keys(h.Weights)) {
		if w := h.Weights[sid]; w < 0 {
			count(fmt.Sprintf("weight.%d", sid), w, "must not be negative")
		}
	}
	var voters []int64
	for _, id := range slices.Sorted(maps.Keys(servers)) {
		if servers[id].Observer {
			continue
		}
		voters = append(voters, int64(id))
		if _, ok := in[int64(id)]; !ok {
			count(fmt.Sprintf("server.%d", id), servers[id], "server %d is not in a group (group.N), which is required once group.N or weight.N is set", id)
		}
	}
	if problems > 0 {
		return
	}
	// What is left: every group weighs 0.
	if _, err := quorum.NewHierarchical(voters, h.Groups, h.Weights); err != nil {
		bad("group.N", "", "%v", err)
	}
}

func joinSids(sids []int64) string {
	parts := make([]string, len(sids))
	for i, s := range sids {
		parts[i] = strconv.FormatInt(s, 10)
	}
	return strings.Join(parts, ":")
}

// render writes the lines back for Config.String.
func (h Hierarchy) render(kv func(k string, v any)) {
	for _, gid := range slices.Sorted(maps.Keys(h.Groups)) {
		kv(fmt.Sprintf("group.%d", gid), joinSids(h.Groups[gid]))
	}
	for _, sid := range slices.Sorted(maps.Keys(h.Weights)) {
		kv(fmt.Sprintf("weight.%d", sid), h.Weights[sid])
	}
}

// Verifier is the quorum rule of an ensemble with these server.N lines: majority, or
// hierarchical when group.N or weight.N is set.
func (h Hierarchy) Verifier(servers map[int]Member) (quorum.Verifier, error) {
	var voters []int64
	for id, s := range servers {
		if !s.Observer {
			voters = append(voters, int64(id))
		}
	}
	if !h.Hierarchical() {
		return quorum.NewMajority(voters...), nil
	}
	qv, err := quorum.NewHierarchical(voters, h.Groups, h.Weights)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return qv, nil
}

// HierarchicalText is QuorumHierarchical.toString, what ZooKeeper puts in /zookeeper/config
// for a hierarchical ensemble: the server.N lines as QuorumText prints them, then one
// group.N=sid:sid line per group, one weight.N=W line per weight (those written, observers'
// included, and 1 for each participant without one), then version=<hex>.
//
// Groups, the ids inside a group and weights come in the iteration order of the Java
// HashMaps that hold them: by bucket, and within a bucket in insertion order. ZooKeeper
// inserts while iterating java.util.Properties, whose order zkd does not reproduce: it takes
// group.N keys by ascending N (the ids of a group as written), and weight.N keys by
// ascending N followed by the participants' default weights in server.N order. Only ids that
// share a bucket (for small ensembles: ids 16 or more apart) can come out differently.
func HierarchicalText(servers map[int]Member, h Hierarchy, version int64) string {
	if !h.Hierarchical() {
		return QuorumText(servers, version)
	}
	var b strings.Builder
	writeServerLines(&b, servers)

	// serverGroup: sid -> gid; the groups' strings are built by iterating it.
	serverGroup := map[int64]int64{}
	var inserted []int64
	for _, gid := range slices.Sorted(maps.Keys(h.Groups)) {
		for _, sid := range h.Groups[gid] {
			if _, dup := serverGroup[sid]; !dup {
				serverGroup[sid] = gid
				inserted = append(inserted, sid)
			}
		}
	}
	members := map[int64][]string{}
	var gids []int64
	for _, sid := range javaHashOrder(inserted) {
		gid := serverGroup[sid]
		if _, seen := members[gid]; !seen {
			gids = append(gids, gid)
		}
		members[gid] = append(members[gid], strconv.FormatInt(sid, 10))
	}
	for _, gid := range javaHashOrder(gids) {
		fmt.Fprintf(&b, "group.%d=%s\n", gid, strings.Join(members[gid], ":"))
	}

	weights := maps.Clone(h.Weights)
	if weights == nil {
		weights = map[int64]int64{}
	}
	inserted = slices.Sorted(maps.Keys(weights))
	for _, id := range serverOrder(servers) {
		if _, ok := weights[int64(id)]; !ok && !servers[id].Observer {
			weights[int64(id)] = 1
			inserted = append(inserted, int64(id))
		}
	}
	for _, sid := range javaHashOrder(inserted) {
		fmt.Fprintf(&b, "weight.%d=%d\n", sid, weights[sid])
	}
	b.WriteString("version=")
	b.WriteString(strconv.FormatUint(uint64(version), 16))
	return b.String()
}

// javaHashOrder is the iteration order of a default Java HashMap<Long, ...> after the given
// keys were put in this order (all distinct): by bucket, each bucket in insertion order
// (resizing keeps that order; buckets of 8 or more turn into trees, which is not modelled).
func javaHashOrder(inserted []int64) []int64 {
	capacity := javaHashMapCapacity(len(inserted))
	out := slices.Clone(inserted)
	slices.SortStableFunc(out, func(a, b int64) int {
		return javaLongBucket(a, capacity) - javaLongBucket(b, capacity)
	})
	return out
}
