package watch

import (
	"cmp"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"testing"
)

func sortEntries(es []Entry) []Entry {
	slices.SortFunc(es, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Watcher, b.Watcher))
	})
	return es
}

// byPathEntries flattens ByPath, the reference for Scan.
func byPathEntries(m *Manager, t Table) []Entry {
	var out []Entry
	for p, ws := range m.ByPath(t) {
		for _, w := range ws {
			out = append(out, Entry{Path: p, Watcher: w})
		}
	}
	return sortEntries(out)
}

func TestScanMatchesByPath(t *testing.T) {
	m := New()
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := []Kind{Data, Child, Persistent, PersistentRecursive}
	for range 5000 {
		m.Add(WatcherID(rng.IntN(30)), fmt.Sprintf("/p%d", rng.IntN(800)), kinds[rng.IntN(len(kinds))])
	}
	for _, tab := range []Table{DataTable, ChildTable, AllTables} {
		for _, size := range []int{0, 1, 7, 100, 1 << 20} {
			var got []Entry
			batches := 0
			for b := range m.Scan(tab, size) {
				batches++
				if len(b) == 0 {
					t.Fatalf("table %d size %d: empty batch", tab, size)
				}
				// A batch stops at the first path boundary once it is full.
				if last := b[len(b)-1].Path; len(b) > max(size, 1) {
					for _, e := range b[max(size, 1)-1:] {
						if e.Path != last {
							t.Fatalf("table %d size %d: batch of %d runs past a full path", tab, size, len(b))
						}
					}
				}
				got = append(got, b...)
			}
			if want := byPathEntries(m, tab); !slices.Equal(sortEntries(got), want) {
				t.Fatalf("table %d size %d: Scan gives %d entries, ByPath %d", tab, size, len(got), len(want))
			}
			if size == 1<<20 && batches != 1 {
				t.Fatalf("one big batch expected, got %d", batches)
			}
		}
	}
	// Stopping early is allowed.
	for range m.Scan(DataTable, 1) {
		break
	}
}

// TestScanWithChangesBetweenBatches drives Scan with iter.Pull, as the server does across
// core steps, and changes the table between batches: registrations untouched throughout are
// each reported exactly once, and nothing reported was never registered.
func TestScanWithChangesBetweenBatches(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 3))
		m := New()
		for i := range 3000 {
			m.Add(WatcherID(i%7), fmt.Sprintf("/s%d", i), Data)
		}
		stable := byPathEntries(m, DataTable)
		touched := map[Entry]bool{}
		ever := map[Entry]bool{}
		for _, e := range stable {
			ever[e] = true
		}
		next, stop := iter.Pull(m.Scan(DataTable, 64))
		var got []Entry
		for {
			b, ok := next()
			if !ok {
				break
			}
			got = append(got, b...)
			for range 20 {
				e := Entry{Path: fmt.Sprintf("/s%d", rng.IntN(4000)), Watcher: WatcherID(rng.IntN(7))}
				touched[e], ever[e] = true, true
				if rng.IntN(2) == 0 {
					m.Add(e.Watcher, e.Path, Data)
				} else {
					m.RemoveWatcher(e.Watcher) // whole connections go away too
					for _, s := range stable {
						if s.Watcher == e.Watcher {
							touched[s] = true
						}
					}
				}
			}
		}
		stop()
		seen := map[Entry]int{}
		for _, e := range got {
			if !ever[e] {
				t.Fatalf("seed %d: %v reported but never registered", seed, e)
			}
			seen[e]++
		}
		for _, e := range stable {
			if !touched[e] && seen[e] != 1 {
				t.Fatalf("seed %d: untouched %v reported %d times", seed, e, seen[e])
			}
		}
	}
}
