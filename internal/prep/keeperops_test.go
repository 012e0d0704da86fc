package prep

import (
	"math/rand/v2"
	"testing"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

// randomKeeperRequest is randomRequest with the keeper-ops extension's writes mixed in,
// alone and inside multis.
func randomKeeperRequest(rng *rand.Rand, session int64) *Request {
	p := paths[rng.IntN(len(paths))]
	ext := func() (jute.OpCode, jute.Record) {
		switch rng.IntN(4) {
		case 0:
			return jute.OpCheckNotExists, &jute.CheckVersionRequest{Path: p, Version: int32(rng.IntN(3)) - 1}
		case 1:
			return jute.OpCreateIfNotExists, &jute.CreateRequest{Path: p, ACL: jute.OpenACLUnsafe, Flags: int32(rng.IntN(2))}
		default:
			return jute.OpRemoveRecursive, &jute.RemoveRecursiveRequest{Path: p, Limit: uint32(rng.IntN(6))}
		}
	}
	switch rng.IntN(4) {
	case 0:
		t, b := ext()
		return &Request{SessionID: session, Type: t, Body: b}
	case 1:
		return &Request{SessionID: session, Type: jute.OpCreateWithParents,
			Body: &jute.CreateRequest{Path: p, ACL: jute.OpenACLUnsafe, Flags: int32(rng.IntN(2))}}
	case 2:
		r := randomRequest(rng, session)
		if m, ok := r.Body.(*jute.MultiRequest); ok {
			t, b := ext()
			m.Ops = append(m.Ops[:rng.IntN(len(m.Ops)+1)], jute.MultiOp{Type: t, Body: b})
		}
		return r
	}
	return randomRequest(rng, session)
}

// TestKeeperOpsPrepareApply: pipelined workloads with the extension's writes. Every txn is
// of ZooKeeper's types, applies without error when prep accepted it, and leaves the tree
// with the digest prep computed for it (so a follower checking digests agrees).
func TestKeeperOpsPrepareApply(t *testing.T) {
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
			lt, err := jute.DecodeTxn(jute.EncodeTxn(nil, txn))
			if err != nil {
				t.Fatalf("seed %d: txn does not decode: %v", seed, err)
			}
			if jute.LookupOp(lt.Header.Type).Ext != "" {
				t.Fatalf("seed %d: txn of type %v", seed, lt.Header.Type)
			}
			res := tree.Apply(&lt.Header, lt.Body)
			failedMulti := false
			if m, ok := lt.Body.(*jute.MultiTxn); ok {
				for _, sub := range m.Txns {
					failedMulti = failedMulti || sub.Type == jute.OpError
					if jute.LookupOp(sub.Type).Ext != "" {
						t.Fatalf("seed %d: sub-txn of type %v", seed, sub.Type)
					}
				}
			}
			if lt.Header.Type != jute.OpError && !failedMulti && res.Err != jute.OK {
				t.Fatalf("seed %d: prepared %v %+v failed to apply: %v", seed, lt.Header.Type, lt.Body, res.Err)
			}
			if lt.Digest != nil && lt.Digest.TreeDigest != tree.Digest() {
				t.Fatalf("seed %d: txn %d says digest %x, tree has %x", seed, lt.Header.Zxid, lt.Digest.TreeDigest, tree.Digest())
			}
			p.Applied(lt.Header.Zxid)
		}
		for step := 0; step < 300; step++ {
			zxid++
			queue = append(queue, p.Prepare(randomKeeperRequest(rng, 0x100), zxid, int64(step)))
			for len(queue) > 0 && rng.IntN(3) == 0 {
				apply()
			}
		}
		for len(queue) > 0 {
			apply()
		}
	}
}

// TestRemoveRecursiveSeesOutstandingCreates: a removal prepared while creates under the
// node are not yet applied deletes them too, children first.
func TestRemoveRecursiveSeesOutstandingCreates(t *testing.T) {
	tree := datatree.New()
	p := New(tree)
	var txns []*jute.LoggedTxn
	for i, path := range []string{"/r", "/r/a", "/r/a/b", "/r/c"} {
		txns = append(txns, p.Prepare(&Request{SessionID: 1, Type: jute.OpCreate,
			Body: &jute.CreateRequest{Path: path, ACL: jute.OpenACLUnsafe}}, int64(i+1), 1))
		if i == 1 { // /r and /r/a applied, the others outstanding
			for _, txn := range txns {
				tree.Apply(&txn.Header, txn.Body)
			}
			p.Applied(2)
		}
	}
	rr := p.Prepare(&Request{SessionID: 1, Type: jute.OpRemoveRecursive, Body: &jute.RemoveRecursiveRequest{Path: "/r", Limit: 4}}, 5, 1)
	if rr.Header.Type != jute.OpMulti {
		t.Fatalf("removal: %v %+v", rr.Header.Type, rr.Body)
	}
	var got []string
	for _, sub := range rr.Body.(*jute.MultiTxn).Txns {
		var d jute.DeleteTxn
		if sub.Type != jute.OpDelete || jute.Unmarshal(sub.Data, &d) != nil {
			t.Fatalf("sub-txn %+v", sub)
		}
		got = append(got, d.Path)
	}
	want := []string{"/r/a/b", "/r/c", "/r/a", "/r"} // breadth first, reversed
	if len(got) != len(want) {
		t.Fatalf("deletes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("deletes %v, want %v", got, want)
		}
	}
	// One node too many for a limit of 3.
	if again := p.Prepare(&Request{SessionID: 1, Type: jute.OpRemoveRecursive, Body: &jute.RemoveRecursiveRequest{Path: "/r", Limit: 3}}, 6, 1); again.Header.Type != jute.OpError {
		t.Fatalf("removal of a removed node: %+v", again.Body)
	}
}
