package prep

import (
	"sort"
	"strings"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

// The writes of ext.KeeperOps (ClickHouse Keeper's extension opcodes and zkd's
// createWithParents). Each becomes txns of ZooKeeper's own types, decided here from the
// projected state, so the log, snapshots and followers (Apache ZooKeeper ones too) apply
// them as any other txn:
//
//   - checkNotExists: no sub-txn inside a multi; on its own an error txn holding its answer.
//   - createIfNotExists: a create txn, or an error txn (NODEEXISTS) when the node exists,
//     which the server answers as ClickHouse does: OK with the path.
//   - removeRecursive: deletes, children first, in one multi txn (so it is atomic).
//   - createWithParents: creates, ancestors first, in one multi txn.

// errTooLarge fails a removeRecursive whose txn would be larger than a member accepts
// (MaxTxnBytes): as for its node limit, nothing is deleted and the answer is NOTEMPTY.
var errTooLarge = jute.ErrNotEmpty

// prepareExt prepares a top-level extension write. ok is false for other opcodes.
func (p *Preparer) prepareExt(r *Request, t *jute.LoggedTxn, s *txnState) (*jute.LoggedTxn, bool) {
	switch r.Type {
	case jute.OpCheckNotExists, jute.OpCreateIfNotExists, jute.OpRemoveRecursive, jute.OpCreateWithParents:
	default:
		return nil, false
	}
	t.Header.Type = jute.LoggedType(r.Type)
	if r.Type == jute.OpCreateWithParents {
		b, ok := r.Body.(*jute.CreateRequest)
		if !ok {
			return errorTxn(t, jute.ErrMarshallingError), true
		}
		txns, err := p.createWithParents(r, b, s)
		if err != nil {
			return errorTxn(t, codeOf(err)), true
		}
		t.Body = &jute.MultiTxn{Txns: txns}
		p.commit(s)
		return p.seal(t), true
	}
	txns, err := p.prepareExtOp(r, r.Type, r.Body, s)
	switch {
	case err != nil:
		return errorTxn(t, codeOf(err)), true
	case r.Type == jute.OpCheckNotExists:
		return errorTxn(t, jute.OK), true
	case r.Type == jute.OpCreateIfNotExists && len(txns) == 0:
		return errorTxn(t, jute.ErrNodeExists), true
	case r.Type == jute.OpCreateIfNotExists:
		var ct jute.CreateTxn
		if err := jute.Unmarshal(txns[0].Data, &ct); err != nil {
			return errorTxn(t, jute.ErrSystemError), true
		}
		t.Body = &ct
	default: // removeRecursive
		t.Body = &jute.MultiTxn{Txns: txns}
	}
	p.commit(s)
	return p.seal(t), true
}

// prepareExtOp prepares an extension op inside a multi (or on its own): its sub-txns,
// possibly none.
func (p *Preparer) prepareExtOp(r *Request, typ jute.OpCode, body jute.Record, s *txnState) ([]jute.Txn, error) {
	switch typ {
	case jute.OpCheckNotExists:
		b, ok := body.(*jute.CheckVersionRequest)
		if !ok {
			return nil, jute.ErrMarshallingError
		}
		return nil, p.checkNotExists(r, b, s)
	case jute.OpCreateIfNotExists:
		b, ok := body.(*jute.CreateRequest)
		if !ok {
			return nil, jute.ErrMarshallingError
		}
		if m, ok := p.modeOfServed(b.Flags); ok && (m.sequential || m.ttl || m.container) {
			// ClickHouse refuses a sequential one (its name is never taken); it has no
			// containers, and a TTL has no place in create's layout.
			return nil, jute.ErrBadArguments
		}
		rec, err := p.create(r, jute.OpCreate, b.Path, b.Data, b.ACL, b.Flags, -1, s)
		if err == jute.ErrNodeExists {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return []jute.Txn{{Type: jute.OpCreate, Data: jute.Marshal(rec)}}, nil
	case jute.OpRemoveRecursive:
		b, ok := body.(*jute.RemoveRecursiveRequest)
		if !ok {
			return nil, jute.ErrMarshallingError
		}
		return p.removeRecursive(r, b, s)
	}
	return nil, jute.ErrBadArguments
}

// checkNotExists is ClickHouse Keeper's CheckNotExists (src/Coordination/KeeperStorage.cpp,
// preprocess of ZooKeeperCheckRequest): READ on an existing node, then NODEEXISTS when it
// exists and version is -1 or its version.
func (p *Preparer) checkNotExists(r *Request, b *jute.CheckVersionRequest, s *txnState) error {
	if !datatree.ValidatePath(b.Path) {
		return jute.ErrBadArguments
	}
	n, err := p.lookup(s, b.Path)
	if err != nil {
		return nil
	}
	if err := p.checkACL(r, n.acl, jute.PermRead); err != nil {
		return err
	}
	if b.Version == -1 || b.Version == n.stat.Version {
		return jute.ErrNodeExists
	}
	return nil
}

// removeRecursive deletes path and its subtree as it will be once every outstanding txn is
// applied. As ClickHouse Keeper (KeeperStorage.cpp, RemoveRecursive): NONODE for a missing
// node, DELETE on the node's parent and on every node of the subtree (NOAUTH), and
// NOTEMPTY, deleting nothing, when the subtree has more than Limit nodes (the node itself
// counted).
func (p *Preparer) removeRecursive(r *Request, b *jute.RemoveRecursiveRequest, s *txnState) ([]jute.Txn, error) {
	if isSpecial(b.Path) || !datatree.ValidatePath(b.Path) {
		return nil, jute.ErrBadArguments
	}
	if _, _, err := p.parentForDelete(r, b.Path, s); err != nil {
		return nil, err
	}
	root, err := p.lookup(s, b.Path)
	if err != nil {
		return nil, err
	}
	pending := p.pendingChildren(b.Path, s)
	// Breadth first from the node; deleted in reverse, so every child goes before its parent.
	order := []string{b.Path}
	recs := []*record{root}
	size := 0
	for i := 0; i < len(order); i++ {
		if uint64(len(order)) > uint64(b.Limit) {
			return nil, jute.ErrNotEmpty
		}
		if err := p.checkACL(r, recs[i].acl, jute.PermDelete); err != nil {
			return nil, err
		}
		// A delete sub-txn: its type, the data buffer's length, and the path string.
		size += 12 + len(order[i])
		if p.MaxTxnBytes > 0 && size > p.MaxTxnBytes {
			return nil, errTooLarge
		}
		if recs[i].childCount == 0 {
			continue
		}
		for _, name := range p.childrenOf(order[i], pending) {
			child := datatree.Join(order[i], name)
			c, err := p.lookup(s, child)
			if err != nil {
				continue // deleted by an outstanding txn
			}
			order = append(order, child)
			recs = append(recs, c)
		}
	}
	txns := make([]jute.Txn, 0, len(order))
	for i := len(order) - 1; i >= 0; i-- {
		path := order[i]
		pp := datatree.Parent(path)
		pr, err := p.lookup(s, pp)
		if err != nil {
			return nil, jute.ErrSystemError
		}
		p.markDeleted(s, pp, pr, path)
		txns = append(txns, jute.Txn{Type: jute.OpDelete, Data: jute.Marshal(&jute.DeleteTxn{Path: path})})
	}
	return txns, nil
}

// pendingChildren maps each node under root to the names of its children that outstanding
// txns (or this one) create: the tree does not hold them yet.
func (p *Preparer) pendingChildren(root string, s *txnState) map[string][]string {
	prefix := root + "/"
	if root == "/" {
		prefix = "/"
	}
	out := map[string][]string{}
	add := func(path string, r *record) {
		if r.exists && strings.HasPrefix(path, prefix) && p.Tree.Get(path) == nil {
			pp := datatree.Parent(path)
			out[pp] = append(out[pp], datatree.Base(path))
		}
	}
	for path, r := range p.overlay {
		if s.find(path) < 0 {
			add(path, r)
		}
	}
	for _, c := range s.changes {
		add(c.path, c.r)
	}
	return out
}

// childrenOf is the names of path's children in the tree and created by outstanding txns,
// sorted so the txn is the same whatever order the tree keeps them in; the caller drops
// those outstanding txns delete.
func (p *Preparer) childrenOf(path string, pending map[string][]string) []string {
	var names []string
	if n := p.Tree.Get(path); n != nil {
		names = n.Children()
	}
	names = append(names, pending[path]...)
	sort.Strings(names)
	return names
}

// createWithParents creates the missing ancestors of b.Path (persistent, empty, with the
// request's ACL, each checked as its own create), then the node as create2 would.
func (p *Preparer) createWithParents(r *Request, b *jute.CreateRequest, s *txnState) ([]jute.Txn, error) {
	mode, ok := p.modeOfServed(b.Flags)
	if !ok || mode.ttl {
		return nil, jute.ErrBadArguments
	}
	if !datatree.ValidatePath(b.Path) || b.Path == "/" {
		return nil, jute.ErrBadArguments
	}
	var txns []jute.Txn
	for i := 1; i < len(b.Path); i++ {
		if b.Path[i] != '/' {
			continue
		}
		anc := b.Path[:i]
		if _, err := p.lookup(s, anc); err == nil {
			continue
		}
		rec, err := p.create(r, jute.OpCreate, anc, nil, b.ACL, jute.FlagPersistent, -1, s)
		if err != nil {
			return nil, err
		}
		txns = append(txns, jute.Txn{Type: jute.OpCreate, Data: jute.Marshal(rec)})
	}
	typ := jute.OpCreate
	if mode.container {
		typ = jute.OpCreateContainer
	}
	rec, err := p.create(r, typ, b.Path, b.Data, b.ACL, b.Flags, -1, s)
	if err != nil {
		return nil, err
	}
	return append(txns, jute.Txn{Type: typ, Data: jute.Marshal(rec)}), nil
}
