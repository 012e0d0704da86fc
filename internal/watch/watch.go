// Package watch owns the server's watch registrations: which connection watches which path,
// in which mode, and which connections a change notifies. It mirrors ZooKeeper's two
// WatchManagers (the data table and the child table, DataTree.dataWatches/childWatches) but
// is pure bookkeeping: no goroutines, no I/O, no locking. The caller serialises access and
// delivers the notifications.
//
// Modes follow ZooKeeper 3.9+ (ZOOKEEPER-4466, -4472): one connection may hold several modes
// on the same path at once (for example a one-shot getData watch and a persistent watch), a
// firing removes only the one-shot part, and checkWatches/removeWatches can address each mode.
// 3.8.0 kept a single mode per (connection, path) and let a later registration overwrite an
// earlier one; we deliberately keep the fixed behaviour.
package watch

import (
	"slices"
	"strings"

	"github.com/zkd-io/zkd/jute"
)

// WatcherID identifies the owner of watches: one client connection.
type WatcherID uint64

// Kind is how a watch was registered.
type Kind uint8

const (
	// Data is a one-shot data-table watch (getData, exists).
	Data Kind = iota + 1
	// Child is a one-shot child-table watch (getChildren, getChildren2).
	Child
	// Persistent is addWatch mode 0: both tables, exact path, survives firing.
	Persistent
	// PersistentRecursive is addWatch mode 1: data table, the path and all descendants,
	// survives firing, never sees NodeChildrenChanged.
	PersistentRecursive
)

// Table selects which of ZooKeeper's two tables an introspection call looks at.
type Table uint8

const (
	// DataTable holds Data, Persistent and PersistentRecursive registrations. ZooKeeper's
	// wchs, wchc and wchp report this table only.
	DataTable Table = 1 << iota
	// ChildTable holds Child and Persistent registrations.
	ChildTable
	// AllTables is both; a Persistent watch counts once per table, as in ZooKeeper's
	// zk_watch_count.
	AllTables = DataTable | ChildTable
)

// Per (watcher, path) mode bits. A Persistent watch is always in both tables at once (addWatch
// and setWatches2 register it in both, removeWatches(Persistent) removes it from both), so a
// single bit is enough for it.
const (
	bitData      uint8 = 1 << iota // one-shot, data table
	bitChild                       // one-shot, child table
	bitPersist                     // persistent, both tables
	bitRecursive                   // persistent-recursive, data table

	inData  = bitData | bitPersist | bitRecursive
	inChild = bitChild | bitPersist
	allBits = bitData | bitChild | bitPersist | bitRecursive
)

func kindBit(k Kind) uint8 {
	switch k {
	case Data:
		return bitData
	case Child:
		return bitChild
	case Persistent:
		return bitPersist
	case PersistentRecursive:
		return bitRecursive
	}
	return 0
}

// typeBits maps a checkWatches/removeWatches WatcherType to the modes it addresses.
func typeBits(t jute.WatcherType) uint8 {
	switch t {
	case jute.WatcherChildren:
		return bitChild
	case jute.WatcherData:
		return bitData
	case jute.WatcherPersistent:
		return bitPersist
	case jute.WatcherPersistentRecursive:
		return bitRecursive
	case jute.WatcherAny:
		return allBits
	}
	return 0
}

func tableBits(t Table) uint8 {
	var b uint8
	if t&DataTable != 0 {
		b |= inData
	}
	if t&ChildTable != 0 {
		b |= inChild
	}
	return b
}

// Fire is one notification to deliver: WatcherEvent{Type, SyncConnected, Path} to Watcher.
type Fire struct {
	Watcher WatcherID
	Type    jute.EventType
	Path    string
}

// Summary is the shape of the wchs answer.
type Summary struct {
	Watchers int // distinct watchers with at least one registration in the table(s)
	Paths    int // distinct paths with at least one registration in the table(s)
	Watches  int // registrations; a Persistent watch counts once per table
}

// Manager holds every watch of the server. The zero value is not usable; call New.
// It is not safe for concurrent use.
type Manager struct {
	// byPath is the trigger index. Its value is a small inline set because the common case
	// (one watcher per path, possibly a million paths) must not pay for a map per path.
	byPath map[string]smallSet[WatcherID, uint8]
	// byWatcher makes closing a connection cost O(its watches).
	byWatcher map[WatcherID]smallSet[string, struct{}]
	// recursive indexes PersistentRecursive registrations separately so the ancestor walk
	// of Trigger never scans a path's ordinary watchers.
	recursive  map[string]map[WatcherID]struct{}
	nRecursive int // registrations in recursive; zero skips the ancestor walk

	nData, nChild int // registrations per table, for an O(1) Count
}

// New returns an empty Manager.
func New() *Manager {
	return &Manager{
		byPath:    make(map[string]smallSet[WatcherID, uint8]),
		byWatcher: make(map[WatcherID]smallSet[string, struct{}]),
		recursive: make(map[string]map[WatcherID]struct{}),
	}
}

func (m *Manager) bits(w WatcherID, path string) uint8 {
	s, ok := m.byPath[path]
	if !ok {
		return 0
	}
	b, _ := s.get(w)
	return b
}

// set records the new mode bits of (w, path) and keeps every index and counter in step. It
// is the only place that changes registrations. The byPath entry is rewritten by the caller
// when it is iterating over it (see Trigger), so set takes the current set by pointer.
func (m *Manager) set(w WatcherID, path string, ps *smallSet[WatcherID, uint8], old, now uint8) {
	if old == now {
		return
	}
	m.nData += count(now&inData) - count(old&inData)
	m.nChild += count(now&inChild) - count(old&inChild)
	switch {
	case old&bitRecursive == 0 && now&bitRecursive != 0:
		rs := m.recursive[path]
		if rs == nil {
			rs = make(map[WatcherID]struct{}, 1)
			m.recursive[path] = rs
		}
		rs[w] = struct{}{}
		m.nRecursive++
	case old&bitRecursive != 0 && now&bitRecursive == 0:
		rs := m.recursive[path]
		delete(rs, w)
		if len(rs) == 0 {
			delete(m.recursive, path)
		}
		m.nRecursive--
	}
	switch {
	case now == 0:
		ps.remove(w)
		ws := m.byWatcher[w]
		ws.remove(path)
		if ws.len() == 0 {
			delete(m.byWatcher, w)
		} else {
			m.byWatcher[w] = ws
		}
	case old == 0:
		ps.put(w, now)
		ws := m.byWatcher[w]
		ws.put(path, struct{}{})
		m.byWatcher[w] = ws
	default:
		ps.put(w, now)
	}
}

func count(b uint8) int {
	if b != 0 {
		return 1
	}
	return 0
}

// update applies set to one (w, path) and stores the path's set back.
func (m *Manager) update(w WatcherID, path string, f func(old uint8) uint8) (old uint8) {
	ps := m.byPath[path]
	old, _ = ps.get(w)
	m.set(w, path, &ps, old, f(old))
	if ps.len() == 0 {
		delete(m.byPath, path)
	} else {
		m.byPath[path] = ps
	}
	return old
}

// Add registers a watch. It reports whether anything changed (false when w already held
// this mode on path), like ZooKeeper's WatchManager.addWatch.
func (m *Manager) Add(w WatcherID, path string, kind Kind) bool {
	b := kindBit(kind)
	if b == 0 {
		return false
	}
	old := m.update(w, path, func(old uint8) uint8 { return old | b })
	return old&b == 0
}

// Trigger reports who must be notified of one change and consumes the one-shot watches that
// fire. The caller maps a change to calls exactly as DataTree does:
//
//	create  path: Trigger(path, NodeCreated);     Trigger(parent, NodeChildrenChanged)
//	delete  path: Trigger(path, NodeDeleted);     Trigger(parent, NodeChildrenChanged)
//	setData path: Trigger(path, NodeDataChanged)
//
// where parent of "/a" is "/". Per event type:
//
//	NodeCreated, NodeDataChanged: data-table watchers of path, and recursive watchers of
//	    path or any ancestor. One-shot data watches on path are consumed.
//	NodeDeleted: data- and child-table watchers of path, and recursive watchers of path or
//	    any ancestor. One-shot data and child watches on path are consumed.
//	NodeChildrenChanged: child-table watchers of path only (so recursive watchers never
//	    see it). One-shot child watches on path are consumed.
//
// Any other type fires nothing. Each watcher appears at most once (ZooKeeper sends one
// notification per connection even when several of its registrations match), and the result
// is sorted by watcher id. Persistent watches stay, also after the node is deleted.
//
// Delivery filtering is the caller's: since 3.8.4/3.9.2 ZooKeeper drops an event when the
// watcher's connection lacks READ on the node (CVE-2024-23944); the one-shot watches that
// fired are consumed here all the same, as ZooKeeper consumes them before its check.
//
// Cost: one map lookup when path has no watches and no recursive watch exists anywhere;
// plus one lookup per ancestor when some recursive watch exists.
func (m *Manager) Trigger(path string, ev jute.EventType) []Fire {
	var match, consume uint8
	walk := false
	switch ev {
	case jute.EventNodeCreated, jute.EventNodeDataChanged:
		match, consume, walk = inData, bitData, true
	case jute.EventNodeDeleted:
		match, consume, walk = allBits, bitData|bitChild, true
	case jute.EventNodeChildrenChanged:
		match, consume = inChild, bitChild
	default:
		return nil
	}

	var ids []WatcherID
	if ps, ok := m.byPath[path]; ok {
		type change struct {
			w        WatcherID
			old, now uint8
		}
		var changes []change
		ps.each(func(w WatcherID, b uint8) {
			if b&match == 0 {
				return
			}
			ids = append(ids, w)
			if b&consume != 0 {
				changes = append(changes, change{w, b, b &^ consume})
			}
		})
		// Applied after the walk: set may restructure the set it is iterating.
		for _, c := range changes {
			m.set(c.w, path, &ps, c.old, c.now)
		}
		if ps.len() == 0 {
			delete(m.byPath, path)
		} else if len(changes) > 0 {
			m.byPath[path] = ps
		}
	}
	if walk && m.nRecursive > 0 {
		// Recursive watchers on path itself were matched above through inData.
		for p := parent(path); p != ""; p = parent(p) {
			for w := range m.recursive[p] {
				ids = append(ids, w)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	fires := make([]Fire, len(ids))
	for i, w := range ids {
		fires[i] = Fire{Watcher: w, Type: ev, Path: path}
	}
	return fires
}

// parent returns the parent of an absolute path ("/" for "/a"), and "" for "/" or a string
// that is not an absolute path.
func parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	switch {
	case i < 0 || p == "/":
		return ""
	case i == 0:
		return "/"
	}
	return p[:i]
}

// RemoveWatcher drops every watch of w (its connection closed) and returns how many
// (watcher, path) registrations it had. It costs O(w's watches).
func (m *Manager) RemoveWatcher(w WatcherID) int {
	ws, ok := m.byWatcher[w]
	if !ok {
		return 0
	}
	var paths []string
	ws.each(func(p string, _ struct{}) { paths = append(paths, p) })
	for _, p := range paths {
		m.update(w, p, func(uint8) uint8 { return 0 })
	}
	return len(paths)
}

// Check answers checkWatches: whether w holds a watch on path of type t. Children and Data
// mean the one-shot watches of that table, Persistent and PersistentRecursive the addWatch
// modes, Any all of them. Unknown types report false.
func (m *Manager) Check(w WatcherID, path string, t jute.WatcherType) bool {
	return m.bits(w, path)&typeBits(t) != 0
}

// Remove answers removeWatches: it drops w's watches on path of type t (same mapping as
// Check) and reports whether there was one. False means the server replies NOWATCHER.
func (m *Manager) Remove(w WatcherID, path string, t jute.WatcherType) bool {
	mask := typeBits(t)
	if mask == 0 || m.bits(w, path)&mask == 0 {
		return false
	}
	m.update(w, path, func(old uint8) uint8 { return old &^ mask })
	return true
}

// Count returns the number of registrations in both tables (a Persistent watch counts
// twice), which is ZooKeeper's zk_watch_count. O(1).
func (m *Manager) Count() int { return m.nData + m.nChild }

// HasRecursive reports whether any PersistentRecursive watch exists.
func (m *Manager) HasRecursive() bool { return m.nRecursive > 0 }

// Summary returns the wchs figures for table t (ZooKeeper's wchs uses DataTable).
// It scans every watch.
func (m *Manager) Summary(t Table) Summary {
	mask := tableBits(t)
	var s Summary
	watchers := make(map[WatcherID]struct{})
	for _, ps := range m.byPath {
		found := false
		ps.each(func(w WatcherID, b uint8) {
			if b&mask == 0 {
				return
			}
			found = true
			watchers[w] = struct{}{}
			if t&DataTable != 0 && b&inData != 0 {
				s.Watches++
			}
			if t&ChildTable != 0 && b&inChild != 0 {
				s.Watches++
			}
		})
		if found {
			s.Paths++
		}
	}
	s.Watchers = len(watchers)
	return s
}

// ByWatcher returns, for wchc, each watcher's watched paths in table t, paths sorted.
// Watchers with nothing in t are omitted.
func (m *Manager) ByWatcher(t Table) map[WatcherID][]string {
	out := make(map[WatcherID][]string)
	for w := range m.byWatcher {
		if ps := m.WatcherPaths(w, t); len(ps) > 0 {
			out[w] = ps
		}
	}
	return out
}

// ByPath returns, for wchp, each watched path's watchers in table t, ids sorted.
func (m *Manager) ByPath(t Table) map[string][]WatcherID {
	mask := tableBits(t)
	out := make(map[string][]WatcherID)
	for p, ps := range m.byPath {
		var ids []WatcherID
		ps.each(func(w WatcherID, b uint8) {
			if b&mask != 0 {
				ids = append(ids, w)
			}
		})
		if len(ids) > 0 {
			slices.Sort(ids)
			out[p] = ids
		}
	}
	return out
}

// WatcherPaths returns the paths w watches in table t, sorted.
func (m *Manager) WatcherPaths(w WatcherID, t Table) []string {
	mask := tableBits(t)
	ws, ok := m.byWatcher[w]
	if !ok {
		return nil
	}
	var paths []string
	ws.each(func(p string, _ struct{}) {
		if m.bits(w, p)&mask != 0 {
			paths = append(paths, p)
		}
	})
	slices.Sort(paths)
	return paths
}
