package prep

import (
	"math/bits"
	"slices"
	"unicode/utf16"
)

// closeOrder puts the paths a closeSession deletes in the order ZooKeeper lists them in its
// CloseSessionTxn, because the order of the deletes is the order watchers see NodeDeleted
// events in. ZooKeeper 3.8 iterates a java.util.HashSet: a clone (HashMap.clone, sized for
// its count) of the session's ephemeral set (a HashSet filled in creation order since the
// default capacity 16), with the ephemerals of outstanding txns added after. A HashSet
// iterates by bucket (the spread String.hashCode masked to the capacity) and, within a
// bucket, in insertion order, which resizes keep.
//
// kept are the applied ephemerals that stay, with their creation zxids, treeSize is the
// applied set's size (the clone's size), added are the paths outstanding txns add, oldest
// first. Not modelled: tree bins (8+ paths in one bucket of a 64+ table) and the order a
// restarted server rebuilds its sets in (snapshot order, not creation order).
func closeOrder(kept []ephemeral, treeSize int, added []string) []string {
	origCap := 16
	for treeSize > origCap*3/4 {
		origCap *= 2
	}
	// The applied set's iteration order, which the clone's buckets inherit.
	slices.SortStableFunc(kept, func(a, b ephemeral) int {
		if c := int(bucket(a.path, origCap)) - int(bucket(b.path, origCap)); c != 0 {
			return c
		}
		switch {
		case a.czxid < b.czxid:
			return -1
		case a.czxid > b.czxid:
			return 1
		}
		return 0
	})
	capacity := 0 // no table yet
	if treeSize > 0 {
		// JDK 17's HashMap.putMapEntries: tableSizeFor((int)(size/0.75f + 1.0f)).
		capacity = tableSizeFor(int(float32(treeSize)/0.75 + 1))
	}
	out := make([]string, 0, len(kept)+len(added))
	for _, e := range kept {
		out = append(out, e.path)
	}
	for _, p := range added {
		if capacity == 0 {
			capacity = 16
		}
		out = append(out, p)
		if len(out) > int(float32(capacity)*0.75) {
			capacity *= 2
		}
	}
	slices.SortStableFunc(out, func(a, b string) int {
		return int(bucket(a, capacity)) - int(bucket(b, capacity))
	})
	return out
}

type ephemeral struct {
	path  string
	czxid int64
}

// bucket is java.util.HashMap's bucket of a String key in a table of capacity entries.
func bucket(s string, capacity int) uint32 {
	h := uint32(javaHash(s))
	return (h ^ h>>16) & uint32(capacity-1)
}

// javaHash is java.lang.String.hashCode: over UTF-16 code units. ZooKeeper decodes paths
// from UTF-8, replacing a malformed byte with U+FFFD as Go's range loop does.
func javaHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			h = 31*h + r1
			h = 31*h + r2
			continue
		}
		h = 31*h + r
	}
	return h
}

// tableSizeFor is java.util.HashMap.tableSizeFor: the least power of two >= c (at least 1).
func tableSizeFor(c int) int {
	if c <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(c-1))
}
