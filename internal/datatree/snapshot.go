package datatree

import (
	"fmt"

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
	t     *Tree
	stack []string
	done  bool // closed
}

// Walk starts a snapshot walk. ACL lists stay in the table until the walk is closed, so
// every key a visited node holds appears in ACLs() taken before Close.
func (t *Tree) Walk() *Walker {
	t.acls.pinned++
	return &Walker{t: t, stack: []string{"/"}}
}

// Next appends up to max nodes to out and reports whether the walk is finished.
func (w *Walker) Next(max int, out []SnapNode) ([]SnapNode, bool) {
	for i := 0; i < max && len(w.stack) > 0; i++ {
		p := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		n := w.t.nodes[p]
		if n == nil {
			i--
			continue
		}
		sp := p
		if p == "/" {
			sp = ""
		}
		out = append(out, SnapNode{Path: sp, Data: n.Data, ACLKey: n.ACL, Stat: n.Stat})
		for c := range n.children {
			w.stack = append(w.stack, Join(p, c))
		}
	}
	return out, len(w.stack) == 0
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

// Node adds a node; its parent must already be loaded.
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
		parent := t.nodes[Parent(p)]
		if parent == nil {
			return fmt.Errorf("datatree: node %q loaded before its parent", p)
		}
		parent.addChild(Base(p))
	}
	if old := t.nodes[p]; old != nil {
		return fmt.Errorf("datatree: node %q appears twice", p)
	}
	t.nodes[p] = n
	t.acls.addRef(n.ACL)
	t.dataSize += nodeSize(p, n.Data)
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
	if t.nodes["/"] == nil {
		return nil, fmt.Errorf("datatree: snapshot has no root node")
	}
	t.ExtendedTypes = extendedTypes
	for p, n := range t.nodes {
		t.track(p, n.Stat.EphemeralOwner)
		t.digest += nodeDigest(p, n)
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
