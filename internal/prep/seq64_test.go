package prep

import (
	"fmt"
	"testing"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

// seq64Env prepares and applies requests one at a time from zxid start on.
type seq64Env struct {
	t    *testing.T
	tree *datatree.Tree
	p    *Preparer
	zxid int64
}

func newSeq64Env(t *testing.T, wide bool, start int64) *seq64Env {
	tree := datatree.New()
	p := New(tree)
	p.Wide = wide
	return &seq64Env{t: t, tree: tree, p: p, zxid: start}
}

func (e *seq64Env) run(r *Request) *jute.LoggedTxn {
	e.zxid++
	txn := e.p.Prepare(r, e.zxid, 1)
	if res := e.tree.Apply(&txn.Header, txn.Body); txn.Header.Type != jute.OpError && txn.Header.Type != jute.OpMulti && res.Err != jute.OK {
		e.t.Fatalf("apply %+v: %v", txn.Header, res.Err)
	}
	e.p.Applied(e.zxid)
	return txn
}

func (e *seq64Env) create(path string, flags int32) *jute.LoggedTxn {
	return e.run(&Request{SessionID: 7, Type: jute.OpCreate, Body: &jute.CreateRequest{Path: path, ACL: jute.OpenACLUnsafe, Flags: flags}})
}

func txnCode(txn *jute.LoggedTxn) jute.Code {
	if txn.Header.Type == jute.OpError {
		return txn.Body.(*jute.ErrorTxn).Err
	}
	return jute.OK
}

// TestSeq64Suffix: a 64-bit sequential node's suffix is its create's zxid, 19 digits; the
// txn is an ordinary CreateTxn with the final path; names only grow, past 2^31 and up to
// the largest zxid; the ephemeral mode makes an ephemeral.
func TestSeq64Suffix(t *testing.T) {
	e := newSeq64Env(t, true, 0)
	e.create("/q", 0)
	txn := e.create("/q/s-", jute.FlagPersistentSequential64)
	ct, ok := txn.Body.(*jute.CreateTxn)
	if !ok || ct.Path != fmt.Sprintf("/q/s-%019d", txn.Header.Zxid) || ct.Ephemeral || txn.Header.Type != jute.OpCreate {
		t.Fatalf("txn %+v %+v", txn.Header, txn.Body)
	}
	txn = e.create("/q/e-", jute.FlagEphemeralSequential64)
	if ct := txn.Body.(*jute.CreateTxn); ct.Path != fmt.Sprintf("/q/e-%019d", txn.Header.Zxid) || !ct.Ephemeral {
		t.Fatalf("ephemeral txn %+v", ct)
	}
	if n := e.tree.Get(fmt.Sprintf("/q/e-%019d", txn.Header.Zxid)); n == nil || n.Stat.EphemeralOwner != 7 {
		t.Fatalf("ephemeral node %+v", n)
	}
	// Far on: the 32-bit cversion suffix would have wrapped; the zxid's does not.
	for _, start := range []int64{1<<31 + 3, 1<<40 | 1<<32, 1<<63 - 4} {
		e := newSeq64Env(t, true, start)
		e.create("/q", 0)
		prev := ""
		for range 2 {
			txn := e.create("/q/n", jute.FlagPersistentSequential64)
			name := txn.Body.(*jute.CreateTxn).Path
			if len(name) != len("/q/n")+19 || name <= prev {
				t.Fatalf("zxid %d: name %q after %q", txn.Header.Zxid, name, prev)
			}
			prev = name
		}
	}
}

// TestSeq64MultiOnePerParent: one txn has one zxid, so a multi makes one 64-bit sequential
// node per parent; a second under the same parent fails the multi with BADARGUMENTS, and
// two under different parents are fine.
func TestSeq64MultiOnePerParent(t *testing.T) {
	e := newSeq64Env(t, true, 0)
	e.create("/a", 0)
	e.create("/b", 0)
	multi := func(paths ...string) *jute.LoggedTxn {
		m := &jute.MultiRequest{}
		for _, p := range paths {
			m.Ops = append(m.Ops, jute.MultiOp{Type: jute.OpCreate, Body: &jute.CreateRequest{Path: p, ACL: jute.OpenACLUnsafe, Flags: jute.FlagPersistentSequential64}})
		}
		return e.run(&Request{SessionID: 7, Type: jute.OpMulti, Body: m})
	}
	txn := multi("/a/x", "/b/x")
	for i, sub := range txn.Body.(*jute.MultiTxn).Txns {
		if sub.Type != jute.OpCreate {
			t.Fatalf("sub-txn %d: type %v", i, sub.Type)
		}
	}
	txn = multi("/a/x", "/a/y")
	subs := txn.Body.(*jute.MultiTxn).Txns
	var second jute.ErrorTxn
	if err := jute.Unmarshal(subs[1].Data, &second); err != nil || subs[1].Type != jute.OpError || second.Err != jute.ErrBadArguments {
		t.Fatalf("second create under one parent: %v %+v %v", subs[1].Type, second, err)
	}
	// The next txn starts afresh.
	if code := txnCode(e.create("/a/z", jute.FlagPersistentSequential64)); code != jute.OK {
		t.Fatalf("create after the failed multi: %v", code)
	}
}

// TestSeq64Off: without the wide extension the 64-bit modes are flags ZooKeeper does not
// know: BADARGUMENTS for a create (CreateMode.fromFlag), MARSHALLINGERROR for a multi
// holding one (ZooKeeper 3.9 fails to decode it), and the keeper-ops creates refuse them
// as before.
func TestSeq64Off(t *testing.T) {
	e := newSeq64Env(t, false, 0)
	e.create("/q", 0)
	for _, f := range []int32{jute.FlagPersistentSequential64, jute.FlagEphemeralSequential64} {
		if code := txnCode(e.create("/q/s", f)); code != jute.ErrBadArguments {
			t.Errorf("create flags %d: %v, want BADARGUMENTS", f, code)
		}
		m := &jute.MultiRequest{Ops: []jute.MultiOp{{Type: jute.OpCreate, Body: &jute.CreateRequest{Path: "/q/s", ACL: jute.OpenACLUnsafe, Flags: f}}}}
		if err := CheckMultiCreates(m, false); err == nil {
			t.Errorf("multi with flags %d passes CheckMultiCreates", f)
		}
		if err := CheckMultiCreates(m, true); err != nil {
			t.Errorf("multi with flags %d, wide: %v", f, err)
		}
		if code := txnCode(e.run(&Request{SessionID: 7, Type: jute.OpMulti, Body: m})); code != jute.ErrMarshallingError {
			t.Errorf("multi with flags %d: %v, want MARSHALLINGERROR", f, code)
		}
		for _, op := range []jute.OpCode{jute.OpCreateWithParents, jute.OpCreateIfNotExists} {
			txn := e.run(&Request{SessionID: 7, Type: op, Body: &jute.CreateRequest{Path: "/q/w/s", ACL: jute.OpenACLUnsafe, Flags: f}})
			if code := txnCode(txn); code != jute.ErrBadArguments {
				t.Errorf("%v flags %d: %v, want BADARGUMENTS", op, f, code)
			}
		}
	}
}
