package metrics

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// nsSeries counts the Prometheus series of the per-namespace summaries (a summary is a
// series per quantile plus _sum and _count) and returns their keys.
func nsSeries(t *testing.T, r *Registry) (int, map[string]bool) {
	t.Helper()
	fams, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n, keys := 0, map[string]bool{}
	for _, f := range fams {
		if f.GetName() != "read_per_namespace" && f.GetName() != "write_per_namespace" {
			continue
		}
		for _, m := range f.Metric {
			n += len(m.GetSummary().GetQuantile()) + 2
			for _, l := range m.Label {
				keys[l.GetValue()] = true
			}
		}
	}
	return n, keys
}

// TestNamespaceSeriesDropped: creating and deleting 20,000 distinct top-level znodes (a
// write and a read of each) leaves no per-namespace series once NamespaceRetention has passed
// (ZooKeeper keeps 60,000: three for each), never holds more than the limit meanwhile, and
// keeps the series of a namespace still in use or used again.
func TestNamespaceSeriesDropped(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	r := New(Options{Now: clock.Now})
	r.NamespaceWrite("/live/x", 1) // never deleted
	r.NamespaceWrite("/back", 1)
	r.NamespaceDelete("/back")
	const n = 20_000
	// Spread over two retention periods, as a client churning names would.
	step := 2 * DefaultNamespaceRetention / n
	for i := range n {
		p := fmt.Sprintf("/ns%05d", i)
		r.NamespaceWrite(p, 3)
		r.NamespaceRead(p, 3)
		r.NamespaceWrite(p+"/child", 0)
		r.NamespaceDelete(p + "/child") // not the last znode: nothing is marked
		r.NamespaceDelete(p)
		clock.Advance(step)
		if i == 10 {
			r.NamespaceWrite("/back", 2) // created again: kept
		}
		if i%2000 == 0 {
			if got, _ := nsSeries(t, r); got > 2*3*(DefaultNamespaceLimit+1) {
				t.Fatalf("after %d namespaces: %d series, more than the limit allows", i+1, got)
			}
		}
	}
	clock.Advance(DefaultNamespaceRetention)
	got, keys := nsSeries(t, r)
	delete(keys, OverflowNamespace) // spill-over while the limit was reached, one series set
	if len(keys) != 2 || !keys["live"] || !keys["back"] {
		t.Fatalf("keys left after the retention: %v (%d series)", keys, got)
	}
	if got > 4*3 { // live, back and the overflow key, reads and writes
		t.Fatalf("%d per-namespace series left after creating and deleting %d namespaces", got, n)
	}
}

// TestNamespaceLimit: past NamespaceLimit namespaces, new ones are counted under
// OverflowNamespace, for Prometheus and for mntr; when namespaces are dropped, new ones get
// their own series again.
func TestNamespaceLimit(t *testing.T) {
	for _, mntrOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("mntrOnly=%v", mntrOnly), func(t *testing.T) {
			clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
			r := New(Options{MntrOnly: mntrOnly, NamespaceLimit: 10, Now: clock.Now})
			for i := range 50 {
				r.NamespaceWrite(fmt.Sprintf("/n%02d", i), 0)
			}
			// counts is write_per_namespace's count by key, as mntr or a scrape shows it.
			counts := func() map[string]uint64 {
				out := map[string]uint64{}
				if mntrOnly {
					var st admin.ServerStats
					r.Mntr(&st)
					for _, s := range st.WritePerNamespace {
						out[s.Name] = uint64(s.Summary.Count)
					}
					return out
				}
				fams, err := r.reg.Gather()
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fams {
					if f.GetName() == "write_per_namespace" {
						for _, m := range f.Metric {
							out[m.Label[0].GetValue()] = m.GetSummary().GetSampleCount()
						}
					}
				}
				return out
			}
			got := counts()
			if len(got) != 11 || got[OverflowNamespace] != 40 || got["n00"] != 1 || got["n09"] != 1 {
				t.Fatalf("counts %v", got)
			}
			if _, ok := got["n10"]; ok {
				t.Fatal("n10 has its own series past the limit")
			}
			// n00..n04 lose their last znode; after the retention n50.. get their own.
			for i := range 5 {
				r.NamespaceDelete(fmt.Sprintf("/n%02d", i))
			}
			clock.Advance(DefaultNamespaceRetention)
			r.NamespaceWrite("/n50", 0)
			got = counts()
			if _, ok := got["n00"]; ok {
				t.Fatalf("n00 kept after its retention: %v", got)
			}
			if got["n50"] != 1 || got[OverflowNamespace] != 40 || len(got) != 7 {
				t.Fatalf("after the drop: %v", got)
			}
		})
	}
}
