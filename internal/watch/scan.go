package watch

import "iter"

// Entry is one (path, watcher) registration, as Scan exports it.
type Entry struct {
	Path    string
	Watcher WatcherID
}

// Scan exports the registrations of table t as a flat list, for the admin commands (wchs,
// wchc, wchp) that sort, group and format it elsewhere. A (watcher, path) pair that is in
// the table counts once, whatever its modes. Batches come in no particular order; each is
// freshly allocated and belongs to the caller.
//
// A batch holds at least size entries (unless it is the last), stopping at the first path
// boundary after that, so one step of the iteration costs O(size + the watchers of one path)
// with no sorting or string building. The caller may let the Manager change between
// batches (driving the sequence with iter.Pull from its own serialised context): Go's map
// iteration tolerates that. The result is then not one point-in-time view: an unchanged
// registration is reported exactly once, one added during the scan may or may not be, one
// removed before the scan reached it is not, and one removed and added again may be
// reported twice, so a caller that needs a set de-duplicates.
func (m *Manager) Scan(t Table, size int) iter.Seq[[]Entry] {
	mask := tableBits(t)
	size = max(size, 1)
	return func(yield func([]Entry) bool) {
		batch := make([]Entry, 0, size)
		for p, ps := range m.byPath {
			ps.each(func(w WatcherID, b uint8) {
				if b&mask != 0 {
					batch = append(batch, Entry{Path: p, Watcher: w})
				}
			})
			if len(batch) >= size {
				if !yield(batch) {
					return
				}
				batch = make([]Entry, 0, size)
			}
		}
		if len(batch) > 0 {
			yield(batch)
		}
	}
}
