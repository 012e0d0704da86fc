package datatree

import (
	"bytes"
	"slices"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

// The golden files are Apache ZooKeeper 3.8.0's own log.1 (head) and the snapshot.3c it wrote
// at its next start after replaying that log; see /work/shared/protocol/golden/06 and 07.
const (
	goldenSnapZxid   = 0x3c
	goldenSnapDigest = 0x548e16c34 // ZxidDigest.digest in 07-snapshot.txt
	goldenEmptyTree  = 0x51c6d660  // TxnDigest of entry 1 (a createSession on the empty tree)
	goldenSession4   = 0x100000a4ed70004
)

// replayGolden applies the golden log to a fresh tree up to and including zxid upTo, checking
// the tree digest against every entry's TxnDigest.
func replayGolden(t *testing.T, upTo int64) *Tree {
	tr, _ := replayGoldenResults(t, upTo)
	return tr
}

func replayGoldenResults(t *testing.T, upTo int64) (*Tree, map[int64]Result) {
	t.Helper()
	entries := parseLog(t, readTestdata(t, "log.1.head"))
	if len(entries) != 60 {
		t.Fatalf("log has %d entries, want 60", len(entries))
	}
	tr := New()
	tr.ExtendedTypes = true
	results := map[int64]Result{}
	for i, e := range entries {
		lt, err := jute.DecodeTxn(e.txn)
		if err != nil {
			t.Fatalf("entry %d at %#x: %v", i+1, e.offset, err)
		}
		if lt.Header.Zxid > upTo {
			break
		}
		if lt.Header.Zxid != int64(i+1) {
			t.Fatalf("entry %d has zxid %#x", i+1, lt.Header.Zxid)
		}
		res := tr.Apply(&lt.Header, lt.Body)
		results[lt.Header.Zxid] = res
		if lt.Digest != nil && tr.Digest() != lt.Digest.TreeDigest {
			t.Errorf("after entry %d (zxid %#x, %v, result %v %q): digest %#x, ZooKeeper logged %#x",
				i+1, lt.Header.Zxid, lt.Header.Type, res.Err, res.Path, tr.Digest(), lt.Digest.TreeDigest)
		}
		if tr.LastZxid() != lt.Header.Zxid {
			t.Errorf("after zxid %#x: LastZxid %#x", lt.Header.Zxid, tr.LastZxid())
		}
	}
	return tr, results
}

func TestGoldenReplayMatchesSnapshot(t *testing.T) {
	snap := parseSnapshot(t, readTestdata(t, "snapshot.3c"))
	if snap.zxid != goldenSnapZxid || snap.digestVersion != 2 || snap.digest != goldenSnapDigest {
		t.Fatalf("snapshot ZxidDigest = {%#x, %d, %#x}", snap.zxid, snap.digestVersion, snap.digest)
	}
	tr, results := replayGoldenResults(t, goldenSnapZxid)
	// g06 entry 5: a multi create+setData+check; entry 6: a failed multi (create, then
	// NONODE); entry 10: an error txn; entry 11: closeSession listing one ephemeral.
	checkCodes := func(zxid int64, want jute.Code, sub ...jute.Code) {
		t.Helper()
		r := results[zxid]
		var got []jute.Code
		for _, m := range r.Multi {
			got = append(got, m.Err)
		}
		if r.Err != want || !slices.Equal(got, sub) {
			t.Errorf("zxid %#x: result %v %v, want %v %v", zxid, r.Err, got, want, sub)
		}
	}
	checkCodes(5, jute.OK, jute.OK, jute.OK, jute.OK)
	checkCodes(6, jute.ErrNoNode, jute.OK, jute.ErrNoNode)
	checkCodes(0xa, jute.ErrNoNode)
	if r := results[5]; len(r.Events) != 3 || r.Events[2].Type != jute.EventNodeDataChanged || r.Events[2].Path != "/golden" {
		t.Errorf("zxid 5 events %v", r.Events)
	}
	if r := results[6]; len(r.Events) != 0 || r.Multi[0].Type != jute.OpError {
		t.Errorf("zxid 6: %+v", r)
	}
	if r := results[0xb]; len(r.Events) != 2 || r.Events[0].Type != jute.EventNodeDeleted || r.Events[0].Path != "/golden/seq-0000000000" {
		t.Errorf("zxid 0xb events %v", r.Events)
	}

	seen := map[string]bool{}
	for _, sn := range snap.nodes {
		p := snapPath(sn.Path)
		seen[p] = true
		n := tr.Get(p)
		if n == nil {
			t.Errorf("%s: in snapshot.3c, not in the replayed tree", p)
			continue
		}
		if !bytes.Equal(n.Data, sn.Data) || (n.Data == nil) != (sn.Data == nil) {
			t.Errorf("%s: data %q (nil %v), ZooKeeper %q (nil %v)", p, n.Data, n.Data == nil, sn.Data, sn.Data == nil)
		}
		if n.Stat != sn.Stat {
			t.Errorf("%s: stat\n  got  %+v\n  want %+v", p, n.Stat, sn.Stat)
		}
		want := snap.acls[sn.ACLKey]
		if sn.ACLKey == OpenACLKey {
			want = jute.OpenACLUnsafe
		}
		if got := tr.ACL(n.ACL); len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: acl %v, ZooKeeper %v", p, got, want)
		}
	}
	for _, p := range sortedPaths(tr) {
		if !seen[p] {
			t.Errorf("%s: in the replayed tree, not in snapshot.3c", p)
		}
	}
	if tr.Digest() != goldenSnapDigest {
		t.Errorf("Digest() = %#x, snapshot.3c says %#x", tr.Digest(), int64(goldenSnapDigest))
	}
	if got := tr.Ephemerals(goldenSession4); !slices.Equal(got, []string{"/raw/eph"}) {
		t.Errorf("Ephemerals(%#x) = %v", goldenSession4, got)
	}
	if got := tr.EphemeralSessions(); len(got) != 1 || got[goldenSession4] != 1 {
		t.Errorf("EphemeralSessions() = %v", got)
	}
	if got := setKeys(tr.containers); !slices.Equal(got, []string{"/jv/cont"}) {
		t.Errorf("containers %v", got)
	}
	if got := setKeys(tr.ttls); !slices.Equal(got, []string{"/jv/ttl"}) {
		t.Errorf("ttls %v", got)
	}
}

// The four-letter words in golden 05 ran when the last zxid was 0x2f: mntr said
// zk_znode_count 17 (ZooKeeper counts the root twice, as "" and "/"), zk_ephemerals_count 2,
// zk_approximate_data_size 149.
func TestGoldenMntrCounters(t *testing.T) {
	tr := replayGolden(t, 0x2f)
	if got := tr.NodeCount(); got != 17-1 {
		t.Errorf("NodeCount() = %d, want 16 (ZooKeeper's 17 less the root alias)", got)
	}
	if got := tr.EphemeralCount(); got != 2 {
		t.Errorf("EphemeralCount() = %d, want 2", got)
	}
	if got := tr.ApproximateDataSize(); got != 149 {
		t.Errorf("ApproximateDataSize() = %d, ZooKeeper's mntr said 149", got)
	}
	if got := tr.Ephemerals(0x100000a4ed70009); !slices.Equal(got, []string{"/w4/e"}) {
		t.Errorf("Ephemerals(0x100000a4ed70009) = %v (golden 05 dump lists /w4/e)", got)
	}
}

func TestGoldenLoadSnapshot(t *testing.T) {
	snap := parseSnapshot(t, readTestdata(t, "snapshot.3c"))
	tr := snap.load(t, true)
	if tr.Digest() != snap.digest {
		t.Errorf("loaded Digest() = %#x, snapshot says %#x", tr.Digest(), snap.digest)
	}
	if tr.LastZxid() != goldenSnapZxid {
		t.Errorf("LastZxid() = %#x", tr.LastZxid())
	}
	if tr.NodeCount() != len(snap.nodes) {
		t.Errorf("NodeCount() = %d, snapshot has %d nodes", tr.NodeCount(), len(snap.nodes))
	}
	// Values from 07-snapshot.txt; cversion is the client view 2*stored - numChildren.
	for _, c := range []struct {
		path string
		want jute.Stat
	}{
		{"/", jute.Stat{Cversion: 2*4 - 5, NumChildren: 5, Pzxid: 0x2e}},
		{"/golden", jute.Stat{Czxid: 2, Mzxid: 5, Ctime: 1795337712852, Mtime: 1795337713263, Version: 2,
			Cversion: 2*3 - 1, DataLength: 5, NumChildren: 1, Pzxid: 0xb}},
		{"/golden/acl", jute.Stat{Czxid: 7, Mzxid: 7, Ctime: 1795337724295, Mtime: 1795337724295, Aversion: 1,
			DataLength: 6, Pzxid: 7}},
		// g03 #28: 3 creates and 1 delete under /raw show cversion 4.
		{"/raw", jute.Stat{Czxid: 0x1b, Mzxid: 0x1b, Ctime: 1795337735736, Mtime: 1795337735736,
			Cversion: 4, NumChildren: 2, Pzxid: 0x26}},
		{"/zookeeper", jute.Stat{Cversion: -2, NumChildren: 2}},
		{"/zookeeper/config", jute.Stat{Aversion: -1}},
		{"/zookeeper/quota", jute.Stat{Cversion: 2*1 - 1, NumChildren: 1, Pzxid: 0x34}},
		{"/w4", jute.Stat{Czxid: 0x2e, Mzxid: 0x2e, Ctime: tr.Get("/w4").Stat.Ctime, Mtime: tr.Get("/w4").Stat.Mtime,
			Cversion: 2*1 - 0, Pzxid: 0x30}},
	} {
		n := tr.Get(c.path)
		if n == nil {
			t.Errorf("%s: not loaded", c.path)
			continue
		}
		if got := tr.StatOf(n); got != c.want {
			t.Errorf("StatOf(%s)\n  got  %+v\n  want %+v", c.path, got, c.want)
		}
	}
	eph := tr.StatOf(tr.Get("/raw/eph"))
	if eph.EphemeralOwner != goldenSession4 {
		t.Errorf("/raw/eph ephemeralOwner %#x", eph.EphemeralOwner)
	}
	for _, p := range []string{"/jv/cont", "/jv/ttl"} {
		if o := tr.StatOf(tr.Get(p)).EphemeralOwner; o != 0 {
			t.Errorf("%s: client ephemeralOwner %#x, want 0", p, o)
		}
	}
	if ttl, ok := tr.IsTTL(tr.Get("/jv/ttl").Stat.EphemeralOwner); !ok || ttl != 60000 {
		t.Errorf("IsTTL(/jv/ttl) = %d, %v; want 60000, true", ttl, ok)
	}
	if d := tr.StatOf(tr.Get("/zookeeper/quota/golden")).DataLength; d != 0 {
		t.Errorf("null data: dataLength %d", d)
	}
	if got := tr.Ephemerals(goldenSession4); !slices.Equal(got, []string{"/raw/eph"}) {
		t.Errorf("Ephemerals after load = %v", got)
	}
	if got := setKeys(tr.containers); !slices.Equal(got, []string{"/jv/cont"}) {
		t.Errorf("containers after load %v", got)
	}
	if got := setKeys(tr.ttls); !slices.Equal(got, []string{"/jv/ttl"}) {
		t.Errorf("ttls after load %v", got)
	}
	if tr.CountDescendants("/") != tr.NodeCount()-1 {
		t.Errorf("CountDescendants(/) = %d, NodeCount %d", tr.CountDescendants("/"), tr.NodeCount())
	}

	// Without extended types, a TTL owner is an ordinary session id (EphemeralType.get).
	plain := snap.load(t, false)
	if o := plain.StatOf(plain.Get("/jv/ttl")).EphemeralOwner; o != -0xffffffffff15a0 {
		t.Errorf("/jv/ttl without extended types: ephemeralOwner %#x", o)
	}
	if len(plain.ttls) != 0 {
		t.Errorf("ttls tracked without extended types: %v", plain.ttls)
	}
}

// The loaded snapshot and the replayed log are the same tree. ZooKeeper rebuilds
// approximateDataSize on load from the data as stored, so the two agree on it except for
// the quota stats node: its in-memory updates are not counted (DataTree.updateQuotaStat
// leaves nodeDataSize alone), so the replayed tree counts the data it was created with,
// the loaded one the data the snapshot holds (checked against ZooKeeper in
// internal/compat's TestCompatQuotaMntr).
func TestGoldenLoadEqualsReplay(t *testing.T) {
	loaded := parseSnapshot(t, readTestdata(t, "snapshot.3c")).load(t, true)
	replayed := replayGolden(t, goldenSnapZxid)
	requireEqualTrees(t, replayed, loaded)
	stats := replayed.Get("/zookeeper/quota/golden/zookeeper_stats")
	if stats == nil {
		t.Fatal("no stats node in the golden tree")
	}
	drift := int64(len(stats.Data) - len("count=0,bytes=0")) // what setquota created it with
	if a, b := replayed.ApproximateDataSize(), loaded.ApproximateDataSize(); a+drift != b {
		t.Errorf("ApproximateDataSize: replayed %d (+%d for the stats node), loaded %d", a, drift, b)
	}
}

func TestGoldenEmptyTree(t *testing.T) {
	tr := New()
	if tr.Digest() != goldenEmptyTree {
		t.Errorf("New().Digest() = %#x, ZooKeeper %#x", tr.Digest(), int64(goldenEmptyTree))
	}
	snap := parseSnapshot(t, readTestdata(t, "snapshot.0"))
	if len(snap.nodes) != 4 {
		t.Fatalf("snapshot.0 has %d nodes", len(snap.nodes))
	}
	for _, sn := range snap.nodes {
		p := snapPath(sn.Path)
		n := tr.Get(p)
		if n == nil {
			t.Errorf("New() lacks %s", p)
			continue
		}
		if n.Stat != sn.Stat || !bytes.Equal(n.Data, sn.Data) {
			t.Errorf("%s: %+v %q, snapshot.0 %+v %q", p, n.Stat, n.Data, sn.Stat, sn.Data)
		}
		want := snap.acls[sn.ACLKey]
		if sn.ACLKey == OpenACLKey {
			want = jute.OpenACLUnsafe
		}
		if !slices.Equal(tr.ACL(n.ACL), want) {
			t.Errorf("%s: acl %v, snapshot.0 %v", p, tr.ACL(n.ACL), want)
		}
	}
	if tr.NodeCount() != 4 {
		t.Errorf("New().NodeCount() = %d", tr.NodeCount())
	}
	loaded := snap.load(t, true)
	requireEqualTrees(t, tr, loaded)
	if loaded.Digest() != goldenEmptyTree {
		t.Errorf("loaded snapshot.0 digest %#x", loaded.Digest())
	}
	// ZooKeeper's DataTree constructor sets nodeDataSize to the sum of path lengths of
	// "", "/", "/zookeeper", "/zookeeper/quota" and "/zookeeper/config": 0+1+10+16+17.
	if got := tr.ApproximateDataSize(); got != 44 {
		t.Errorf("New().ApproximateDataSize() = %d, ZooKeeper 44", got)
	}
	if got := loaded.ApproximateDataSize(); got != 44 {
		t.Errorf("loaded snapshot.0 ApproximateDataSize() = %d, ZooKeeper 44", got)
	}
	// A snapshot without the reserved nodes gets them back.
	l := NewLoader()
	if err := l.Node(SnapNode{Path: "", Data: []byte{}, ACLKey: OpenACLKey}); err != nil {
		t.Fatal(err)
	}
	bare, err := l.Finish(false, 0)
	if err != nil {
		t.Fatal(err)
	}
	requireEqualTrees(t, tr, bare)
}
