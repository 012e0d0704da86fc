package datatree

import (
	"fmt"
	"slices"

	"github.com/zkd-io/zkd/jute"
)

// SnapNode is one node as a snapshot stores it. Path is "" for the root.
type SnapNode struct {
	Path   string
	Data   []byte
	ACLKey int64
	Stat   jute.StatPersisted
}

// Walker produces the nodes of a fuzzy snapshot in pre-order, a budget at a time, so the
// owner of the tree can interleave it with applying txns. Like ZooKeeper's, the result is
// fuzzy: each node is captured when it is visited; replaying the log from the zxid at which
// the walk started repairs the difference.
type Walker struct {
	t       *Tree
	stack   []walkFrame
	started bool
	done    bool // closed
}

// walkFrame is a node whose children are being visited: the names are copied when the node
// is visited (the child list changes as txns are applied), and each child's path is made
// only when it is its turn, so a node with a million children costs a copy of its list,
// not a million paths at once.
type walkFrame struct {
	parent string
	names  []string
	next   int
}

// Walk starts a snapshot walk. ACL lists stay in the table until the walk is closed, so
// every key a visited node holds appears in ACLs() taken before Close.
func (t *Tree) Walk() *Walker {
	t.acls.pinned++
	return &Walker{t: t}
}

// Next appends up to max nodes to out and reports whether the walk is finished.
func (w *Walker) Next(max int, out []SnapNode) ([]SnapNode, bool) {
	emitted := 0
	if !w.started && max > 0 {
		w.started = true
		if n := w.t.nodes["/"]; n != nil {
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
		if n := w.t.nodes[p]; n != nil {
			out = w.visit(p, n, out)
			emitted++
		}
	}
	return out, w.started && len(w.stack) == 0
}

func (w *Walker) visit(p string, n *Node, out []SnapNode) []SnapNode {
	sp := p
	if p == "/" {
		sp = ""
	}
	out = append(out, SnapNode{Path: sp, Data: n.Data, ACLKey: n.ACL, Stat: n.Stat})
	if names := n.childNames(); len(names) > 0 {
		w.stack = append(w.stack, walkFrame{parent: p, names: slices.Clone(names)})
	}
	return out
}

// Close ends the walk, early or after the last Next; ACL lists that only the walk kept go.
func (w *Walker) Close() {
	if !w.done {
		w.done = true
		w.stack = nil
		w.t.acls.unpin()
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
	// so a node's parent is on it and needs no map look-up.
	stack []loadedNode
	// pending nodes are not in the path map yet: Finish adds them all to a map made big
	// enough at once, which costs a third of growing it node by node (every growth step
	// rehashes keys scattered over the heap).
	pending []loadedNode
	// ttlShaped nodes have an ephemeralOwner that marks a TTL node only if extended types
	// are on, which Finish is told.
	ttlShaped []string
	err       error // from a flush that found a duplicate
}

type loadedNode struct {
	path string
	n    *Node
}

// NewLoader returns a loader for an empty tree (without the reserved nodes, which the
// snapshot carries).
func NewLoader() *Loader {
	return &Loader{t: &Tree{
		nodes:      make(map[string]*Node),
		acls:       newACLCache(),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
	}}
}

// ACL adds an entry of the snapshot's ACL table.
func (l *Loader) ACL(key int64, acls []jute.ACL) { l.t.acls.load(key, acls) }

// Node adds a node; its parent must already be loaded. The tree keeps sn.Data.
func (l *Loader) Node(sn SnapNode) error {
	t := l.t
	p := sn.Path
	if p == "" {
		p = "/"
	}
	if sn.ACLKey != OpenACLKey {
		if _, ok := t.acls.byKey[sn.ACLKey]; !ok {
			// A fuzzy snapshot can hold a node whose ACL list was interned after the
			// table was written; the logged txn that follows restores it on replay.
			l.MissingACLs++
		}
	}
	n := &Node{Data: sn.Data, ACL: sn.ACLKey, Stat: sn.Stat}
	if p != "/" {
		if !ValidPathForLoad(p) {
			return fmt.Errorf("datatree: invalid path %q in snapshot", p)
		}
		parent := l.parent(Parent(p))
		if parent == nil {
			if l.err != nil {
				return l.err
			}
			return fmt.Errorf("datatree: node %q loaded before its parent", p)
		}
		parent.addChild(Base(p), n)
	} else {
		l.stack = l.stack[:0]
	}
	l.pending = append(l.pending, loadedNode{p, n})
	l.stack = append(l.stack, loadedNode{p, n})
	t.acls.addRef(n.ACL)
	t.dataSize += nodeSize(p, n.Data)
	t.addDigest(p, n)
	if o := n.Stat.EphemeralOwner; o < 0 && o != ContainerOwner && o&ttlMask == ttlMask {
		l.ttlShaped = append(l.ttlShaped, p)
	} else {
		t.track(p, o)
	}
	return nil
}

// parent finds a loaded node by path, on the ancestor stack if it is there (it always is
// for ZooKeeper's pre-order), and leaves the stack ending with it.
func (l *Loader) parent(pp string) *Node {
	for i := len(l.stack) - 1; i >= 0; i-- {
		if l.stack[i].path == pp {
			l.stack = l.stack[:i+1]
			return l.stack[i].n
		}
	}
	if err := l.flush(); err != nil {
		l.err = err
		return nil
	}
	n := l.t.nodes[pp]
	l.stack = append(l.stack[:0], loadedNode{pp, n})
	return n
}

// flush moves the pending nodes to the path map.
func (l *Loader) flush() error {
	t := l.t
	if len(t.nodes) == 0 {
		t.nodes = make(map[string]*Node, len(l.pending))
	}
	for _, ln := range l.pending {
		before := len(t.nodes)
		t.nodes[ln.path] = ln.n
		if len(t.nodes) == before {
			return fmt.Errorf("datatree: node %q appears twice", ln.path)
		}
	}
	l.pending = l.pending[:0]
	return nil
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
	if err := l.flush(); err != nil {
		return nil, err
	}
	l.pending = nil
	if t.nodes["/"] == nil {
		return nil, fmt.Errorf("datatree: snapshot has no root node")
	}
	t.ExtendedTypes = extendedTypes
	for _, p := range l.ttlShaped {
		t.track(p, t.nodes[p].Stat.EphemeralOwner)
	}
	if t.nodes[ZookeeperPath] == nil || t.nodes[QuotaPath] == nil || t.nodes[ConfigPath] == nil {
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
