package datatree

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/zkd-io/zkd/jute"
)

// SnapNode is one node as a snapshot stores it. Path is "" for the root.
type SnapNode struct {
	Path   string
	Data   []byte
	ACLKey int64
	Stat   jute.StatPersisted
	// Digest is NodeDigest of the node when a reader computed it while decoding, on its own
	// goroutine, so that a load shares the hashing between cores; 0 when it did not (the
	// loader computes it then). Writers ignore it.
	Digest uint32
}

// View is the tree as it was at one moment (Capture): its nodes, ACL table, last zxid and
// digest. It shares the tree's storage, which the tree copies a page at a time before
// changing what a view may hold, so a view costs one pointer per page to take and may be
// read on any goroutine while the tree goes on changing.
type View struct {
	recs   []*[pageSize]rec
	lists  []*[pageSize]kidList
	chunks [][]byte
	root   uint32
	acls   map[int64][]jute.ACL
	owners []int64 // the owner table's values at the capture
	zxid   int64
	digest int64
	nodes  int
	// extendedTypes is the tree's ExtendedTypes at the capture (TTL owners read as 0).
	extendedTypes bool
	nrecs         uint32
}

// Capture takes a view of the tree as it is now. Its cost is one pointer copied per page of
// pageSize nodes and per chunk of the arena, whatever the nodes hold.
func (t *Tree) Capture() *View {
	v := &View{
		recs:   t.recs.clone(),
		lists:  t.lists.clone(),
		chunks: slices.Clone(t.arena.chunks),
		root:   t.find("/"),
		acls:   t.acls.snapshot(),
		owners: slices.Clone(t.owners.vals),
		zxid:   t.lastZxid,
		digest: int64(t.digest),
		nodes:  t.live,

		extendedTypes: t.ExtendedTypes,
		nrecs:         t.nrecs,
	}
	// Everything the view holds is now older than the tree's generation: the next change
	// of each page or child list copies it first.
	t.gen++
	return v
}

// LastZxid is the zxid of the last txn applied before the capture.
func (v *View) LastZxid() int64 { return v.zxid }

// Digest is the tree digest at the capture.
func (v *View) Digest() int64 { return v.digest }

// NodeCount is the number of nodes at the capture.
func (v *View) NodeCount() int { return v.nodes }

// ACLs is the ACL table at the capture; it covers every node of the view.
func (v *View) ACLs() map[int64][]jute.ACL { return v.acls }

func (v *View) rec(i uint32) *rec { return &v.recs[i>>pageBits][i&(pageSize-1)] }

func (v *View) entry(r *rec) (string, []byte) {
	p, d, _ := entryIn(v.chunks[r.off>>32], r.off)
	return p, d
}

func (v *View) kids(r *rec) []uint32 {
	if r.kids == 0 {
		return nil
	}
	return v.lists[r.kids>>pageBits][r.kids&(pageSize-1)].ids
}

// Walker produces the nodes of a view in pre-order (a parent before its children, as
// ZooKeeper's snapshots list them), a batch at a time.
type Walker struct {
	v       *View
	stack   []walkFrame
	started bool
	// unpin, if set, is called once by Close (a walk started by Tree.Walk).
	unpin func()
}

// walkFrame is a node whose children are being visited.
type walkFrame struct {
	ids  []uint32
	next int
}

// Walk starts a walk of the view.
func (v *View) Walk() *Walker { return &Walker{v: v} }

// Walk captures the tree and starts a walk of the capture. ACL lists stay in the tree's
// table until the walk is closed, so ACLs() taken before Close covers every visited node;
// the walker's own ACLs() does too.
func (t *Tree) Walk() *Walker {
	t.acls.pinned++
	w := t.Capture().Walk()
	w.unpin = t.acls.unpin
	return w
}

// ACLs is the ACL table of the walk's view.
func (w *Walker) ACLs() map[int64][]jute.ACL { return w.v.acls }

// View is the view the walk reads.
func (w *Walker) View() *View { return w.v }

// Next appends up to max nodes to out and reports whether the walk is finished.
func (w *Walker) Next(max int, out []SnapNode) ([]SnapNode, bool) {
	emitted := 0
	if !w.started && max > 0 {
		w.started = true
		if w.v.root != noIndex {
			out = w.visit(w.v.root, out)
			emitted++
		}
	}
	for emitted < max && len(w.stack) > 0 {
		f := &w.stack[len(w.stack)-1]
		if f.next == len(f.ids) {
			w.stack = w.stack[:len(w.stack)-1]
			continue
		}
		i := f.ids[f.next]
		f.next++
		out = w.visit(i, out)
		emitted++
	}
	return out, w.started && len(w.stack) == 0
}

func (w *Walker) visit(i uint32, out []SnapNode) []SnapNode {
	r := w.v.rec(i)
	sp, data := w.v.entry(r)
	if sp == "/" {
		sp = ""
	}
	out = append(out, SnapNode{Path: sp, Data: data, ACLKey: int64(r.acl), Stat: r.stat(w.v.owners)})
	if ids := w.v.kids(r); len(ids) > 0 {
		w.stack = append(w.stack, walkFrame{ids: ids})
	}
	return out
}

// Close ends the walk, early or after the last Next.
func (w *Walker) Close() {
	w.stack = nil
	if w.unpin != nil {
		w.unpin()
		w.unpin = nil
	}
}

// ACLs returns a copy of the ACL table, for the snapshot header. Take it after the walk's
// last Next and before its Close, so it covers every visited node.
func (t *Tree) ACLs() map[int64][]jute.ACL { return t.acls.snapshot() }

// Loader rebuilds a tree from a snapshot's ACL table and nodes, in file order.
type Loader struct {
	t *Tree
	// MissingACLs counts nodes whose ACL key was not in the snapshot's table.
	MissingACLs int
	// stack is the last node loaded and its ancestors: snapshots list nodes in pre-order,
	// so a node's parent is on it and needs no look-up.
	stack []loadedNode
	// ttlShaped nodes have an ephemeralOwner that marks a TTL node only if extended types
	// are on, which Finish is told.
	ttlShaped []string
	// pending holds the index words of the nodes loaded so far while the index is deferred
	// (until Finish, or until a node's parent is not on the stack): sorted and placed in
	// one pass, they cost a fraction of one random probe per node.
	pending  []uint64
	indexed  bool // the index is built: nodes go straight into it
	aclKey   int64
	aclCount int
	// bigKeys are the table's keys outside the range a record holds, and remap the keys
	// they and any such key a node names were given (settled at the first node).
	bigKeys  map[int64][]jute.ACL
	remap    map[int64]int64
	assigned map[int64]bool
	settled  bool
}

type loadedNode struct {
	path string
	i    uint32
}

// NewLoader returns a loader for an empty tree (without the reserved nodes, which the
// snapshot carries).
func NewLoader() *Loader { return &Loader{t: empty()} }

// ACL adds an entry of the snapshot's ACL table.
func (l *Loader) ACL(key int64, acls []jute.ACL) {
	if !fitsRec(key) {
		if l.bigKeys == nil {
			l.bigKeys = map[int64][]jute.ACL{}
		}
		l.bigKeys[key] = acls // given a key once the table is complete
		return
	}
	l.t.acls.load(key, acls)
}

// fitsRec reports whether a node record can hold ACL key k as it is.
func fitsRec(k int64) bool { return k >= math.MinInt32 && k <= maxACLKey }

// aclKeyFor is the key a node naming key k gets in the tree.
func (l *Loader) aclKeyFor(k int64) int64 {
	if !l.settled {
		l.settled = true
		l.remap = map[int64]int64{}
		l.assigned = map[int64]bool{}
		for _, big := range slices.Sorted(maps.Keys(l.bigKeys)) {
			nk := l.freshKey()
			l.t.acls.load(nk, l.bigKeys[big])
			l.remap[big] = nk
		}
	}
	if len(l.remap) == 0 && fitsRec(k) {
		return k // every snapshot ZooKeeper writes: no map is read per node
	}
	if nk, ok := l.remap[k]; ok {
		return nk
	}
	if fitsRec(k) && !l.assigned[k] {
		return k
	}
	// A key out of range that the table lacks (a fuzzy snapshot's), or a key the table
	// lacks that was handed to another: it still needs one of its own.
	nk := l.freshKey()
	l.remap[k] = nk
	return nk
}

// freshKey is a key neither the table nor any node loaded so far names, nor one handed
// out before; a node named later by a key it gave out gets a fresh one (aclKeyFor).
func (l *Loader) freshKey() int64 {
	l.flushACLRefs() // newKey skips keys with references
	nk := l.t.acls.newKey()
	l.assigned[nk] = true
	return nk
}

// Node adds a node; its parent must already be loaded. The tree copies sn.Data.
func (l *Loader) Node(sn SnapNode) error {
	t := l.t
	p := sn.Path
	if p == "" {
		p = "/"
	}
	sn.ACLKey = l.aclKeyFor(sn.ACLKey)
	if sn.ACLKey != OpenACLKey {
		if _, ok := t.acls.byKey[sn.ACLKey]; !ok {
			// A fuzzy snapshot can hold a node whose ACL list was interned after the
			// table was written; the logged txn that follows restores it on replay.
			l.MissingACLs++
		}
	}
	parent := noIndex
	if p != "/" {
		if !ValidPathForLoad(p) {
			return fmt.Errorf("datatree: invalid path %q in snapshot", p)
		}
		var err error
		if parent, err = l.parent(Parent(p)); err != nil {
			return err
		}
		if parent == noIndex {
			return fmt.Errorf("datatree: node %q loaded before its parent", p)
		}
	} else {
		l.stack = l.stack[:0]
	}
	var i uint32
	if l.indexed {
		var fresh bool
		if i, fresh = t.newUniqueRec(p, sn.Data, sn.ACLKey, sn.Stat); !fresh {
			return fmt.Errorf("datatree: node %q appears twice", p)
		}
	} else {
		i = t.storeRec(p, sn.Data, sn.ACLKey, sn.Stat)
		t.live++
		l.pending = append(l.pending, uint64(t.index.hash(p))<<32|uint64(i+1))
	}
	if parent != noIndex {
		t.link(parent, i)
	}
	// The stack's paths are the tree's own bytes: no copy of sn.Path is kept.
	l.stack = append(l.stack, loadedNode{t.pathOf(i), i})
	// Nodes mostly share a few ACLs, and in runs: counted here, the table's map is
	// touched once per run.
	if sn.ACLKey != l.aclKey {
		l.flushACLRefs()
		l.aclKey = sn.ACLKey
	}
	l.aclCount++
	t.dataSize += nodeSize(p, sn.Data)
	if sn.Digest != 0 {
		t.digest += uint64(sn.Digest)
	} else {
		t.addDigest(i)
	}
	// The indexes of owned nodes keep paths of their own: an arena chunk must not be kept
	// alive by one path after compaction moved the rest of it.
	if o := sn.Stat.EphemeralOwner; o < 0 && o != ContainerOwner && o&ttlMask == ttlMask {
		l.ttlShaped = append(l.ttlShaped, strings.Clone(p))
	} else if o != 0 {
		t.track(strings.Clone(p), o)
	}
	return nil
}

// parent finds a loaded node by path, on the ancestor stack if it is there (it always is
// for ZooKeeper's pre-order), and leaves the stack ending with it.
func (l *Loader) parent(pp string) (uint32, error) {
	for i := len(l.stack) - 1; i >= 0; i-- {
		if l.stack[i].path == pp {
			l.stack = l.stack[:i+1]
			return l.stack[i].i, nil
		}
	}
	if err := l.buildIndex(); err != nil {
		return noIndex, err
	}
	i := l.t.find(pp)
	if i == noIndex {
		return noIndex, nil
	}
	l.stack = append(l.stack[:0], loadedNode{l.t.pathOf(i), i})
	return i, nil
}

// buildIndex indexes the pending nodes and ends the deferral.
func (l *Loader) buildIndex() error {
	if l.indexed {
		return nil
	}
	l.indexed = true
	ws := sortByHash(l.pending)
	l.pending = nil
	if i := l.t.indexSorted(ws); i != noIndex {
		return fmt.Errorf("datatree: node %q appears twice", l.t.pathOf(i))
	}
	return nil
}

func (l *Loader) flushACLRefs() {
	if l.aclCount > 0 {
		l.t.acls.addRefs(l.aclKey, l.aclCount)
		l.aclCount = 0
	}
}

// sortByHash sorts index words by their hash (the top 32 bits), least significant digit
// first in two passes of 16 bits; it may return the scratch slice it sorted into.
func sortByHash(ws []uint64) []uint64 {
	if len(ws) < 1<<12 {
		slices.SortFunc(ws, func(a, b uint64) int { return cmp.Compare(a>>32, b>>32) })
		return ws
	}
	tmp := make([]uint64, len(ws))
	for shift := uint(32); shift < 64; shift += 16 {
		var count [1 << 16]int
		for _, w := range ws {
			count[uint16(w>>shift)]++
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, w := range ws {
			d := uint16(w >> shift)
			tmp[count[d]] = w
			count[d]++
		}
		ws, tmp = tmp, ws
	}
	return ws
}

// ValidPathForLoad accepts any absolute path without empty segments; snapshots written by
// older servers may hold names today's rules reject, and they must still load.
func ValidPathForLoad(p string) bool {
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' {
		return false
	}
	for i := 1; i < len(p); i++ {
		if p[i] == '/' && p[i-1] == '/' {
			return false
		}
	}
	return true
}

// Finish completes the load: it sets the extended-types mode, rebuilds the ephemeral,
// container and TTL indexes and the digest, drops unused ACLs, and restores the reserved
// nodes if the snapshot lacked them.
func (l *Loader) Finish(extendedTypes bool, lastZxid int64) (*Tree, error) {
	t := l.t
	if err := l.buildIndex(); err != nil {
		return nil, err
	}
	l.flushACLRefs()
	if t.find("/") == noIndex {
		return nil, fmt.Errorf("datatree: snapshot has no root node")
	}
	t.ExtendedTypes = extendedTypes
	for _, p := range l.ttlShaped {
		t.track(p, t.ownerOf(t.rd(t.find(p))))
	}
	if t.find(ZookeeperPath) == noIndex || t.find(QuotaPath) == noIndex || t.find(ConfigPath) == noIndex {
		t.addSystemNodes()
	}
	for k, n := range t.acls.refs {
		if n <= 0 {
			t.acls.drop(k)
		}
	}
	for k := range t.acls.byKey {
		if t.acls.refs[k] <= 0 {
			t.acls.drop(k)
		}
	}
	t.setupQuota(QuotaPath)
	t.lastZxid = lastZxid
	l.t = nil
	return t, nil
}

// NodeID names a node of a tree and of the views captured while it lives: a reader of a
// view (a paged listing) keeps it between pages instead of a path.
type NodeID uint32

// ID returns the node at path's NodeID, for use with a view captured while it lives.
func (t *Tree) ID(path string) (NodeID, bool) {
	i := t.find(path)
	return NodeID(i), i != noIndex
}

// Holds reports whether id is, in the view, the node at path.
func (v *View) Holds(id NodeID, path string) bool {
	if uint32(id) >= v.nrecs {
		return false
	}
	r := v.rec(uint32(id))
	if r.free() {
		return false
	}
	p, _ := v.entry(r)
	return p == path
}

// ChildPage returns the children of id (a node the view holds) at positions [from,
// from+limit) of its child list, in the list's order, and the list's length.
func (v *View) ChildPage(id NodeID, from, limit int) ([]NodeID, int) {
	ids := v.kids(v.rec(uint32(id)))
	if from >= len(ids) || limit <= 0 {
		return nil, len(ids)
	}
	page := ids[from:min(from+limit, len(ids))]
	out := make([]NodeID, len(page))
	for i, c := range page {
		out[i] = NodeID(c)
	}
	return out, len(ids)
}

// Position returns where id is in its parent's child list in the view, and that parent.
func (v *View) Position(id NodeID) (parent NodeID, pos int, ok bool) {
	if uint32(id) >= v.nrecs {
		return 0, 0, false
	}
	r := v.rec(uint32(id))
	if r.free() || r.parent == noIndex {
		return 0, 0, false
	}
	return NodeID(r.parent), int(r.pos), true
}

// Name is the last segment of id's path in the view.
func (v *View) Name(id NodeID) string {
	p, _ := v.entry(v.rec(uint32(id)))
	return Base(p)
}

// ACLKey is id's ACL key in the view (see ACLs).
func (v *View) ACLKey(id NodeID) int64 { return int64(v.rec(uint32(id)).acl) }

// StatOf is id's client-visible Stat in the view.
func (v *View) StatOf(id NodeID) jute.Stat {
	r := v.rec(uint32(id))
	nc := int32(len(v.kids(r)))
	_, data := v.entry(r)
	return jute.Stat{
		Czxid:          r.czxid,
		Mzxid:          r.mzxid,
		Ctime:          r.ctime,
		Mtime:          r.mtime,
		Version:        r.version,
		Cversion:       r.cversion*2 - nc,
		Aversion:       r.aversion,
		EphemeralOwner: clientOwner(v.owners[r.owner], v.extendedTypes),
		DataLength:     int32(len(data)),
		NumChildren:    nc,
		Pzxid:          r.pzxid,
	}
}
