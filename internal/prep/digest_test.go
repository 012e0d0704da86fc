package prep

import (
	"math/rand/v2"
	"testing"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

// TestPreparedDigestIsTheTreesAfterApply runs random pipelined workloads (several txns
// prepared before the earlier ones apply) and checks that every txn's TxnDigest, decided
// before it is applied, is the tree's digest right after it is applied: what a follower
// compares. Error txns carry none; every other txn does.
func TestPreparedDigestIsTheTreesAfterApply(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7*seed))
		tree := datatree.New()
		tree.ExtendedTypes = true
		p := New(tree)
		p.ExtendedTypes = true
		zxid := int64(0)
		var queue []*jute.LoggedTxn
		checked := 0
		apply := func() {
			txn := queue[0]
			queue = queue[1:]
			lt, err := jute.DecodeTxn(jute.EncodeTxn(nil, txn))
			if err != nil {
				t.Fatalf("seed %d: txn does not decode: %v", seed, err)
			}
			tree.Apply(&lt.Header, lt.Body)
			p.Applied(lt.Header.Zxid)
			switch {
			case lt.Header.Type == jute.OpError:
				if lt.Digest != nil {
					t.Fatalf("seed %d: error txn 0x%x carries a digest", seed, lt.Header.Zxid)
				}
			case lt.Digest == nil:
				t.Fatalf("seed %d: %v txn 0x%x carries no digest", seed, lt.Header.Type, lt.Header.Zxid)
			case lt.Digest.Version != jute.DigestVersion:
				t.Fatalf("seed %d: digest version %d", seed, lt.Digest.Version)
			case lt.Digest.TreeDigest != tree.Digest():
				t.Fatalf("seed %d: %v txn 0x%x %+v: predicted digest %d, tree after applying it %d",
					seed, lt.Header.Type, lt.Header.Zxid, lt.Body, lt.Digest.TreeDigest, tree.Digest())
			default:
				checked++
			}
		}
		sessions := []int64{0x100, 0x200}
		for step := 0; step < 300; step++ {
			zxid++
			switch r := rng.IntN(20); {
			case r == 0:
				queue = append(queue, p.CloseSession(sessions[rng.IntN(2)], 0, zxid, int64(step)))
			case r == 1:
				queue = append(queue, p.CreateSession(sessions[rng.IntN(2)], 5000, zxid, int64(step)))
			case r == 2:
				if txn := p.DeleteContainer(paths[rng.IntN(6)], zxid, int64(step)); txn != nil {
					queue = append(queue, txn)
				} else {
					zxid--
				}
			default:
				queue = append(queue, p.Prepare(randomRequest(rng, sessions[rng.IntN(2)]), zxid, int64(step)))
			}
			for len(queue) > 0 && rng.IntN(3) == 0 {
				apply()
			}
		}
		for len(queue) > 0 {
			apply()
		}
		if checked < 50 {
			t.Fatalf("seed %d: only %d digests checked", seed, checked)
		}
		if p.Digest() != tree.Digest() {
			t.Fatalf("seed %d: nothing pending, yet prep's digest %d is not the tree's %d", seed, p.Digest(), tree.Digest())
		}
	}
}

// TestNoDigest: with zookeeper.digest.enabled=false no txn carries a digest.
func TestNoDigest(t *testing.T) {
	p := New(datatree.New())
	p.NoDigest = true
	txn := p.Prepare(&Request{SessionID: 1, Type: jute.OpCreate, Body: &jute.CreateRequest{Path: "/a", ACL: jute.OpenACLUnsafe}}, 1, 1)
	if txn.Header.Type != jute.OpCreate || txn.Digest != nil {
		t.Fatalf("got %v with digest %+v", txn.Header.Type, txn.Digest)
	}
	if txn := p.CreateSession(2, 5000, 2, 2); txn.Digest != nil {
		t.Fatalf("createSession carries digest %+v", txn.Digest)
	}
}

// TestDigestFollowsTheTxnsOwner: a createContainer with ephemeral flags makes a container,
// whatever the pending record says later requests see; the digest is the tree's.
func TestDigestFollowsTheTxnsOwner(t *testing.T) {
	tree := datatree.New()
	p := New(tree)
	txn := p.Prepare(&Request{SessionID: 0x55, Type: jute.OpCreateContainer, Body: &jute.CreateRequest{Path: "/c", ACL: jute.OpenACLUnsafe, Flags: jute.FlagEphemeral}}, 1, 1)
	if txn.Header.Type != jute.OpCreateContainer || txn.Digest == nil {
		t.Fatalf("got %v %+v", txn.Header.Type, txn.Body)
	}
	tree.Apply(&txn.Header, txn.Body)
	if txn.Digest.TreeDigest != tree.Digest() {
		t.Fatalf("predicted %d, tree %d", txn.Digest.TreeDigest, tree.Digest())
	}
}
