package datatree

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Quotas, as ZooKeeper keeps them: a path P has a quota when the node
// /zookeeper/quota<P>/zookeeper_limits exists, and /zookeeper/quota<P>/zookeeper_stats
// counts P's subtree (P included): nodes and data bytes. The tree keeps the stats node's data
// up to date in memory, without txns, as DataTree.updateQuotaStat does; both nodes hold
// StatsTrack strings. Which paths have a quota is ZooKeeper's PathTrie: keys are paths
// rebuilt from their non-blank components, and a write belongs to the longest quota'd prefix.

const (
	limitNode = "zookeeper_limits"
	statNode  = "zookeeper_stats"
)

// trieKey is the path ZooKeeper's PathTrie stores for p: its components split on '/', blank
// ones (after Java's trim) dropped, joined again under "/".
func trieKey(p string) string {
	if !strings.Contains(p, "//") && !strings.HasSuffix(p, "/") && strings.HasPrefix(p, "/") && !hasBlankComponent(p) {
		return p
	}
	parts := trieComponents(p)
	return "/" + strings.Join(parts, "/")
}

func trieComponents(p string) []string {
	var parts []string
	for c := range strings.SplitSeq(p, "/") {
		if strings.TrimFunc(c, func(r rune) bool { return r <= ' ' }) != "" {
			parts = append(parts, c)
		}
	}
	return parts
}

// hasBlankComponent reports whether a component of p is all characters <= ' ' (what
// Java's String.trim removes).
func hasBlankComponent(p string) bool {
	blank, seen := true, false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '/':
			if seen && blank {
				return true
			}
			blank, seen = true, false
		default:
			seen = true
			if c > ' ' {
				blank = false
			}
		}
	}
	return seen && blank
}

// quotaPrefix is DataTree.getMaxPrefixWithQuota: the longest quota'd prefix of path, or "".
func (t *Tree) quotaPrefix(path string) string {
	if len(t.quotas) == 0 {
		return ""
	}
	if trieKey(path) == path {
		for p := path; p != "" && p != "/"; p = Parent(p) {
			if _, ok := t.quotas[p]; ok {
				return p
			}
		}
		return ""
	}
	parts := trieComponents(path)
	for i := len(parts); i > 0; i-- {
		p := "/" + strings.Join(parts[:i], "/")
		if _, ok := t.quotas[p]; ok {
			return p
		}
	}
	return ""
}

// QuotaPrefix returns the quota'd path whose limits govern a write at path, "" if none.
func (t *Tree) QuotaPrefix(path string) string { return t.quotaPrefix(path) }

func (t *Tree) addQuota(real string) {
	if t.quotas == nil {
		t.quotas = map[string]struct{}{}
	}
	t.quotas[trieKey(real)] = struct{}{}
}

func (t *Tree) quotaCreated(parentPath, path string, data []byte) {
	// ZooKeeper tests the parent with startsWith: /zookeeper/quotax/zookeeper_limits
	// puts a quota on "x", which the trie reads as /x.
	if strings.HasPrefix(parentPath, QuotaPath) {
		real := parentPath[len(QuotaPath):]
		switch Base(path) {
		case limitNode:
			// ZooKeeper's trie refuses an empty path (the apply fails); zkd ignores it.
			if trieKey(real) != "/" {
				t.addQuota(real)
			}
		case statNode:
			t.updateQuotaForPath(real)
		}
	}
	t.quotaChanged(path, int64(len(data)), 1)
}

func (t *Tree) quotaDeleted(parentPath, path string, data []byte) {
	// DataTree.deleteNode tests the parent against /zookeeper, not /zookeeper/quota, and
	// trims the length of /zookeeper/quota from it all the same.
	if Base(path) == limitNode && strings.HasPrefix(parentPath, ZookeeperPath) && len(parentPath) >= len(QuotaPath) {
		if k := trieKey(parentPath[len(QuotaPath):]); k != "/" {
			delete(t.quotas, k)
		}
	}
	t.quotaChanged(path, -int64(len(data)), -1)
}

func (t *Tree) quotaChanged(path string, bytes int64, count int64) {
	p := t.quotaPrefix(path)
	if p == "" {
		return
	}
	sp := QuotaPath + p + "/" + statNode
	sn := t.find(sp)
	if sn == noIndex {
		return
	}
	st := ParseStatsTrack(t.dataOf(sn))
	st.Set(StatCount, st.Get(StatCount)+count)
	st.Set(StatBytes, st.Get(StatBytes)+bytes)
	t.setStats(sn, st.Bytes())
}

// setStats replaces a stats node's data without a txn. ZooKeeper's nodeDataSize (mntr's
// approximate_data_size) does not follow these changes: it counts the data the node was
// created or last set with, and a delete or setData later subtracts the current length.
// zkd keeps the same figure.
func (t *Tree) setStats(i uint32, data []byte) {
	t.setDataOf(i, data)
}

// Keys of ZooKeeper's StatsTrack.
const (
	StatCount          = "count"
	StatBytes          = "bytes"
	StatCountHardLimit = "countHardLimit"
	StatByteHardLimit  = "byteHardLimit"
)

// StatsTrack is ZooKeeper's StatsTrack: "key=long" pairs separated by ',' or ';'. Limits
// nodes hold count and bytes (soft limits) and countHardLimit and byteHardLimit; stats nodes
// hold count and bytes. A missing key reads as -1.
type StatsTrack map[string]int64

// ParseStatsTrack reads s as StatsTrack(String) does: a pair's value is what follows the
// first '=' up to the next '=' (so "bytes=5=" is 5), an empty value is -1. A pair Java
// could not parse (it throws) is skipped.
func ParseStatsTrack(b []byte) StatsTrack {
	st := StatsTrack{}
	for _, kv := range strings.FieldsFunc(string(b), func(r rune) bool { return r == ',' || r == ';' }) {
		parts := strings.Split(kv, "=")
		for len(parts) > 0 && parts[len(parts)-1] == "" { // Java's split drops trailing empties
			parts = parts[:len(parts)-1]
		}
		if len(parts) < 2 {
			continue
		}
		v := int64(-1)
		if parts[1] != "" {
			n, err := strconv.ParseInt(parts[1], 10, 64)
			if err != nil {
				continue
			}
			v = n
		}
		st[parts[0]] = v
	}
	return st
}

// Get returns key's value, -1 if absent.
func (s StatsTrack) Get(key string) int64 {
	if v, ok := s[key]; ok {
		return v
	}
	return -1
}

// Set sets key's value.
func (s StatsTrack) Set(key string, v int64) { s[key] = v }

// String is StatsTrack.toString: count and bytes first, separated by ',' (what 3.4's parser
// reads), then, behind an extra '=' that old parsers ignore, the other keys sorted, each
// after a ';'.
func (s StatsTrack) String() string {
	var b strings.Builder
	b.WriteString("count=")
	b.WriteString(strconv.FormatInt(s.Get(StatCount), 10))
	b.WriteString(",bytes=")
	b.WriteString(strconv.FormatInt(s.Get(StatBytes), 10))
	var keys []string
	for k := range s {
		if k != StatCount && k != StatBytes {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		b.WriteByte('=')
		slices.Sort(keys)
		for _, k := range keys {
			b.WriteByte(';')
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(strconv.FormatInt(s[k], 10))
		}
	}
	return b.String()
}

// Bytes is String as bytes.
func (s StatsTrack) Bytes() []byte { return []byte(s.String()) }

// updateQuotaForPath recounts real's subtree into its stats node (a fresh StatsTrack: only
// count and bytes). ZooKeeper reads "" as the root, so a stats node directly under
// /zookeeper/quota counts the whole tree.
func (t *Tree) updateQuotaForPath(real string) {
	var count, bytes int64
	var walk func(i uint32)
	walk = func(i uint32) {
		count++
		bytes += int64(len(t.dataOf(i)))
		for _, c := range t.kidIDs(i) {
			walk(c)
		}
	}
	if i := t.find(cmp.Or(real, "/")); i != noIndex {
		walk(i)
	}
	sp := QuotaPath + real + "/" + statNode
	if sn := t.find(sp); sn != noIndex {
		t.setStats(sn, StatsTrack{StatCount: count, StatBytes: bytes}.Bytes())
	}
}

// setupQuota is DataTree.traverseNode: every leaf under p named zookeeper_limits gives a
// quota to the path between /zookeeper/quota and its first "/zookeeper_limits", whose
// stats are recounted.
func (t *Tree) setupQuota(p string) {
	i := t.find(p)
	if i == noIndex {
		return
	}
	if t.rd(i).kids == 0 {
		if strings.HasSuffix(p, "/"+limitNode) {
			real := p[len(QuotaPath):strings.Index(p, "/"+limitNode)]
			if trieKey(real) != "/" {
				t.updateQuotaForPath(real)
				t.addQuota(real)
			}
		}
		return
	}
	for _, c := range t.childNames(i, 0, len(t.kidIDs(i))) {
		t.setupQuota(Join(p, c))
	}
}

// QuotaExceeded is one limit a write would pass, as ZooKeeperServer.checkQuota finds it.
type QuotaExceeded struct {
	Prefix    string // the quota'd path
	Namespace string // the written path's first component (the per-namespace metrics' key)
	Bytes     bool   // the byte limit; otherwise the count limit
	Value     int64  // the count or bytes after the write
	Limit     int64
	Hard      bool
}

// String is ZooKeeper's log message for it.
func (e QuotaExceeded) String() string {
	kind, what := "Count", "count"
	if e.Bytes {
		kind, what = "Byte", "bytes"
	}
	level := "soft"
	if e.Hard {
		level = "hard"
	}
	return "Quota exceeded: " + e.Prefix + " [current " + what + "=" + strconv.FormatInt(e.Value, 10) + ", " +
		level + kind + "Limit=" + strconv.FormatInt(e.Limit, 10) + "]"
}

// CheckQuota is ZooKeeperServer.checkQuota for a write at path that adds countDiff nodes
// and bytesDiff data bytes, against the limits and stats of this (applied) tree: the limits
// it passes, the count first. A hard one is the last: the write is refused with
// QUOTAEXCEEDED; soft ones are only logged.
func (t *Tree) CheckQuota(path string, countDiff, bytesDiff int64) []QuotaExceeded {
	prefix := t.quotaPrefix(path)
	if prefix == "" {
		return nil
	}
	ln := t.find(QuotaPath + prefix + "/" + limitNode)
	if ln == noIndex {
		return nil
	}
	limits := ParseStatsTrack(t.dataOf(ln))
	checkCount := countDiff != 0 && (limits.Get(StatCount) > -1 || limits.Get(StatCountHardLimit) > -1)
	checkBytes := bytesDiff != 0 && (limits.Get(StatBytes) > -1 || limits.Get(StatByteHardLimit) > -1)
	if !checkCount && !checkBytes {
		return nil
	}
	sn := t.find(QuotaPath + prefix + "/" + statNode)
	if sn == noIndex {
		return nil
	}
	stats := ParseStatsTrack(t.dataOf(sn))
	ns := topNamespace(path)
	var out []QuotaExceeded
	check := func(bytes bool, statKey, softKey, hardKey string, diff int64) bool {
		v := stats.Get(statKey) + diff
		hard := limits.Get(hardKey) > -1
		limit := limits.Get(softKey)
		if hard {
			limit = limits.Get(hardKey)
		}
		if v > limit {
			out = append(out, QuotaExceeded{Prefix: prefix, Namespace: ns, Bytes: bytes, Value: v, Limit: limit, Hard: hard})
			return hard
		}
		return false
	}
	if checkCount && check(false, StatCount, StatCount, StatCountHardLimit, countDiff) {
		return out
	}
	if checkBytes {
		check(true, StatBytes, StatBytes, StatByteHardLimit, bytesDiff)
	}
	return out
}

// topNamespace is PathUtils.getTopNamespace: the first component of path ("" for none).
func topNamespace(path string) string {
	parts := strings.Split(path, "/")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 1 {
		return parts[1]
	}
	return ""
}

// QuotaNamespace is one namespace's line of the quota metrics.
type QuotaNamespace struct {
	Namespace                                      string
	CountLimit, BytesLimit, CountUsage, BytesUsage int64
	HasLimit, HasUsage                             bool
}

// QuotaUsage is QuotaMetricsUtils' four gauge sets: under /zookeeper/quota, each leaf named
// zookeeper_limits adds its limit (the hard one when set, else the soft one) and each leaf
// named zookeeper_stats its usage to the namespace of its path, sorted by namespace.
func (t *Tree) QuotaUsage() []QuotaNamespace {
	byNS := map[string]*QuotaNamespace{}
	var walk func(p string)
	walk = func(p string) {
		i := t.find(p)
		if i == noIndex {
			return
		}
		if t.rd(i).kids != 0 {
			for _, c := range t.childNames(i, 0, len(t.kidIDs(i))) {
				walk(Join(p, c))
			}
			return
		}
		isLimit, isStats := strings.HasSuffix(p, "/"+limitNode), strings.HasSuffix(p, "/"+statNode)
		if !isLimit && !isStats {
			return
		}
		ns := topNamespace(p[len(QuotaPath):])
		if ns == "" {
			return
		}
		q := byNS[ns]
		if q == nil {
			q = &QuotaNamespace{Namespace: ns}
			byNS[ns] = q
		}
		st := ParseStatsTrack(t.dataOf(i))
		if isLimit {
			q.HasLimit = true
			q.CountLimit += hardOrSoft(st.Get(StatCountHardLimit), st.Get(StatCount))
			q.BytesLimit += hardOrSoft(st.Get(StatByteHardLimit), st.Get(StatBytes))
		} else {
			q.HasUsage = true
			q.CountUsage += st.Get(StatCount)
			q.BytesUsage += st.Get(StatBytes)
		}
	}
	if q := t.find(QuotaPath); q != noIndex && t.rd(q).kids != 0 {
		walk(QuotaPath)
	}
	out := make([]QuotaNamespace, 0, len(byNS))
	for _, q := range byNS {
		out = append(out, *q)
	}
	slices.SortFunc(out, func(a, b QuotaNamespace) int { return strings.Compare(a.Namespace, b.Namespace) })
	return out
}

func hardOrSoft(hard, soft int64) int64 {
	if hard > -1 {
		return hard
	}
	return soft
}
