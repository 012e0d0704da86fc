package datatree

import (
	"fmt"

	"github.com/zkd-io/zkd/jute"
)

// OpResult is the outcome of one applied operation.
type OpResult struct {
	Type jute.OpCode
	Err  jute.Code
	Path string
	Stat jute.Stat
}

// Result is the outcome of applying one txn. For a multi, Multi holds one result per
// sub-txn and Err is the first failure. Events lists the changes in order, for watches.
type Result struct {
	OpResult
	Multi  []OpResult
	Events []Event
}

// Apply applies one logged transaction. It never fails as a whole: a txn that does not fit
// the tree (as happens when replaying onto a fuzzy snapshot) reports its error code in the
// result and changes nothing.
func (t *Tree) Apply(hdr *jute.TxnHeader, body jute.Record) Result {
	return t.ApplyTo(hdr, body, nil)
}

// ApplyTo is Apply with the result's events appended to events: a caller that applies
// txn after txn passes the same slice, emptied, each time, and allocates no event list per
// txn (the events it got last time must then be done with).
func (t *Tree) ApplyTo(hdr *jute.TxnHeader, body jute.Record, events []Event) Result {
	var r Result
	r.Events = events
	r.Type = hdr.Type
	if hdr.Type == jute.OpMulti {
		t.applyMulti(hdr, body.(*jute.MultiTxn), &r)
	} else {
		r.OpResult = t.applyOne(hdr, hdr.Type, body, &r.Events)
	}
	if hdr.Zxid > t.lastZxid {
		t.lastZxid = hdr.Zxid
	}
	return r
}

func (t *Tree) applyMulti(hdr *jute.TxnHeader, m *jute.MultiTxn, r *Result) {
	failed := false
	for _, s := range m.Txns {
		if s.Type == jute.OpError {
			failed = true
			break
		}
	}
	r.Multi = make([]OpResult, 0, len(m.Txns))
	postFailed := false
	for _, s := range m.Txns {
		var res OpResult
		if failed {
			// Nothing of a failed multi is applied; only the results are produced: OK
			// before the first error sub-txn, the logged codes of error sub-txns, and
			// RUNTIMEINCONSISTENCY for real ops after an error.
			res.Type = jute.OpError
			if s.Type == jute.OpError {
				postFailed = true
				var et jute.ErrorTxn
				if err := jute.Unmarshal(s.Data, &et); err == nil {
					res.Err = et.Err
				} else {
					res.Err = jute.ErrRuntimeInconsistency
				}
			} else if postFailed {
				res.Err = jute.ErrRuntimeInconsistency
			}
		} else {
			body := jute.NewTxnBody(s.Type)
			if body == nil || jute.Unmarshal(s.Data, body) != nil {
				res = OpResult{Type: jute.OpError, Err: jute.ErrMarshallingError}
			} else {
				res = t.applyOne(hdr, s.Type, body, &r.Events)
			}
		}
		if res.Err != jute.OK && r.Err == jute.OK {
			r.Err = res.Err
		}
		r.Multi = append(r.Multi, res)
	}
}

func (t *Tree) applyOne(hdr *jute.TxnHeader, typ jute.OpCode, body jute.Record, ev *[]Event) OpResult {
	res := OpResult{Type: typ}
	switch b := body.(type) {
	case *jute.CreateTxn:
		owner := int64(0)
		if b.Ephemeral {
			owner = hdr.ClientID
		}
		pcv := b.ParentCVersion
		if b.V0 {
			pcv = -1
		}
		res.Path = b.Path
		res.Stat, res.Err = t.create(b.Path, b.Data, b.ACL, owner, pcv, hdr.Zxid, hdr.Time, ev)
		if res.Err == jute.ErrNodeExists && typ == jute.OpCreate {
			t.setCversionPzxid(Parent(b.Path), pcv, hdr.Zxid)
		}
	case *jute.CreateContainerTxn:
		res.Path = b.Path
		res.Stat, res.Err = t.create(b.Path, b.Data, b.ACL, ContainerOwner, b.ParentCVersion, hdr.Zxid, hdr.Time, ev)
	case *jute.CreateTTLTxn:
		res.Path = b.Path
		res.Stat, res.Err = t.create(b.Path, b.Data, b.ACL, TTLOwner(b.TTL), b.ParentCVersion, hdr.Zxid, hdr.Time, ev)
	case *jute.DeleteTxn:
		res.Path = b.Path
		res.Err = t.delete(b.Path, hdr.Zxid, ev)
	case *jute.SetDataTxn:
		res.Path = b.Path
		res.Stat, res.Err = t.setData(b.Path, b.Data, b.Version, hdr.Zxid, hdr.Time, ev)
	case *jute.SetACLTxn:
		res.Path = b.Path
		res.Stat, res.Err = t.setACL(b.Path, b.ACL, b.Version)
	case *jute.CloseSessionTxn:
		t.killSession(hdr.ClientID, hdr.Zxid, b, ev)
	case *jute.ErrorTxn:
		res.Err = b.Err
	case *jute.CreateSessionTxn, *jute.CheckVersionTxn:
		// Sessions live outside the tree; a check changes nothing.
	default:
		panic(fmt.Sprintf("datatree: unexpected txn %T", body))
	}
	return res
}

// event records events for watches, except while replaying a log.
func (t *Tree) event(ev *[]Event, events ...Event) {
	if !t.replaying {
		*ev = append(*ev, events...)
	}
}

func (t *Tree) create(path string, data []byte, acl []jute.ACL, owner int64, parentCVersion int32, zxid, time int64, ev *[]Event) (jute.Stat, jute.Code) {
	parentPath := Parent(path)
	pi := t.find(parentPath)
	if pi == noIndex || parentPath == "" {
		return jute.Stat{}, jute.ErrNoNode
	}
	old := t.find(path)
	if old != noIndex && t.rd(old).parent == pi {
		return jute.Stat{}, jute.ErrNodeExists
	}
	t.unDigest(pi)
	pr := t.wr(pi)
	if parentCVersion == -1 {
		parentCVersion = pr.cversion + 1
	}
	// Replaying onto a fuzzy snapshot may see a create the snapshot already outran.
	if parentCVersion > pr.cversion {
		pr.cversion = parentCVersion
		pr.pzxid = zxid
	}
	t.addDigest(pi)
	if old != noIndex {
		// Replay over a fuzzy snapshot can delete a parent that still holds a child the
		// snapshot caught; that child's own create comes later and replaces it here
		// (ZooKeeper's NodeHashMapImpl.put removes the old node's digest).
		or := t.rd(old)
		t.unDigest(old)
		t.acls.release(int64(or.acl))
		t.dataSize -= nodeSize(path, t.dataOf(old))
		t.untrack(path, t.ownerOf(or))
		t.dropKids(old)
		t.unlink(old)
		t.freeRec(old)
	}
	i := t.newRec(path, data, t.acls.intern(acl), jute.StatPersisted{
		Czxid: zxid, Mzxid: zxid, Pzxid: zxid,
		Ctime: time, Mtime: time,
		EphemeralOwner: owner,
	})
	t.link(pi, i)
	t.addDigest(i)
	t.dataSize += nodeSize(path, data)
	t.track(path, owner)
	t.quotaCreated(parentPath, path, data)
	if !t.replaying {
		t.event(ev, Event{jute.EventNodeCreated, path, t.acls.get(int64(t.rd(i).acl))},
			Event{jute.EventNodeChildrenChanged, parentPath, t.acls.get(int64(t.rd(pi).acl))})
	}
	return t.statOf(i), jute.OK
}

func (t *Tree) setCversionPzxid(path string, cv int32, zxid int64) {
	i := t.find(path)
	if i == noIndex {
		return
	}
	if cv == -1 {
		cv = t.rd(i).cversion + 1
	}
	if cv > t.rd(i).cversion {
		t.unDigest(i)
		w := t.wr(i)
		w.cversion = cv
		w.pzxid = zxid
		t.addDigest(i)
	}
}

func (t *Tree) track(path string, owner int64) {
	switch {
	case owner == 0:
	case owner == ContainerOwner:
		t.containers[path] = struct{}{}
	case owner < 0 && owner&ttlMask == ttlMask && t.ExtendedTypes:
		t.ttls[path] = struct{}{}
	default:
		set := t.ephemerals[owner]
		if set == nil {
			set = make(map[string]struct{})
			t.ephemerals[owner] = set
		}
		set[path] = struct{}{}
	}
}

func (t *Tree) untrack(path string, owner int64) {
	switch {
	case owner == 0:
	case owner == ContainerOwner:
		delete(t.containers, path)
	default:
		delete(t.ttls, path)
		if set := t.ephemerals[owner]; set != nil {
			delete(set, path)
			if len(set) == 0 {
				delete(t.ephemerals, owner)
			}
		}
	}
}

func (t *Tree) delete(path string, zxid int64, ev *[]Event) jute.Code {
	parentPath := Parent(path)
	pi := t.find(parentPath)
	if pi == noIndex || path == "/" {
		return jute.ErrNoNode
	}
	i := t.find(path)
	if i == noIndex {
		// DataTree.deleteNode moves the parent's pzxid before it finds the child
		// missing (ZOOKEEPER-3145).
		if zxid > t.rd(pi).pzxid {
			t.unDigest(pi)
			t.wr(pi).pzxid = zxid
			t.addDigest(pi)
		}
		return jute.ErrNoNode
	}
	r := t.rd(i)
	t.unDigest(i)
	// The list outlives its key: release may drop the key from the cache.
	acl := t.acls.get(int64(r.acl))
	t.acls.release(int64(r.acl))
	data := t.dataOf(i)
	t.dataSize -= nodeSize(path, data)
	t.untrack(path, t.ownerOf(r))
	t.unDigest(pi)
	// Only a node its parent lists leaves the list; any children it still has (a log
	// replayed over a fuzzy snapshot) stay in the index, listed by no one.
	if t.rd(i).parent == pi {
		t.unlink(i)
	}
	t.dropKids(i)
	t.freeRec(i)
	// Only forward: a replayed delete must not undo a later create's pzxid.
	if zxid > t.rd(pi).pzxid {
		t.wr(pi).pzxid = zxid
	}
	t.addDigest(pi)
	t.quotaDeleted(parentPath, path, data)
	if !t.replaying {
		t.event(ev, Event{jute.EventNodeDeleted, path, acl},
			Event{jute.EventNodeChildrenChanged, parentPath, t.acls.get(int64(t.rd(pi).acl))})
	}
	return jute.OK
}

func (t *Tree) setData(path string, data []byte, version int32, zxid, time int64, ev *[]Event) (jute.Stat, jute.Code) {
	i := t.find(path)
	if i == noIndex {
		return jute.Stat{}, jute.ErrNoNode
	}
	t.unDigest(i)
	old := t.dataOf(i)
	t.dataSize += nodeSize(path, data) - nodeSize(path, old)
	t.quotaChanged(path, int64(len(data)-len(old)), 0)
	t.setDataOf(i, data)
	w := t.wr(i)
	w.version = version
	w.mzxid = zxid
	w.mtime = time
	t.addDigest(i)
	if !t.replaying {
		t.event(ev, Event{jute.EventNodeDataChanged, path, t.acls.get(int64(t.rd(i).acl))})
	}
	return t.statOf(i), jute.OK
}

func (t *Tree) setACL(path string, acl []jute.ACL, version int32) (jute.Stat, jute.Code) {
	i := t.find(path)
	if i == noIndex {
		return jute.Stat{}, jute.ErrNoNode
	}
	t.unDigest(i)
	old := t.rd(i).acl
	key := t.acls.intern(acl)
	t.acls.release(int64(old))
	w := t.wr(i)
	w.acl = int32(key)
	w.aversion = version
	t.addDigest(i)
	return t.statOf(i), jute.OK
}

// killSession deletes the paths a closeSession txn lists, then any other ephemeral the
// session still owns, as ZooKeeper does.
func (t *Tree) killSession(session, zxid int64, b *jute.CloseSessionTxn, ev *[]Event) {
	for _, p := range b.Paths2Delete {
		t.delete(p, zxid, ev)
	}
	for _, p := range t.Ephemerals(session) {
		t.delete(p, zxid, ev)
	}
	delete(t.ephemerals, session)
}
