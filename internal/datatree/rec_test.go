package datatree

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/zkd-io/zkd/jute"
)

// TestRecSize: the record is most of a big tree's memory (issue 28's 150 bytes per znode
// at 10M); a field added to it must be paid for knowingly.
func TestRecSize(t *testing.T) {
	if n := unsafe.Sizeof(rec{}); n != 80 {
		t.Fatalf("rec is %d bytes, want 80", n)
	}
}

// TestOwnersInViews: owner ids are reused once free, yet a view taken before keeps the
// owners its nodes had; the ephemeral indexes follow the values.
func TestOwnersInViews(t *testing.T) {
	a := newApplier(t)
	sessA, sessB := int64(0x100000000000aa), int64(0x100000000000bb)
	a.session = sessA
	a.createEph("/a")
	a.createEph("/a2")
	v := a.tr.Capture()
	idA, _ := a.tr.ID("/a")
	a.del("/a")
	a.del("/a2") // A's owner id is free now
	a.session = sessB
	a.createEph("/b")
	if got := a.tr.Get("/b").Stat.EphemeralOwner; got != sessB {
		t.Fatalf("/b owner %#x, want %#x", got, sessB)
	}
	if got := v.StatOf(idA).EphemeralOwner; got != sessA {
		t.Fatalf("the view's /a owner %#x, want %#x (the id was reused after the capture)", got, sessA)
	}
	if got := a.tr.Ephemerals(sessB); !slices.Equal(got, []string{"/b"}) {
		t.Fatalf("B's ephemerals %v", got)
	}
	if n := len(a.tr.owners.ids); n != 1 {
		t.Fatalf("%d owners interned, want 1 (B's)", n)
	}
	checkInvariants(t, a.tr)
}

// TestACLKeysFitRecords: keys handed out past int32 are found by scan, and a snapshot's keys
// outside int32 (and a node's key missing from the table) are given keys that fit, each
// node keeping its list.
func TestACLKeysFitRecords(t *testing.T) {
	la := []jute.ACL{{Perms: jute.PermRead, ID: jute.ID{Scheme: "world", ID: "anyone"}}}
	lb := []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "digest", ID: "u:x"}}}
	t.Run("wrap", func(t *testing.T) {
		c := newACLCache()
		c.load(3, la)
		c.next = maxACLKey - 1
		seen := map[int64]bool{3: true}
		for i := 0; i < 5; i++ {
			k := c.intern([]jute.ACL{{Perms: int32(i + 1), ID: jute.ID{Scheme: "ip", ID: "10.0.0.1"}}})
			if !fitsRec(k) || seen[k] {
				t.Fatalf("key %d: out of range or reused", k)
			}
			seen[k] = true
		}
	})
	t.Run("load", func(t *testing.T) {
		l := NewLoader()
		l.ACL(1<<40, la)
		l.ACL(7, lb)
		nodes := []SnapNode{
			{Path: "", Data: []byte{}, ACLKey: OpenACLKey},
			{Path: "/a", Data: []byte{}, ACLKey: 1 << 40},
			{Path: "/b", Data: []byte{}, ACLKey: 7},
			{Path: "/c", Data: []byte{}, ACLKey: 1 << 41}, // not in the table
			{Path: "/d", Data: []byte{}, ACLKey: 1 << 41},
		}
		for _, n := range nodes {
			if err := l.Node(n); err != nil {
				t.Fatal(err)
			}
		}
		tr, err := l.Finish(false, 1)
		if err != nil {
			t.Fatal(err)
		}
		if l.MissingACLs != 2 {
			t.Errorf("MissingACLs %d, want 2", l.MissingACLs)
		}
		for p, want := range map[string][]jute.ACL{"/a": la, "/b": lb} {
			n := tr.Get(p)
			if !fitsRec(n.ACL) || !slices.Equal(tr.ACL(n.ACL), want) {
				t.Errorf("%s: key %d, list %v, want %v", p, n.ACL, tr.ACL(n.ACL), want)
			}
		}
		c, d := tr.Get("/c").ACL, tr.Get("/d").ACL
		if c != d || c == tr.Get("/a").ACL || c == tr.Get("/b").ACL || !fitsRec(c) {
			t.Errorf("missing key given %d and %d (a %d, b %d)", c, d, tr.Get("/a").ACL, tr.Get("/b").ACL)
		}
	})
	// A key the table lacks, in range, that a remapped key was given (a review found it):
	// its nodes must not take the remapped list, and they count as missing.
	t.Run("missing key taken by a remap", func(t *testing.T) {
		l := NewLoader()
		l.ACL(1, la)
		l.ACL(1<<40, lb)
		l.ACL(1<<40+1, la[:0:0])
		nodes := []SnapNode{
			{Path: "", Data: []byte{}, ACLKey: OpenACLKey},
			{Path: "/a", Data: []byte{}, ACLKey: 1 << 40},
			{Path: "/b", Data: []byte{}, ACLKey: 1<<40 + 7}, // missing, out of range
			{Path: "/c", Data: []byte{}, ACLKey: 2},         // missing: the first key a remap takes
			{Path: "/d", Data: []byte{}, ACLKey: 3},         // missing
		}
		for _, n := range nodes {
			if err := l.Node(n); err != nil {
				t.Fatal(err)
			}
		}
		tr, err := l.Finish(false, 1)
		if err != nil {
			t.Fatal(err)
		}
		if l.MissingACLs != 3 {
			t.Errorf("MissingACLs %d, want 3", l.MissingACLs)
		}
		if a := tr.Get("/a").ACL; !slices.Equal(tr.ACL(a), lb) {
			t.Errorf("/a: key %d list %v", a, tr.ACL(a))
		}
		seen := map[int64]string{tr.Get("/a").ACL: "/a"}
		for _, p := range []string{"/b", "/c", "/d"} {
			k := tr.Get(p).ACL
			if other, dup := seen[k]; dup || tr.ACL(k) != nil {
				t.Errorf("%s: key %d shared with %s, or with a list %v", p, k, other, tr.ACL(k))
			}
			seen[k] = p
		}
	})
}
