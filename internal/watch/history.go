package watch

import (
	"strings"

	"github.com/zkd-io/zkd/jute"
)

// Change is one watch-relevant event of a committed txn, as the history keeps it for the
// watch-resume extension: what notify delivered live, minus the node's data. ACL is the
// tree's interned list (shared, never modified), kept so a replayed event passes the same
// READ check a live one did.
type Change struct {
	Zxid int64
	Type jute.EventType
	Path string
	ACL  []jute.ACL
}

// History is a bounded ring of the changes the server applied, oldest first, for
// addWatchSince. It covers every change with a zxid above Compacted(): a resume from a zxid
// at or above it misses nothing, one from below it may have lost changes. The bounds are a
// count of changes and their bytes (paths and a fixed overhead; ACLs are shared with the
// tree). A txn's changes are dropped together, so Compacted() is always a txn boundary.
//
// A History is not safe for concurrent use; the server's core goroutine owns it.
type History struct {
	ring      []Change
	head, n   int // ring[head] is the oldest of n
	bytes     int
	maxCount  int
	maxBytes  int
	compacted int64 // the zxid every held change is above
	lastZxid  int64 // the newest recorded txn's zxid
	disabled  bool
}

// changeOverhead is what a change costs besides its path: the struct and the ring slot.
const changeOverhead = 64

// NewHistory returns an empty history that covers everything after zxid (the tree's zxid
// when the server starts: a restarted server cannot replay what came before), holding at most
// maxCount changes and maxBytes bytes of them. maxCount <= 0 keeps nothing: every resume from
// before the newest zxid is refused.
func NewHistory(zxid int64, maxCount, maxBytes int) *History {
	h := &History{maxCount: maxCount, maxBytes: maxBytes, compacted: zxid, lastZxid: zxid}
	if maxCount <= 0 || maxBytes <= 0 {
		h.disabled = true
	}
	return h
}

// Compacted is the oldest zxid a resume may name: every change above it is held.
func (h *History) Compacted() int64 { return h.compacted }

// Len is the number of changes held.
func (h *History) Len() int { return h.n }

// Bytes is the accounted size of the changes held.
func (h *History) Bytes() int { return h.bytes }

// Reset forgets everything and covers only what comes after zxid: the tree was replaced
// (a snapshot sync, a restore), so the changes before it are not a history of this tree.
func (h *History) Reset(zxid int64) {
	clear(h.ring)
	h.head, h.n, h.bytes = 0, 0, 0
	h.compacted, h.lastZxid = zxid, zxid
}

// Record appends the changes of one applied txn, in the order notify delivered them. When
// the bounds are exceeded the oldest txns go, whole. A txn at or below the newest recorded
// zxid means the tree went back (the server replaces the tree through Reset, so this is
// only a safety net): the history then restarts before it rather than hold a past that
// did not happen.
func (h *History) Record(zxid int64, evs []Change) {
	if zxid <= h.lastZxid {
		h.Reset(zxid - 1)
	}
	h.lastZxid = zxid
	if len(evs) == 0 {
		// Nothing a watch could see: a resume from before it misses nothing by it.
		return
	}
	if h.disabled {
		h.compacted = zxid
		return
	}
	for _, ev := range evs {
		ev.Zxid = zxid
		h.push(ev)
	}
	for h.n > 0 && (h.n > h.maxCount || h.bytes > h.maxBytes) {
		h.dropTxn()
	}
	if h.n == 0 {
		h.compacted = zxid
	}
}

func (h *History) push(c Change) {
	if h.n == len(h.ring) {
		grown := make([]Change, max(16, 2*len(h.ring)))
		for i := range h.n {
			grown[i] = h.ring[(h.head+i)%len(h.ring)]
		}
		h.ring, h.head = grown, 0
	}
	h.ring[(h.head+h.n)%len(h.ring)] = c
	h.n++
	h.bytes += changeOverhead + len(c.Path)
}

// dropTxn removes the oldest txn's changes and moves the coverage past it.
func (h *History) dropTxn() {
	z := h.ring[h.head].Zxid
	for h.n > 0 && h.ring[h.head].Zxid == z {
		h.bytes -= changeOverhead + len(h.ring[h.head].Path)
		h.ring[h.head] = Change{}
		h.head = (h.head + 1) % len(h.ring)
		h.n--
	}
	h.compacted = z
	if h.n > 0 && len(h.ring) > 64 && h.n < len(h.ring)/4 {
		h.shrink()
	}
}

func (h *History) shrink() {
	small := make([]Change, len(h.ring)/2)
	for i := range h.n {
		small[i] = h.ring[(h.head+i)%len(h.ring)]
	}
	h.ring, h.head = small, 0
}

// Since returns, oldest first, the changes above zxid that a watch of kind (Persistent or
// PersistentRecursive) on path would have fired for, as Trigger matches them. ok is false
// when the history no longer covers zxid (zxid < Compacted()): then nothing is returned and
// the caller answers ErrWatchHistoryCompacted with Compacted().
func (h *History) Since(zxid int64, path string, kind Kind) (out []Change, ok bool) {
	if zxid < h.compacted {
		return nil, false
	}
	for i := range h.n {
		c := h.ring[(h.head+i)%len(h.ring)]
		if c.Zxid > zxid && Matches(path, kind, c.Type, c.Path) {
			out = append(out, c)
		}
	}
	return out, true
}

// Matches reports whether a watch of kind on path fires for an event of type ev on evPath,
// by Trigger's rules: a Persistent watch sees its path's created, deleted, data-changed and
// children-changed events; a PersistentRecursive one sees created, deleted and data-changed
// on its path and every descendant, never children-changed.
func Matches(path string, kind Kind, ev jute.EventType, evPath string) bool {
	switch kind {
	case Persistent:
		switch ev {
		case jute.EventNodeCreated, jute.EventNodeDeleted, jute.EventNodeDataChanged, jute.EventNodeChildrenChanged:
			return evPath == path
		}
	case PersistentRecursive:
		switch ev {
		case jute.EventNodeCreated, jute.EventNodeDeleted, jute.EventNodeDataChanged:
			return evPath == path || under(evPath, path)
		}
	}
	return false
}

// under reports whether p is a strict descendant of anc.
func under(p, anc string) bool {
	if anc == "/" {
		return len(p) > 1 && p[0] == '/'
	}
	return strings.HasPrefix(p, anc) && len(p) > len(anc) && p[len(anc)] == '/'
}
