package datatree

import (
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

// ---- a random workload of the txns ZooKeeper's PrepRequestProcessor would log ----

type loggedTxn struct {
	hdr  *jute.TxnHeader
	body jute.Record
}

type workload struct {
	rng      *rand.Rand
	a        *applier
	sessions []int64
	nextSess int64
	log      []loggedTxn
	// bodilessClose lets closeSession txns have no body, as logs from before 3.6 do.
	// ZooKeeper's fuzzy snapshots are only repaired by closeSession txns that list their
	// paths: replaying a bodiless one cannot move the pzxid of a parent whose ephemeral child
	// the snapshot missed (ZOOKEEPER-3145), so the fuzzy test keeps this off.
	bodilessClose bool
}

func newWorkload(tb testing.TB, seed int64) *workload {
	w := &workload{rng: rand.New(rand.NewSource(seed)), a: newApplier(tb), nextSess: 0x100000a4ed70000, bodilessClose: true}
	for i := 0; i < 3; i++ {
		w.newSession()
	}
	return w
}

func (w *workload) newSession() {
	w.nextSess++
	w.sessions = append(w.sessions, w.nextSess)
}

var workloadACLs = [][]jute.ACL{
	jute.OpenACLUnsafe, jute.OpenACLUnsafe, jute.ReadACLUnsafe, digestACL,
	{{Perms: jute.PermRead | jute.PermWrite, ID: jute.ID{Scheme: "ip", ID: "10.0.0.1"}}},
}

func (w *workload) acl() []jute.ACL {
	if w.rng.Intn(4) == 0 {
		// A list few nodes share, so keys come and go.
		return []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "digest", ID: fmt.Sprintf("u%d:x", w.rng.Intn(6))}}}
	}
	return workloadACLs[w.rng.Intn(len(workloadACLs))]
}

func (w *workload) data() []byte {
	switch w.rng.Intn(6) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	b := make([]byte, 1+w.rng.Intn(8))
	w.rng.Read(b)
	return b
}

// userNodes lists the nodes a client may change (not the root or the reserved nodes).
func (w *workload) userNodes() []string {
	var out []string
	for _, p := range sortedPaths(w.a.tr) {
		if p != "/" && p != ZookeeperPath && !strings.HasPrefix(p, ZookeeperPath+"/") {
			out = append(out, p)
		}
	}
	return out
}

func (w *workload) pick(ps []string) string {
	if len(ps) == 0 {
		return ""
	}
	return ps[w.rng.Intn(len(ps))]
}

func (w *workload) apply(typ jute.OpCode, body jute.Record, session int64) {
	h := w.a.hdr(typ)
	h.ClientID = session
	w.a.tr.Apply(h, body)
	w.log = append(w.log, loggedTxn{h, body})
}

func (w *workload) session() int64 { return w.sessions[w.rng.Intn(len(w.sessions))] }

// createBody builds a create of some kind under parent, with parentCVersion = stored + 1.
func (w *workload) createBody(path string, pcv int32) (jute.OpCode, jute.Record) {
	switch w.rng.Intn(10) {
	case 0, 1:
		return jute.OpCreate, &jute.CreateTxn{Path: path, Data: w.data(), ACL: w.acl(), Ephemeral: true, ParentCVersion: pcv}
	case 2:
		return jute.OpCreateContainer, &jute.CreateContainerTxn{Path: path, Data: w.data(), ACL: w.acl(), ParentCVersion: pcv}
	case 3:
		return jute.OpCreateTTL, &jute.CreateTTLTxn{Path: path, Data: w.data(), ACL: w.acl(), ParentCVersion: pcv, TTL: int64(1 + w.rng.Intn(100000))}
	case 4:
		return jute.OpCreate2, &jute.CreateTxn{Path: path, Data: w.data(), ACL: w.acl(), ParentCVersion: pcv}
	}
	return jute.OpCreate, &jute.CreateTxn{Path: path, Data: w.data(), ACL: w.acl(), ParentCVersion: pcv}
}

// parents lists nodes that may get children: not ephemerals, at most depth 3.
func (w *workload) parents() []string {
	out := []string{"/"}
	for _, p := range w.userNodes() {
		if !w.a.tr.IsEphemeral(w.a.tr.Get(p)) && strings.Count(p, "/") < 4 {
			out = append(out, p)
		}
	}
	return out
}

func (w *workload) step() {
	tr := w.a.tr
	switch op := w.rng.Intn(100); {
	case op < 35: // create
		parent := w.pick(w.parents())
		path := Join(parent, string(rune('a'+w.rng.Intn(5))))
		if tr.Get(path) != nil {
			w.apply(jute.OpError, &jute.ErrorTxn{Err: jute.ErrNodeExists}, w.session())
			return
		}
		typ, body := w.createBody(path, tr.Get(parent).Stat.Cversion+1)
		w.apply(typ, body, w.session())
	case op < 55: // delete a leaf
		var leaves []string
		for _, p := range w.userNodes() {
			if tr.Get(p).NumChildren() == 0 {
				leaves = append(leaves, p)
			}
		}
		if p := w.pick(leaves); p != "" {
			typ := jute.OpDelete
			if w.rng.Intn(5) == 0 {
				typ = jute.OpDeleteContainer
			}
			w.apply(typ, &jute.DeleteTxn{Path: p}, w.session())
		}
	case op < 72: // setData
		if p := w.pick(w.userNodes()); p != "" {
			w.apply(jute.OpSetData, &jute.SetDataTxn{Path: p, Data: w.data(), Version: tr.Get(p).Stat.Version + 1}, w.session())
		}
	case op < 82: // setACL
		if p := w.pick(w.userNodes()); p != "" {
			w.apply(jute.OpSetACL, &jute.SetACLTxn{Path: p, ACL: w.acl(), Version: tr.Get(p).Stat.Aversion + 1}, w.session())
		}
	case op < 86: // close a session; its id is never used again
		i := w.rng.Intn(len(w.sessions))
		s := w.sessions[i]
		w.sessions = slices.Delete(w.sessions, i, i+1)
		w.newSession()
		body := &jute.CloseSessionTxn{NoBody: w.bodilessClose && w.rng.Intn(2) == 0}
		if !body.NoBody {
			body.Paths2Delete = tr.Ephemerals(s)
		}
		w.apply(jute.OpCloseSession, body, s)
	case op < 94: // multi
		w.multi()
	case op < 97:
		w.apply(jute.OpError, &jute.ErrorTxn{Err: jute.ErrBadVersion}, w.session())
	default:
		w.apply(jute.OpCreateSession, &jute.CreateSessionTxn{TimeOut: 30000}, w.session())
	}
}

// multi logs a multi that creates a fresh subtree and changes it, or a failed one.
func (w *workload) multi() {
	tr := w.a.tr
	parent := w.pick(w.parents())
	if strings.Count(parent, "/") > 2 {
		parent = "/"
	}
	path := Join(parent, fmt.Sprintf("m%d", w.rng.Intn(4)))
	if tr.Get(path) != nil || w.rng.Intn(4) == 0 {
		w.apply(jute.OpMulti, &jute.MultiTxn{Txns: []jute.Txn{
			sub(jute.OpCreate, &jute.CreateTxn{Path: path + "x", Data: []byte{}, ACL: w.acl(), ParentCVersion: tr.Get(parent).Stat.Cversion + 1}),
			errSub(jute.ErrNodeExists),
			errSub(jute.ErrRuntimeInconsistency),
		}}, w.session())
		return
	}
	txns := []jute.Txn{
		sub(jute.OpCreate, &jute.CreateTxn{Path: path, Data: w.data(), ACL: w.acl(), ParentCVersion: tr.Get(parent).Stat.Cversion + 1}),
		sub(jute.OpCreate2, &jute.CreateTxn{Path: path + "/c", Data: w.data(), ACL: w.acl(), ParentCVersion: 1}),
		sub(jute.OpSetData, &jute.SetDataTxn{Path: path, Data: w.data(), Version: 1}),
		sub(jute.OpCheck, &jute.CheckVersionTxn{Path: path, Version: 1}),
	}
	if w.rng.Intn(2) == 0 {
		txns = append(txns, sub(jute.OpDelete, &jute.DeleteTxn{Path: path + "/c"}))
	}
	if leaf := w.pick(w.userNodes()); leaf != "" && tr.Get(leaf).NumChildren() == 0 && !strings.HasPrefix(path, leaf) && w.rng.Intn(2) == 0 {
		txns = append(txns, sub(jute.OpDelete, &jute.DeleteTxn{Path: leaf}))
	}
	w.apply(jute.OpMulti, &jute.MultiTxn{Txns: txns}, w.session())
}

// ---- snapshot helpers ----

func walkAll(tb testing.TB, t *Tree, budget int) ([]SnapNode, map[int64][]jute.ACL) {
	tb.Helper()
	w := t.Walk()
	var nodes []SnapNode
	for i := 0; ; i++ {
		var done bool
		nodes, done = w.Next(budget, nodes)
		if done {
			break
		}
		if i > t.NodeCount()+1 {
			tb.Fatal("walk does not finish")
		}
	}
	acls := t.ACLs()
	w.Close()
	return nodes, acls
}

func loadNodes(tb testing.TB, acls map[int64][]jute.ACL, nodes []SnapNode, extended bool, zxid int64) (*Tree, *Loader) {
	tb.Helper()
	l := NewLoader()
	for k, v := range acls {
		l.ACL(k, v)
	}
	for _, n := range nodes {
		if err := l.Node(n); err != nil {
			tb.Fatal(err)
		}
	}
	t, err := l.Finish(extended, zxid)
	if err != nil {
		tb.Fatal(err)
	}
	return t, l
}

// checkPreOrder verifies the snapshot node order ZooKeeper's loader needs: the root first,
// each node after its parent, no node twice.
func checkPreOrder(tb testing.TB, nodes []SnapNode) {
	tb.Helper()
	seen := map[string]bool{}
	for i, n := range nodes {
		if i == 0 {
			if n.Path != "" {
				tb.Fatalf("first node %q, want the root", n.Path)
			}
			seen["/"] = true
			continue
		}
		if n.Path == "" || seen[n.Path] {
			tb.Fatalf("node %d: %q twice", i, n.Path)
		}
		if !seen[Parent(n.Path)] {
			tb.Fatalf("node %d: %q before its parent", i, n.Path)
		}
		seen[n.Path] = true
	}
}

func TestWalkReproducesTree(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		for _, budget := range []int{1, 3, 1 << 20} {
			t.Run(fmt.Sprintf("seed%d/budget%d", seed, budget), func(t *testing.T) {
				w := newWorkload(t, seed)
				w.a.tr.ExtendedTypes = seed%2 == 1
				for i := 0; i < 400; i++ {
					w.step()
				}
				live := w.a.tr
				checkInvariants(t, live)
				nodes, acls := walkAll(t, live, budget)
				checkPreOrder(t, nodes)
				if len(nodes) != live.NodeCount() {
					t.Fatalf("walk gave %d nodes, tree has %d", len(nodes), live.NodeCount())
				}
				for _, n := range nodes {
					ln := live.Get(snapPath(n.Path))
					if n.Stat != ln.Stat || n.ACLKey != ln.ACL || string(n.Data) != string(ln.Data) {
						t.Fatalf("%s: walked %+v, live %+v", n.Path, n, ln)
					}
				}
				got, l := loadNodes(t, acls, nodes, live.ExtendedTypes, live.LastZxid())
				if l.MissingACLs != 0 {
					t.Errorf("MissingACLs = %d", l.MissingACLs)
				}
				requireEqualTrees(t, live, got)
				checkInvariants(t, got)
				if got.ApproximateDataSize() != live.ApproximateDataSize() {
					t.Errorf("ApproximateDataSize: loaded %d, live %d", got.ApproximateDataSize(), live.ApproximateDataSize())
				}
				if got.LastZxid() != live.LastZxid() || got.ExtendedTypes != live.ExtendedTypes {
					t.Errorf("loaded LastZxid %#x ExtendedTypes %v", got.LastZxid(), got.ExtendedTypes)
				}
				// The restored tree keeps working like the live one.
				for i := 0; i < 50; i++ {
					w.step()
					l := w.log[len(w.log)-1]
					got.Apply(l.hdr, l.body)
				}
				requireEqualTrees(t, live, got)
			})
		}
	}
}

// The fuzzy-snapshot property: txns applied while the walk runs make the walked nodes
// inconsistent with each other, and replaying every txn after the zxid at which the walk
// started repairs that (fact sheet §12.3). The walk visits siblings in map order, so a
// failing seed may not fail again; the diff in the message is what to go on.
func TestWalkFuzzySnapshot(t *testing.T) {
	fuzzySeeds := int64(60)
	for seed := int64(1); seed <= fuzzySeeds; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			w := newWorkload(t, seed)
			w.a.tr.ExtendedTypes = seed%3 != 0
			w.bodilessClose = false
			live := w.a.tr
			for i := 0; i < 300; i++ {
				w.step()
			}
			snapZxid := live.LastZxid()
			mark := len(w.log)
			walker := fuzzyWalk(live)
			var nodes []SnapNode
			for {
				for k := w.rng.Intn(4); k > 0; k-- {
					w.step()
				}
				var done bool
				nodes, done = walker.Next(1+w.rng.Intn(3), nodes)
				if done {
					break
				}
			}
			acls := live.ACLs()
			walker.Close()
			if during := len(w.log) - mark; during < 5 {
				t.Fatalf("only %d txns during the walk: the snapshot is not fuzzy", during)
			}
			checkPreOrder(t, nodes)
			for _, n := range nodes {
				if n.ACLKey != OpenACLKey && acls[n.ACLKey] == nil {
					t.Errorf("%s: ACL key %d not in ACLs() taken after the walk", snapPath(n.Path), n.ACLKey)
				}
			}
			restored, l := loadNodes(t, acls, nodes, live.ExtendedTypes, snapZxid)
			if l.MissingACLs != 0 {
				t.Errorf("MissingACLs = %d", l.MissingACLs)
			}
			for i := 0; i < 30; i++ {
				w.step()
			}
			for _, lt := range w.log[mark:] {
				restored.Apply(lt.hdr, lt.body)
			}
			requireEqualTrees(t, live, restored)
			checkInvariants(t, restored)
			if restored.LastZxid() != live.LastZxid() {
				t.Errorf("LastZxid %#x, live %#x", restored.LastZxid(), live.LastZxid())
			}
			if a, b := restored.ApproximateDataSize(), live.ApproximateDataSize(); a != b {
				t.Errorf("ApproximateDataSize %d, live %d", a, b)
			}
		})
	}
}

// snapWalker is a Walker or a fuzzyWalker.
type snapWalker interface {
	Next(max int, out []SnapNode) ([]SnapNode, bool)
	Close()
}

// fuzzyWalker writes the live tree as ZooKeeper's DataTree.serializeNode does: each node as
// it is when the walk reaches it, so txns applied during the walk are in the snapshot or
// not depending on where the walk was. zkd's own snapshots are consistent (Capture), but
// ZooKeeper's are fuzzy and zkd loads them and replays its log over them: the tests of that
// make their fuzzy snapshots with this.
type fuzzyWalker struct {
	t       *Tree
	stack   []fuzzyFrame
	started bool
	closed  bool
}

type fuzzyFrame struct {
	parent string
	names  []string
	next   int
}

// fuzzyWalk starts a fuzzy walk; ACL lists stay until it is closed, as ZooKeeper's
// ReferenceCountedACLCache keeps them while a snapshot is written.
func fuzzyWalk(t *Tree) *fuzzyWalker {
	t.acls.pinned++
	return &fuzzyWalker{t: t}
}

func (w *fuzzyWalker) Next(max int, out []SnapNode) ([]SnapNode, bool) {
	emitted := 0
	if !w.started && max > 0 {
		w.started = true
		if n := w.t.Get("/"); n != nil {
			out = w.visit("/", n, out)
			emitted++
		}
	}
	for emitted < max && len(w.stack) > 0 {
		f := &w.stack[len(w.stack)-1]
		if f.next == len(f.names) {
			w.stack = w.stack[:len(w.stack)-1]
			continue
		}
		p := Join(f.parent, f.names[f.next])
		f.next++
		if n := w.t.Get(p); n != nil {
			out = w.visit(p, n, out)
			emitted++
		}
	}
	return out, w.started && len(w.stack) == 0
}

func (w *fuzzyWalker) visit(p string, n *Node, out []SnapNode) []SnapNode {
	sp := p
	if p == "/" {
		sp = ""
	}
	out = append(out, SnapNode{Path: sp, Data: n.Data, ACLKey: n.ACL, Stat: n.Stat})
	if names := n.Children(); len(names) > 0 {
		w.stack = append(w.stack, fuzzyFrame{parent: p, names: names})
	}
	return out
}

func (w *fuzzyWalker) Close() {
	if !w.closed {
		w.closed = true
		w.t.acls.unpin()
	}
}

// walkUntil advances a walk one node at a time until path has been emitted.
func walkUntil(tb testing.TB, w snapWalker, path string, nodes []SnapNode) []SnapNode {
	tb.Helper()
	for {
		var done bool
		nodes, done = w.Next(1, nodes)
		if len(nodes) > 0 && snapPath(nodes[len(nodes)-1].Path) == path {
			return nodes
		}
		if done {
			tb.Fatalf("walk ended before %s", path)
		}
	}
}

func finishWalk(tb testing.TB, t *Tree, w snapWalker, nodes []SnapNode) ([]SnapNode, map[int64][]jute.ACL) {
	tb.Helper()
	for {
		var done bool
		nodes, done = w.Next(2, nodes)
		if done {
			break
		}
	}
	acls := t.ACLs()
	w.Close()
	return nodes, acls
}

// ZOOKEEPER-3145: the parent is serialized with the child still listed, the child is deleted
// before it is visited. Replaying the delete must still move the parent's pzxid.
func TestWalkChildDeletedBeforeVisit(t *testing.T) {
	a := newApplier(t)
	a.create("/p", "")
	a.create("/p/a", "")
	zxid := a.zxid
	w := fuzzyWalk(a.tr)
	nodes := walkUntil(t, w, "/p", nil)
	mark := a.zxid
	var log []loggedTxn
	h := a.hdr(jute.OpDelete)
	body := &jute.DeleteTxn{Path: "/p/a"}
	requireOK(t, a.tr.Apply(h, body))
	log = append(log, loggedTxn{h, body})
	nodes, acls := finishWalk(t, a.tr, w, nodes)
	for _, n := range nodes {
		if n.Path == "/p/a" {
			t.Fatal("walk emitted a deleted node")
		}
	}
	restored, _ := loadNodes(t, acls, nodes, true, zxid)
	if restored.Get("/p").Stat.Pzxid >= mark+1 {
		t.Fatal("setup: snapshot already has the delete")
	}
	for _, l := range log {
		restored.Apply(l.hdr, l.body)
	}
	requireEqualTrees(t, a.tr, restored)
}

// DataTree.processTxn's NODEEXISTS branch: an ephemeral is deleted by its session's close and
// re-created by another session after its parent was serialized. A closeSession without a
// body does not delete the new node on replay, so the create fails with NODEEXISTS, and
// ZooKeeper still moves the parent's cversion and pzxid.
func TestWalkRecreatedByAnotherSession(t *testing.T) {
	a := newApplier(t)
	a.create("/p", "")
	a.session = 0x11
	a.createEph("/p/e")
	snapZxid := a.zxid
	w := fuzzyWalk(a.tr)
	nodes := walkUntil(t, w, "/p", nil)
	var log []loggedTxn
	h := a.hdr(jute.OpCloseSession)
	h.ClientID = 0x11
	cs := &jute.CloseSessionTxn{NoBody: true}
	requireOK(t, a.tr.Apply(h, cs))
	log = append(log, loggedTxn{h, cs})
	a.session = 0x22
	h = a.hdr(jute.OpCreate)
	cr := &jute.CreateTxn{Path: "/p/e", Data: []byte{}, ACL: jute.OpenACLUnsafe, Ephemeral: true, ParentCVersion: a.pcv("/p/e")}
	requireOK(t, a.tr.Apply(h, cr))
	log = append(log, loggedTxn{h, cr})
	nodes, acls := finishWalk(t, a.tr, w, nodes)
	restored, _ := loadNodes(t, acls, nodes, true, snapZxid)
	if restored.Get("/p/e") == nil || restored.Get("/p/e").Stat.EphemeralOwner != 0x22 {
		t.Fatal("setup: the snapshot should hold the re-created node")
	}
	for _, l := range log {
		restored.Apply(l.hdr, l.body)
	}
	requireEqualTrees(t, a.tr, restored)
}

// A node is deleted and re-created with a child after the walk started but before the walk
// reached it: the snapshot holds the new node and its child, so replaying the delete leaves
// the child without a parent until its own create replaces it. ZooKeeper's
// NodeHashMapImpl.put then takes the old node's digest out.
func TestWalkSubtreeRecreated(t *testing.T) {
	a := newApplier(t)
	a.create("/m", "old")
	snapZxid := a.zxid
	w := fuzzyWalk(a.tr)
	nodes, _ := w.Next(1, nil) // the root; /m is still to come
	var log []loggedTxn
	do := func(typ jute.OpCode, body jute.Record) {
		h := a.hdr(typ)
		requireOK(t, a.tr.Apply(h, body))
		log = append(log, loggedTxn{h, body})
	}
	do(jute.OpDelete, &jute.DeleteTxn{Path: "/m"})
	do(jute.OpCreate, &jute.CreateTxn{Path: "/m", Data: []byte("new"), ACL: jute.OpenACLUnsafe, ParentCVersion: a.pcv("/m")})
	do(jute.OpCreate, &jute.CreateTxn{Path: "/m/c", Data: []byte("c"), ACL: digestACL, ParentCVersion: a.pcv("/m/c")})
	nodes, acls := finishWalk(t, a.tr, w, nodes)
	restored, _ := loadNodes(t, acls, nodes, true, snapZxid)
	if restored.Get("/m/c") == nil {
		t.Fatal("setup: the snapshot should hold the new child")
	}
	for _, l := range log {
		restored.Apply(l.hdr, l.body)
	}
	requireEqualTrees(t, a.tr, restored)
	checkInvariants(t, restored)
}

func TestWalkKeepsACLOfDeletedNode(t *testing.T) {
	ipACL := func(ip string) []jute.ACL {
		return []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "ip", ID: ip}}}
	}
	aclX, aclY, aclZ := ipACL("10.0.0.1"), ipACL("10.0.0.2"), ipACL("10.0.0.3")
	a := newApplier(t)
	a.create("/keep", "")
	a.mustOK(a.apply(jute.OpCreate, &jute.CreateTxn{Path: "/x", Data: []byte{}, ACL: aclX, ParentCVersion: a.pcv("/x")}))
	a.mustOK(a.apply(jute.OpCreate, &jute.CreateTxn{Path: "/y", Data: []byte{}, ACL: aclY, ParentCVersion: a.pcv("/y")}))
	xKey := a.tr.Get("/x").ACL
	yKey := a.tr.Get("/y").ACL
	w := a.tr.Walk()
	var nodes []SnapNode
	for done := false; !done; {
		nodes, done = w.Next(1, nodes)
		switch nodes[len(nodes)-1].Path {
		case "/x":
			// The visited node goes; its list loses its last user.
			requireOK(t, a.del("/x"))
			if !slices.Equal(a.tr.ACLs()[xKey], aclX) {
				t.Error("ACL of a visited node dropped during the walk")
			}
		case "/y":
			a.setACL("/y", aclZ)
		}
	}
	acls := a.tr.ACLs()
	w.Close()
	if !slices.Equal(acls[xKey], aclX) {
		t.Errorf("ACLs() after the walk lacks the deleted node's key %d: %v", xKey, acls)
	}
	if !slices.Equal(acls[yKey], aclY) {
		t.Errorf("ACLs() after the walk lacks the replaced key %d: %v", yKey, acls)
	}
	if _, l := loadNodes(t, acls, nodes, true, 0); l.MissingACLs != 0 {
		t.Errorf("MissingACLs = %d", l.MissingACLs)
	}
	// Once the walk is closed, unused lists go.
	for _, k := range []int64{xKey, yKey} {
		if _, ok := a.tr.ACLs()[k]; ok {
			t.Errorf("key %d still in the table after Close", k)
		}
	}
	checkInvariants(t, a.tr)
}

func TestWalkCloseAndOverlap(t *testing.T) {
	a := newApplier(t)
	for _, p := range []string{"/a", "/b", "/c"} {
		a.mustOK(a.apply(jute.OpCreate, &jute.CreateTxn{Path: p, Data: []byte{}, ACL: []jute.ACL{{Perms: 1, ID: jute.ID{Scheme: "ip", ID: p[1:]}}}, ParentCVersion: a.pcv(p)}))
	}
	keyOf := func(p string) int64 { return a.tr.Get(p).ACL }
	ka, kb := keyOf("/a"), keyOf("/b")
	w1 := a.tr.Walk()
	w2 := a.tr.Walk()
	w1.Next(1, nil)
	requireOK(t, a.del("/a"))
	w1.Close()
	if _, ok := a.tr.ACLs()[ka]; !ok {
		t.Error("a second walk is still running: the list must stay")
	}
	// A closed walk yields nothing more.
	if out, done := w1.Next(10, nil); len(out) != 0 || !done {
		t.Errorf("Next after Close: %d nodes, done %v", len(out), done)
	}
	w1.Close() // twice is harmless
	w2.Close()
	if _, ok := a.tr.ACLs()[ka]; ok {
		t.Error("unused list kept after every walk closed")
	}
	checkInvariants(t, a.tr)
	// Without a walk, lists go at once.
	requireOK(t, a.del("/b"))
	if _, ok := a.tr.ACLs()[kb]; ok {
		t.Error("unused list kept without a walk")
	}
	// Next(0) makes no progress; a finished walk stays finished.
	w3 := a.tr.Walk()
	if out, done := w3.Next(0, nil); len(out) != 0 || done {
		t.Errorf("Next(0): %d nodes, done %v", len(out), done)
	}
	out, done := w3.Next(100, nil)
	if !done || len(out) != a.tr.NodeCount() {
		t.Errorf("Next(100): %d nodes, done %v", len(out), done)
	}
	if more, done := w3.Next(100, nil); len(more) != 0 || !done {
		t.Errorf("Next after the end: %d nodes, done %v", len(more), done)
	}
	w3.Close()
	checkInvariants(t, a.tr)
}

func TestLoader(t *testing.T) {
	root := SnapNode{Path: "", Data: []byte{}, ACLKey: OpenACLKey}
	t.Run("errors", func(t *testing.T) {
		l := NewLoader()
		if err := l.Node(root); err != nil {
			t.Fatal(err)
		}
		if err := l.Node(SnapNode{Path: "/a/b", ACLKey: OpenACLKey}); err == nil {
			t.Error("node before its parent accepted")
		}
		if err := l.Node(SnapNode{Path: "/a", ACLKey: OpenACLKey}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"a", "/a/", "//a", "/a//b"} {
			if err := l.Node(SnapNode{Path: p, ACLKey: OpenACLKey}); err == nil {
				t.Errorf("path %q accepted", p)
			}
		}
		// A duplicate is found by Node or, at the latest, by Finish.
		for _, p := range []string{"/a", "/"} {
			l := NewLoader()
			err := l.Node(root)
			if err == nil {
				err = l.Node(SnapNode{Path: "/a", ACLKey: OpenACLKey})
			}
			if err != nil {
				t.Fatal(err)
			}
			if err = l.Node(SnapNode{Path: p, ACLKey: OpenACLKey}); err == nil {
				_, err = l.Finish(true, 0)
			}
			if err == nil {
				t.Errorf("duplicate node %q accepted", p)
			}
		}
		if _, err := NewLoader().Finish(true, 0); err == nil {
			t.Error("snapshot without a root accepted")
		}
	})
	t.Run("acl keys", func(t *testing.T) {
		l := NewLoader()
		l.ACL(5, digestACL)
		l.ACL(9, []jute.ACL{{Perms: jute.PermRead, ID: jute.ID{Scheme: "ip", ID: "9.9.9.9"}}}) // unused: dropped
		for _, n := range []SnapNode{
			root,
			{Path: "/a", Data: []byte("x"), ACLKey: 5},
			{Path: "/b", Data: nil, ACLKey: 7}, // not in the table
		} {
			if err := l.Node(n); err != nil {
				t.Fatal(err)
			}
		}
		tr, err := l.Finish(true, 0x42)
		if err != nil {
			t.Fatal(err)
		}
		if l.MissingACLs != 1 {
			t.Errorf("MissingACLs = %d", l.MissingACLs)
		}
		acls := tr.ACLs()
		if _, ok := acls[9]; ok {
			t.Error("unused ACL kept")
		}
		if !slices.Equal(acls[5], digestACL) {
			t.Errorf("ACLs() = %v", acls)
		}
		if tr.LastZxid() != 0x42 || tr.Get("/b").Data != nil {
			t.Error("loaded values changed")
		}
		// New lists get keys that collide with nothing loaded; equal lists reuse the key.
		a := &applier{tb: t, tr: tr, zxid: 0x42, time: 1}
		a.mustOK(a.apply(jute.OpCreate, &jute.CreateTxn{Path: "/c", Data: []byte{}, ACL: digestACL, ParentCVersion: a.pcv("/c")}))
		if k := tr.Get("/c").ACL; k != 5 {
			t.Errorf("equal list got key %d, want 5", k)
		}
		a.mustOK(a.apply(jute.OpCreate, &jute.CreateTxn{Path: "/d", Data: []byte{}, ACL: []jute.ACL{{Perms: 3, ID: jute.ID{Scheme: "ip", ID: "1.2.3.4"}}}, ParentCVersion: a.pcv("/d")}))
		if k := tr.Get("/d").ACL; k == 5 || k == 7 || k == 9 || k == OpenACLKey {
			t.Errorf("new list got key %d", k)
		}
		if !slices.Equal(tr.ACL(tr.Get("/a").ACL), digestACL) {
			t.Error("loaded node's ACL changed")
		}
		// The reserved nodes were missing from the snapshot and are back.
		if tr.Get(ConfigPath) == nil || tr.Get(ConfigPath).Stat.Aversion != -1 {
			t.Error("reserved nodes not restored")
		}
	})
}

// TestLoaderDeferredIndex loads trees big enough for the loader's sorted index build, in
// ZooKeeper's pre-order and in an order that is not (a parent off the ancestor stack makes
// the loader build its index mid-way), and with a duplicate hidden among thousands of
// nodes: the loaded tree must equal the one written, and the duplicate must be refused.
func TestLoaderDeferredIndex(t *testing.T) {
	a := newApplier(t)
	for i := 0; i < 40; i++ {
		a.create(fmt.Sprintf("/p%d", i), "")
		for j := 0; j < 150; j++ {
			a.create(fmt.Sprintf("/p%d/n%d", i, j), strconv.Itoa(j))
		}
	}
	a.create("/\u00e9t\U0001F600", "x")
	// ZooKeeper's node size counts UTF-16 units: 5 for the path, 1 for the data.
	if n := nodeSize("/\u00e9t\U0001F600", []byte("x")); n != 6 {
		t.Fatalf("nodeSize = %d, want 6", n)
	}
	if n := nodeSize("/ab", nil); n != 3 {
		t.Fatalf("nodeSize = %d, want 3", n)
	}
	var nodes []SnapNode
	w := a.tr.Walk()
	for done := false; !done; {
		var batch []SnapNode
		batch, done = w.Next(512, nil)
		nodes = append(nodes, batch...)
	}
	w.Close()
	acls := a.tr.ACLs()
	load := func(nodes []SnapNode) (*Tree, error) {
		l := NewLoader()
		for k, v := range acls {
			l.ACL(k, v)
		}
		for _, n := range nodes {
			if err := l.Node(n); err != nil {
				return nil, err
			}
		}
		return l.Finish(false, a.tr.LastZxid())
	}
	t.Run("pre-order", func(t *testing.T) {
		got, err := load(nodes)
		if err != nil {
			t.Fatal(err)
		}
		requireEqualTrees(t, a.tr, got)
		checkInvariants(t, got)
	})
	t.Run("parents first, not pre-order", func(t *testing.T) {
		// All of /p0's children come after the other subtrees: /p0 is then off the stack.
		var first, later []SnapNode
		for _, n := range nodes {
			if strings.HasPrefix(n.Path, "/p0/") {
				later = append(later, n)
			} else {
				first = append(first, n)
			}
		}
		got, err := load(append(first, later...))
		if err != nil {
			t.Fatal(err)
		}
		requireEqualTrees(t, a.tr, got)
		checkInvariants(t, got)
	})
	for _, at := range []int{len(nodes) / 2, len(nodes)} {
		t.Run(fmt.Sprintf("duplicate at %d", at), func(t *testing.T) {
			dup := slices.Clone(nodes[:at])
			dup = append(dup, nodes[len(nodes)/3])
			dup = append(dup, nodes[at:]...)
			if _, err := load(dup); err == nil || !strings.Contains(err.Error(), "appears twice") {
				t.Fatalf("a node listed twice: %v, want an error naming it", err)
			}
		})
	}
}
