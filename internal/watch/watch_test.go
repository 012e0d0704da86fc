package watch

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

const (
	created  = jute.EventNodeCreated
	deleted  = jute.EventNodeDeleted
	changed  = jute.EventNodeDataChanged
	children = jute.EventNodeChildrenChanged
)

func fires(ev jute.EventType, path string, ws ...WatcherID) []Fire {
	if len(ws) == 0 {
		return nil
	}
	out := make([]Fire, len(ws))
	for i, w := range ws {
		out[i] = Fire{Watcher: w, Type: ev, Path: path}
	}
	return out
}

// checkInvariants recomputes every index and counter from byPath.
func checkInvariants(t *testing.T, m *Manager) {
	t.Helper()
	var nData, nChild, nRec int
	owners := map[WatcherID]map[string]bool{}
	for p, ps := range m.byPath {
		if ps.len() == 0 {
			t.Fatalf("empty set kept for %q", p)
		}
		ps.each(func(w WatcherID, b uint8) {
			if b == 0 || b&^allBits != 0 {
				t.Fatalf("bad bits %b for (%d,%q)", b, w, p)
			}
			nData += count(b & inData)
			nChild += count(b & inChild)
			if b&bitRecursive != 0 {
				nRec++
				if _, ok := m.recursive[p][w]; !ok {
					t.Fatalf("recursive (%d,%q) missing from index", w, p)
				}
			}
			if owners[w] == nil {
				owners[w] = map[string]bool{}
			}
			owners[w][p] = true
		})
	}
	if nData != m.nData || nChild != m.nChild || nRec != m.nRecursive {
		t.Fatalf("counters data=%d/%d child=%d/%d rec=%d/%d", m.nData, nData, m.nChild, nChild, m.nRecursive, nRec)
	}
	idx := 0
	for _, rs := range m.recursive {
		idx += len(rs)
	}
	if idx != nRec {
		t.Fatalf("recursive index holds %d, want %d", idx, nRec)
	}
	if len(owners) != len(m.byWatcher) {
		t.Fatalf("byWatcher has %d watchers, want %d", len(m.byWatcher), len(owners))
	}
	for w, ws := range m.byWatcher {
		if ws.len() != len(owners[w]) {
			t.Fatalf("watcher %d: %d paths indexed, want %d", w, ws.len(), len(owners[w]))
		}
		ws.each(func(p string, _ struct{}) {
			if !owners[w][p] {
				t.Fatalf("watcher %d indexes %q it does not watch", w, p)
			}
		})
	}
}

// TestTriggerTable walks the trigger table of the fact sheet (§6) for every registration
// kind: who fires, and whether the registration survives.
func TestTriggerTable(t *testing.T) {
	type step struct {
		path  string
		ev    jute.EventType
		fires bool
	}
	tests := []struct {
		name     string
		kind     Kind
		at       string
		steps    []step
		survives bool // registration still there after the steps
	}{
		{"data/created", Data, "/a", []step{{"/a", created, true}}, false},
		{"data/changed", Data, "/a", []step{{"/a", changed, true}}, false},
		{"data/deleted", Data, "/a", []step{{"/a", deleted, true}}, false},
		{"data/children", Data, "/a", []step{{"/a", children, false}}, true},
		{"data/child-path", Data, "/a", []step{{"/a/b", created, false}, {"/a/b", deleted, false}}, true},
		{"data/once", Data, "/a", []step{{"/a", changed, true}, {"/a", changed, false}}, false},
		{"child/children", Child, "/a", []step{{"/a", children, true}}, false},
		{"child/deleted", Child, "/a", []step{{"/a", deleted, true}}, false},
		{"child/created", Child, "/a", []step{{"/a", created, false}}, true},
		{"child/changed", Child, "/a", []step{{"/a", changed, false}}, true},
		{"child/once", Child, "/a", []step{{"/a", children, true}, {"/a", children, false}}, false},
		{"persistent/all", Persistent, "/a", []step{
			{"/a", created, true}, {"/a", changed, true}, {"/a", children, true},
			{"/a", deleted, true}, {"/a", created, true},
		}, true},
		{"persistent/exact-only", Persistent, "/a", []step{
			{"/a/b", created, false}, {"/a/b", changed, false}, {"/a/b", deleted, false}, {"/a/b", children, false},
		}, true},
		{"recursive/self", PersistentRecursive, "/a", []step{
			{"/a", created, true}, {"/a", changed, true}, {"/a", deleted, true}, {"/a", children, false},
		}, true},
		{"recursive/descendants", PersistentRecursive, "/a", []step{
			{"/a/b", created, true}, {"/a/b/c", changed, true}, {"/a/b/c/d", deleted, true},
			{"/a/b", children, false},
		}, true},
		{"recursive/not-siblings", PersistentRecursive, "/a", []step{
			{"/ab", created, false}, {"/", changed, false}, {"/b/a", created, false},
		}, true},
		{"recursive/root", PersistentRecursive, "/", []step{
			{"/", changed, true}, {"/x", created, true}, {"/x/y/z", deleted, true}, {"/", children, false},
		}, true},
		{"events-without-watch", Data, "/a", []step{
			{"/a", jute.EventNone, false}, {"/a", jute.EventDataWatchRemoved, false},
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			if !m.Add(7, tc.at, tc.kind) {
				t.Fatal("Add reported no change")
			}
			for _, s := range tc.steps {
				got := m.Trigger(s.path, s.ev)
				var want []Fire
				if s.fires {
					want = fires(s.ev, s.path, 7)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("Trigger(%q, %v) = %v, want %v", s.path, s.ev, got, want)
				}
				checkInvariants(t, m)
			}
			if got := m.Count() > 0; got != tc.survives {
				t.Fatalf("registration survives = %v, want %v", got, tc.survives)
			}
		})
	}
}

// TestGoldenJavaSession replays golden/02 connection 3: setWatches2 re-registers an exists
// watch, a child watch, a persistent watch on /jv/c2 and a recursive watch on /jv.
func TestGoldenJavaSession(t *testing.T) {
	m := New()
	const w = WatcherID(0x100000a4ed70002)
	m.Add(w, "/jv/missing", Data)
	m.Add(w, "/jv", Child)
	m.Add(w, "/jv/c2", Persistent)
	m.Add(w, "/jv", PersistentRecursive)

	// setData /jv/c2: persistent and recursive both match, one notification (#8).
	if got, want := m.Trigger("/jv/c2", changed), fires(changed, "/jv/c2", w); !slices.Equal(got, want) {
		t.Fatalf("setData: %v, want %v", got, want)
	}
	// create /jv/c2/x: NodeCreated through the recursive watch (#11), NodeChildrenChanged for
	// the parent through the persistent watch (#12).
	if got, want := m.Trigger("/jv/c2/x", created), fires(created, "/jv/c2/x", w); !slices.Equal(got, want) {
		t.Fatalf("create: %v, want %v", got, want)
	}
	if got, want := m.Trigger("/jv/c2", children), fires(children, "/jv/c2", w); !slices.Equal(got, want) {
		t.Fatalf("create parent: %v, want %v", got, want)
	}
	// checkWatches /jv/c2 Any: OK (#23); removeWatches /jv/none Any: NOWATCHER (#25);
	// removeWatches /jv Any: OK (#27).
	if !m.Check(w, "/jv/c2", jute.WatcherAny) {
		t.Fatal("checkWatches /jv/c2 Any: not found")
	}
	if m.Remove(w, "/jv/none", jute.WatcherAny) {
		t.Fatal("removeWatches /jv/none Any: found")
	}
	if !m.Remove(w, "/jv", jute.WatcherAny) {
		t.Fatal("removeWatches /jv Any: not found")
	}
	if m.Check(w, "/jv", jute.WatcherAny) || m.HasRecursive() {
		t.Fatal("/jv watches survived removeWatches Any")
	}
	checkInvariants(t, m)
}

func TestOneNotificationPerWatcher(t *testing.T) {
	m := New()
	m.Add(1, "/a/b", Data)
	m.Add(1, "/a/b", Child)
	m.Add(1, "/a/b", Persistent)
	m.Add(1, "/a/b", PersistentRecursive)
	m.Add(1, "/a", PersistentRecursive)
	m.Add(1, "/", PersistentRecursive)
	m.Add(2, "/", PersistentRecursive)
	m.Add(3, "/a/b", Child)

	got := m.Trigger("/a/b", deleted)
	if want := fires(deleted, "/a/b", 1, 2, 3); !slices.Equal(got, want) {
		t.Fatalf("delete: %v, want %v", got, want)
	}
	// The one-shot parts are consumed, the persistent parts stay.
	if m.Check(1, "/a/b", jute.WatcherData) || m.Check(1, "/a/b", jute.WatcherChildren) {
		t.Fatal("one-shot watches survived NodeDeleted")
	}
	if !m.Check(1, "/a/b", jute.WatcherPersistent) || !m.Check(1, "/a/b", jute.WatcherPersistentRecursive) {
		t.Fatal("persistent watches lost on NodeDeleted")
	}
	if m.Check(3, "/a/b", jute.WatcherAny) {
		t.Fatal("watcher 3 kept its child watch")
	}
	checkInvariants(t, m)
}

func TestAddReportsChange(t *testing.T) {
	m := New()
	if !m.Add(1, "/a", Data) || m.Add(1, "/a", Data) {
		t.Fatal("second identical Add must report no change")
	}
	if !m.Add(1, "/a", Persistent) {
		t.Fatal("adding another mode must report a change")
	}
	if m.Add(1, "/a", Kind(0)) || m.Add(1, "/a", Kind(99)) {
		t.Fatal("invalid kind accepted")
	}
	// A one-shot watch added on top of a persistent one does not downgrade it (the 3.8.0 bug
	// ZOOKEEPER-4466): after firing, the persistent watch remains.
	m.Trigger("/a", changed)
	if !m.Check(1, "/a", jute.WatcherPersistent) || m.Check(1, "/a", jute.WatcherData) {
		t.Fatal("mode bookkeeping wrong after firing")
	}
}

func TestCheckAndRemoveTypes(t *testing.T) {
	kinds := []Kind{Data, Child, Persistent, PersistentRecursive}
	types := []jute.WatcherType{jute.WatcherChildren, jute.WatcherData, jute.WatcherAny,
		jute.WatcherPersistent, jute.WatcherPersistentRecursive, jute.WatcherType(0), jute.WatcherType(6)}
	// matches[kind][type]
	matches := map[Kind]map[jute.WatcherType]bool{
		Data:                {jute.WatcherData: true, jute.WatcherAny: true},
		Child:               {jute.WatcherChildren: true, jute.WatcherAny: true},
		Persistent:          {jute.WatcherPersistent: true, jute.WatcherAny: true},
		PersistentRecursive: {jute.WatcherPersistentRecursive: true, jute.WatcherAny: true},
	}
	for _, k := range kinds {
		for _, ty := range types {
			t.Run(fmt.Sprintf("kind%d/type%d", k, ty), func(t *testing.T) {
				m := New()
				m.Add(1, "/p", k)
				want := matches[k][ty]
				if got := m.Check(1, "/p", ty); got != want {
					t.Fatalf("Check = %v, want %v", got, want)
				}
				if m.Check(2, "/p", ty) || m.Check(1, "/q", ty) {
					t.Fatal("Check matched another watcher or path")
				}
				if got := m.Remove(1, "/p", ty); got != want {
					t.Fatalf("Remove = %v, want %v", got, want)
				}
				if left := m.Count() > 0; left == want {
					t.Fatalf("after Remove, watch left = %v", left)
				}
				checkInvariants(t, m)
			})
		}
	}
}

func TestRemoveKeepsOtherModes(t *testing.T) {
	m := New()
	m.Add(1, "/p", Data)
	m.Add(1, "/p", Child)
	m.Add(1, "/p", PersistentRecursive)
	if !m.Remove(1, "/p", jute.WatcherData) {
		t.Fatal("Remove Data failed")
	}
	if !m.Check(1, "/p", jute.WatcherChildren) || !m.Check(1, "/p", jute.WatcherPersistentRecursive) {
		t.Fatal("Remove Data touched other modes")
	}
	if m.Remove(1, "/p", jute.WatcherData) {
		t.Fatal("second Remove Data found something")
	}
	if got := m.Trigger("/p/c", created); len(got) != 1 {
		t.Fatalf("recursive watch lost: %v", got)
	}
	checkInvariants(t, m)
}

func TestRemoveWatcher(t *testing.T) {
	m := New()
	m.Add(1, "/a", Data)
	m.Add(1, "/a", Persistent)
	m.Add(1, "/b", PersistentRecursive)
	m.Add(2, "/a", Data)
	if n := m.RemoveWatcher(1); n != 2 {
		t.Fatalf("RemoveWatcher = %d, want 2", n)
	}
	if m.RemoveWatcher(1) != 0 || m.RemoveWatcher(99) != 0 {
		t.Fatal("removing again found watches")
	}
	if m.HasRecursive() {
		t.Fatal("recursive count not released")
	}
	if got, want := m.Trigger("/a", changed), fires(changed, "/a", 2); !slices.Equal(got, want) {
		t.Fatalf("after RemoveWatcher: %v, want %v", got, want)
	}
	if m.Count() != 0 || len(m.byPath) != 0 || len(m.byWatcher) != 0 {
		t.Fatal("state left behind")
	}
	checkInvariants(t, m)
}

func TestIntrospection(t *testing.T) {
	m := New()
	m.Add(2, "/w4", Data)
	m.Add(1, "/w4", Data)
	m.Add(1, "/c", Child)
	m.Add(3, "/p", Persistent)
	m.Add(3, "/r", PersistentRecursive)

	if got, want := m.Summary(DataTable), (Summary{Watchers: 3, Paths: 3, Watches: 4}); got != want {
		t.Fatalf("Summary(Data) = %+v, want %+v", got, want)
	}
	if got, want := m.Summary(ChildTable), (Summary{Watchers: 2, Paths: 2, Watches: 2}); got != want {
		t.Fatalf("Summary(Child) = %+v, want %+v", got, want)
	}
	if got, want := m.Summary(AllTables), (Summary{Watchers: 3, Paths: 4, Watches: 6}); got != want {
		t.Fatalf("Summary(All) = %+v, want %+v", got, want)
	}
	if m.Count() != 6 {
		t.Fatalf("Count = %d, want 6", m.Count())
	}
	bw := m.ByWatcher(DataTable)
	if len(bw) != 3 || !slices.Equal(bw[1], []string{"/w4"}) || !slices.Equal(bw[3], []string{"/p", "/r"}) {
		t.Fatalf("ByWatcher(Data) = %v", bw)
	}
	if got := m.ByWatcher(ChildTable); len(got) != 2 || !slices.Equal(got[1], []string{"/c"}) {
		t.Fatalf("ByWatcher(Child) = %v", got)
	}
	bp := m.ByPath(DataTable)
	if len(bp) != 3 || !slices.Equal(bp["/w4"], []WatcherID{1, 2}) || bp["/c"] != nil {
		t.Fatalf("ByPath(Data) = %v", bp)
	}
	if got := m.WatcherPaths(1, AllTables); !slices.Equal(got, []string{"/c", "/w4"}) {
		t.Fatalf("WatcherPaths = %v", got)
	}
	if got := m.WatcherPaths(42, AllTables); got != nil {
		t.Fatalf("WatcherPaths(unknown) = %v", got)
	}
}

func TestParent(t *testing.T) {
	for in, want := range map[string]string{"/": "", "/a": "/", "/a/b": "/a", "/a/b/c": "/a/b", "": "", "x": ""} {
		if got := parent(in); got != want {
			t.Errorf("parent(%q) = %q, want %q", in, got, want)
		}
	}
}

// model is the obvious quadratic implementation of the same rules.
type model map[WatcherID]map[string]uint8

func (md model) trigger(path string, ev jute.EventType) []Fire {
	var match, consume uint8
	walk := false
	switch ev {
	case created, changed:
		match, consume, walk = inData, bitData, true
	case deleted:
		match, consume, walk = allBits, bitData|bitChild, true
	case children:
		match, consume = inChild, bitChild
	}
	var ids []WatcherID
	for w, paths := range md {
		hit := false
		for p, b := range paths {
			switch {
			case p == path && b&match != 0:
				hit = true
				if b&^consume == 0 {
					delete(paths, p)
				} else {
					paths[p] = b &^ consume
				}
			case walk && b&bitRecursive != 0 && isAncestor(p, path):
				hit = true
			}
		}
		if hit {
			ids = append(ids, w)
		}
	}
	slices.Sort(ids)
	return fires(ev, path, ids...)
}

func isAncestor(a, p string) bool {
	if a == "/" {
		return p != "/"
	}
	return len(p) > len(a) && p[:len(a)] == a && p[len(a)] == '/'
}

// TestAgainstModel runs a long random sequence of operations on a small namespace and
// compares every answer with the model.
func TestAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	paths := []string{"/", "/a", "/a/b", "/a/b/c", "/a/c", "/b", "/b/a"}
	events := []jute.EventType{created, deleted, changed, children}
	types := []jute.WatcherType{jute.WatcherChildren, jute.WatcherData, jute.WatcherAny,
		jute.WatcherPersistent, jute.WatcherPersistentRecursive}
	m, md := New(), model{}
	bitsOf := func(w WatcherID, p string) uint8 { return md[w][p] }
	for i := 0; i < 20000; i++ {
		w := WatcherID(r.IntN(5))
		p := paths[r.IntN(len(paths))]
		switch op := r.IntN(10); {
		case op < 4:
			k := Kind(r.IntN(4) + 1)
			want := bitsOf(w, p)&kindBit(k) == 0
			if md[w] == nil {
				md[w] = map[string]uint8{}
			}
			md[w][p] |= kindBit(k)
			if got := m.Add(w, p, k); got != want {
				t.Fatalf("step %d: Add = %v, want %v", i, got, want)
			}
		case op < 7:
			ev := events[r.IntN(len(events))]
			want := md.trigger(p, ev)
			if got := m.Trigger(p, ev); !slices.Equal(got, want) {
				t.Fatalf("step %d: Trigger(%q, %v) = %v, want %v", i, p, ev, got, want)
			}
		case op < 9:
			ty := types[r.IntN(len(types))]
			b := bitsOf(w, p)
			want := b&typeBits(ty) != 0
			if got := m.Check(w, p, ty); got != want {
				t.Fatalf("step %d: Check = %v, want %v", i, got, want)
			}
			if r.IntN(2) == 0 {
				if want {
					if nb := b &^ typeBits(ty); nb == 0 {
						delete(md[w], p)
					} else {
						md[w][p] = nb
					}
				}
				if got := m.Remove(w, p, ty); got != want {
					t.Fatalf("step %d: Remove = %v, want %v", i, got, want)
				}
			}
		default:
			want := len(md[w])
			delete(md, w)
			if got := m.RemoveWatcher(w); got != want {
				t.Fatalf("step %d: RemoveWatcher = %d, want %d", i, got, want)
			}
		}
		if i%97 == 0 {
			checkInvariants(t, m)
		}
	}
	checkInvariants(t, m)
}

// TestTriggerNoAlloc pins the fast path: a change on an unwatched path allocates nothing and
// does at most one lookup per ancestor.
func TestTriggerNoAlloc(t *testing.T) {
	m := New()
	m.Add(1, "/watched", Data)
	if n := testing.AllocsPerRun(100, func() { m.Trigger("/x/y/z", changed) }); n != 0 {
		t.Fatalf("Trigger without recursive watches allocates %v times", n)
	}
	m.Add(1, "/elsewhere", PersistentRecursive)
	if n := testing.AllocsPerRun(100, func() { m.Trigger("/x/y/z", changed) }); n != 0 {
		t.Fatalf("Trigger with an unrelated recursive watch allocates %v times", n)
	}
}

// TestManyWatchersOneNode: 100k connections watching one node. A quadratic removal or
// trigger would not finish in the test timeout.
func TestManyWatchersOneNode(t *testing.T) {
	const n = 100_000
	m := New()
	for i := range n {
		m.Add(WatcherID(n-i), "/hot", Data)
		m.Add(WatcherID(n-i), "/hot", Child)
	}
	got := m.Trigger("/hot", deleted)
	if len(got) != n || got[0].Watcher != 1 || got[n-1].Watcher != n {
		t.Fatalf("Trigger returned %d fires (%v .. %v)", len(got), got[0], got[len(got)-1])
	}
	if !slices.IsSortedFunc(got, func(a, b Fire) int { return int(a.Watcher) - int(b.Watcher) }) {
		t.Fatal("fires not sorted by watcher")
	}
	if m.Count() != 0 {
		t.Fatalf("one-shot watches left: %d", m.Count())
	}
	for i := range n {
		m.Add(WatcherID(i), "/hot", Persistent)
	}
	for i := range n {
		if m.RemoveWatcher(WatcherID(i)) != 1 {
			t.Fatalf("RemoveWatcher(%d) failed", i)
		}
	}
	if m.Count() != 0 || len(m.byPath) != 0 {
		t.Fatal("state left behind")
	}
}

// TestMemoryPerWatch builds one watch on each of 1M nodes and bounds the heap it costs.
func TestMemoryPerWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~200 MB")
	}
	const n = 1_000_000
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("/app/node-%07d", i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := New()
	for i, p := range paths {
		m.Add(WatcherID(i%16), p, Data)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("heap per watch: %.1f bytes", per)
	if per > 200 {
		t.Fatalf("heap per watch %.1f bytes, want <= 200", per)
	}
	if m.Count() != n {
		t.Fatalf("Count = %d", m.Count())
	}
	// Every watch fires once and is gone; the watcher index empties with it.
	if got := m.Trigger(paths[n/2+1], changed); len(got) != 1 {
		t.Fatalf("Trigger = %v", got)
	}
	if removed := m.RemoveWatcher(0); removed != n/16 {
		t.Fatalf("RemoveWatcher(0) = %d, want %d", removed, n/16)
	}
	runtime.KeepAlive(paths)
}

func BenchmarkTriggerUnwatched(b *testing.B) {
	m := New()
	for i := range 100_000 {
		m.Add(WatcherID(i%100), fmt.Sprintf("/n/%d", i), Data)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.Trigger("/n/x/y", changed)
	}
}

func BenchmarkTriggerUnwatchedWithRecursive(b *testing.B) {
	m := New()
	for i := range 100_000 {
		m.Add(WatcherID(i%100), fmt.Sprintf("/n/%d", i), Data)
	}
	m.Add(1, "/other", PersistentRecursive)
	b.ReportAllocs()
	for b.Loop() {
		m.Trigger("/n/a/b/c/d/e", changed)
	}
}

func BenchmarkTriggerOneShot(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		m.Add(1, "/n/a", Data)
		m.Trigger("/n/a", changed)
	}
}
