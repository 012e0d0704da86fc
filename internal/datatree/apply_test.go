package datatree

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

var (
	digestACL = []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "digest", ID: "u:x"}}, {Perms: jute.PermRead, ID: jute.WorldAnyone}}
	readACL   = jute.ReadACLUnsafe
)

func ev(typ jute.EventType, path string) Event { return Event{Type: typ, Path: path} }

// requireEvents compares types and paths; TestEventACLs checks the ACLs events carry.
func requireEvents(tb testing.TB, got []Event, want ...Event) {
	tb.Helper()
	same := func(a, b Event) bool { return a.Type == b.Type && a.Path == b.Path }
	if !slices.EqualFunc(got, want, same) {
		tb.Errorf("events\n  got  %v\n  want %v", got, want)
	}
}

func TestReservedNodes(t *testing.T) {
	tr := New()
	checkInvariants(t, tr)
	for _, c := range []struct {
		path string
		acl  []jute.ACL
		stat jute.Stat
	}{
		{"/", jute.OpenACLUnsafe, jute.Stat{Cversion: -1, NumChildren: 1}},
		{ZookeeperPath, jute.OpenACLUnsafe, jute.Stat{Cversion: -2, NumChildren: 2}},
		{QuotaPath, jute.OpenACLUnsafe, jute.Stat{}},
		{ConfigPath, readACL, jute.Stat{Aversion: -1}},
	} {
		n := tr.Get(c.path)
		if n == nil {
			t.Fatalf("%s missing", c.path)
		}
		if got := tr.StatOf(n); got != c.stat {
			t.Errorf("StatOf(%s) = %+v, want %+v", c.path, got, c.stat)
		}
		if got := tr.ACL(n.ACL); !slices.Equal(got, c.acl) {
			t.Errorf("%s: acl %v, want %v", c.path, got, c.acl)
		}
		if n.Data == nil || len(n.Data) != 0 {
			t.Errorf("%s: data %#v, want empty non-null", c.path, n.Data)
		}
	}
	if got := sorted(tr.Get(ZookeeperPath).Children()); !slices.Equal(got, []string{"config", "quota"}) {
		t.Errorf("/zookeeper children %v", got)
	}
	// Only the READ list is in the table; world:anyone ALL is the implicit key -1.
	if acls := tr.ACLs(); len(acls) != 1 {
		t.Errorf("ACLs() = %v", acls)
	}
	if tr.LastZxid() != 0 || tr.EphemeralCount() != 0 || tr.NodeCount() != 4 {
		t.Errorf("fresh tree: lastZxid %d, ephemerals %d, nodes %d", tr.LastZxid(), tr.EphemeralCount(), tr.NodeCount())
	}
}

func TestCreate(t *testing.T) {
	a := newApplier(t)
	d0 := a.tr.Digest()
	r := a.create("/a", "hello")
	z, tm := a.zxid, a.time
	want := jute.Stat{Czxid: z, Mzxid: z, Ctime: tm, Mtime: tm, DataLength: 5, Pzxid: z}
	if r.Type != jute.OpCreate || r.Path != "/a" || r.Stat != want || r.Multi != nil {
		t.Errorf("result %+v, want stat %+v", r, want)
	}
	if got := a.stat("/a"); got != want {
		t.Errorf("StatOf(/a) = %+v, want %+v", got, want)
	}
	requireEvents(t, r.Events, ev(jute.EventNodeCreated, "/a"), ev(jute.EventNodeChildrenChanged, "/"))
	if root := a.stored("/"); root.Cversion != 1 || root.Pzxid != z {
		t.Errorf("root after create: %+v", root)
	}
	if got := a.stat("/").Cversion; got != 2*1-2 {
		t.Errorf("root client cversion %d", got)
	}
	if n := a.tr.Get("/a"); !bytes.Equal(n.Data, []byte("hello")) || !slices.Equal(a.tr.ACL(n.ACL), jute.OpenACLUnsafe) {
		t.Errorf("/a: data %q acl %v", n.Data, a.tr.ACL(n.ACL))
	}
	if a.tr.Digest() == d0 {
		t.Error("digest did not change")
	}
	if a.tr.LastZxid() != z {
		t.Errorf("LastZxid %d", a.tr.LastZxid())
	}

	// Children: the parent's stored cversion takes the logged parentCVersion.
	a.create("/a/b", "")
	r = a.create("/a/c", "x")
	s := a.stored("/a")
	if s.Cversion != 2 || s.Pzxid != a.zxid || s.Mzxid != z || s.Czxid != z {
		t.Errorf("/a after two child creates: %+v", s)
	}
	requireEvents(t, r.Events, ev(jute.EventNodeCreated, "/a/c"), ev(jute.EventNodeChildrenChanged, "/a"))
	if st := a.stat("/a"); st.NumChildren != 2 || st.Cversion != 2 {
		t.Errorf("StatOf(/a) = %+v", st)
	}

	// Null data stays null; the ACL list is kept as logged.
	a.mustOK(a.apply(jute.OpCreate2, &jute.CreateTxn{Path: "/n", ACL: digestACL, ParentCVersion: a.pcv("/n")}))
	n := a.tr.Get("/n")
	if n.Data != nil || a.stat("/n").DataLength != 0 {
		t.Errorf("null data became %#v", n.Data)
	}
	if !slices.Equal(a.tr.ACL(n.ACL), digestACL) {
		t.Errorf("acl %v", a.tr.ACL(n.ACL))
	}
	// A null ACL vector is ZooKeeper's key -1 (world:anyone ALL).
	a.create("/o", "")
	a.mustOK(a.apply(jute.OpCreate, &jute.CreateTxn{Path: "/o/nil", Data: []byte{}, ParentCVersion: a.pcv("/o/nil")}))
	if k := a.tr.Get("/o/nil").ACL; k != OpenACLKey || !slices.Equal(a.tr.ACL(k), jute.OpenACLUnsafe) {
		t.Errorf("null ACL: key %d, %v", k, a.tr.ACL(k))
	}
	checkInvariants(t, a.tr)
}

func TestCreateKinds(t *testing.T) {
	const sess = 0x1000000abc0000
	ttlOwner := int64(-0x100000000000000) | 60000
	cases := []struct {
		name     string
		extended bool
		typ      jute.OpCode
		body     func(pcv int32) jute.Record
		stored   int64 // stored ephemeralOwner
		client   int64 // StatOf ephemeralOwner
		eph      bool  // listed in Ephemerals(stored)
		cont     bool
		ttl      int64 // IsTTL
	}{
		{"persistent", true, jute.OpCreate, func(p int32) jute.Record {
			return &jute.CreateTxn{Path: "/p/x", Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: p}
		}, 0, 0, false, false, 0},
		{"ephemeral", true, jute.OpCreate, func(p int32) jute.Record {
			return &jute.CreateTxn{Path: "/p/x", Data: []byte{}, ACL: jute.OpenACLUnsafe, Ephemeral: true, ParentCVersion: p}
		}, sess, sess, true, false, 0},
		{"ephemeral create2", true, jute.OpCreate2, func(p int32) jute.Record {
			return &jute.CreateTxn{Path: "/p/x", Data: []byte{}, ACL: jute.OpenACLUnsafe, Ephemeral: true, ParentCVersion: p}
		}, sess, sess, true, false, 0},
		{"container", true, jute.OpCreateContainer, func(p int32) jute.Record {
			return &jute.CreateContainerTxn{Path: "/p/x", Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: p}
		}, ContainerOwner, 0, false, true, 0},
		{"container without extended types", false, jute.OpCreateContainer, func(p int32) jute.Record {
			return &jute.CreateContainerTxn{Path: "/p/x", Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: p}
		}, ContainerOwner, 0, false, true, 0},
		{"ttl", true, jute.OpCreateTTL, func(p int32) jute.Record {
			return &jute.CreateTTLTxn{Path: "/p/x", Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: p, TTL: 60000}
		}, ttlOwner, 0, false, false, 60000},
		{"ttl max", true, jute.OpCreateTTL, func(p int32) jute.Record {
			return &jute.CreateTTLTxn{Path: "/p/x", Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: p, TTL: jute.MaxTTL}
		}, -0x100000000000000 | jute.MaxTTL, 0, false, false, jute.MaxTTL},
		// EphemeralType.get only recognises TTL owners with extended types on; otherwise the
		// owner is an ordinary (if odd) session id.
		{"ttl without extended types", false, jute.OpCreateTTL, func(p int32) jute.Record {
			return &jute.CreateTTLTxn{Path: "/p/x", Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: p, TTL: 60000}
		}, ttlOwner, ttlOwner, true, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newApplier(t)
			a.tr.ExtendedTypes = c.extended
			a.create("/p", "")
			r := a.mustOK(a.apply(c.typ, c.body(a.pcv("/p/x"))))
			n := a.tr.Get("/p/x")
			if n.Stat.EphemeralOwner != c.stored {
				t.Errorf("stored owner %#x, want %#x", n.Stat.EphemeralOwner, c.stored)
			}
			if got := a.tr.StatOf(n).EphemeralOwner; got != c.client || r.Stat.EphemeralOwner != c.client {
				t.Errorf("client owner %#x (result %#x), want %#x", got, r.Stat.EphemeralOwner, c.client)
			}
			if got := slices.Contains(a.tr.Ephemerals(c.stored), "/p/x"); got != c.eph || a.tr.IsEphemeral(n) != c.eph {
				t.Errorf("Ephemerals lists it: %v, IsEphemeral %v; want %v", got, a.tr.IsEphemeral(n), c.eph)
			}
			if _, ok := a.tr.containers["/p/x"]; ok != c.cont {
				t.Errorf("container tracked %v", ok)
			}
			ttl, ok := a.tr.IsTTL(n.Stat.EphemeralOwner)
			if ttl != c.ttl || ok != (c.ttl != 0) {
				t.Errorf("IsTTL = %d, %v; want %d", ttl, ok, c.ttl)
			}
			if _, tracked := a.tr.ttls["/p/x"]; tracked != (c.ttl != 0) {
				t.Errorf("ttl tracked %v", tracked)
			}
			checkInvariants(t, a.tr)
			// Deleting it clears every index.
			requireOK(t, a.del("/p/x"))
			if a.tr.EphemeralCount() != 0 || len(a.tr.containers) != 0 || len(a.tr.ttls) != 0 || len(a.tr.EphemeralSessions()) != 0 {
				t.Errorf("indexes after delete: %d %v %v %v", a.tr.EphemeralCount(), a.tr.containers, a.tr.ttls, a.tr.EphemeralSessions())
			}
			checkInvariants(t, a.tr)
		})
	}
	if o := TTLOwner(1); o != -0xffffffffffffff {
		t.Errorf("TTLOwner(1) = %#x", o)
	}
}

func requireOK(tb testing.TB, r Result) {
	tb.Helper()
	if r.Err != jute.OK {
		tb.Fatalf("%v %s: %v", r.Type, r.Path, r.Err)
	}
}

// The stored cversion counts creations under a node (what the sequence suffix uses); the
// client sees creations + deletions.
func TestCversionCountsCreations(t *testing.T) {
	a := newApplier(t)
	a.create("/raw", "")
	a.create("/raw/a", "")
	requireOK(t, a.del("/raw/a"))
	a.create("/raw/q-0000000002", "")
	a.create("/raw/eph", "")
	s := a.stored("/raw")
	if s.Cversion != 3 {
		t.Errorf("stored cversion %d, want 3", s.Cversion)
	}
	// g03 #28: 3 creates and 1 delete show cversion 4.
	if st := a.stat("/raw"); st.Cversion != 4 || st.NumChildren != 2 {
		t.Errorf("client cversion %d numChildren %d, want 4, 2", st.Cversion, st.NumChildren)
	}
	// A failed create logs an error txn and leaves the count alone.
	a.apply(jute.OpError, &jute.ErrorTxn{Err: jute.ErrNodeExists})
	if a.stored("/raw").Cversion != 3 {
		t.Error("error txn changed cversion")
	}
}

func TestCreateParentCVersion(t *testing.T) {
	cases := []struct {
		name       string
		txn        func(pcv int32) *jute.CreateTxn
		before     int32 // stored cversion of /p before (after the setup creates)
		wantCV     int32
		movesPzxid bool
	}{
		{"logged +1", func(p int32) *jute.CreateTxn { return &jute.CreateTxn{Path: "/p/n", ParentCVersion: p} }, 2, 3, true},
		{"jump ahead", func(p int32) *jute.CreateTxn { return &jute.CreateTxn{Path: "/p/n", ParentCVersion: p + 10} }, 2, 13, true},
		// Replay over a fuzzy snapshot: the snapshot already counted this create.
		{"lower than stored", func(p int32) *jute.CreateTxn { return &jute.CreateTxn{Path: "/p/n", ParentCVersion: p - 2} }, 2, 2, false},
		{"equal to stored", func(p int32) *jute.CreateTxn { return &jute.CreateTxn{Path: "/p/n", ParentCVersion: p - 1} }, 2, 2, false},
		{"-1 means +1", func(int32) *jute.CreateTxn { return &jute.CreateTxn{Path: "/p/n", ParentCVersion: -1} }, 2, 3, true},
		{"CreateTxnV0", func(int32) *jute.CreateTxn { return &jute.CreateTxn{Path: "/p/n", V0: true, ParentCVersion: 99} }, 2, 3, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newApplier(t)
			a.create("/p", "")
			a.create("/p/a", "")
			a.create("/p/b", "")
			before := a.stored("/p")
			if before.Cversion != c.before {
				t.Fatalf("setup cversion %d", before.Cversion)
			}
			body := c.txn(a.pcv("/p/n"))
			body.ACL = jute.OpenACLUnsafe
			r := a.apply(jute.OpCreate, body)
			requireOK(t, r)
			after := a.stored("/p")
			if after.Cversion != c.wantCV {
				t.Errorf("cversion %d, want %d", after.Cversion, c.wantCV)
			}
			wantPzxid := before.Pzxid
			if c.movesPzxid {
				wantPzxid = a.zxid
			}
			if after.Pzxid != wantPzxid {
				t.Errorf("pzxid %#x, want %#x", after.Pzxid, wantPzxid)
			}
			if a.tr.Get("/p/n") == nil {
				t.Error("node not created")
			}
			requireEvents(t, r.Events, ev(jute.EventNodeCreated, "/p/n"), ev(jute.EventNodeChildrenChanged, "/p"))
			checkInvariants(t, a.tr)
		})
	}
}

func TestCreateErrors(t *testing.T) {
	a := newApplier(t)
	a.create("/p", "")
	a.create("/p/x", "old")
	snap := cloneTree(t, a.tr)

	r := a.apply(jute.OpCreate2, &jute.CreateTxn{Path: "/missing/x", Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: 1})
	if r.Err != jute.ErrNoNode || len(r.Events) != 0 || r.Path != "/missing/x" {
		t.Errorf("create under missing parent: %+v", r)
	}
	// createContainer, createTTL and create2 of an existing node change nothing (only a
	// type-1 create adjusts the parent, see TestReplayCreateExistingAdjustsParent).
	for _, c := range []struct {
		typ  jute.OpCode
		body jute.Record
	}{
		{jute.OpCreate2, &jute.CreateTxn{Path: "/p/x", Data: []byte("new"), ACL: digestACL, ParentCVersion: 7}},
		{jute.OpCreateContainer, &jute.CreateContainerTxn{Path: "/p/x", Data: []byte("new"), ACL: digestACL, ParentCVersion: 7}},
		{jute.OpCreateTTL, &jute.CreateTTLTxn{Path: "/p/x", Data: []byte("new"), ACL: digestACL, ParentCVersion: 7, TTL: 5}},
	} {
		r := a.apply(c.typ, c.body)
		if r.Err != jute.ErrNodeExists || len(r.Events) != 0 || r.Type != c.typ {
			t.Errorf("%v of existing node: %+v", c.typ, r)
		}
	}
	requireEqualTrees(t, snap, a.tr)
	if a.tr.LastZxid() != a.zxid {
		t.Errorf("failed txns must still advance LastZxid: %#x", a.tr.LastZxid())
	}
	for k, v := range a.tr.ACLs() {
		if slices.Equal(v, digestACL) {
			t.Errorf("failed creates left their ACL in the table under key %d", k)
		}
	}
	checkInvariants(t, a.tr)
}

// DataTree.processTxn (3.8.0): a type-1 create that fails with NODEEXISTS calls
// setCversionPzxid(parent, parentCVersion, zxid), so the parent's cversion and pzxid still
// move forward. This repairs a fuzzy snapshot where the node was deleted and re-created by
// another session after its parent was serialized.
func TestReplayCreateExistingAdjustsParent(t *testing.T) {
	a := newApplier(t)
	a.create("/p", "")
	a.create("/p/x", "")
	before := a.stored("/p")
	x := a.stored("/p/x")
	r := a.apply(jute.OpCreate, &jute.CreateTxn{Path: "/p/x", Data: []byte("other"), ACL: jute.OpenACLUnsafe, ParentCVersion: before.Cversion + 1})
	if r.Err != jute.ErrNodeExists {
		t.Fatalf("err %v", r.Err)
	}
	if len(r.Events) != 0 {
		t.Errorf("events %v", r.Events)
	}
	after := a.stored("/p")
	if after.Cversion != before.Cversion+1 || after.Pzxid != a.zxid {
		t.Errorf("parent after NODEEXISTS create: cversion %d pzxid %#x, ZooKeeper %d %#x",
			after.Cversion, after.Pzxid, before.Cversion+1, a.zxid)
	}
	if a.stored("/p/x") != x || string(a.tr.Get("/p/x").Data) != "" {
		t.Error("the existing node changed")
	}
	checkInvariants(t, a.tr)

	// Not moving backwards: a lower parentCVersion changes nothing.
	before = a.stored("/p")
	a.apply(jute.OpCreate, &jute.CreateTxn{Path: "/p/x", ACL: jute.OpenACLUnsafe, ParentCVersion: 1})
	if a.stored("/p") != before {
		t.Errorf("parent changed: %+v -> %+v", before, a.stored("/p"))
	}
	// The same inside a multi (processTxn recurses with the sub-txn's type).
	before = a.stored("/p")
	r = a.apply(jute.OpMulti, &jute.MultiTxn{Txns: []jute.Txn{
		sub(jute.OpCreate, &jute.CreateTxn{Path: "/p/x", ACL: jute.OpenACLUnsafe, ParentCVersion: before.Cversion + 1}),
	}})
	if r.Err != jute.ErrNodeExists || r.Multi[0].Err != jute.ErrNodeExists {
		t.Errorf("multi result %+v", r)
	}
	if after := a.stored("/p"); after.Cversion != before.Cversion+1 || after.Pzxid != a.zxid {
		t.Errorf("parent after NODEEXISTS create in multi: %+v", after)
	}
	checkInvariants(t, a.tr)
}

func TestDelete(t *testing.T) {
	a := newApplier(t)
	a.create("/p", "")
	a.create("/p/a", "data")
	a.create("/p/b", "")
	a.setACL("/p/a", digestACL)
	key := a.tr.Get("/p/a").ACL
	before := a.stored("/p")
	cvBefore := a.stat("/p").Cversion

	r := a.del("/p/a")
	requireOK(t, r)
	if r.Type != jute.OpDelete || r.Path != "/p/a" {
		t.Errorf("result %+v", r)
	}
	requireEvents(t, r.Events, ev(jute.EventNodeDeleted, "/p/a"), ev(jute.EventNodeChildrenChanged, "/p"))
	if a.tr.Get("/p/a") != nil || slices.Contains(a.tr.Get("/p").Children(), "a") {
		t.Error("node still present")
	}
	after := a.stored("/p")
	if after.Cversion != before.Cversion {
		t.Errorf("stored cversion changed on delete: %d -> %d", before.Cversion, after.Cversion)
	}
	if after.Pzxid != a.zxid {
		t.Errorf("pzxid %#x, want %#x", after.Pzxid, a.zxid)
	}
	if after.Mzxid != before.Mzxid || after.Mtime != before.Mtime || after.Version != before.Version {
		t.Errorf("delete touched the parent's data fields: %+v", after)
	}
	if cv := a.stat("/p").Cversion; cv != cvBefore+1 {
		t.Errorf("client cversion %d, want %d", cv, cvBefore+1)
	}
	if _, ok := a.tr.ACLs()[key]; ok {
		t.Error("the deleted node's only ACL reference is still in the table")
	}
	checkInvariants(t, a.tr)

	// deleteContainer (type 20) uses DeleteTxn and clientId 0.
	a.createContainer("/p/c")
	h := a.hdr(jute.OpDeleteContainer)
	h.ClientID = 0
	r = a.tr.Apply(h, &jute.DeleteTxn{Path: "/p/c"})
	requireOK(t, r)
	requireEvents(t, r.Events, ev(jute.EventNodeDeleted, "/p/c"), ev(jute.EventNodeChildrenChanged, "/p"))
	if len(a.tr.containers) != 0 {
		t.Errorf("containers %v", a.tr.containers)
	}

	// Replayed out of order, pzxid only moves forward.
	a.create("/p/late", "")
	high := a.stored("/p").Pzxid
	h = a.hdr(jute.OpDelete)
	h.Zxid = high - 1
	requireOK(t, a.tr.Apply(h, &jute.DeleteTxn{Path: "/p/late"}))
	if got := a.stored("/p").Pzxid; got != high {
		t.Errorf("pzxid moved back to %#x from %#x", got, high)
	}
	if a.tr.LastZxid() != a.zxid-1 {
		t.Errorf("LastZxid moved back: %#x", a.tr.LastZxid())
	}
	checkInvariants(t, a.tr)
}

func TestDeleteMissing(t *testing.T) {
	a := newApplier(t)
	a.create("/p", "")
	a.create("/p/x", "")
	snap := cloneTree(t, a.tr)

	r := a.del("/nope/x")
	if r.Err != jute.ErrNoNode || len(r.Events) != 0 {
		t.Errorf("delete under missing parent: %+v", r)
	}
	requireEqualTrees(t, snap, a.tr)
	r = a.del("/")
	if r.Err != jute.ErrNoNode || a.tr.Get("/") == nil {
		t.Errorf("delete of the root: %+v", r)
	}

	// DataTree.deleteNode (3.8.0) updates the parent's pzxid before it finds the child missing
	// ("the child might already be deleted during taking fuzzy snapshot"): ZOOKEEPER-3145.
	before := a.stored("/p")
	r = a.del("/p/gone")
	if r.Err != jute.ErrNoNode || len(r.Events) != 0 {
		t.Errorf("delete of missing child: %+v", r)
	}
	after := a.stored("/p")
	if after.Pzxid != a.zxid || after.Cversion != before.Cversion {
		t.Errorf("parent after deleting a missing child: pzxid %#x cversion %d; ZooKeeper pzxid %#x cversion %d",
			after.Pzxid, after.Cversion, a.zxid, before.Cversion)
	}
	checkInvariants(t, a.tr)
	// ... but still only forwards.
	h := a.hdr(jute.OpDelete)
	h.Zxid = 1
	a.tr.Apply(h, &jute.DeleteTxn{Path: "/p/gone"})
	if got := a.stored("/p").Pzxid; got != after.Pzxid {
		t.Errorf("pzxid moved back to %#x", got)
	}
	checkInvariants(t, a.tr)
}

func TestSetData(t *testing.T) {
	a := newApplier(t)
	a.create("/a", "one")
	a.create("/a/c", "")
	c := a.stored("/a")
	// The logged version is the new version: it is stored as is, not incremented.
	r := a.apply(jute.OpSetData, &jute.SetDataTxn{Path: "/a", Data: []byte("second"), Version: 7})
	requireOK(t, r)
	s := a.stored("/a")
	want := c
	want.Version, want.Mzxid, want.Mtime = 7, a.zxid, a.time
	if s != want {
		t.Errorf("stat after setData\n  got  %+v\n  want %+v", s, want)
	}
	if r.Path != "/a" || r.Stat != a.stat("/a") || r.Stat.DataLength != 6 || r.Stat.NumChildren != 1 {
		t.Errorf("result %+v", r)
	}
	requireEvents(t, r.Events, ev(jute.EventNodeDataChanged, "/a"))
	if string(a.tr.Get("/a").Data) != "second" {
		t.Errorf("data %q", a.tr.Get("/a").Data)
	}
	// Null data.
	requireOK(t, a.apply(jute.OpSetData, &jute.SetDataTxn{Path: "/a", Data: nil, Version: 8}))
	if a.tr.Get("/a").Data != nil || a.stat("/a").DataLength != 0 {
		t.Error("null data not kept")
	}
	checkInvariants(t, a.tr)

	snap := cloneTree(t, a.tr)
	r = a.apply(jute.OpSetData, &jute.SetDataTxn{Path: "/nope", Data: []byte("x"), Version: 1})
	if r.Err != jute.ErrNoNode || len(r.Events) != 0 {
		t.Errorf("setData of missing node: %+v", r)
	}
	requireEqualTrees(t, snap, a.tr)

	// reconfig (16) logs a SetDataTxn for /zookeeper/config; paths under /zookeeper/ are not
	// in the digest.
	d := a.tr.Digest()
	r = a.apply(jute.OpReconfig, &jute.SetDataTxn{Path: ConfigPath, Data: []byte("server.1=h:1:2:participant;0.0.0.0:2181\nversion=100000000"), Version: 1})
	requireOK(t, r)
	requireEvents(t, r.Events, ev(jute.EventNodeDataChanged, ConfigPath))
	if a.tr.Digest() != d {
		t.Error("reconfig changed the digest")
	}
	if st := a.stat(ConfigPath); st.Version != 1 || st.Mzxid != a.zxid || st.Aversion != -1 {
		t.Errorf("config stat %+v", st)
	}
	checkInvariants(t, a.tr)
}

func TestSetACL(t *testing.T) {
	a := newApplier(t)
	a.create("/a", "x")
	a.create("/b", "x")
	before := a.stored("/a")
	r := a.apply(jute.OpSetACL, &jute.SetACLTxn{Path: "/a", ACL: digestACL, Version: 5})
	requireOK(t, r)
	if len(r.Events) != 0 {
		t.Errorf("setACL fired %v", r.Events)
	}
	s := a.stored("/a")
	want := before
	want.Aversion = 5
	if s != want {
		t.Errorf("stat after setACL\n  got  %+v\n  want %+v (mzxid/mtime unchanged)", s, want)
	}
	if r.Stat != a.stat("/a") || r.Path != "/a" {
		t.Errorf("result %+v", r)
	}
	k := a.tr.Get("/a").ACL
	if !slices.Equal(a.tr.ACL(k), digestACL) || !slices.Equal(a.tr.ACLs()[k], digestACL) {
		t.Errorf("acl %v", a.tr.ACL(k))
	}
	// Equal lists share one key.
	a.setACL("/b", digestACL)
	if a.tr.Get("/b").ACL != k {
		t.Errorf("equal lists got keys %d and %d", k, a.tr.Get("/b").ACL)
	}
	checkInvariants(t, a.tr)
	// The list goes when its last user changes away.
	a.setACL("/a", readACL)
	if _, ok := a.tr.ACLs()[k]; !ok {
		t.Error("list dropped while /b still uses it")
	}
	a.setACL("/b", readACL)
	if _, ok := a.tr.ACLs()[k]; ok {
		t.Error("unused list still in the table")
	}
	// Setting the same list again keeps things consistent.
	a.setACL("/b", readACL)
	checkInvariants(t, a.tr)

	snap := cloneTree(t, a.tr)
	r = a.apply(jute.OpSetACL, &jute.SetACLTxn{Path: "/nope", ACL: digestACL, Version: 1})
	if r.Err != jute.ErrNoNode || len(r.Events) != 0 {
		t.Errorf("setACL of missing node: %+v", r)
	}
	requireEqualTrees(t, snap, a.tr)
	checkInvariants(t, a.tr)
}

func TestCloseSession(t *testing.T) {
	const s1, s2 = 0x100, 0x200
	setup := func(t *testing.T) *applier {
		a := newApplier(t)
		a.create("/p", "")
		for _, c := range []struct {
			s int64
			p string
		}{{s1, "/p/e1"}, {s1, "/p/e2"}, {s1, "/e3"}, {s2, "/p/f1"}} {
			a.session = c.s
			a.createEph(c.p)
		}
		a.session = s1
		return a
	}
	type key struct {
		typ  jute.EventType
		path string
	}
	deletes := func(paths ...string) map[key]bool {
		m := map[key]bool{}
		for _, p := range paths {
			m[key{jute.EventNodeDeleted, p}] = true
			m[key{jute.EventNodeChildrenChanged, Parent(p)}] = true
		}
		return m
	}
	eventSet := func(evs []Event) map[key]bool {
		m := map[key]bool{}
		for _, e := range evs {
			m[key{e.Type, e.Path}] = true
		}
		return m
	}
	cases := []struct {
		name string
		body *jute.CloseSessionTxn
	}{
		{"listed", &jute.CloseSessionTxn{Paths2Delete: []string{"/e3", "/p/e1", "/p/e2"}}},
		// ZooKeeper also deletes the session's ephemerals the txn does not list.
		{"partly listed", &jute.CloseSessionTxn{Paths2Delete: []string{"/p/e2"}}},
		{"listed path already gone", &jute.CloseSessionTxn{Paths2Delete: []string{"/p/e1", "/p/e2", "/e3", "/p/none"}}},
		{"no body", &jute.CloseSessionTxn{NoBody: true}},
		{"empty list", &jute.CloseSessionTxn{Paths2Delete: []string{}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := setup(t)
			r := a.apply(jute.OpCloseSession, c.body)
			requireOK(t, r)
			for _, p := range []string{"/p/e1", "/p/e2", "/e3"} {
				if a.tr.Get(p) != nil {
					t.Errorf("%s survived", p)
				}
			}
			if a.tr.Get("/p/f1") == nil || !slices.Equal(a.tr.Ephemerals(s2), []string{"/p/f1"}) {
				t.Error("another session's ephemeral was touched")
			}
			if len(a.tr.Ephemerals(s1)) != 0 {
				t.Errorf("Ephemerals(s1) = %v", a.tr.Ephemerals(s1))
			}
			if _, ok := a.tr.EphemeralSessions()[s1]; ok {
				t.Error("session still listed")
			}
			if got, want := eventSet(r.Events), deletes("/p/e1", "/p/e2", "/e3"); len(got) != len(want) {
				t.Errorf("events %v", r.Events)
			} else {
				for e := range want {
					if !got[e] {
						t.Errorf("missing event %v in %v", e, r.Events)
					}
				}
			}
			// Each delete reports its NodeDeleted before its parent's NodeChildrenChanged.
			for i := 0; i+1 < len(r.Events); i += 2 {
				if r.Events[i].Type != jute.EventNodeDeleted || r.Events[i+1].Type != jute.EventNodeChildrenChanged || r.Events[i+1].Path != Parent(r.Events[i].Path) {
					t.Errorf("event pair %v %v", r.Events[i], r.Events[i+1])
				}
			}
			if a.stored("/p").Pzxid != a.zxid || a.stored("/").Pzxid != a.zxid {
				t.Error("parents' pzxid not set to the closeSession zxid")
			}
			checkInvariants(t, a.tr)
		})
	}
	t.Run("session without ephemerals", func(t *testing.T) {
		a := setup(t)
		snap := cloneTree(t, a.tr)
		a.session = 0x999
		r := a.apply(jute.OpCloseSession, &jute.CloseSessionTxn{})
		requireOK(t, r)
		if len(r.Events) != 0 {
			t.Errorf("events %v", r.Events)
		}
		requireEqualTrees(t, snap, a.tr)
	})
}

func TestNoOpTxns(t *testing.T) {
	a := newApplier(t)
	a.create("/a", "x")
	snap := cloneTree(t, a.tr)
	for _, c := range []struct {
		typ  jute.OpCode
		body jute.Record
		err  jute.Code
	}{
		{jute.OpError, &jute.ErrorTxn{Err: jute.ErrBadVersion}, jute.ErrBadVersion},
		{jute.OpError, &jute.ErrorTxn{Err: jute.ErrNoNode}, jute.ErrNoNode},
		{jute.OpCreateSession, &jute.CreateSessionTxn{TimeOut: 30000}, jute.OK},
		// A top-level check, logged by the buggy 3.8.0 (golden 04).
		{jute.OpCheck, &jute.CheckVersionTxn{Path: "/a", Version: 3}, jute.OK},
	} {
		r := a.apply(c.typ, c.body)
		if r.Err != c.err || r.Type != c.typ || len(r.Events) != 0 {
			t.Errorf("%v: %+v", c.typ, r)
		}
		if a.tr.LastZxid() != a.zxid {
			t.Errorf("%v: LastZxid %#x, want %#x", c.typ, a.tr.LastZxid(), a.zxid)
		}
	}
	requireEqualTrees(t, snap, a.tr)
}

func TestMultiSuccess(t *testing.T) {
	a := newApplier(t)
	a.create("/pre", "")
	h := a.hdr(jute.OpMulti)
	z := h.Zxid
	m := &jute.MultiTxn{Txns: []jute.Txn{
		sub(jute.OpCreate, &jute.CreateTxn{Path: "/m", Data: []byte("a"), ACL: jute.OpenACLUnsafe, ParentCVersion: 2}),
		sub(jute.OpCreate2, &jute.CreateTxn{Path: "/m/c", Data: []byte{}, ACL: digestACL, ParentCVersion: 1}),
		sub(jute.OpSetData, &jute.SetDataTxn{Path: "/m", Data: []byte("bb"), Version: 1}),
		sub(jute.OpCheck, &jute.CheckVersionTxn{Path: "/m", Version: 1}),
		sub(jute.OpDelete, &jute.DeleteTxn{Path: "/pre"}),
		sub(jute.OpCreateContainer, &jute.CreateContainerTxn{Path: "/m/k", Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: 2}),
		sub(jute.OpCreateTTL, &jute.CreateTTLTxn{Path: "/m/t", Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: 3, TTL: 10}),
		sub(jute.OpDelete, &jute.DeleteTxn{Path: "/m/c"}),
	}}
	r := a.tr.Apply(h, m)
	if r.Err != jute.OK || r.Type != jute.OpMulti {
		t.Fatalf("multi: %+v", r)
	}
	wantTypes := []jute.OpCode{jute.OpCreate, jute.OpCreate2, jute.OpSetData, jute.OpCheck, jute.OpDelete, jute.OpCreateContainer, jute.OpCreateTTL, jute.OpDelete}
	wantPaths := []string{"/m", "/m/c", "/m", "/m", "/pre", "/m/k", "/m/t", "/m/c"}
	if len(r.Multi) != len(wantTypes) {
		t.Fatalf("%d results", len(r.Multi))
	}
	for i, res := range r.Multi {
		if res.Type != wantTypes[i] || res.Err != jute.OK || (res.Path != wantPaths[i] && res.Type != jute.OpCheck) {
			t.Errorf("result %d: %+v", i, res)
		}
	}
	// Later ops see earlier ones: the setData result carries the create's czxid.
	if s := r.Multi[2].Stat; s.Czxid != z || s.Mzxid != z || s.Version != 1 || s.DataLength != 2 {
		t.Errorf("setData result stat %+v", s)
	}
	if s := r.Multi[1].Stat; s.Czxid != z || s.EphemeralOwner != 0 {
		t.Errorf("create2 result stat %+v", s)
	}
	requireEvents(t, r.Events,
		ev(jute.EventNodeCreated, "/m"), ev(jute.EventNodeChildrenChanged, "/"),
		ev(jute.EventNodeCreated, "/m/c"), ev(jute.EventNodeChildrenChanged, "/m"),
		ev(jute.EventNodeDataChanged, "/m"),
		ev(jute.EventNodeDeleted, "/pre"), ev(jute.EventNodeChildrenChanged, "/"),
		ev(jute.EventNodeCreated, "/m/k"), ev(jute.EventNodeChildrenChanged, "/m"),
		ev(jute.EventNodeCreated, "/m/t"), ev(jute.EventNodeChildrenChanged, "/m"),
		ev(jute.EventNodeDeleted, "/m/c"), ev(jute.EventNodeChildrenChanged, "/m"),
	)
	// One zxid for everything.
	for _, p := range []string{"/m", "/m/k", "/m/t"} {
		if s := a.stored(p); s.Czxid != z || s.Ctime != h.Time {
			t.Errorf("%s: czxid %#x ctime %d", p, s.Czxid, s.Ctime)
		}
	}
	if s := a.stored("/m"); s.Cversion != 3 || s.Pzxid != z || s.Version != 1 {
		t.Errorf("/m: %+v", s)
	}
	if a.tr.Get("/pre") != nil || a.tr.Get("/m/c") != nil {
		t.Error("deletes not applied")
	}
	if a.tr.LastZxid() != z {
		t.Errorf("LastZxid %#x", a.tr.LastZxid())
	}
	checkInvariants(t, a.tr)
}

func TestMultiFailure(t *testing.T) {
	cases := []struct {
		name string
		txns []jute.Txn
		errs []jute.Code
	}{
		// As ZooKeeper logs it (g06 entry 6): ops before the failure keep their real type,
		// the failing op is an error with its code, later ops are errors with -2.
		{"logged", []jute.Txn{
			sub(jute.OpCreate, &jute.CreateTxn{Path: "/x", Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: 2}),
			sub(jute.OpSetData, &jute.SetDataTxn{Path: "/a", Data: []byte("z"), Version: 1}),
			errSub(jute.ErrNoNode),
			errSub(jute.ErrRuntimeInconsistency),
		}, []jute.Code{jute.OK, jute.OK, jute.ErrNoNode, jute.ErrRuntimeInconsistency}},
		{"first op fails", []jute.Txn{
			errSub(jute.ErrBadVersion),
			errSub(jute.ErrRuntimeInconsistency),
		}, []jute.Code{jute.ErrBadVersion, jute.ErrRuntimeInconsistency}},
		// DataTree.processTxn: after the first error sub-txn, non-error sub-txns become
		// ErrorTxn(RUNTIMEINCONSISTENCY), before it ErrorTxn(OK).
		{"real ops after the failure", []jute.Txn{
			sub(jute.OpCreate, &jute.CreateTxn{Path: "/x", Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: 2}),
			errSub(jute.ErrNodeExists),
			sub(jute.OpDelete, &jute.DeleteTxn{Path: "/a"}),
			sub(jute.OpCheck, &jute.CheckVersionTxn{Path: "/a", Version: 0}),
		}, []jute.Code{jute.OK, jute.ErrNodeExists, jute.ErrRuntimeInconsistency, jute.ErrRuntimeInconsistency}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newApplier(t)
			a.create("/a", "")
			snap := cloneTree(t, a.tr)
			r := a.apply(jute.OpMulti, &jute.MultiTxn{Txns: c.txns})
			if r.Type != jute.OpMulti || len(r.Events) != 0 {
				t.Errorf("result %+v", r)
			}
			first := jute.OK
			for _, e := range c.errs {
				if e != jute.OK {
					first = e
					break
				}
			}
			if r.Err != first {
				t.Errorf("Err %v, want %v", r.Err, first)
			}
			var got []jute.Code
			for _, m := range r.Multi {
				got = append(got, m.Err)
				if m.Type != jute.OpError {
					t.Errorf("sub-result type %v, want error", m.Type)
				}
			}
			if !slices.Equal(got, c.errs) {
				t.Errorf("sub-results %v, want %v", got, c.errs)
			}
			requireEqualTrees(t, snap, a.tr)
			if a.tr.LastZxid() != a.zxid {
				t.Error("failed multi did not advance LastZxid")
			}
		})
	}
}

// Replaying a multi whose effects a fuzzy snapshot already holds: each sub-txn applies on its
// own, failures are reported per op and the rest still apply.
func TestMultiReplaySubErrors(t *testing.T) {
	a := newApplier(t)
	a.create("/a", "")
	r := a.apply(jute.OpMulti, &jute.MultiTxn{Txns: []jute.Txn{
		sub(jute.OpCreate2, &jute.CreateTxn{Path: "/a", Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: 1}),
		sub(jute.OpCreate, &jute.CreateTxn{Path: "/b", Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: 3}),
		sub(jute.OpDelete, &jute.DeleteTxn{Path: "/nope"}),
	}})
	if r.Err != jute.ErrNodeExists {
		t.Errorf("Err %v", r.Err)
	}
	want := []jute.Code{jute.ErrNodeExists, jute.OK, jute.ErrNoNode}
	for i, m := range r.Multi {
		if m.Err != want[i] {
			t.Errorf("sub %d: %v, want %v", i, m.Err, want[i])
		}
	}
	if a.tr.Get("/b") == nil {
		t.Error("/b not created")
	}
	requireEvents(t, r.Events, ev(jute.EventNodeCreated, "/b"), ev(jute.EventNodeChildrenChanged, "/"))
	checkInvariants(t, a.tr)
}

func TestExpiryCandidates(t *testing.T) {
	a := newApplier(t)
	a.createContainer("/used")
	a.create("/used/c", "")
	requireOK(t, a.del("/used/c")) // cversion 1, no children: a candidate
	a.createContainer("/never")    // never had a child: not a candidate
	a.createContainer("/busy")
	a.create("/busy/c", "") // has a child: not a candidate
	a.createTTL("/ttl", 1000)
	ttlMtime := a.time
	a.createTTL("/ttlkids", 1000)
	a.create("/ttlkids/c", "")
	a.create("/plain", "")
	requireOK(t, a.setData("/plain", "x"))

	check := func(now int64, limit int, want ...string) {
		t.Helper()
		got := a.tr.ExpiryCandidates(now, limit)
		if want == nil {
			want = []string{}
		}
		if got == nil {
			got = []string{}
		}
		if !slices.Equal(got, want) {
			t.Errorf("ExpiryCandidates(now+%d, %d) = %v, want %v", now-ttlMtime, limit, got, want)
		}
	}
	check(ttlMtime, 100, "/used")
	check(ttlMtime+1000, 100, "/used") // elapsed must exceed the TTL
	check(ttlMtime+1001, 100, "/ttl", "/used")
	if got := a.tr.ExpiryCandidates(ttlMtime+1001, 1); len(got) != 1 {
		t.Errorf("limit 1: %v", got)
	}
	check(ttlMtime+1001, 0)

	// setData resets the TTL clock.
	requireOK(t, a.setData("/ttl", "again"))
	check(ttlMtime+1001, 100, "/used")
	check(a.time+1001, 100, "/ttl", "/used")

	// Emptying /busy makes it a candidate; deleting the candidates removes them.
	requireOK(t, a.del("/busy/c"))
	requireOK(t, a.del("/ttlkids/c"))
	check(a.time+1001, 100, "/busy", "/ttl", "/ttlkids", "/used")
	requireOK(t, a.del("/used"))
	check(a.time+1001, 100, "/busy", "/ttl", "/ttlkids")

	// Without extended types a TTL owner is a session id, never a TTL candidate.
	b := newApplier(t)
	b.tr.ExtendedTypes = false
	b.createTTL("/ttl", 1)
	if got := b.tr.ExpiryCandidates(b.time+1000, 10); len(got) != 0 {
		t.Errorf("without extended types: %v", got)
	}
}

func TestCountDescendants(t *testing.T) {
	a := newApplier(t)
	a.create("/a", "")
	a.create("/a/b", "")
	a.create("/a/b/c", "")
	a.create("/a/d", "")
	a.create("/ab", "")
	for _, c := range []struct {
		path string
		want int
	}{
		{"/", a.tr.NodeCount() - 1}, // getAllChildrenNumber("/") = nodes.size() - 2 ("" and "/")
		{"/a", 3},
		{"/a/b", 1},
		{"/a/b/c", 0},
		{"/ab", 0},
		{"/zookeeper", 2},
		{"/nope", 0},
	} {
		if got := a.tr.CountDescendants(c.path); got != c.want {
			t.Errorf("CountDescendants(%s) = %d, want %d", c.path, got, c.want)
		}
	}
}

func TestApproximateDataSize(t *testing.T) {
	a := newApplier(t)
	if got := a.tr.ApproximateDataSize(); got != zkDataSize(a.tr) {
		t.Errorf("New(): %d, ZooKeeper %d", got, zkDataSize(a.tr))
	}
	a.create("/abc", "12345")
	a.create("/abc/d", "")
	requireOK(t, a.setData("/abc", "12"))
	a.mustOK(a.apply(jute.OpCreate, &jute.CreateTxn{Path: "/nul", ACL: jute.OpenACLUnsafe, ParentCVersion: a.pcv("/nul")}))
	requireOK(t, a.del("/abc/d"))
	if got := a.tr.ApproximateDataSize(); got != zkDataSize(a.tr) {
		t.Errorf("after ops: %d, ZooKeeper %d", got, zkDataSize(a.tr))
	}
	// Java's String.length() counts UTF-16 units: "/é" is 2, "/😀" is 3.
	before := a.tr.ApproximateDataSize()
	a.create("/é", "")
	a.create("/é/\U0001F600", "")
	if got := a.tr.ApproximateDataSize() - before; got != 2+5 {
		t.Errorf("non-ASCII paths added %d, ZooKeeper adds 7", got)
	}
	requireOK(t, a.del("/é/\U0001F600"))
	requireOK(t, a.del("/é"))
	if got := a.tr.ApproximateDataSize(); got != before {
		t.Errorf("after deleting: %d, want %d", got, before)
	}
}

// cloneTree copies a tree through a walk and the loader, for before/after comparisons.
func cloneTree(tb testing.TB, t *Tree) *Tree {
	tb.Helper()
	w := t.Walk()
	nodes, done := w.Next(1<<30, nil)
	if !done {
		tb.Fatal("walk not done")
	}
	acls := t.ACLs()
	w.Close()
	l := NewLoader()
	for k, v := range acls {
		l.ACL(k, v)
	}
	for _, n := range nodes {
		if err := l.Node(n); err != nil {
			tb.Fatal(err)
		}
	}
	c, err := l.Finish(t.ExtendedTypes, t.LastZxid())
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// ZooKeeper's DataTree keeps /zookeeper/quota<path>/zookeeper_stats up to date in memory,
// without txns: creating the stats node computes the subtree's count (the quota root
// included) and bytes, and later creates, deletes and setData under the longest quota'd
// prefix adjust it (updateQuotaForPath, updateQuotaStat). Loading a snapshot recomputes it
// (setupQuota). Golden 07 shows the result: count=2,bytes=11 for /golden.
func TestQuotaStats(t *testing.T) {
	a := newApplier(t)
	a.create("/q", "abc")
	a.create("/q/a", "xy")
	a.create("/qx", "outside")
	const stats = "/zookeeper/quota/q/zookeeper_stats"
	statsOf := func() string {
		t.Helper()
		n := a.tr.Get(stats)
		if n == nil {
			t.Fatal("no stats node")
		}
		return string(n.Data)
	}
	check := func(want string) {
		t.Helper()
		if got := statsOf(); got != want {
			t.Errorf("stats %q, want %q", got, want)
		}
	}
	// What setquota logs: the quota node, the limits, then stats with zeros.
	a.mustOK(a.apply(jute.OpCreate, &jute.CreateTxn{Path: "/zookeeper/quota/q", ACL: jute.OpenACLUnsafe, ParentCVersion: a.pcv("/zookeeper/quota/q")}))
	a.create("/zookeeper/quota/q/zookeeper_limits", "count=10,bytes=-1")
	d := a.tr.Digest()
	a.create(stats, "count=0,bytes=0")
	check("count=2,bytes=5")
	if a.tr.Digest() != d {
		t.Error("the digest covers /zookeeper/quota")
	}
	a.create("/q/b", "1234")
	check("count=3,bytes=9")
	requireOK(t, a.setData("/q/a", "x"))
	check("count=3,bytes=8")
	a.create("/q/b/c", "")
	check("count=4,bytes=8")
	requireOK(t, a.del("/q/b/c"))
	requireOK(t, a.del("/q/b"))
	check("count=2,bytes=4")
	// Not under /q.
	a.create("/qx/y", "zz")
	requireOK(t, a.setData("/qx", ""))
	check("count=2,bytes=4")

	// A nested quota takes the changes below it.
	a.create("/q/n", "")
	check("count=3,bytes=4")
	a.mustOK(a.apply(jute.OpCreate, &jute.CreateTxn{Path: "/zookeeper/quota/q/n", ACL: jute.OpenACLUnsafe, ParentCVersion: a.pcv("/zookeeper/quota/q/n")}))
	a.create("/zookeeper/quota/q/n/zookeeper_limits", "count=-1,bytes=100")
	a.create("/zookeeper/quota/q/n/zookeeper_stats", "count=0,bytes=0")
	a.create("/q/n/m", "12")
	check("count=3,bytes=4")
	if got := string(a.tr.Get("/zookeeper/quota/q/n/zookeeper_stats").Data); got != "count=2,bytes=2" {
		t.Errorf("nested stats %q", got)
	}

	// A snapshot carries whatever the stats node held; loading recomputes it over the whole
	// subtree, nested quota included (setupQuota -> updateQuotaForPath), unlike the
	// incremental updates above.
	requireOK(t, a.apply(jute.OpSetData, &jute.SetDataTxn{Path: stats, Data: []byte("count=99,bytes=99"), Version: 1}))
	loaded := cloneTree(t, a.tr)
	if got := string(loaded.Get(stats).Data); got != "count=4,bytes=6" {
		t.Errorf("stats after load %q, want count=4,bytes=6", got)
	}
	if got := string(loaded.Get("/zookeeper/quota/q/n/zookeeper_stats").Data); got != "count=2,bytes=2" {
		t.Errorf("nested stats after load %q", got)
	}

	// Without the limits node the path is no longer tracked.
	requireOK(t, a.del("/zookeeper/quota/q/zookeeper_limits"))
	before := statsOf()
	a.create("/q/z", "zzz")
	check(before)
}

// TestReplayModeKeepsTheSameTree: a tree replayed with BeginReplay/EndReplay ends with the
// same nodes and digest as one that kept its digest change by change.
func TestReplayModeKeepsTheSameTree(t *testing.T) {
	live, replayed := New(), New()
	replayed.BeginReplay()
	for i := int64(1); i <= 200; i++ {
		p := fmt.Sprintf("/n%d", i%37)
		var hdr jute.TxnHeader
		var body jute.Record
		switch i % 4 {
		case 0, 1:
			hdr, body = jute.TxnHeader{Zxid: i, Time: i, Type: jute.OpCreate}, &jute.CreateTxn{Path: p, Data: []byte{byte(i)}, ACL: jute.OpenACLUnsafe, ParentCVersion: -1, V0: true}
		case 2:
			hdr, body = jute.TxnHeader{Zxid: i, Time: i, Type: jute.OpSetData}, &jute.SetDataTxn{Path: p, Data: []byte{byte(i), 1}, Version: int32(i)}
		default:
			hdr, body = jute.TxnHeader{Zxid: i, Time: i, Type: jute.OpDelete}, &jute.DeleteTxn{Path: p}
		}
		live.Apply(&hdr, body)
		replayed.Apply(&hdr, body)
	}
	replayed.EndReplay()
	if live.Digest() != replayed.Digest() || live.NodeCount() != replayed.NodeCount() {
		t.Fatalf("digest %x vs %x, nodes %d vs %d", live.Digest(), replayed.Digest(), live.NodeCount(), replayed.NodeCount())
	}
	checkInvariants(t, replayed)
}

// TestEventOrder: the events of one txn come in ZooKeeper's order: per op, the node's own
// event before its parent's NodeChildrenChanged (DataTree.createNode/deleteNode); a multi's
// ops one after another in op order (DataTree.processTxn of a MultiTxn); a closeSession's
// deletes in the order its txn lists them (which prep makes ZooKeeper's), not sorted.
func TestEventOrder(t *testing.T) {
	a := newApplier(t)
	a.create("/p", "")
	r := a.mustOK(a.apply(jute.OpMulti, &jute.MultiTxn{Txns: []jute.Txn{
		sub(jute.OpCreate, &jute.CreateTxn{Path: "/p/b", ACL: jute.OpenACLUnsafe, ParentCVersion: 1}),
		sub(jute.OpSetData, &jute.SetDataTxn{Path: "/p", Data: []byte("x"), Version: 1}),
		sub(jute.OpCreate, &jute.CreateTxn{Path: "/p/a", ACL: jute.OpenACLUnsafe, ParentCVersion: 2}),
		sub(jute.OpDelete, &jute.DeleteTxn{Path: "/p/b"}),
	}}))
	requireEvents(t, r.Events,
		ev(jute.EventNodeCreated, "/p/b"), ev(jute.EventNodeChildrenChanged, "/p"),
		ev(jute.EventNodeDataChanged, "/p"),
		ev(jute.EventNodeCreated, "/p/a"), ev(jute.EventNodeChildrenChanged, "/p"),
		ev(jute.EventNodeDeleted, "/p/b"), ev(jute.EventNodeChildrenChanged, "/p"))

	for _, p := range []string{"/p/e1", "/p/zz", "/p/q7"} {
		a.createEph(p)
	}
	r = a.apply(jute.OpCloseSession, &jute.CloseSessionTxn{Paths2Delete: []string{"/p/q7", "/p/e1", "/p/zz"}})
	requireEvents(t, r.Events,
		ev(jute.EventNodeDeleted, "/p/q7"), ev(jute.EventNodeChildrenChanged, "/p"),
		ev(jute.EventNodeDeleted, "/p/e1"), ev(jute.EventNodeChildrenChanged, "/p"),
		ev(jute.EventNodeDeleted, "/p/zz"), ev(jute.EventNodeChildrenChanged, "/p"))
}

// Each event carries the ACL ZooKeeper passes to triggerWatch (DataTree 3.9.2+,
// CVE-2024-23944): the node's for its own events, the parent's for NodeChildrenChanged, the
// deleted node's for NodeDeleted (even when that was the last node with that ACL), and inside
// a multi the ACL at the moment of each sub-txn.
func TestEventACLs(t *testing.T) {
	a := newApplier(t)
	secret := []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "digest", ID: "only:me"}}}
	other := []jute.ACL{{Perms: jute.PermRead, ID: jute.ID{Scheme: "ip", ID: "10.0.0.1"}}}
	type want struct {
		typ  jute.EventType
		path string
		acl  []jute.ACL
	}
	check := func(step string, r Result, ws ...want) {
		t.Helper()
		if len(r.Events) != len(ws) {
			t.Fatalf("%s: events %v, want %d", step, r.Events, len(ws))
		}
		for i, w := range ws {
			e := r.Events[i]
			if e.Type != w.typ || e.Path != w.path || !slices.Equal(e.ACL, w.acl) {
				t.Errorf("%s: event %d = %v, want %v %s %v", step, i, e, w.typ, w.path, w.acl)
			}
		}
	}

	a.create("/p", "")
	r := a.mustOK(a.apply(jute.OpCreate, &jute.CreateTxn{Path: "/p/s", ACL: secret, ParentCVersion: a.pcv("/p/s")}))
	check("create", r, want{jute.EventNodeCreated, "/p/s", secret}, want{jute.EventNodeChildrenChanged, "/p", jute.OpenACLUnsafe})
	check("setData", a.mustOK(a.setData("/p/s", "x")), want{jute.EventNodeDataChanged, "/p/s", secret})

	a.mustOK(a.setACL("/p", other))
	check("delete", a.mustOK(a.del("/p/s")), want{jute.EventNodeDeleted, "/p/s", secret}, want{jute.EventNodeChildrenChanged, "/p", other})

	a.create("/m", "")
	r = a.mustOK(a.apply(jute.OpMulti, &jute.MultiTxn{Txns: []jute.Txn{
		sub(jute.OpSetData, &jute.SetDataTxn{Path: "/m", Data: []byte("1"), Version: 1}),
		sub(jute.OpSetACL, &jute.SetACLTxn{Path: "/m", ACL: secret, Version: 1}),
		sub(jute.OpSetData, &jute.SetDataTxn{Path: "/m", Data: []byte("2"), Version: 2}),
	}}))
	check("multi", r, want{jute.EventNodeDataChanged, "/m", jute.OpenACLUnsafe}, want{jute.EventNodeDataChanged, "/m", secret})

	// The built-in nodes have no key in the table; /zookeeper/config is world:anyone READ.
	check("config", a.mustOK(a.setData(ConfigPath, "c")), want{jute.EventNodeDataChanged, ConfigPath, readACL})
}

// ApplyTo appends the txn's events to the slice it is given, so a caller reusing one slice
// gets the same events Apply reports, without a list allocated per txn.
func TestApplyToReusesEvents(t *testing.T) {
	a := newApplier(t)
	a.create("/a", "x")
	buf := make([]Event, 0, 4)
	hdr := a.hdr(jute.OpSetData)
	r := a.tr.ApplyTo(hdr, &jute.SetDataTxn{Path: "/a", Data: []byte("y"), Version: 1}, buf)
	if r.Err != jute.OK || len(r.Events) != 1 || r.Events[0].Type != jute.EventNodeDataChanged || r.Events[0].Path != "/a" {
		t.Fatalf("ApplyTo: %+v", r)
	}
	if &r.Events[0] != &buf[:1][0] {
		t.Fatal("ApplyTo did not append to the slice it was given")
	}
}

// TestSharedChildrenCopyOnWrite: a list handed out by SharedChildren keeps its names while
// the tree deletes and creates children (a reply is encoded from it on another goroutine).
func TestSharedChildrenCopyOnWrite(t *testing.T) {
	a := newApplier(t)
	a.create("/p", "")
	for _, c := range []string{"a", "b", "c", "d"} {
		a.create("/p/"+c, "")
	}
	shared := a.tr.Get("/p").SharedChildren()
	want := slices.Clone(shared)
	requireOK(t, a.del("/p/a")) // the last name moves into a's place
	a.create("/p/e", "")
	requireOK(t, a.del("/p/c"))
	if !slices.Equal(shared, want) {
		t.Fatalf("shared list changed to %q, want %q", shared, want)
	}
	got := a.tr.Get("/p").Children()
	slices.Sort(got)
	if !slices.Equal(got, []string{"b", "d", "e"}) {
		t.Fatalf("children %q, want b d e", got)
	}
	// A second share after the copy is protected as well.
	shared = a.tr.Get("/p").SharedChildren()
	want = slices.Clone(shared)
	requireOK(t, a.del("/p/b"))
	if !slices.Equal(shared, want) {
		t.Fatalf("second shared list changed to %q, want %q", shared, want)
	}
}
