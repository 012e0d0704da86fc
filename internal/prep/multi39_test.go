package prep

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

// createOutcome is what one create request became: the whole txn's error (a multi that
// fails to decode), the (sub-)txn's error code, or the logged type, body and what the tree
// made of it.
type createOutcome struct {
	txnErr jute.Code   // the txn is an ErrorTxn with this code
	subErr jute.Code   // the multi's sub-txn is an ErrorTxn with this code
	typ    jute.OpCode // logged (sub-)txn type
	body   string      // "create", "create-eph", "container", "ttl": the txn record
	node   string      // the node once applied: "persistent", "ephemeral", "container", "ttl"
	seq    bool        // the path got a sequence suffix
}

const testSession = 0x77

// newCreatePrep returns a preparer over a tree holding /x, applied.
func newCreatePrep(t *testing.T, extended bool) (*Preparer, *datatree.Tree) {
	t.Helper()
	tree := datatree.New()
	tree.ExtendedTypes = extended
	p := New(tree)
	p.ExtendedTypes = extended
	txn := p.Prepare(&Request{SessionID: testSession, Type: jute.OpCreate, Body: &jute.CreateRequest{Path: "/x", ACL: jute.OpenACLUnsafe}}, 1, 1)
	if res := tree.Apply(&txn.Header, txn.Body); res.Err != jute.OK {
		t.Fatalf("create /x: %v", res.Err)
	}
	p.Applied(1)
	return p, tree
}

// createBody is the request record of a create op with these flags (and ttl for createTTL).
func createBody(op jute.OpCode, path string, flags int32, ttl int64) jute.Record {
	if op == jute.OpCreateTTL {
		return &jute.CreateTTLRequest{Path: path, ACL: jute.OpenACLUnsafe, Flags: flags, TTL: ttl}
	}
	return &jute.CreateRequest{Path: path, ACL: jute.OpenACLUnsafe, Flags: flags}
}

// outcome prepares r, applies it through the log's encoding and describes the result.
func outcome(t *testing.T, p *Preparer, tree *datatree.Tree, r *Request) createOutcome {
	t.Helper()
	txn := p.Prepare(r, 2, 2)
	lt, err := jute.DecodeTxn(jute.EncodeTxn(nil, txn))
	if err != nil {
		t.Fatalf("txn does not decode: %v", err)
	}
	res := tree.Apply(&lt.Header, lt.Body)
	p.Applied(2)
	var o createOutcome
	typ, body := lt.Header.Type, lt.Body
	if typ == jute.OpError {
		o.txnErr = body.(*jute.ErrorTxn).Err
		return o
	}
	if m, ok := body.(*jute.MultiTxn); ok {
		if len(m.Txns) != 1 {
			t.Fatalf("%d sub-txns", len(m.Txns))
		}
		typ, body = m.Txns[0].Type, jute.NewTxnBody(m.Txns[0].Type)
		if body == nil || jute.Unmarshal(m.Txns[0].Data, body) != nil {
			t.Fatalf("sub-txn type %v does not decode", typ)
		}
		if typ == jute.OpError {
			o.subErr = body.(*jute.ErrorTxn).Err
			return o
		}
	}
	if res.Err != jute.OK {
		t.Fatalf("prepared %v %+v failed to apply: %v", typ, body, res.Err)
	}
	o.typ = typ
	var path string
	switch b := body.(type) {
	case *jute.CreateTxn:
		o.body, path = "create", b.Path
		if b.Ephemeral {
			o.body = "create-eph"
		}
	case *jute.CreateContainerTxn:
		o.body, path = "container", b.Path
	case *jute.CreateTTLTxn:
		o.body, path = "ttl", b.Path
	default:
		t.Fatalf("unexpected txn %T", body)
	}
	o.seq = strings.HasSuffix(path, "0000000000")
	n := tree.Get(path)
	if n == nil {
		t.Fatalf("%s not in the tree", path)
	}
	switch owner := n.Stat.EphemeralOwner; {
	case owner == 0:
		o.node = "persistent"
	case owner == datatree.ContainerOwner:
		o.node = "container"
	case owner == testSession:
		o.node = "ephemeral"
	default:
		if _, ok := tree.IsTTL(owner); !ok {
			t.Fatalf("%s: owner %#x", path, owner)
		}
		o.node = "ttl"
	}
	return o
}

var (
	plain     = createOutcome{typ: jute.OpCreate, body: "create", node: "persistent"}
	eph       = createOutcome{typ: jute.OpCreate, body: "create-eph", node: "ephemeral"}
	plainSeq  = createOutcome{typ: jute.OpCreate, body: "create", node: "persistent", seq: true}
	ephSeq    = createOutcome{typ: jute.OpCreate, body: "create-eph", node: "ephemeral", seq: true}
	ctr       = createOutcome{typ: jute.OpCreateContainer, body: "container", node: "container"}
	ctrSeq    = createOutcome{typ: jute.OpCreateContainer, body: "container", node: "container", seq: true}
	ttlNode   = createOutcome{typ: jute.OpCreateTTL, body: "ttl", node: "ttl"}
	ttlSeq    = createOutcome{typ: jute.OpCreateTTL, body: "ttl", node: "ttl", seq: true}
	marshal   = createOutcome{txnErr: jute.ErrMarshallingError}
	subBadArg = createOutcome{subErr: jute.ErrBadArguments}
	subUnimpl = createOutcome{subErr: jute.ErrUnimplemented}
	badArg    = createOutcome{txnErr: jute.ErrBadArguments}
	unimpl    = createOutcome{txnErr: jute.ErrUnimplemented}
)

var createFlags = []int32{0, 1, 2, 3, 4, 5, 6, 7, -1}

// TestMultiCreateTypes39 is ZooKeeper 3.9's create inside a multi for every opcode and flags
// (ZOOKEEPER-4026: MultiOperationRecord keeps the opcode unless the flags imply
// createContainer or createTTL). A create2 is logged as create (see loggedSubType).
func TestMultiCreateTypes39(t *testing.T) {
	byFlags := func(o ...createOutcome) map[int32]createOutcome {
		m := map[int32]createOutcome{}
		for i, f := range createFlags {
			m[f] = o[i]
		}
		return m
	}
	createLike := byFlags(plain, eph, plainSeq, ephSeq, ctr, marshal, marshal, marshal, marshal)
	for _, tc := range []struct {
		op       jute.OpCode
		ttl      int64
		extended bool
		want     map[int32]createOutcome
	}{
		{jute.OpCreate, -1, true, createLike},
		{jute.OpCreate2, -1, true, createLike},
		{jute.OpCreateContainer, -1, true, byFlags(ctr, ctr, ctrSeq, ctrSeq, ctr, marshal, marshal, marshal, marshal)},
		{jute.OpCreate, -1, false, createLike},
		{jute.OpCreateContainer, -1, false, byFlags(ctr, ctr, ctrSeq, ctrSeq, ctr, marshal, marshal, marshal, marshal)},
		// A createTTL without a TTL flag is a create: its ttl is dropped, whatever it is.
		{jute.OpCreateTTL, 1000, true, byFlags(plain, eph, plainSeq, ephSeq, ctr, ttlNode, ttlSeq, subBadArg, subBadArg)},
		{jute.OpCreateTTL, -1, true, byFlags(plain, eph, plainSeq, ephSeq, ctr, subBadArg, subBadArg, subBadArg, subBadArg)},
		{jute.OpCreateTTL, 0, true, byFlags(plain, eph, plainSeq, ephSeq, ctr, subBadArg, subBadArg, subBadArg, subBadArg)},
		{jute.OpCreateTTL, 1000, false, byFlags(plain, eph, plainSeq, ephSeq, ctr, subUnimpl, subUnimpl, subBadArg, subBadArg)},
	} {
		for _, flags := range createFlags {
			t.Run(fmt.Sprintf("%v/flags=%d/ttl=%d/extended=%v", tc.op, flags, tc.ttl, tc.extended), func(t *testing.T) {
				p, tree := newCreatePrep(t, tc.extended)
				m := &jute.MultiRequest{Ops: []jute.MultiOp{{Type: tc.op, Body: createBody(tc.op, "/x/n", flags, tc.ttl)}}}
				got := outcome(t, p, tree, &Request{SessionID: testSession, Type: jute.OpMulti, Body: m})
				if got != tc.want[flags] {
					t.Errorf("got %+v, want %+v", got, tc.want[flags])
				}
				if p.Pending() != 0 || len(p.overlay) != 0 {
					t.Errorf("overlay not empty once applied: %v", p.overlay)
				}
			})
		}
	}
}

// TestTopLevelCreateTypes: outside a multi the opcode picks the txn and the flags the node
// mode (ZooKeeper's PrepRequestProcessor, the same in 3.8 and 3.9): create with CONTAINER
// is a plain node, createContainer with any other valid non-TTL flags a container.
func TestTopLevelCreateTypes(t *testing.T) {
	byFlags := func(o ...createOutcome) map[int32]createOutcome {
		m := map[int32]createOutcome{}
		for i, f := range createFlags {
			m[f] = o[i]
		}
		return m
	}
	createLike := byFlags(plain, eph, plainSeq, ephSeq, plain, badArg, badArg, badArg, badArg)
	for _, tc := range []struct {
		op       jute.OpCode
		ttl      int64
		extended bool
		want     map[int32]createOutcome
	}{
		{jute.OpCreate, -1, true, createLike},
		{jute.OpCreate2, -1, true, createLike},
		{jute.OpCreate, -1, false, byFlags(plain, eph, plainSeq, ephSeq, plain, unimpl, unimpl, badArg, badArg)},
		{jute.OpCreateContainer, -1, true, byFlags(ctr, ctr, ctrSeq, ctrSeq, ctr, badArg, badArg, badArg, badArg)},
		{jute.OpCreateContainer, -1, false, byFlags(ctr, ctr, ctrSeq, ctrSeq, ctr, unimpl, unimpl, badArg, badArg)},
		{jute.OpCreateTTL, 1000, true, byFlags(badArg, badArg, badArg, badArg, badArg, ttlNode, ttlSeq, badArg, badArg)},
		// ZooKeeper logs these (a CreateTTLTxn with a negative ttl) and then cannot apply
		// them: zkd refuses them.
		{jute.OpCreateTTL, -1, true, byFlags(badArg, badArg, badArg, badArg, badArg, badArg, badArg, badArg, badArg)},
		{jute.OpCreateTTL, -5, true, byFlags(badArg, badArg, badArg, badArg, badArg, badArg, badArg, badArg, badArg)},
		{jute.OpCreateTTL, 1000, false, byFlags(badArg, badArg, badArg, badArg, badArg, unimpl, unimpl, badArg, badArg)},
	} {
		for _, flags := range createFlags {
			t.Run(fmt.Sprintf("%v/flags=%d/ttl=%d/extended=%v", tc.op, flags, tc.ttl, tc.extended), func(t *testing.T) {
				p, tree := newCreatePrep(t, tc.extended)
				got := outcome(t, p, tree, &Request{SessionID: testSession, Type: tc.op, Body: createBody(tc.op, "/x/n", flags, tc.ttl)})
				want := tc.want[flags]
				if want.typ == jute.OpCreate {
					want.typ = tc.op // outside a multi the txn header keeps the opcode
				}
				if got != want {
					t.Errorf("got %+v, want %+v", got, want)
				}
			})
		}
	}
}

// TestMultiBadCreateFlagsFailWhole: a create whose flags 3.9 cannot decode fails the whole
// multi with MARSHALLINGERROR, before any op is prepared: nothing is left pending, even
// from the ops before it.
func TestMultiBadCreateFlagsFailWhole(t *testing.T) {
	for _, flags := range []int32{5, 6, 7, -1} {
		p, _ := newCreatePrep(t, true)
		m := &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpCreate, Body: createBody(jute.OpCreate, "/x/pre", 0, -1)},
			{Type: jute.OpCreate2, Body: createBody(jute.OpCreate2, "/x/bad", flags, -1)},
		}}
		if err := CheckMultiCreates(m, false); err == nil {
			t.Errorf("flags %d: CheckMultiCreates accepted it", flags)
		}
		txn := p.Prepare(&Request{SessionID: testSession, Type: jute.OpMulti, Body: m}, 2, 2)
		if e, ok := txn.Body.(*jute.ErrorTxn); txn.Header.Type != jute.OpError || !ok || e.Err != jute.ErrMarshallingError {
			t.Errorf("flags %d: %v %+v, want a MARSHALLINGERROR error txn", flags, txn.Header.Type, txn.Body)
		}
		if p.Pending() != 0 {
			t.Errorf("flags %d: %d changes pending", flags, p.Pending())
		}
	}
	ok := &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpCreateContainer, Body: createBody(jute.OpCreateContainer, "/x/c", 3, -1)},
		{Type: jute.OpCreateTTL, Body: createBody(jute.OpCreateTTL, "/x/t", 7, 5)}, // refused later, per op
		{Type: jute.OpSetData, Body: &jute.SetDataRequest{Path: "/x", Version: -1}},
	}}
	if err := CheckMultiCreates(ok, false); err != nil {
		t.Errorf("CheckMultiCreates: %v", err)
	}
}

// TestCreateContainerWithEphemeralFlags: until applied, a createContainer with ephemeral
// flags is the ephemeral node its flags describe (ZooKeeper's ChangeRecord), so a child in
// the same multi is refused; once applied it is a container, which takes children.
func TestCreateContainerWithEphemeralFlags(t *testing.T) {
	p, tree := newCreatePrep(t, false)
	mk := func(path string, flags int32) jute.MultiOp {
		return jute.MultiOp{Type: jute.OpCreateContainer, Body: createBody(jute.OpCreateContainer, path, flags, -1)}
	}
	child := func(path string) jute.MultiOp {
		return jute.MultiOp{Type: jute.OpCreate, Body: createBody(jute.OpCreate, path, 0, -1)}
	}
	txn := p.Prepare(&Request{SessionID: testSession, Type: jute.OpMulti, Body: &jute.MultiRequest{Ops: []jute.MultiOp{mk("/x/e", jute.FlagEphemeral), child("/x/e/k")}}}, 2, 2)
	subs := txn.Body.(*jute.MultiTxn).Txns
	var et jute.ErrorTxn
	if subs[1].Type != jute.OpError || jute.Unmarshal(subs[1].Data, &et) != nil || et.Err != jute.ErrNoChildrenForEphemerals {
		t.Fatalf("child of a pending ephemeral-flagged container: %v %+v", subs[1].Type, et)
	}
	txn = p.Prepare(&Request{SessionID: testSession, Type: jute.OpMulti, Body: &jute.MultiRequest{Ops: []jute.MultiOp{mk("/x/e", jute.FlagEphemeral)}}}, 3, 3)
	tree.Apply(&txn.Header, txn.Body)
	p.Applied(3)
	if n := tree.Get("/x/e"); n == nil || n.Stat.EphemeralOwner != datatree.ContainerOwner {
		t.Fatalf("applied node: %+v", n)
	}
	if txn := p.Prepare(&Request{SessionID: testSession, Type: jute.OpCreate, Body: createBody(jute.OpCreate, "/x/e/k", 0, -1)}, 4, 4); txn.Header.Type == jute.OpError {
		t.Fatalf("child of the applied container: %+v", txn.Body)
	}
}
