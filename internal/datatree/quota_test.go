package datatree

import (
	"slices"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

// StatsTrack strings as ZooKeeper's StatsTrack parses and prints them (its toString keeps
// count and bytes first for 3.4's parser, then an '=' and the other keys sorted).
func TestStatsTrack(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "count=-1,bytes=-1"},
		{"count=0,bytes=0", "count=0,bytes=0"},
		{"bytes=5,count=2", "count=2,bytes=5"},
		{"count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=4", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=4"},
		{"count=1,bytes=1=;zz=7;aa=1", "count=1,bytes=1=;aa=1;zz=7"},
		{"count=,bytes=3", "count=-1,bytes=3"},
		{"count=1=2;;bytes=4,", "count=1,bytes=4"},
		{"count=x,bytes=2", "count=-1,bytes=2"}, // Java throws; zkd skips the pair
	} {
		if got := ParseStatsTrack([]byte(c.in)).String(); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTrieKey(t *testing.T) {
	for in, want := range map[string]string{
		"/a/b": "/a/b", "a": "/a", "": "/", "/": "/", "/a//b/": "/a/b", "/a/ /b": "/a/b", "/a/ x": "/a/ x",
	} {
		if got := trieKey(in); got != want {
			t.Errorf("trieKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func setQuota(a *applier, path, limits string) {
	a.tb.Helper()
	q := QuotaPath
	for _, c := range trieComponents(path) {
		q += "/" + c
		if a.tr.Get(q) == nil {
			a.mustOK(a.apply(jute.OpCreate, &jute.CreateTxn{Path: q, ACL: jute.OpenACLUnsafe, ParentCVersion: a.pcv(q)}))
		}
	}
	a.create(q+"/"+limitNode, limits)
	a.create(q+"/"+statNode, "count=0,bytes=0")
}

// CheckQuota finds what ZooKeeperServer.checkQuota finds: the count limit first, a hard one
// ends the check, soft ones are reported and the check goes on; a limit of -1 is none, and a
// diff of zero checks nothing.
func TestCheckQuota(t *testing.T) {
	a := newApplier(t)
	a.create("/q", "abc")
	a.create("/q/a", "xy") // count 2, bytes 5
	setQuota(a, "/q", "count=2,bytes=-1=;byteHardLimit=6;countHardLimit=-1")

	if got := a.tr.CheckQuota("/other", 1, 100); got != nil {
		t.Errorf("outside any quota: %v", got)
	}
	got := a.tr.CheckQuota("/q/b", 1, 1)
	want := []QuotaExceeded{{Prefix: "/q", Namespace: "q", Value: 3, Limit: 2}}
	if !slices.Equal(got, want) {
		t.Errorf("soft count: %v, want %v", got, want)
	}
	if got[0].String() != "Quota exceeded: /q [current count=3, softCountLimit=2]" {
		t.Errorf("message %q", got[0].String())
	}
	got = a.tr.CheckQuota("/q/a/b", 1, 2)
	want = []QuotaExceeded{{Prefix: "/q", Namespace: "q", Value: 3, Limit: 2}, {Prefix: "/q", Namespace: "q", Bytes: true, Value: 7, Limit: 6, Hard: true}}
	if !slices.Equal(got, want) {
		t.Errorf("soft count and hard bytes: %v, want %v", got, want)
	}
	if got[1].String() != "Quota exceeded: /q [current bytes=7, hardByteLimit=6]" {
		t.Errorf("message %q", got[1].String())
	}
	if got := a.tr.CheckQuota("/q", 0, 1); got != nil {
		t.Errorf("within the byte limit: %v", got)
	}
	if got := a.tr.CheckQuota("/q", 0, -10); got != nil {
		t.Errorf("shrinking: %v", got)
	}

	// The hard count limit ends the check before the bytes.
	requireOK(t, a.setData(QuotaPath+"/q/"+limitNode, "count=-1,bytes=-1=;byteHardLimit=0;countHardLimit=2"))
	got = a.tr.CheckQuota("/q/b", 1, 1)
	want = []QuotaExceeded{{Prefix: "/q", Namespace: "q", Value: 3, Limit: 2, Hard: true}}
	if !slices.Equal(got, want) {
		t.Errorf("hard count: %v, want %v", got, want)
	}

	// Without the limits node there is no quota.
	requireOK(t, a.del(QuotaPath+"/q/"+limitNode))
	if got := a.tr.CheckQuota("/q/b", 1, 1); got != nil {
		t.Errorf("after the limits node is deleted: %v", got)
	}
}

// ZooKeeper matches the quota parent with startsWith, so /zookeeper/quotax/zookeeper_limits
// is a quota on /x, with its stats at /zookeeper/quota/x/zookeeper_stats; and a stats node
// directly under /zookeeper/quota counts the whole tree (ZooKeeper reads "" as the root).
func TestQuotaOddPaths(t *testing.T) {
	a := newApplier(t)
	a.create("/x", "12")
	a.create("/zookeeper/quotax", "")
	a.create("/zookeeper/quotax/zookeeper_limits", "count=5,bytes=5")
	if p := a.tr.QuotaPrefix("/x/y"); p != "/x" {
		t.Errorf("QuotaPrefix = %q, want /x", p)
	}
	a.create("/zookeeper/quota/zookeeper_stats", "count=0,bytes=0")
	// The root (once), /zookeeper, quota, config, /x, /zookeeper/quotax, its limits and the
	// stats node itself, as created: 2 + 15 + 15 bytes.
	if got := string(a.tr.Get("/zookeeper/quota/zookeeper_stats").Data); got != "count=8,bytes=32" {
		t.Errorf("root stats %q", got)
	}
}

// QuotaUsage sums the limits (hard over soft) and the stats of each namespace, from leaf
// nodes only, as QuotaMetricsUtils does.
func TestQuotaUsage(t *testing.T) {
	a := newApplier(t)
	if got := a.tr.QuotaUsage(); len(got) != 0 {
		t.Fatalf("no quotas: %v", got)
	}
	a.create("/ns", "")
	a.create("/ns/a", "abc")
	a.create("/ns/b", "")
	a.create("/other", "z")
	setQuota(a, "/ns/a", "count=5,bytes=10=;byteHardLimit=-1;countHardLimit=3")
	setQuota(a, "/ns/b", "count=2,bytes=-1")
	setQuota(a, "/other", "count=1,bytes=1")
	got := a.tr.QuotaUsage()
	want := []QuotaNamespace{
		{Namespace: "ns", CountLimit: 5, BytesLimit: 9, CountUsage: 2, BytesUsage: 3, HasLimit: true, HasUsage: true},
		{Namespace: "other", CountLimit: 1, BytesLimit: 1, CountUsage: 1, BytesUsage: 1, HasLimit: true, HasUsage: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("QuotaUsage = %+v\nwant %+v", got, want)
	}
}

// A snapshot load recomputes every quota's stats and keeps the extra keys out, as
// updateQuotaForPath does with a fresh StatsTrack.
func TestQuotaStatsAfterLoad(t *testing.T) {
	a := newApplier(t)
	a.create("/q", "abc")
	setQuota(a, "/q", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=4")
	requireOK(t, a.setData(QuotaPath+"/q/"+statNode, "count=9,bytes=9=;extra=1"))
	a.create("/q/a", "1")
	if got := string(a.tr.Get(QuotaPath + "/q/" + statNode).Data); got != "count=10,bytes=10=;extra=1" {
		t.Errorf("incremental stats %q", got)
	}
	loaded := cloneTree(t, a.tr)
	if got := string(loaded.Get(QuotaPath + "/q/" + statNode).Data); got != "count=2,bytes=4" {
		t.Errorf("stats after load %q", got)
	}
	if got := loaded.CheckQuota("/q/b/c", 1, 0); len(got) != 0 {
		t.Errorf("after load, count 3 of 4: %v", got)
	}
	if p := loaded.QuotaPrefix("/q/b"); p != "/q" {
		t.Errorf("after load, QuotaPrefix = %q", p)
	}
}
