package prep

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

var paths = []string{"/a", "/a/b", "/a/b/c", "/a/d", "/e", "/e/f", "/zookeeper", "/zookeeper/x", "/", "/a/", "//a", "/a/./b"}

func randomRequest(rng *rand.Rand, session int64) *Request {
	p := paths[rng.IntN(len(paths))]
	ver := int32(rng.IntN(4)) - 1
	data := []byte(fmt.Sprint(rng.IntN(100)))
	acl := jute.OpenACLUnsafe
	if rng.IntN(8) == 0 {
		acl = []jute.ACL{{Perms: jute.PermRead, ID: jute.WorldAnyone}}
	}
	op := func() (jute.OpCode, jute.Record) {
		switch rng.IntN(9) {
		case 0, 1:
			return jute.OpCreate, &jute.CreateRequest{Path: p, Data: data, ACL: acl, Flags: int32(rng.IntN(4))}
		case 2:
			// Any valid non-TTL flags: createContainer makes a container whatever they say,
			// and a multi keeps create2 and createContainer as sent.
			op := []jute.OpCode{jute.OpCreate2, jute.OpCreateContainer}[rng.IntN(2)]
			return op, &jute.CreateRequest{Path: p, Data: data, ACL: acl, Flags: int32(rng.IntN(5))}
		case 3:
			return jute.OpCreateTTL, &jute.CreateTTLRequest{Path: p, Data: data, ACL: acl, Flags: jute.FlagPersistentWithTTL, TTL: 1000}
		case 4, 5:
			return jute.OpDelete, &jute.DeleteRequest{Path: p, Version: ver}
		case 6:
			return jute.OpSetData, &jute.SetDataRequest{Path: p, Data: data, Version: ver}
		case 7:
			return jute.OpSetACL, &jute.SetACLRequest{Path: p, ACL: acl, Version: ver}
		default:
			return jute.OpCheck, &jute.CheckVersionRequest{Path: p, Version: ver}
		}
	}
	if rng.IntN(5) == 0 {
		m := &jute.MultiRequest{}
		for i := rng.IntN(4) + 1; i > 0; i-- {
			t, b := op()
			if t == jute.OpSetACL {
				t, b = jute.OpCheck, &jute.CheckVersionRequest{Path: p, Version: ver}
			}
			m.Ops = append(m.Ops, jute.MultiOp{Type: t, Body: b})
		}
		return &Request{SessionID: session, Type: jute.OpMulti, Body: m}
	}
	t, b := op()
	if t == jute.OpCheck {
		t, b = jute.OpSetData, &jute.SetDataRequest{Path: p, Data: data, Version: ver}
	}
	return &Request{SessionID: session, Type: t, Body: b}
}

// TestPreparedTxnsApply runs random pipelined workloads: several requests are prepared
// before the earlier ones are applied, and every txn prep accepted must apply to the tree
// without error. This is the contract between prep's overlay and the tree.
func TestPreparedTxnsApply(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed))
		tree := datatree.New()
		tree.ExtendedTypes = true
		p := New(tree)
		p.ExtendedTypes = true
		zxid := int64(0)
		var queue []*jute.LoggedTxn
		apply := func() {
			txn := queue[0]
			queue = queue[1:]
			// Through the bytes, as the log would carry it.
			lt, err := jute.DecodeTxn(jute.EncodeTxn(nil, txn))
			if err != nil {
				t.Fatalf("seed %d: txn does not decode: %v", seed, err)
			}
			res := tree.Apply(&lt.Header, lt.Body)
			failedMulti := false
			if m, ok := lt.Body.(*jute.MultiTxn); ok {
				for _, sub := range m.Txns {
					failedMulti = failedMulti || sub.Type == jute.OpError
				}
			}
			if lt.Header.Type != jute.OpError && !failedMulti && res.Err != jute.OK {
				t.Fatalf("seed %d: prepared %v %+v failed to apply: %v", seed, lt.Header.Type, lt.Body, res.Err)
			}
			p.Applied(lt.Header.Zxid)
		}
		sessions := []int64{0x100, 0x200}
		for step := 0; step < 300; step++ {
			switch r := rng.IntN(20); {
			case r == 0:
				zxid++
				queue = append(queue, p.CloseSession(sessions[rng.IntN(2)], 0, zxid, int64(step)))
			default:
				zxid++
				queue = append(queue, p.Prepare(randomRequest(rng, sessions[rng.IntN(2)]), zxid, int64(step)))
			}
			for len(queue) > 0 && rng.IntN(3) == 0 {
				apply()
			}
		}
		for len(queue) > 0 {
			apply()
		}
		if p.Pending() != 0 || len(p.overlay) != 0 {
			t.Fatalf("seed %d: overlay not empty after everything applied: %d pending, %d records", seed, p.Pending(), len(p.overlay))
		}
	}
}

func TestSequentialSuffixAndErrors(t *testing.T) {
	tree := datatree.New()
	tree.ExtendedTypes = true
	p := New(tree)
	p.ExtendedTypes = true
	zxid := int64(0)
	run := func(r *Request) *jute.LoggedTxn {
		zxid++
		txn := p.Prepare(r, zxid, 1)
		tree.Apply(&txn.Header, txn.Body)
		p.Applied(zxid)
		return txn
	}
	create := func(path string, flags int32) *jute.LoggedTxn {
		return run(&Request{SessionID: 1, Type: jute.OpCreate, Body: &jute.CreateRequest{Path: path, ACL: jute.OpenACLUnsafe, Flags: flags}})
	}
	create("/q", 0)
	create("/q/a", 0)
	run(&Request{SessionID: 1, Type: jute.OpDelete, Body: &jute.DeleteRequest{Path: "/q/a", Version: -1}})
	if txn := create("/q/x/y", 0); txn.Header.Type != jute.OpError || txn.Body.(*jute.ErrorTxn).Err != jute.ErrNoNode {
		t.Fatalf("create under missing parent: %+v", txn.Body)
	}
	txn := create("/q/s-", jute.FlagPersistentSequential)
	if got := txn.Body.(*jute.CreateTxn).Path; got != "/q/s-0000000001" {
		t.Fatalf("sequential name %q", got)
	}
	for _, tc := range []struct {
		path  string
		flags int32
		want  jute.Code
	}{
		{"/q/", 0, jute.ErrBadArguments},
		{"/q/", jute.FlagPersistentSequential, jute.OK},
		{"/", 0, jute.ErrNodeExists},
		{"/q", 0, jute.ErrNodeExists},
		{"/q/b", 9, jute.ErrBadArguments},
		{"/q/c", jute.FlagPersistentWithTTL, jute.ErrBadArguments},
	} {
		txn := create(tc.path, tc.flags)
		got := jute.OK
		if txn.Header.Type == jute.OpError {
			got = txn.Body.(*jute.ErrorTxn).Err
		}
		if got != tc.want {
			t.Errorf("create %q flags %d: %v, want %v", tc.path, tc.flags, got, tc.want)
		}
	}
	// Ephemeral parents refuse children; the ephemeral is listed on close.
	create("/eph", jute.FlagEphemeral)
	if txn := create("/eph/c", 0); txn.Body.(*jute.ErrorTxn).Err != jute.ErrNoChildrenForEphemerals {
		t.Fatalf("child of ephemeral: %+v", txn.Body)
	}
	zxid++
	cl := p.CloseSession(1, 0, zxid, 1)
	if got := cl.Body.(*jute.CloseSessionTxn).Paths2Delete; len(got) != 1 || got[0] != "/eph" {
		t.Fatalf("close session deletes %v", got)
	}
}

func TestFailedMultiLeavesNoOverlay(t *testing.T) {
	tree := datatree.New()
	p := New(tree)
	m := &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpCreate, Body: &jute.CreateRequest{Path: "/m", ACL: jute.OpenACLUnsafe}},
		{Type: jute.OpDelete, Body: &jute.DeleteRequest{Path: "/nope", Version: -1}},
		{Type: jute.OpSetData, Body: &jute.SetDataRequest{Path: "/m", Version: -1}},
	}}
	txn := p.Prepare(&Request{SessionID: 1, Type: jute.OpMulti, Body: m}, 1, 1)
	mt := txn.Body.(*jute.MultiTxn)
	want := []jute.OpCode{jute.OpCreate, jute.OpError, jute.OpError}
	for i, sub := range mt.Txns {
		if sub.Type != want[i] {
			t.Fatalf("sub-txn %d type %v, want %v", i, sub.Type, want[i])
		}
	}
	if len(p.overlay) != 0 {
		t.Fatalf("failed multi left overlay records: %v", p.overlay)
	}
	// The create of the failed multi must not be visible to the next request.
	txn2 := p.Prepare(&Request{SessionID: 1, Type: jute.OpSetData, Body: &jute.SetDataRequest{Path: "/m", Version: -1}}, 2, 1)
	if txn2.Header.Type != jute.OpError {
		t.Fatalf("setData saw the failed multi's create")
	}
}

// TestCloseSessionSparesARecreatedEphemeral: A's ephemeral /lock is deleted and recreated
// by B, all still unapplied, then A closes: A's close must not delete B's /lock.
func TestCloseSessionSparesARecreatedEphemeral(t *testing.T) {
	tree := datatree.New()
	p := New(tree)
	const a, b = 0x100, 0x200
	zxid := int64(0)
	next := func() int64 { zxid++; return zxid }
	create := &Request{SessionID: a, Type: jute.OpCreate, Body: &jute.CreateRequest{Path: "/lock", ACL: jute.OpenACLUnsafe, Flags: jute.FlagEphemeral}}
	txn := p.Prepare(create, next(), 1)
	tree.Apply(&txn.Header, txn.Body)
	p.Applied(zxid)
	// Unapplied from here on.
	p.Prepare(&Request{SessionID: a, Type: jute.OpDelete, Body: &jute.DeleteRequest{Path: "/lock", Version: -1}}, next(), 1)
	if txn := p.Prepare(&Request{SessionID: b, Type: jute.OpCreate, Body: &jute.CreateRequest{Path: "/lock", ACL: jute.OpenACLUnsafe, Flags: jute.FlagEphemeral}}, next(), 1); txn.Header.Type == jute.OpError {
		t.Fatalf("B's create failed: %+v", txn.Body)
	}
	closeA := p.CloseSession(a, 0, next(), 1)
	if got := closeA.Body.(*jute.CloseSessionTxn).Paths2Delete; len(got) != 0 {
		t.Fatalf("A's close deletes %v, which B now owns", got)
	}
	closeB := p.CloseSession(b, 0, next(), 1)
	if got := closeB.Body.(*jute.CloseSessionTxn).Paths2Delete; len(got) != 1 || got[0] != "/lock" {
		t.Fatalf("B's close deletes %v, want [/lock]", got)
	}
}

// TestACLChecksFollowOpTable checks prep against jute's opcode table: each write needs
// exactly the permission its row names, on the node or parent the row names.
func TestACLChecksFollowOpTable(t *testing.T) {
	bodies := map[jute.OpCode]func() jute.Record{
		jute.OpCreate: func() jute.Record {
			return &jute.CreateRequest{Path: "/p/new", ACL: jute.OpenACLUnsafe}
		},
		jute.OpCreate2: func() jute.Record {
			return &jute.CreateRequest{Path: "/p/new", ACL: jute.OpenACLUnsafe}
		},
		jute.OpCreateContainer: func() jute.Record {
			return &jute.CreateRequest{Path: "/p/new", ACL: jute.OpenACLUnsafe, Flags: jute.FlagContainer}
		},
		jute.OpCreateTTL: func() jute.Record {
			return &jute.CreateTTLRequest{Path: "/p/new", ACL: jute.OpenACLUnsafe, Flags: jute.FlagPersistentWithTTL, TTL: 1000}
		},
		jute.OpDelete:  func() jute.Record { return &jute.DeleteRequest{Path: "/p/n", Version: -1} },
		jute.OpSetData: func() jute.Record { return &jute.SetDataRequest{Path: "/p/n", Version: -1} },
		jute.OpSetACL: func() jute.Record {
			return &jute.SetACLRequest{Path: "/p/n", ACL: jute.OpenACLUnsafe, Version: -1}
		},
		jute.OpCheck: func() jute.Record { return &jute.CheckVersionRequest{Path: "/p/n", Version: -1} },
		// The keeper-ops extension's (a version /p/n does not have: the check passes).
		jute.OpCheckNotExists: func() jute.Record { return &jute.CheckVersionRequest{Path: "/p/n", Version: 5} },
		jute.OpCreateIfNotExists: func() jute.Record {
			return &jute.CreateRequest{Path: "/p/new", ACL: jute.OpenACLUnsafe}
		},
		jute.OpRemoveRecursive: func() jute.Record { return &jute.RemoveRecursiveRequest{Path: "/p/n", Limit: 10} },
		jute.OpCreateWithParents: func() jute.Record {
			return &jute.CreateRequest{Path: "/p/new", ACL: jute.OpenACLUnsafe}
		},
	}
	checked := 0
	for _, row := range jute.Ops() {
		// reconfig is refused (RECONFIGDISABLED) before any ACL is looked at.
		if !row.Write || row.Perm == 0 || row.Code == jute.OpReconfig {
			continue
		}
		mk, ok := bodies[row.Code]
		if !ok {
			t.Errorf("%v: the table names a permission but this test has no request for it", row.Code)
			continue
		}
		target := "/p/n"
		if row.PermOnParent {
			target = "/p"
		}
		for _, tc := range []struct {
			perms int32
			want  jute.Code
		}{{row.Perm, jute.OK}, {jute.PermAll &^ row.Perm, jute.ErrNoAuth}} {
			p := New(datatree.New())
			p.ExtendedTypes = true
			p.SkipACL = true
			zxid := int64(0)
			prepare := func(typ jute.OpCode, body jute.Record) jute.Code {
				zxid++
				txn := p.Prepare(&Request{SessionID: 1, Cxid: int32(zxid), Type: typ, Body: body}, zxid, 0)
				if e, ok := txn.Body.(*jute.ErrorTxn); ok {
					return e.Err
				}
				return jute.OK
			}
			acl := []jute.ACL{{Perms: tc.perms, ID: jute.WorldAnyone}}
			for _, setup := range []struct {
				typ  jute.OpCode
				body jute.Record
			}{
				{jute.OpCreate, &jute.CreateRequest{Path: "/p", ACL: jute.OpenACLUnsafe}},
				{jute.OpCreate, &jute.CreateRequest{Path: "/p/n", ACL: jute.OpenACLUnsafe}},
				{jute.OpSetACL, &jute.SetACLRequest{Path: target, ACL: acl, Version: -1}},
			} {
				if c := prepare(setup.typ, setup.body); c != jute.OK {
					t.Fatalf("%v: setup %v: %v", row.Code, setup.typ, c)
				}
			}
			p.SkipACL = false
			if got := prepare(row.Code, mk()); got != tc.want {
				t.Errorf("%v with perms %#x on %s: %v, want %v", row.Code, tc.perms, target, got, tc.want)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no row checked")
	}
}

// IsWrite is the table's client writes: exactly these opcodes are prepared.
func TestIsWrite(t *testing.T) {
	want := map[jute.OpCode]bool{
		jute.OpCreate: true, jute.OpCreate2: true, jute.OpCreateContainer: true, jute.OpCreateTTL: true,
		jute.OpDelete: true, jute.OpSetData: true, jute.OpSetACL: true, jute.OpMulti: true,
		jute.OpCloseSession: true, jute.OpReconfig: true,
	}
	for op := jute.OpCode(-20); op <= 200; op++ {
		if got := IsWrite(op); got != want[op] {
			t.Errorf("IsWrite(%v) = %v, want %v", op, got, want[op])
		}
	}
}

// TestMultiCreateTypeKeepsOpcode: inside a multi a CONTAINER flag makes any create a
// createContainer, and otherwise the opcode sent is kept (ZooKeeper 3.9's
// MultiOperationRecord, ZOOKEEPER-4026): createContainer without the flag still makes a
// container. create2 is logged as create (loggedSubType); a createTTL without a TTL flag
// is a plain create.
func TestMultiCreateTypeKeepsOpcode(t *testing.T) {
	p := New(datatree.New())
	cr := func(path string, flags int32) *jute.CreateRequest {
		return &jute.CreateRequest{Path: path, ACL: jute.OpenACLUnsafe, Flags: flags}
	}
	m := &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpCreate, Body: cr("/c1", jute.FlagContainer)},
		{Type: jute.OpCreate2, Body: cr("/c2", jute.FlagContainer)},
		{Type: jute.OpCreate2, Body: cr("/p2", jute.FlagPersistent)},
		{Type: jute.OpCreateContainer, Body: cr("/p3", jute.FlagPersistent)},
		{Type: jute.OpCreateTTL, Body: &jute.CreateTTLRequest{Path: "/p4", ACL: jute.OpenACLUnsafe, Flags: jute.FlagEphemeral, TTL: 5}},
	}}
	txn := p.Prepare(&Request{SessionID: 1, Type: jute.OpMulti, Body: m}, 1, 1)
	want := []jute.OpCode{jute.OpCreateContainer, jute.OpCreateContainer, jute.OpCreate, jute.OpCreateContainer, jute.OpCreate}
	mt := txn.Body.(*jute.MultiTxn)
	for i, sub := range mt.Txns {
		if sub.Type != want[i] {
			t.Errorf("sub-txn %d type %v, want %v", i, sub.Type, want[i])
		}
	}
	var ct jute.CreateTxn
	if err := jute.Unmarshal(mt.Txns[4].Data, &ct); err != nil || !ct.Ephemeral {
		t.Errorf("createTTL with ephemeral flags: %+v %v, want an ephemeral CreateTxn", ct, err)
	}
}

// TestCreateTTLWithoutTTLMode: a createTTL whose flags are not a TTL mode is refused
// whatever its ttl. ZooKeeper refuses ttl >= 0 and dies applying a negative one
// (versiondiff row zkd-createttl-mode).
func TestCreateTTLWithoutTTLMode(t *testing.T) {
	tree := datatree.New()
	tree.ExtendedTypes = true
	p := New(tree)
	p.ExtendedTypes = true
	zxid := int64(0)
	for _, flags := range []int32{jute.FlagPersistent, jute.FlagEphemeral, jute.FlagPersistentSequential, jute.FlagEphemeralSequential, jute.FlagContainer} {
		for _, ttl := range []int64{-1, -1000, 0, 1000} {
			zxid++
			txn := p.Prepare(&Request{SessionID: 1, Type: jute.OpCreateTTL, Body: &jute.CreateTTLRequest{
				Path: "/t", ACL: jute.OpenACLUnsafe, Flags: flags, TTL: ttl}}, zxid, 1)
			if txn.Header.Type != jute.OpError || txn.Body.(*jute.ErrorTxn).Err != jute.ErrBadArguments {
				t.Errorf("createTTL flags %d ttl %d: %v %+v, want BADARGUMENTS", flags, ttl, txn.Header.Type, txn.Body)
			}
			tree.Apply(&txn.Header, txn.Body)
			p.Applied(zxid)
		}
	}
	zxid++
	txn := p.Prepare(&Request{SessionID: 1, Type: jute.OpCreateTTL, Body: &jute.CreateTTLRequest{
		Path: "/t", ACL: jute.OpenACLUnsafe, Flags: jute.FlagPersistentWithTTL, TTL: 1000}}, zxid, 1)
	if txn.Header.Type != jute.OpCreateTTL {
		t.Fatalf("createTTL with a TTL mode: %v %+v", txn.Header.Type, txn.Body)
	}
}

// TestOutstandingSetACLGuardsLaterRequests: a request prepared behind a setACL that is not
// applied yet is checked against the new ACL (ZooKeeper checks the old one: versiondiff row
// zkd-setacl-outstanding).
func TestOutstandingSetACLGuardsLaterRequests(t *testing.T) {
	tree := datatree.New()
	p := New(tree)
	zxid := int64(1)
	txn := p.Prepare(&Request{SessionID: 1, Type: jute.OpCreate, Body: &jute.CreateRequest{Path: "/n", ACL: jute.OpenACLUnsafe}}, zxid, 1)
	tree.Apply(&txn.Header, txn.Body)
	p.Applied(zxid)
	zxid++
	set := p.Prepare(&Request{SessionID: 1, Type: jute.OpSetACL, Body: &jute.SetACLRequest{Path: "/n", ACL: jute.ReadACLUnsafe, Version: -1}}, zxid, 1)
	if set.Header.Type != jute.OpSetACL {
		t.Fatalf("setACL: %v %+v", set.Header.Type, set.Body)
	}
	for _, r := range []*Request{
		{SessionID: 1, Type: jute.OpCreate, Body: &jute.CreateRequest{Path: "/n/c", ACL: jute.OpenACLUnsafe}},
		{SessionID: 1, Type: jute.OpSetData, Body: &jute.SetDataRequest{Path: "/n", Version: -1}},
	} {
		zxid++
		txn := p.Prepare(r, zxid, 1)
		if txn.Header.Type != jute.OpError || txn.Body.(*jute.ErrorTxn).Err != jute.ErrNoAuth {
			t.Errorf("%v behind an outstanding setACL: %v %+v, want NOAUTH", r.Type, txn.Header.Type, txn.Body)
		}
	}
}
