package datatree

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/zkd-io/zkd/jute"
)

// The tree's storage is made for trees of tens of millions of nodes. Three things cost
// nothing per node at that size in a Go heap: a pointer the collector must trace, an
// allocation, and a copy when a snapshot is taken. So:
//
//   - A node is a rec, a fixed-size, pointer-free record in a page of pageSize records,
//     addressed by its index. Pages are copy-on-write across a capture (Capture): a snapshot
//     holds the page table as it was, and the first change of a page after a capture copies
//     that page, so a capture copies one pointer per page and never stops the tree's owner
//     for a walk.
//   - A node's path and data are one entry in an arena of large byte chunks: append-only, so
//     bytes a reader or a snapshot holds are never overwritten. An entry freed by a change
//     or a delete is dead space, and a chunk that is mostly dead is compacted a little at a
//     time by later writes, its live entries copied to the chunk being filled.
//   - The path index is an open-addressing table of (hash, index) words, and child lists
//     are slices of indexes.
//
// The collector then sees one pointer per page, per chunk and per child list, not several
// per node, and a write allocates nothing in the common case.

const (
	pageBits = 8
	pageSize = 1 << pageBits
	// chunkSize is an arena chunk's size; an entry larger than bigEntry gets a chunk of
	// its own, freed whole when the entry dies.
	chunkSize = 1 << 20
	bigEntry  = chunkSize / 8
	// maxEntryHeader bounds an arena entry's header: the path's length and the data's
	// length plus one (0 for null data), as uvarints.
	maxEntryHeader = 2 * binary.MaxVarintLen32
	noIndex        = ^uint32(0)
)

// rec is one znode: 80 bytes, so a page of 256 is exactly one of the allocator's size
// classes (20480 bytes). A free record has off freeOff. The data's length is the arena
// entry's, and the node's share of the digest is hashed when needed (addDigest).
type rec struct {
	// The persisted Stat, field by field: as a nested struct it would be padded. The
	// ephemeral owner is an id in the tree's ownerTable: most nodes have none, and those
	// that do share a few sessions.
	czxid, mzxid, ctime, mtime, pzxid int64
	// off locates the entry holding the path then the data: chunk<<32 | byte offset of the
	// entry's header.
	off                         uint64
	version, cversion, aversion int32
	owner                       uint32
	// acl is the node's ACL key (aclCache keeps keys within int32).
	acl int32
	// parent is the index of the node whose child list holds this one, and pos its place
	// in that list; noIndex when no list holds it (the root, or a node whose parent was
	// deleted under it while a log was replayed over a fuzzy snapshot).
	parent uint32
	pos    uint32
	// kids is the node's child list (an index into the tree's lists), 0 for none.
	kids uint32
}

// stat is the record's persisted Stat; owners is the owner table it was stored under
// (the tree's, or a view's copy).
func (r *rec) stat(owners []int64) jute.StatPersisted {
	return jute.StatPersisted{Czxid: r.czxid, Mzxid: r.mzxid, Ctime: r.ctime, Mtime: r.mtime,
		Version: r.version, Cversion: r.cversion, Aversion: r.aversion, EphemeralOwner: owners[r.owner], Pzxid: r.pzxid}
}

// ownerOf is record r's ephemeral owner.
func (t *Tree) ownerOf(r *rec) int64 { return t.owners.vals[r.owner] }

// ownerTable interns ephemeral owners (session ids, and the container and TTL marks) as
// small ids, with references: id 0 is "no owner". An id is reused once nothing refers to
// it; a view keeps a copy of vals, so its records still read the owners they had.
type ownerTable struct {
	vals []int64
	ids  map[int64]uint32
	refs []int32
	free []uint32
}

func newOwnerTable() ownerTable {
	return ownerTable{vals: []int64{0}, ids: map[int64]uint32{}, refs: []int32{0}}
}

func (o *ownerTable) intern(v int64) uint32 {
	if v == 0 {
		return 0
	}
	if id, ok := o.ids[v]; ok {
		o.refs[id]++
		return id
	}
	id, ok := popFree(&o.free)
	if ok {
		o.vals[id], o.refs[id] = v, 1
	} else {
		id = uint32(len(o.vals))
		o.vals = append(o.vals, v)
		o.refs = append(o.refs, 1)
	}
	o.ids[v] = id
	return id
}

func (o *ownerTable) release(id uint32) {
	if id == 0 {
		return
	}
	if o.refs[id]--; o.refs[id] == 0 {
		delete(o.ids, o.vals[id])
		o.vals[id] = 0
		o.free = append(o.free, id)
	}
}

// freeOff is a free record's off.
const freeOff = ^uint64(0)

func (r *rec) free() bool { return r.off == freeOff }

// kidList is one node's children, as record indexes in no order. gen is the capture
// generation the slice was last copied in: a list older than the tree's generation may be
// shared with a capture and is copied before it changes.
type kidList struct {
	ids []uint32
	gen uint32
}

// pages is a copy-on-write array of fixed-size pages of T, indexed from 0.
type pages[T any] struct {
	p    []*[pageSize]T
	gens []uint32 // the generation each page was made or last copied in
}

func (a *pages[T]) at(i uint32) *T { return &a.p[i>>pageBits][i&(pageSize-1)] }

// mut returns element i for writing, copying its page first if a capture may share it.
func (a *pages[T]) mut(i uint32, gen uint32) *T {
	pi := i >> pageBits
	if a.gens[pi] != gen {
		cp := *a.p[pi]
		a.p[pi] = &cp
		a.gens[pi] = gen
	}
	return &a.p[pi][i&(pageSize-1)]
}

// grow makes room for index i.
func (a *pages[T]) grow(i uint32, gen uint32) {
	for int(i>>pageBits) >= len(a.p) {
		a.p = append(a.p, new([pageSize]T))
		a.gens = append(a.gens, gen)
	}
}

func (a *pages[T]) clone() []*[pageSize]T { return slices.Clone(a.p) }

// allocIndex takes an index of a free element of a, the last freed one or a new one past
// the n in use.
func allocIndex[T any](free *[]uint32, n *uint32, a *pages[T], gen uint32) uint32 {
	if i, ok := popFree(free); ok {
		return i
	}
	i := *n
	*n++
	a.grow(i, gen)
	return i
}

// popFree takes the last index off a free list.
func popFree(free *[]uint32) (uint32, bool) {
	k := len(*free)
	if k == 0 {
		return 0, false
	}
	i := (*free)[k-1]
	*free = (*free)[:k-1]
	return i, true
}

// arena holds the nodes' paths and data.
type arena struct {
	chunks [][]byte
	// used is how far each chunk is filled, live how many of those bytes belong to live
	// entries. A big entry's chunk is exactly its size.
	used, live []int
	cur        int // the chunk being filled; -1 before the first
	freeIDs    []int
	// compact lists chunks to compact, oldest first; cursor is how far the first one is done.
	compact []int
	cursor  int
	queued  []bool
	// dead holds, per chunk, offsets of entries freed in it (at most maxDeadHints): the
	// compactor skips those without looking their path up. It is a hint: an entry it does
	// not list is looked up. sorted is how much of the first queued chunk's list is sorted
	// (frees that come during its compaction are appended after), next the compactor's
	// place in it.
	dead         [][]uint32
	sorted, next int
}

// maxDeadHints bounds a chunk's dead list: 64 KiB, for a 1 MiB chunk of entries of 16
// bytes or more that is more than half dead.
const maxDeadHints = 16 << 10

func newArena() arena { return arena{cur: -1} }

func (a *arena) newChunk(size int) int {
	var id int
	if n := len(a.freeIDs); n > 0 {
		id = a.freeIDs[n-1]
		a.freeIDs = a.freeIDs[:n-1]
		a.chunks[id] = make([]byte, size)
		a.used[id], a.live[id], a.queued[id], a.dead[id] = 0, 0, false, nil
	} else {
		id = len(a.chunks)
		a.chunks = append(a.chunks, make([]byte, size))
		a.used = append(a.used, 0)
		a.live = append(a.live, 0)
		a.queued = append(a.queued, false)
		a.dead = append(a.dead, nil)
	}
	return id
}

// put stores an entry and returns its offset word.
func (a *arena) put(path string, data []byte) uint64 {
	var hdr [maxEntryHeader]byte
	h := binary.PutUvarint(hdr[:], uint64(len(path)))
	dl := uint64(0)
	if data != nil {
		dl = uint64(len(data)) + 1
	}
	h += binary.PutUvarint(hdr[h:], dl)
	n := h + len(path) + len(data)
	var id int
	if n > bigEntry {
		id = a.newChunk(n)
	} else {
		if a.cur < 0 || a.used[a.cur]+n > len(a.chunks[a.cur]) {
			a.retire(a.cur)
			a.cur = a.newChunk(chunkSize)
		}
		id = a.cur
	}
	c, o := a.chunks[id], a.used[id]
	copy(c[o:], hdr[:h])
	copy(c[o+h:], path)
	copy(c[o+h+len(path):], data)
	a.used[id] += n
	a.live[id] += n
	return uint64(id)<<32 | uint64(o)
}

// entry decodes the entry at off: its path, its data (nil for null data) and its size.
func entryIn(c []byte, off uint64) (path string, data []byte, size int) {
	o := int(uint32(off))
	plen, h1 := binary.Uvarint(c[o:])
	dl, h2 := binary.Uvarint(c[o+h1:])
	p := o + h1 + h2
	// Arena bytes never change once written (chunks are append-only and a released
	// chunk is never written again): the path is a string over them without a copy.
	if plen > 0 {
		path = unsafe.String(&c[p], int(plen))
	}
	size = h1 + h2 + int(plen)
	if dl > 0 {
		d := p + int(plen)
		data = c[d : d+int(dl)-1 : d+int(dl)-1]
		size += int(dl) - 1
	}
	return path, data, size
}

func (a *arena) entry(off uint64) (string, []byte, int) { return entryIn(a.chunks[off>>32], off) }

// free marks the entry at off, of n bytes, dead.
func (a *arena) free(off uint64, n int) {
	id := int(off >> 32)
	a.live[id] -= n
	if len(a.dead[id]) < maxDeadHints {
		a.dead[id] = append(a.dead[id], uint32(off))
	}
	switch {
	case a.live[id] == 0 && id != a.cur:
		a.release(id)
	case id != a.cur && !a.queued[id] && a.live[id] < a.used[id]/2:
		a.queued[id] = true
		a.compact = append(a.compact, id)
	}
}

// retire is called when chunk id stops being filled: it is compacted later if it is
// already mostly dead.
func (a *arena) retire(id int) {
	if id < 0 {
		return
	}
	if a.live[id] == 0 {
		a.release(id)
	} else if !a.queued[id] && a.live[id] < a.used[id]/2 {
		a.queued[id] = true
		a.compact = append(a.compact, id)
	}
}

// release forgets a chunk without live entries. Readers and captures that hold its bytes
// keep them: the slice is dropped from the table, never reused.
func (a *arena) release(id int) {
	if a.chunks[id] == nil {
		return
	}
	a.chunks[id] = nil
	a.used[id], a.live[id], a.dead[id] = 0, 0, nil
	if a.queued[id] {
		a.queued[id] = false
		if i := slices.Index(a.compact, id); i >= 0 {
			a.compact = slices.Delete(a.compact, i, i+1)
			if i == 0 {
				a.cursor, a.sorted, a.next = 0, 0, 0
			}
		}
	}
	a.freeIDs = append(a.freeIDs, id)
}

// pathIndex maps paths to record indexes: open addressing with linear probing. A slot holds
// the path's 32-bit hash above the record index plus one (0 = empty); the hash's top bits
// are the slot's home, so growing needs no path.
type pathIndex struct {
	slots []uint64
	shift uint // 32 - log2(len(slots))
	n     int
	seed  maphash.Seed
}

func newPathIndex() pathIndex {
	return pathIndex{slots: make([]uint64, 16), shift: 32 - 4, seed: maphash.MakeSeed()}
}

func (x *pathIndex) hash(path string) uint32 {
	h := maphash.String(x.seed, path)
	return uint32(h ^ h>>32)
}

func (x *pathIndex) home(h uint32) int { return int(h >> x.shift) }

// find returns the record index of path, or noIndex; eq tells whether record i has path p.
func (t *Tree) find(path string) uint32 {
	x := &t.index
	h := x.hash(path)
	mask := len(x.slots) - 1
	for s := x.home(h); ; s = (s + 1) & mask {
		w := x.slots[s]
		if w == 0 {
			return noIndex
		}
		if uint32(w>>32) == h {
			i := uint32(w) - 1
			if t.pathOf(i) == path {
				return i
			}
		}
	}
}

// insert adds path → i; the caller knows path is absent.
func (t *Tree) insert(path string, i uint32) { t.insertUnique(path, i) }

// insertUnique adds path → i unless path is indexed already, and reports whether it did:
// one probe where a look-up then an insert would take two.
func (t *Tree) insertUnique(path string, i uint32) bool {
	x := &t.index
	if (x.n+1)*5 > len(x.slots)*4 {
		x.grow()
	}
	h := x.hash(path)
	mask := len(x.slots) - 1
	s := x.home(h)
	for w := x.slots[s]; w != 0; w = x.slots[s] {
		if uint32(w>>32) == h && t.pathOf(uint32(w)-1) == path {
			return false
		}
		s = (s + 1) & mask
	}
	x.slots[s] = uint64(h)<<32 | uint64(i+1)
	x.n++
	return true
}

func (x *pathIndex) grow() {
	old := x.slots
	x.slots = make([]uint64, 2*len(old))
	x.shift--
	mask := len(x.slots) - 1
	for _, w := range old {
		if w == 0 {
			continue
		}
		s := x.home(uint32(w >> 32))
		for x.slots[s] != 0 {
			s = (s + 1) & mask
		}
		x.slots[s] = w
	}
}

// remove deletes path → i, shifting later entries of the run back so probes stay short.
func (t *Tree) remove(path string, i uint32) {
	x := &t.index
	h := x.hash(path)
	mask := len(x.slots) - 1
	s := x.home(h)
	for x.slots[s] != uint64(h)<<32|uint64(i+1) {
		if x.slots[s] == 0 {
			return
		}
		s = (s + 1) & mask
	}
	x.n--
	for {
		x.slots[s] = 0
		j := s
		for {
			j = (j + 1) & mask
			w := x.slots[j]
			if w == 0 {
				return
			}
			// Move w back to s unless its home lies cyclically in (s, j].
			k := x.home(uint32(w >> 32))
			if (j > s && (k <= s || k > j)) || (j < s && k <= s && k > j) {
				x.slots[s] = w
				s = j
				break
			}
		}
	}
}

// Record access. rd's pointer is valid until the next change of the tree.
func (t *Tree) rd(i uint32) *rec { return t.recs.at(i) }
func (t *Tree) wr(i uint32) *rec { return t.recs.mut(i, t.gen) }

func (t *Tree) pathOf(i uint32) string {
	p, _, _ := t.arena.entry(t.rd(i).off)
	return p
}

func (t *Tree) dataOf(i uint32) []byte {
	_, d, _ := t.arena.entry(t.rd(i).off)
	return d
}

// newRec stores a node at path and indexes it; path must not be indexed.
func (t *Tree) newRec(path string, data []byte, acl int64, stat jute.StatPersisted) uint32 {
	i, _ := t.newUniqueRec(path, data, acl, stat)
	return i
}

// newUniqueRec is newRec unless path is indexed already: then it stores nothing and
// returns false.
func (t *Tree) newUniqueRec(path string, data []byte, acl int64, stat jute.StatPersisted) (uint32, bool) {
	i := t.storeRec(path, data, acl, stat)
	if !t.insertUnique(path, i) {
		t.arena.free(t.rd(i).off, len(path)+len(data)+entryHeaderLen(len(path), data))
		t.owners.release(t.rd(i).owner)
		*t.wr(i) = rec{off: freeOff}
		t.freeRecs = append(t.freeRecs, i)
		return noIndex, false
	}
	t.live++
	t.maybeCompact(len(path) + len(data))
	return i, true
}

// storeRec stores a node at path without indexing it (the caller does, or a loader's
// deferred index will).
func (t *Tree) storeRec(path string, data []byte, acl int64, stat jute.StatPersisted) uint32 {
	i := allocIndex(&t.freeRecs, &t.nrecs, &t.recs, t.gen)
	r := t.wr(i)
	*r = rec{acl: int32(acl), parent: noIndex, pos: noIndex,
		czxid: stat.Czxid, mzxid: stat.Mzxid, ctime: stat.Ctime, mtime: stat.Mtime, pzxid: stat.Pzxid,
		version: stat.Version, cversion: stat.Cversion, aversion: stat.Aversion,
		owner: t.owners.intern(stat.EphemeralOwner)}
	r.off = t.arena.put(path, data)
	return i
}

// indexSorted adds the slot words ws (hash<<32 | index+1, sorted by hash) to an empty
// index. Placed in home order, each word goes to its home or just after the word before
// it, so the table is filled in one sequential pass instead of one cache miss per node.
// It returns the index of a record whose path is already in ws, or noIndex.
func (t *Tree) indexSorted(ws []uint64) uint32 {
	x := &t.index
	size := 16
	for (len(ws)+1)*5 > size*4 {
		size *= 2
	}
	x.slots = make([]uint64, size)
	x.shift = uint(32 - bits.TrailingZeros(uint(size)))
	x.n = 0
	var wrapped []uint64
	next := 0 // first slot after the last word placed
	for k, w := range ws {
		h := uint32(w >> 32)
		for j := k - 1; j >= 0 && uint32(ws[j]>>32) == h; j-- {
			if t.pathOf(uint32(ws[j])-1) == t.pathOf(uint32(w)-1) {
				return uint32(w) - 1
			}
		}
		s := max(x.home(h), next)
		if s == size {
			wrapped = append(wrapped, w)
			continue
		}
		x.slots[s] = w
		x.n++
		next = s + 1
	}
	// The few words that ran past the end probe from the start, as linear probing does.
	for _, w := range wrapped {
		i := uint32(w) - 1
		if !t.insertUnique(t.pathOf(i), i) {
			return i
		}
	}
	return noIndex
}

// entryHeaderLen is the size of the header put writes for an entry.
func entryHeaderLen(plen int, data []byte) int {
	var hdr [maxEntryHeader]byte
	n := binary.PutUvarint(hdr[:], uint64(plen))
	dl := uint64(0)
	if data != nil {
		dl = uint64(len(data)) + 1
	}
	return n + binary.PutUvarint(hdr[:], dl)
}

// freeRec unindexes and frees node i; its child list, if any, must be gone.
func (t *Tree) freeRec(i uint32) {
	off := t.rd(i).off
	path, _, n := t.arena.entry(off)
	t.remove(path, i)
	t.owners.release(t.rd(i).owner)
	*t.wr(i) = rec{off: freeOff}
	t.arena.free(off, n)
	t.freeRecs = append(t.freeRecs, i)
	t.live--
}

// setDataOf replaces node i's data (path unchanged).
func (t *Tree) setDataOf(i uint32, data []byte) {
	oldOff := t.rd(i).off
	path, _, oldN := t.arena.entry(oldOff)
	off := t.arena.put(path, data)
	t.wr(i).off = off
	t.arena.free(oldOff, oldN)
	t.maybeCompact(len(path) + len(data))
}

// maybeCompact moves live entries out of mostly dead chunks, about twice as many bytes as
// a write just stored, so the arena's dead space stays bounded while no write pays for a
// whole chunk.
func (t *Tree) maybeCompact(written int) {
	a := &t.arena
	budget := 2*written + 256
	for budget > 0 && len(a.compact) > 0 {
		id := a.compact[0]
		c := a.chunks[id]
		if a.cursor >= a.used[id] {
			// Everything live has moved; the chunk is dead.
			a.compact = a.compact[1:]
			a.cursor, a.sorted, a.next = 0, 0, 0
			a.queued[id] = false
			if a.live[id] == 0 {
				a.release(id)
			}
			continue
		}
		if a.cursor == 0 && a.sorted == 0 {
			slices.Sort(a.dead[id])
			a.sorted = len(a.dead[id])
		}
		off := uint64(id)<<32 | uint64(a.cursor)
		at := uint32(a.cursor)
		path, data, n := entryIn(c, off)
		a.cursor += n
		budget -= n
		hints := a.dead[id][:a.sorted]
		for a.next < len(hints) && hints[a.next] < at {
			a.next++
		}
		if a.next < len(hints) && hints[a.next] == at {
			continue // freed: nothing to move, nothing to look up
		}
		// The entry is live if the node its path names is stored there: one a change or a
		// delete left behind names no node, or one stored elsewhere. The old chunk's bytes
		// stay as they are while put fills another chunk.
		if i := t.find(path); i != noIndex && t.rd(i).off == off {
			t.wr(i).off = a.put(path, data)
			a.live[id] -= n
		}
	}
}

// kids returns node i's child list for reading.
func (t *Tree) kidIDs(i uint32) []uint32 {
	k := t.rd(i).kids
	if k == 0 {
		return nil
	}
	return t.lists.at(k).ids
}

// mutKids returns node i's child list for changing, making one if it has none.
func (t *Tree) mutKids(i uint32) *kidList {
	k := t.rd(i).kids
	if k == 0 {
		k = allocIndex(&t.freeLists, &t.nlists, &t.lists, t.gen)
		t.wr(i).kids = k
		l := t.lists.mut(k, t.gen)
		*l = kidList{gen: t.gen}
		return l
	}
	t.unshare(k)
	l := t.lists.mut(k, t.gen)
	if l.gen != t.gen {
		l.ids = slices.Clone(l.ids)
		l.gen = t.gen
	}
	return l
}

// link lists child c under parent p.
func (t *Tree) link(p, c uint32) {
	l := t.mutKids(p)
	w := t.wr(c)
	w.parent, w.pos = p, uint32(len(l.ids))
	l.ids = append(l.ids, c)
}

// unlink removes c from its parent's list: the last child takes its place.
func (t *Tree) unlink(c uint32) {
	r := t.rd(c)
	p, pos := r.parent, r.pos
	if p == noIndex {
		return
	}
	l := t.mutKids(p)
	last := len(l.ids) - 1
	if int(pos) != last {
		moved := l.ids[last]
		l.ids[pos] = moved
		t.wr(moved).pos = pos
	}
	l.ids = l.ids[:last]
	w := t.wr(c)
	w.parent, w.pos = noIndex, noIndex
	switch {
	case last == 0:
		t.dropKids(p)
	case cap(l.ids) > 64 && last < cap(l.ids)/4:
		// Give back the memory of a list that has shrunk a lot.
		l.ids = append(make([]uint32, 0, 2*last), l.ids...)
	}
}

// dropKids forgets node p's child list; children still on it are orphaned.
func (t *Tree) dropKids(p uint32) {
	k := t.rd(p).kids
	if k == 0 {
		return
	}
	t.unshare(k)
	for _, c := range t.lists.at(k).ids {
		w := t.wr(c)
		w.parent, w.pos = noIndex, noIndex
	}
	*t.lists.mut(k, t.gen) = kidList{}
	t.wr(p).kids = 0
	t.freeLists = append(t.freeLists, k)
}

// nameOf is the last segment of node i's path.
func (t *Tree) nameOf(i uint32) string { return Base(t.pathOf(i)) }
