package datatree

import (
	"math/rand"
	"slices"
	"sort"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

// modelNode is a node of the reference model: the map-based child sets the tree had before
// it kept child lists.
type modelNode struct{ children map[string]bool }

// TestChildListsAgainstModel replays random creates and deletes, including deletes of
// parents that still have children and re-creates over orphans (as replaying a log onto a
// fuzzy snapshot does), and compares every result and child list with the model, checking
// the tree's invariants as it goes. (Written by a reviewer of the child-list change.)
func TestChildListsAgainstModel(t *testing.T) {
	paths := []string{"/a", "/a/b", "/a/c", "/a/b/d", "/a/b/e", "/a/c/f", "/b", "/b/x", "/b/y", "/b/z", "/a/x", "/a/y", "/a/z"}
	for seed := int64(0); seed < 500; seed++ {
		rng := rand.New(rand.NewSource(seed))
		tr := New()
		model := map[string]*modelNode{"/": {map[string]bool{"zookeeper": true}}, "/zookeeper": {map[string]bool{"quota": true, "config": true}}, "/zookeeper/quota": {map[string]bool{}}, "/zookeeper/config": {map[string]bool{}}}
		tr.BeginReplay()
		zxid := int64(0)
		for step := 0; step < 200; step++ {
			zxid++
			p := paths[rng.Intn(len(paths))]
			hdr := &jute.TxnHeader{Zxid: zxid, Time: zxid, ClientID: 1}
			switch rng.Intn(4) {
			case 0, 1:
				hdr.Type = jute.OpCreate
				r := tr.Apply(hdr, &jute.CreateTxn{Path: p, Data: []byte{byte(step)}, ACL: jute.OpenACLUnsafe, ParentCVersion: -1})
				par := model[Parent(p)]
				if par == nil {
					if r.Err != jute.ErrNoNode {
						t.Fatalf("seed %d step %d create %s: %v want nonode", seed, step, p, r.Err)
					}
				} else if par.children[Base(p)] {
					if r.Err != jute.ErrNodeExists {
						t.Fatalf("seed %d step %d create %s: %v want exists", seed, step, p, r.Err)
					}
				} else {
					if r.Err != jute.OK {
						t.Fatalf("seed %d step %d create %s: %v", seed, step, p, r.Err)
					}
					par.children[Base(p)] = true
					model[p] = &modelNode{map[string]bool{}}
				}
			case 2:
				hdr.Type = jute.OpDelete
				r := tr.Apply(hdr, &jute.DeleteTxn{Path: p})
				par := model[Parent(p)]
				if par == nil || model[p] == nil {
					if r.Err != jute.ErrNoNode {
						t.Fatalf("seed %d step %d delete %s: %v", seed, step, p, r.Err)
					}
				} else {
					delete(par.children, Base(p))
					delete(model, p)
				}
			case 3:
				hdr.Type = jute.OpSetData
				tr.Apply(hdr, &jute.SetDataTxn{Path: p, Data: []byte{1, 2, byte(step)}, Version: int32(step)})
			}
			// compare
			nodes := nodesOf(tr)
			if len(model) != len(nodes) {
				t.Fatalf("seed %d step %d: %d nodes, model %d", seed, step, len(nodes), len(model))
			}
			var sum uint64
			for mp, mn := range model {
				n := nodes[mp]
				if n == nil {
					t.Fatalf("seed %d step %d: %s missing", seed, step, mp)
				}
				d := uint64(tr.nodeDigest(n.i))
				if uint64(n.Digest()) != d {
					t.Fatalf("seed %d step %d: %s digest stale", seed, step, mp)
				}
				sum += d
				got := n.Children()
				sort.Strings(got)
				var want []string
				for c := range mn.children {
					want = append(want, c)
				}
				sort.Strings(want)
				if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Fatalf("seed %d step %d: %s children %v want %v", seed, step, mp, got, want)
				}
				for i, c := range n.Children() {
					if cn := nodes[Join(mp, c)]; cn == nil || int(tr.rd(cn.i).pos) != i {
						t.Fatalf("seed %d step %d: %s child %s idx", seed, step, mp, c)
					}
				}
			}
			if uint64(tr.Digest()) != sum {
				t.Fatalf("seed %d step %d: digest", seed, step)
			}
		}
		tr.EndReplay()
		// Walk and load.
		w := tr.Walk()
		var out []SnapNode
		for done := false; !done; {
			out, done = w.Next(3, out)
		}
		w.Close()
		l := NewLoader()
		for _, acl := range []int64{} {
			_ = acl
		}
		for k, v := range tr.ACLs() {
			l.ACL(k, v)
		}
		for _, sn := range out {
			if err := l.Node(sn); err != nil {
				t.Fatalf("seed %d load: %v", seed, err)
			}
		}
		lt, err := l.Finish(false, zxid)
		if err != nil {
			t.Fatalf("seed %d finish: %v", seed, err)
		}
		trNodes := nodesOf(tr)
		for p, n := range nodesOf(lt) {
			if trNodes[p] == nil || n.NumChildren() != trNodes[p].NumChildren() {
				t.Fatalf("seed %d loaded %s differs", seed, p)
			}
		}
	}
}
