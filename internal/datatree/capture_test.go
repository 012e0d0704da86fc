package datatree

import (
	"fmt"
	"slices"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

// TestCaptureWhileChanging: a view read on another goroutine while the tree goes on
// changing gives exactly the tree at the capture (the race detector checks the sharing),
// and the log after the capture, replayed over it, gives the live tree.
func TestCaptureWhileChanging(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			w := newWorkload(t, seed)
			w.bodilessClose = false
			live := w.a.tr
			for i := 0; i < 400; i++ {
				w.step()
			}
			// With nothing applied during it, a fuzzy walk is exact: the expected nodes.
			want, _ := walkWith(t, fuzzyWalk(live), live)
			mark := len(w.log)
			v := live.Capture()
			got := make(chan []SnapNode)
			go func() {
				wk := v.Walk()
				var nodes []SnapNode
				for done := false; !done; {
					nodes, done = wk.Next(3, nodes)
				}
				wk.Close()
				got <- nodes
			}()
			for i := 0; i < 400; i++ {
				w.step()
			}
			nodes := <-got
			checkPreOrder(t, nodes)
			if d := diffNodes(want, nodes); d != "" {
				t.Fatalf("the view's walk differs from the tree at the capture:\n%s", d)
			}
			if v.NodeCount() != len(want) {
				t.Errorf("NodeCount %d, want %d", v.NodeCount(), len(want))
			}
			restored, l := loadNodes(t, v.ACLs(), nodes, live.ExtendedTypes, v.LastZxid())
			if l.MissingACLs != 0 {
				t.Errorf("MissingACLs = %d", l.MissingACLs)
			}
			if restored.Digest() != v.Digest() {
				t.Errorf("loaded digest %#x, view says %#x", restored.Digest(), v.Digest())
			}
			for _, lt := range w.log[mark:] {
				restored.Apply(lt.hdr, lt.body)
			}
			requireEqualTrees(t, live, restored)
			checkInvariants(t, restored)
			checkInvariants(t, live)
		})
	}
}

func walkWith(tb testing.TB, w snapWalker, t *Tree) ([]SnapNode, map[int64][]jute.ACL) {
	tb.Helper()
	var nodes []SnapNode
	for done := false; !done; {
		nodes, done = w.Next(64, nodes)
	}
	acls := t.ACLs()
	w.Close()
	return nodes, acls
}

// diffNodes compares two snapshots' nodes, in any order.
func diffNodes(want, got []SnapNode) string {
	key := func(n SnapNode) string {
		return fmt.Sprintf("%q data=%q nil=%v acl=%d stat=%+v", n.Path, n.Data, n.Data == nil, n.ACLKey, n.Stat)
	}
	var w, g []string
	for _, n := range want {
		w = append(w, key(n))
	}
	for _, n := range got {
		g = append(g, key(n))
	}
	slices.Sort(w)
	slices.Sort(g)
	if slices.Equal(w, g) {
		return ""
	}
	var out string
	for _, s := range w {
		if !slices.Contains(g, s) {
			out += "missing " + s + "\n"
		}
	}
	for _, s := range g {
		if !slices.Contains(w, s) {
			out += "extra   " + s + "\n"
		}
	}
	return out
}

// TestArenaStaysBounded: rewriting the same nodes' data over and over leaves the arena
// holding a bounded multiple of the live bytes (mostly dead chunks are compacted by later
// writes), and a view taken before the churn still reads its own data.
func TestArenaStaysBounded(t *testing.T) {
	a := newApplier(t)
	a.create("/d", "")
	const nodes, size = 200, 900
	val := func(round, i int) string {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte('a' + (round+i+j)%26)
		}
		return string(b)
	}
	for i := 0; i < nodes; i++ {
		a.create(fmt.Sprintf("/d/n%03d", i), val(0, i))
	}
	v := a.tr.Capture()
	for round := 1; round <= 60; round++ {
		for i := 0; i < nodes; i++ {
			a.setData(fmt.Sprintf("/d/n%03d", i), val(round, i))
		}
	}
	held := 0
	for _, c := range a.tr.arena.chunks {
		held += len(c)
	}
	liveBytes := 0
	for id := range a.tr.arena.chunks {
		liveBytes += a.tr.arena.live[id]
	}
	// 60 rounds wrote 60x the live bytes; without compaction the arena would hold all.
	if limit := 3*liveBytes + 2*chunkSize; held > limit {
		t.Errorf("arena holds %d bytes for %d live (limit %d)", held, liveBytes, limit)
	}
	for i := 0; i < nodes; i++ {
		p := fmt.Sprintf("/d/n%03d", i)
		if got := string(a.tr.Get(p).Data); got != val(60, i) {
			t.Fatalf("%s: data wrong after compaction", p)
		}
	}
	wk := v.Walk()
	var out []SnapNode
	for done := false; !done; {
		out, done = wk.Next(50, out)
	}
	seen := 0
	for _, n := range out {
		var i int
		if _, err := fmt.Sscanf(n.Path, "/d/n%03d", &i); err == nil {
			seen++
			if string(n.Data) != val(0, i) {
				t.Fatalf("view's %s: data changed under it", n.Path)
			}
		}
	}
	if seen != nodes {
		t.Fatalf("view has %d of the %d nodes", seen, nodes)
	}
	checkInvariants(t, a.tr)
}

// TestCaptureCost: a capture copies one word per page of records and of child lists and
// per arena chunk; it does not visit nodes.
func TestCaptureCost(t *testing.T) {
	a := newApplier(t)
	a.create("/c", "")
	for i := 0; i < 3000; i++ {
		a.create(fmt.Sprintf("/c/%d", i), "x")
	}
	v := a.tr.Capture()
	if got, want := len(v.recs), (int(a.tr.nrecs)+pageSize-1)/pageSize; got != want {
		t.Errorf("view holds %d record pages, want %d", got, want)
	}
	// The next change copies only the pages it writes: the node's and its parent's.
	before := slices.Clone(a.tr.recs.p)
	a.setData("/c/7", "y")
	copied := 0
	for i := range before {
		if before[i] != a.tr.recs.p[i] {
			copied++
		}
	}
	if copied == 0 || copied > 2 {
		t.Errorf("a setData after a capture copied %d record pages, want 1 or 2", copied)
	}
}

// TestViewChildPages: paging through a node's children in a view, while the tree adds and
// deletes children between pages, lists exactly the children at the capture, once each,
// with their Stats as they were.
func TestViewChildPages(t *testing.T) {
	a := newApplier(t)
	a.create("/p", "")
	for i := 0; i < 500; i++ {
		a.create(fmt.Sprintf("/p/c%d", i), fmt.Sprint(i))
	}
	want := map[string]jute.Stat{}
	for _, name := range a.tr.Get("/p").Children() {
		want[name] = a.stat("/p/" + name)
	}
	v := a.tr.Capture()
	id, ok := a.tr.ID("/p")
	if !ok || !v.Holds(id, "/p") || v.Holds(id, "/q") {
		t.Fatal("ID/Holds wrong")
	}
	got := map[string]bool{}
	for from, round := 0, 0; ; round++ {
		page, total := v.ChildPage(id, from, 7)
		if total != 500 {
			t.Fatalf("total %d, want 500", total)
		}
		for _, c := range page {
			name := v.Name(c)
			if got[name] {
				t.Fatalf("%s listed twice", name)
			}
			got[name] = true
			if st, ok := want[name]; !ok || v.StatOf(c) != st {
				t.Fatalf("%s: stat %+v, want %+v (known %v)", name, v.StatOf(c), st, ok)
			}
			if par, pos, ok := v.Position(c); !ok || par != id || pos < from || pos >= from+7 {
				t.Fatalf("%s: position %d under %d", name, pos, par)
			}
		}
		from += len(page)
		if from >= total {
			break
		}
		// The live tree moves on between pages.
		a.del(fmt.Sprintf("/p/c%d", round))
		a.create(fmt.Sprintf("/p/new%d", round), "n")
		a.setData(fmt.Sprintf("/p/c%d", 499-round), "changed")
	}
	if len(got) != len(want) {
		t.Fatalf("listed %d children, want %d", len(got), len(want))
	}
	if st := v.StatOf(id); st.NumChildren != 500 {
		t.Fatalf("view's stat of /p: %+v", st)
	}
	checkInvariants(t, a.tr)
}

// TestSharedChildrenKept: a big child list's names are made once and handed out again
// while the list is unchanged; a change makes a new list and leaves the one a reader holds
// as it was.
func TestSharedChildrenKept(t *testing.T) {
	a := newApplier(t)
	a.create("/big", "")
	for i := 0; i < 2*sharedMin; i++ {
		a.create(fmt.Sprintf("/big/c%d", i), "")
	}
	n := a.tr.Get("/big")
	s1, s2 := n.SharedChildren(), n.SharedChildren()
	if len(s1) != 2*sharedMin || &s1[0] != &s2[0] {
		t.Fatalf("the list was not kept: %d names, same backing %v", len(s1), &s1[0] == &s2[0])
	}
	held := slices.Clone(s1)
	a.del("/big/c7")
	a.create("/big/new", "")
	s3 := a.tr.Get("/big").SharedChildren()
	if !slices.Equal(s1, held) {
		t.Fatal("a change altered the list a reader holds")
	}
	if slices.Contains(s3, "c7") || !slices.Contains(s3, "new") || len(s3) != 2*sharedMin {
		t.Fatalf("after a delete and a create: %d names, c7 %v, new %v", len(s3), slices.Contains(s3, "c7"), slices.Contains(s3, "new"))
	}
	a.del("/big/new")
	if s4 := a.tr.Get("/big").SharedChildren(); slices.Contains(s4, "new") {
		t.Fatal("a deleted child still listed")
	}
}
