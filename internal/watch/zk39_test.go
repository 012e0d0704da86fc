package watch

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

// zk39 transcribes ZooKeeper 3.9's watch bookkeeping as it is written in Java, so that the
// Manager (one bit set per watcher and path) is checked against an independent rendering of
// the source rather than against its own logic: two WatchManagers (DataTree.dataWatches and
// childWatches), each a watchTable and a watch2Paths of WatchStats (ZOOKEEPER-4466), and
// DataTree's mapping of requests onto them (addWatch, containsWatcher, removeWatch,
// createNode, deleteNode, setData; ZOOKEEPER-4471, -4472).
type zk39 struct{ data, child *wm39 }

// WatcherMode as a WatchStats bit.
const (
	zkStandard  uint8 = 1
	zkPersist   uint8 = 2
	zkRecursive uint8 = 4
)

// wm39 is WatchManager (release-3.9.4, server/watch/WatchManager.java).
type wm39 struct {
	watchTable  map[string]map[WatcherID]bool
	watch2Paths map[WatcherID]map[string]uint8
}

func newZK39() *zk39 {
	mk := func() *wm39 {
		return &wm39{watchTable: map[string]map[WatcherID]bool{}, watch2Paths: map[WatcherID]map[string]uint8{}}
	}
	return &zk39{data: mk(), child: mk()}
}

func (m *wm39) addWatch(path string, w WatcherID, mode uint8) bool {
	if m.watchTable[path] == nil {
		m.watchTable[path] = map[WatcherID]bool{}
	}
	m.watchTable[path][w] = true
	if m.watch2Paths[w] == nil {
		m.watch2Paths[w] = map[string]uint8{}
	}
	stats := m.watch2Paths[w][path]
	if stats|mode != stats {
		m.watch2Paths[w][path] = stats | mode
		return true
	}
	return false
}

// triggerWatch returns the watchers it matched (the WatcherOrBitSet deleteNode passes on as
// the suppress set) and those it notified.
func (m *wm39) triggerWatch(path string, suppress map[WatcherID]bool) (matched, notified map[WatcherID]bool) {
	matched = map[WatcherID]bool{}
	// PathParentIterator.forAll: the path, then each ancestor up to "/".
	for local, atParent := path, false; local != ""; local, atParent = parent(local), true {
		for w := range m.watchTable[local] {
			stats, ok := m.watch2Paths[w][local]
			if !ok {
				continue
			}
			if !atParent {
				matched[w] = true
				if ns := stats &^ zkStandard; ns == 0 {
					delete(m.watchTable[local], w)
					delete(m.watch2Paths[w], local)
				} else {
					m.watch2Paths[w][local] = ns
				}
			} else if stats&zkRecursive != 0 {
				matched[w] = true
			}
		}
		if len(m.watchTable[local]) == 0 {
			delete(m.watchTable, local)
		}
	}
	notified = map[WatcherID]bool{}
	for w := range matched {
		if !suppress[w] {
			notified[w] = true
		}
	}
	return matched, notified
}

// containsWatcher with mode 0 is the Java null: any mode.
func (m *wm39) containsWatcher(path string, w WatcherID, mode uint8) bool {
	stats, ok := m.watch2Paths[w][path]
	return ok && (mode == 0 || stats&mode != 0)
}

func (m *wm39) unwatch(path string, w WatcherID) uint8 {
	stats, ok := m.watch2Paths[w][path]
	if !ok {
		return 0
	}
	delete(m.watch2Paths[w], path)
	if len(m.watch2Paths[w]) == 0 {
		delete(m.watch2Paths, w)
	}
	delete(m.watchTable[path], w)
	if len(m.watchTable[path]) == 0 {
		delete(m.watchTable, path)
	}
	return stats
}

// removeWatcher with mode 0 is the Java null: every mode.
func (m *wm39) removeWatcher(path string, w WatcherID, mode uint8) bool {
	if m.watch2Paths[w] == nil || m.watchTable[path] == nil {
		return false
	}
	var old, now uint8
	if mode != 0 {
		old = m.watch2Paths[w][path]
		now = old &^ mode
		if now != 0 {
			m.watch2Paths[w][path] = now
		} else if old != 0 {
			m.unwatch(path, w)
		}
	} else {
		old = m.unwatch(path, w)
	}
	return old != now
}

func (m *wm39) size() int {
	n := 0
	for _, ws := range m.watchTable {
		n += len(ws)
	}
	return n
}

// The DataTree side.

func (z *zk39) add(w WatcherID, path string, k Kind) {
	switch k {
	case Data:
		z.data.addWatch(path, w, zkStandard)
	case Child:
		z.child.addWatch(path, w, zkStandard)
	case Persistent:
		z.data.addWatch(path, w, zkPersist)
		z.child.addWatch(path, w, zkPersist)
	case PersistentRecursive:
		z.data.addWatch(path, w, zkRecursive)
	}
}

func (z *zk39) contains(w WatcherID, path string, t jute.WatcherType) bool {
	switch t {
	case jute.WatcherChildren:
		return z.child.containsWatcher(path, w, zkStandard)
	case jute.WatcherData:
		return z.data.containsWatcher(path, w, zkStandard)
	case jute.WatcherPersistent:
		return z.data.containsWatcher(path, w, zkPersist)
	case jute.WatcherPersistentRecursive:
		return z.data.containsWatcher(path, w, zkRecursive)
	case jute.WatcherAny:
		return z.child.containsWatcher(path, w, 0) || z.data.containsWatcher(path, w, 0)
	}
	return false
}

func (z *zk39) remove(w WatcherID, path string, t jute.WatcherType) bool {
	switch t {
	case jute.WatcherChildren:
		return z.child.removeWatcher(path, w, zkStandard)
	case jute.WatcherData:
		return z.data.removeWatcher(path, w, zkStandard)
	case jute.WatcherPersistent:
		c := z.child.removeWatcher(path, w, zkPersist)
		d := z.data.removeWatcher(path, w, zkPersist)
		return c || d
	case jute.WatcherPersistentRecursive:
		return z.data.removeWatcher(path, w, zkRecursive)
	case jute.WatcherAny:
		c := z.child.removeWatcher(path, w, 0)
		d := z.data.removeWatcher(path, w, 0)
		return c || d
	}
	return false
}

// note is one delivered notification, for comparing the two sides.
type note struct {
	w    WatcherID
	ev   jute.EventType
	path string
}

func sorted(ev jute.EventType, path string, ws map[WatcherID]bool) []note {
	var out []note
	for _, w := range slices.Sorted(maps.Keys(ws)) {
		out = append(out, note{w, ev, path})
	}
	return out
}

func parentOr(p string) string {
	if q := parent(p); q != "" {
		return q
	}
	return "/"
}

// create, del and setData are DataTree.createNode, deleteNode and setData's triggers.
func (z *zk39) create(path string) []note {
	_, n := z.data.triggerWatch(path, nil)
	out := sorted(created, path, n)
	_, n = z.child.triggerWatch(parentOr(path), nil)
	return append(out, sorted(children, parentOr(path), n)...)
}

func (z *zk39) del(path string) []note {
	processed, n := z.data.triggerWatch(path, nil)
	_, n2 := z.child.triggerWatch(path, processed)
	maps.Copy(n, n2)
	out := sorted(deleted, path, n)
	_, n = z.child.triggerWatch(parentOr(path), nil)
	return append(out, sorted(children, parentOr(path), n)...)
}

func (z *zk39) setData(path string) []note {
	_, n := z.data.triggerWatch(path, nil)
	return sorted(changed, path, n)
}

// The same changes through the Manager, as the server drives it (see Trigger).
func managerNotes(m *Manager, steps ...struct {
	path string
	ev   jute.EventType
}) []note {
	var out []note
	for _, s := range steps {
		for _, f := range m.Trigger(s.path, s.ev) {
			out = append(out, note{f.Watcher, f.Type, f.Path})
		}
	}
	return out
}

type trig = struct {
	path string
	ev   jute.EventType
}

// TestAgainstZooKeeper39 drives the Manager and the transcription of 3.9 with the same long
// random sequence of registrations (getData/exists, getChildren, addWatch in both modes),
// writes, checkWatches and removeWatches of every type, and closed connections, and
// compares every answer: who is notified of each event, what checkWatches and
// removeWatches find (OK or NOWATCHER), zk_watch_count and the wchs figures.
func TestAgainstZooKeeper39(t *testing.T) {
	paths := []string{"/a", "/a/b", "/a/b/c", "/a/c", "/b", "/b/a"}
	types := []jute.WatcherType{jute.WatcherChildren, jute.WatcherData, jute.WatcherAny,
		jute.WatcherPersistent, jute.WatcherPersistentRecursive}
	for seed := uint64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewPCG(seed, 39))
		m, z := New(), newZK39()
		for i := 0; i < 15000; i++ {
			w := WatcherID(r.IntN(4) + 1)
			p := paths[r.IntN(len(paths))]
			var got, want []note
			switch op := r.IntN(12); {
			case op < 5:
				k := Kind(r.IntN(4) + 1)
				m.Add(w, p, k)
				z.add(w, p, k)
			case op < 6:
				got, want = managerNotes(m, trig{p, created}, trig{parentOr(p), children}), z.create(p)
			case op < 7:
				got, want = managerNotes(m, trig{p, deleted}, trig{parentOr(p), children}), z.del(p)
			case op < 8:
				got, want = managerNotes(m, trig{p, changed}), z.setData(p)
			case op < 11:
				ty := types[r.IntN(len(types))]
				if g, w39 := m.Check(w, p, ty), z.contains(w, p, ty); g != w39 {
					t.Fatalf("seed %d step %d: checkWatches(%d, %s, %v) = %v, 3.9 %v", seed, i, w, p, ty, g, w39)
				}
				if r.IntN(2) == 0 {
					if g, w39 := m.Remove(w, p, ty), z.remove(w, p, ty); g != w39 {
						t.Fatalf("seed %d step %d: removeWatches(%d, %s, %v) = %v, 3.9 %v", seed, i, w, p, ty, g, w39)
					}
				}
			default:
				m.RemoveWatcher(w)
				for _, t := range []*wm39{z.data, z.child} {
					for path := range t.watch2Paths[w] {
						t.unwatch(path, w)
					}
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d step %d: notified %v, 3.9 %v", seed, i, got, want)
			}
			if g, w39 := m.Count(), z.data.size()+z.child.size(); g != w39 {
				t.Fatalf("seed %d step %d: zk_watch_count %d, 3.9 %d", seed, i, g, w39)
			}
			if i%101 == 0 {
				// ZooKeeper's triggerWatch leaves a connection whose last data watch fired in
				// watch2Paths with no paths, and its wchs still counts that connection
				// (wchc lists it with no paths) until it closes; the Manager forgets it. The
				// wchs view is the admin layer's (internal/admin WatchTable): counted here are
				// the connections that watch something.
				total, watchers := 0, 0
				for _, ps := range z.data.watch2Paths {
					total += len(ps)
					if len(ps) > 0 {
						watchers++
					}
				}
				want := Summary{Watchers: watchers, Paths: len(z.data.watchTable), Watches: total}
				if g := m.Summary(DataTable); g != want {
					t.Fatalf("seed %d step %d: wchs %+v, 3.9 %+v", seed, i, g, want)
				}
			}
		}
	}
}
