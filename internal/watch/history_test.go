package watch

import (
	"slices"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

func ch(t jute.EventType, p string) Change { return Change{Type: t, Path: p} }

// zxids lists the (zxid, type, path) of changes, for comparisons.
func summary(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, jute.EventType(c.Type).String()+" "+c.Path+" @"+string(rune('0'+c.Zxid)))
	}
	return out
}

func TestHistorySinceMatchesTrigger(t *testing.T) {
	h := NewHistory(0, 100, 1<<20)
	h.Record(1, []Change{ch(jute.EventNodeCreated, "/a"), ch(jute.EventNodeChildrenChanged, "/")})
	h.Record(2, []Change{ch(jute.EventNodeCreated, "/a/x"), ch(jute.EventNodeChildrenChanged, "/a")})
	h.Record(3, []Change{ch(jute.EventNodeDataChanged, "/ab")})
	h.Record(4, []Change{ch(jute.EventNodeDeleted, "/a/x"), ch(jute.EventNodeChildrenChanged, "/a")})

	got, ok := h.Since(1, "/a", PersistentRecursive)
	if !ok {
		t.Fatal("Since(1) not covered")
	}
	want := []string{"NodeCreated /a/x @2", "NodeDeleted /a/x @4"}
	if !slices.Equal(summary(got), want) {
		t.Errorf("recursive /a since 1 = %v, want %v", summary(got), want)
	}
	got, _ = h.Since(0, "/a", Persistent)
	want = []string{"NodeCreated /a @1", "NodeChildrenChanged /a @2", "NodeChildrenChanged /a @4"}
	if !slices.Equal(summary(got), want) {
		t.Errorf("persistent /a since 0 = %v, want %v", summary(got), want)
	}
	got, _ = h.Since(0, "/", PersistentRecursive)
	if len(got) != 4 {
		t.Errorf("recursive / since 0 = %v, want the 4 non-children events", summary(got))
	}
	if got, ok := h.Since(4, "/", PersistentRecursive); !ok || len(got) != 0 {
		t.Errorf("since the newest zxid = %v %v, want nothing, covered", got, ok)
	}

	// The same events through a Manager: what Since replays is what Trigger fired.
	for _, kind := range []Kind{Persistent, PersistentRecursive} {
		m := New()
		m.Add(1, "/a", kind)
		var live []string
		for _, c := range []Change{{2, jute.EventNodeCreated, "/a/x", nil}, {2, jute.EventNodeChildrenChanged, "/a", nil},
			{3, jute.EventNodeDataChanged, "/ab", nil}, {4, jute.EventNodeDeleted, "/a/x", nil}, {4, jute.EventNodeChildrenChanged, "/a", nil}} {
			if len(m.Trigger(c.Path, c.Type)) > 0 {
				live = append(live, summary([]Change{c})[0])
			}
		}
		replayed, _ := h.Since(1, "/a", kind)
		if !slices.Equal(live, summary(replayed)) {
			t.Errorf("kind %d: Trigger fired %v, history replays %v", kind, live, summary(replayed))
		}
	}
}

func TestHistoryCompaction(t *testing.T) {
	h := NewHistory(5, 3, 1<<20)
	if h.Compacted() != 5 {
		t.Fatalf("a new history covers after %d, want its start 5", h.Compacted())
	}
	if _, ok := h.Since(4, "/", PersistentRecursive); ok {
		t.Error("a resume from before the start is covered")
	}
	h.Record(6, []Change{ch(jute.EventNodeCreated, "/a"), ch(jute.EventNodeCreated, "/b")})
	h.Record(7, nil) // a txn no watch sees (a session's creation) changes nothing
	if h.Compacted() != 5 {
		t.Errorf("compacted %d after an event-less txn, want 5", h.Compacted())
	}
	h.Record(8, []Change{ch(jute.EventNodeCreated, "/c")})
	h.Record(9, []Change{ch(jute.EventNodeCreated, "/d")}) // 4 > 3: txn 6 goes, whole
	if h.Compacted() != 6 || h.Len() != 2 {
		t.Errorf("compacted %d len %d, want 6 and 2", h.Compacted(), h.Len())
	}
	if _, ok := h.Since(5, "/", PersistentRecursive); ok {
		t.Error("resume from 5 covered after txn 6 was dropped")
	}
	got, ok := h.Since(6, "/", PersistentRecursive)
	if !ok || len(got) != 2 {
		t.Errorf("resume from 6 = %v %v, want /c and /d", summary(got), ok)
	}
	h.Record(9, []Change{ch(jute.EventNodeCreated, "/again")}) // the tree went back
	if h.Len() != 1 || h.Compacted() != 8 {
		t.Errorf("after a txn applied again: len %d compacted %d, want 1 and 8", h.Len(), h.Compacted())
	}
	h.Reset(20)
	if h.Len() != 0 || h.Compacted() != 20 || h.Bytes() != 0 {
		t.Errorf("after Reset: len %d compacted %d bytes %d", h.Len(), h.Compacted(), h.Bytes())
	}
}

func TestHistoryByteBound(t *testing.T) {
	h := NewHistory(0, 1000, 3*(changeOverhead+2))
	for z := int64(1); z <= 10; z++ {
		h.Record(z, []Change{ch(jute.EventNodeDataChanged, "/n")})
		if h.Bytes() > 3*(changeOverhead+2) {
			t.Fatalf("bytes %d over the bound", h.Bytes())
		}
	}
	if h.Len() != 3 || h.Compacted() != 7 {
		t.Errorf("len %d compacted %d, want 3 and 7", h.Len(), h.Compacted())
	}
	// Growth and wrap-around keep the order.
	h = NewHistory(0, 40, 1<<20)
	for z := int64(1); z <= 200; z++ {
		h.Record(z, []Change{ch(jute.EventNodeDataChanged, "/n")})
	}
	got, ok := h.Since(h.Compacted(), "/n", Persistent)
	if !ok || len(got) != 40 || got[0].Zxid != 161 || got[39].Zxid != 200 {
		t.Errorf("after wrap: %d changes from %d, want 40 from 161", len(got), got[0].Zxid)
	}
}

func TestHistoryDisabled(t *testing.T) {
	h := NewHistory(3, 0, 0)
	h.Record(4, []Change{ch(jute.EventNodeCreated, "/a")})
	if _, ok := h.Since(3, "/", PersistentRecursive); ok {
		t.Error("a history that keeps nothing covered a change it did not keep")
	}
	if got, ok := h.Since(4, "/", PersistentRecursive); !ok || len(got) != 0 {
		t.Errorf("resume from the newest zxid refused: %v %v", got, ok)
	}
}

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		path string
		kind Kind
		ev   jute.EventType
		at   string
		want bool
	}{
		{"/", PersistentRecursive, jute.EventNodeCreated, "/a/b", true},
		{"/a", PersistentRecursive, jute.EventNodeCreated, "/ab", false},
		{"/a", PersistentRecursive, jute.EventNodeChildrenChanged, "/a", false},
		{"/a", Persistent, jute.EventNodeChildrenChanged, "/a", true},
		{"/a", Persistent, jute.EventNodeCreated, "/a/b", false},
		{"/a", Data, jute.EventNodeCreated, "/a", false},
	} {
		if got := Matches(tc.path, tc.kind, tc.ev, tc.at); got != tc.want {
			t.Errorf("Matches(%q, %d, %v, %q) = %v", tc.path, tc.kind, tc.ev, tc.at, got)
		}
	}
}
