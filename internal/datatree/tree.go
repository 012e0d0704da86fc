package datatree

import (
	"encoding/binary"
	"hash/crc32"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/zkd-io/zkd/jute"
)

// Special ephemeralOwner values (fact sheet §5.8).
const (
	ContainerOwner int64 = -0x8000000000000000
	ttlMask        int64 = -0x0100000000000000 // high byte 0xFF
)

// TTLOwner encodes a TTL in an ephemeralOwner.
func TTLOwner(ttl int64) int64 { return ttlMask | (ttl & jute.MaxTTL) }

// Node is one znode as read from the tree: a copy of its record, taken by Get or Lookup.
// Data is the tree's own bytes, never changed in place (a setData stores new bytes), so a
// reader may hand it to another goroutine for encoding. The child methods read the tree as
// it is when they are called.
type Node struct {
	Data []byte
	ACL  int64
	Stat jute.StatPersisted
	t    *Tree
	i    uint32
}

// NumChildren is the current number of children.
func (n *Node) NumChildren() int {
	if n.t == nil {
		return 0 // a Node made outside a tree (a virtual node) has none
	}
	return len(n.t.kidIDs(n.i))
}

// Children returns the child names in no particular order.
func (n *Node) Children() []string {
	if n.t == nil {
		return []string{}
	}
	return n.t.childNames(n.i, 0, len(n.t.kidIDs(n.i)))
}

// SharedChildren returns the child names in no particular order, for a reply encoded on
// another goroutine, which only reads the slice. The names are the tree's own bytes (they
// never change); the list of a node with many children is made once and kept until the
// children change, so repeated reads of a big list cost no copy.
func (n *Node) SharedChildren() []string {
	if n.t == nil {
		return []string{}
	}
	return n.t.sharedNames(n.i)
}

const (
	// sharedMin is the smallest child list SharedChildren keeps: a smaller one is cheaper to
	// make again than to keep.
	sharedMin = 1024
	// sharedMax bounds the names kept in all (16 bytes each): past it the cache starts over.
	sharedMax = 4 << 20
)

// sharedNames is SharedChildren's list for node i.
func (t *Tree) sharedNames(i uint32) []string {
	k := t.rd(i).kids
	if k == 0 {
		return []string{}
	}
	if names, ok := t.shared[k]; ok {
		return names
	}
	ids := t.lists.at(k).ids
	names := t.childNames(i, 0, len(ids))
	if len(ids) >= sharedMin {
		if t.sharedLen+len(names) > sharedMax {
			clear(t.shared)
			t.sharedLen = 0
		}
		if t.shared == nil {
			t.shared = make(map[uint32][]string)
		}
		t.shared[k] = names[:len(names):len(names)]
		t.sharedLen += len(names)
	}
	return names
}

// unshare forgets the kept names of child list k, which is about to change.
func (t *Tree) unshare(k uint32) {
	if names, ok := t.shared[k]; ok {
		t.sharedLen -= len(names)
		delete(t.shared, k)
	}
}

// childNames lists the names of node i's children at positions [from, to).
func (t *Tree) childNames(i uint32, from, to int) []string {
	ids := t.kidIDs(i)
	to = min(to, len(ids))
	if from >= to {
		return []string{}
	}
	out := make([]string, to-from)
	for j, c := range ids[from:to] {
		out[j] = t.nameOf(c)
	}
	return out
}

// Event is a change that watches may observe.
type Event struct {
	Type jute.EventType
	Path string
	// ACL is the ACL of the node the event is about at the moment of the change (for
	// NodeChildrenChanged, the parent's; for NodeDeleted, the deleted node's), which
	// ZooKeeper 3.8.4+/3.9.2+ checks READ against before delivering the event to a watcher
	// (CVE-2024-23944). It is the tree's interned list, shared: never modify it.
	ACL []jute.ACL
}

// Tree is the znode tree.
type Tree struct {
	// The nodes' storage (store.go): records, child lists, the arena of paths and data, and
	// the path index. gen is the capture generation: pages and lists made in an older one
	// may be shared with a capture and are copied before they change.
	recs      pages[rec]
	nrecs     uint32
	freeRecs  []uint32
	live      int
	lists     pages[kidList]
	nlists    uint32
	freeLists []uint32
	arena     arena
	index     pathIndex
	gen       uint32

	acls       *aclCache
	owners     ownerTable
	ephemerals map[int64]map[string]struct{}
	containers map[string]struct{}
	ttls       map[string]struct{}
	quotas     map[string]struct{}
	digest     uint64
	dataSize   int64
	lastZxid   int64
	scratch    []byte // nodeDigest's buffer

	// ExtendedTypes enables TTL nodes (zookeeper.extendedTypesEnabled).
	ExtendedTypes bool

	// replaying skips event bookkeeping while a log is replayed.
	replaying bool

	// shared keeps the names of big child lists SharedChildren made, by list, until the
	// list changes; sharedLen counts them.
	shared    map[uint32][]string
	sharedLen int
}

// empty is a tree without nodes.
func empty() *Tree {
	t := &Tree{
		gen:        1,
		arena:      newArena(),
		index:      newPathIndex(),
		acls:       newACLCache(),
		owners:     newOwnerTable(),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
	}
	// List 0 stands for "no children".
	t.lists.grow(0, t.gen)
	t.nlists = 1
	return t
}

// BeginReplay makes Apply skip work that replaying a log does not need: reporting events
// (there are no watches yet). The digest is still kept change by change: that touches only
// nodes the txns touch, while recomputing it afterwards would touch every node.
func (t *Tree) BeginReplay() { t.replaying = true }

// EndReplay returns the tree to normal operation.
func (t *Tree) EndReplay() { t.replaying = false }

// Reserved nodes present in every tree.
const (
	ZookeeperPath = "/zookeeper"
	QuotaPath     = "/zookeeper/quota"
	ConfigPath    = "/zookeeper/config"
)

// New returns a tree holding only the reserved nodes.
func New() *Tree {
	t := empty()
	root := t.newRec("/", []byte{}, OpenACLKey, jute.StatPersisted{})
	t.addDigest(root)
	t.dataSize += int64(len("/"))
	t.addSystemNodes()
	return t
}

func (t *Tree) addSystemNodes() {
	t.ensureNode("/", ZookeeperPath, OpenACLKey, jute.StatPersisted{})
	t.ensureNode(ZookeeperPath, QuotaPath, OpenACLKey, jute.StatPersisted{})
	acl := t.acls.intern(jute.ReadACLUnsafe)
	if !t.ensureNode(ZookeeperPath, ConfigPath, acl, jute.StatPersisted{Aversion: -1}) {
		t.acls.release(acl)
	}
}

// SetConfig stores a quorum configuration in /zookeeper/config as ZooKeeper's
// ZKDatabase.initConfigInZKDatabase does when a member starts or syncs with its leader: no
// txn, the data replaced, Mzxid set to the configuration's version, Version to -1 and
// Mtime to now. It returns the NodeDataChanged event for the node's watches.
func (t *Tree) SetConfig(data []byte, configVersion, now int64) []Event {
	if t.find(ConfigPath) == noIndex {
		t.addSystemNodes()
	}
	var ev []Event
	// The node's only writers are this and reconfig, which sets version -1 as well.
	t.setData(ConfigPath, data, -1, configVersion, now, &ev)
	return ev
}

func (t *Tree) ensureNode(parent, path string, acl int64, stat jute.StatPersisted) bool {
	if t.find(path) != noIndex {
		return false
	}
	i := t.newRec(path, []byte{}, acl, stat)
	t.link(t.find(parent), i)
	t.addDigest(i)
	t.dataSize += int64(len(path))
	return true
}

// Get returns the node at path, or nil.
func (t *Tree) Get(path string) *Node {
	n, ok := t.Lookup(path)
	if !ok {
		return nil
	}
	return &n
}

// Lookup is Get without an allocation, for the read path.
func (t *Tree) Lookup(path string) (Node, bool) {
	i := t.find(path)
	if i == noIndex {
		return Node{}, false
	}
	return t.node(i), true
}

func (t *Tree) node(i uint32) Node {
	r := t.rd(i)
	return Node{Data: t.dataOf(i), ACL: int64(r.acl), Stat: r.stat(t.owners.vals), t: t, i: i}
}

// ACL returns the ACL list for a key.
func (t *Tree) ACL(key int64) []jute.ACL { return t.acls.get(key) }

// LastZxid is the zxid of the last applied txn.
func (t *Tree) LastZxid() int64 { return t.lastZxid }

// SetLastZxid sets the last applied zxid (after loading a snapshot).
func (t *Tree) SetLastZxid(z int64) { t.lastZxid = z }

// NodeCount is the number of znodes, including the root and reserved nodes.
func (t *Tree) NodeCount() int { return t.live }

// ApproximateDataSize is the sum of path and data lengths, as ZooKeeper reports it.
func (t *Tree) ApproximateDataSize() int64 { return t.dataSize }

// Digest is the tree digest (fact sheet §12.5).
func (t *Tree) Digest() int64 { return int64(t.digest) }

// clientOwner is what clients see as ephemeralOwner: containers and TTL nodes show 0.
func (t *Tree) clientOwner(owner int64) int64 { return clientOwner(owner, t.ExtendedTypes) }

func clientOwner(owner int64, extendedTypes bool) int64 {
	if owner == ContainerOwner || (extendedTypes && owner < 0 && owner&ttlMask == ttlMask) {
		return 0
	}
	return owner
}

// IsTTL reports whether an ephemeralOwner marks a TTL node, and its TTL.
func (t *Tree) IsTTL(owner int64) (int64, bool) {
	if !t.ExtendedTypes || owner == ContainerOwner || owner >= 0 || owner&ttlMask != ttlMask {
		return 0, false
	}
	return owner & jute.MaxTTL, true
}

// IsEphemeral reports whether a node is a normal (session-owned) ephemeral.
func (t *Tree) IsEphemeral(n *Node) bool {
	o := n.Stat.EphemeralOwner
	return o != 0 && t.clientOwner(o) != 0
}

// StatOf returns the client-visible Stat of a node.
func (t *Tree) StatOf(n *Node) jute.Stat {
	nc := int32(n.NumChildren())
	return jute.Stat{
		Czxid:          n.Stat.Czxid,
		Mzxid:          n.Stat.Mzxid,
		Ctime:          n.Stat.Ctime,
		Mtime:          n.Stat.Mtime,
		Version:        n.Stat.Version,
		Cversion:       n.Stat.Cversion*2 - nc,
		Aversion:       n.Stat.Aversion,
		EphemeralOwner: t.clientOwner(n.Stat.EphemeralOwner),
		DataLength:     int32(len(n.Data)),
		NumChildren:    nc,
		Pzxid:          n.Stat.Pzxid,
	}
}

func (t *Tree) statOf(i uint32) jute.Stat {
	n := t.node(i)
	return t.StatOf(&n)
}

// Ephemerals returns the ephemeral paths owned by a session, sorted.
func (t *Tree) Ephemerals(session int64) []string {
	set := t.ephemerals[session]
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// EphemeralSessions returns every session owning ephemerals and its count.
func (t *Tree) EphemeralSessions() map[int64]int {
	m := make(map[int64]int, len(t.ephemerals))
	for s, set := range t.ephemerals {
		m[s] = len(set)
	}
	return m
}

// EphemeralCount is the number of ephemeral nodes.
func (t *Tree) EphemeralCount() int {
	n := 0
	for _, set := range t.ephemerals {
		n += len(set)
	}
	return n
}

// CountDescendants counts every node below path (not path itself).
func (t *Tree) CountDescendants(path string) int {
	i := t.find(path)
	if i == noIndex {
		return 0
	}
	count := 0
	stack := []uint32{i}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		ids := t.kidIDs(j)
		count += len(ids)
		stack = append(stack, ids...)
	}
	return count
}

// ExpiryCandidates returns containers with no children that have had one, and TTL nodes
// with no children whose mtime is older than their TTL, at most limit of them.
func (t *Tree) ExpiryCandidates(nowMs int64, limit int) []string {
	var out []string
	for p := range t.containers {
		if len(out) >= limit {
			return out
		}
		if i := t.find(p); i != noIndex && t.rd(i).kids == 0 && t.rd(i).cversion > 0 {
			out = append(out, p)
		}
	}
	for p := range t.ttls {
		if len(out) >= limit {
			break
		}
		i := t.find(p)
		if i == noIndex || t.rd(i).kids != 0 {
			continue
		}
		r := t.rd(i)
		if ttl, ok := t.IsTTL(t.ownerOf(r)); ok && ttl != 0 && nowMs-r.mtime > ttl {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// nodeSize is ZooKeeper's getNodeSize: Java String.length() (UTF-16 units) plus data length.
func nodeSize(path string, data []byte) int64 {
	n := int64(len(data))
	ascii := true
	for i := 0; i < len(path); i++ {
		ascii = ascii && path[i] < utf8.RuneSelf
	}
	if ascii {
		return n + int64(len(path))
	}
	for _, r := range path {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// nodeDigest is node i's share of the tree digest (NodeDigest), hashed in the buffer the
// tree keeps.
func (t *Tree) nodeDigest(i uint32) uint32 {
	st := t.rd(i).stat(t.owners.vals)
	path, data, _ := t.arena.entry(t.rd(i).off)
	d, b := NodeDigest(t.scratch, path, data, &st)
	t.scratch = b[:0]
	return d
}

// NodeDigest is ZooKeeper's DigestCalculator.calculateDigest (jute.DigestVersion): CRC32
// over the path ("" for the root), the data and the 60-byte stat block; nodes under
// /zookeeper/ count 0. The tree digest is the sum of its nodes' (mod 2^64). It is the one
// formula for the tree and for prep, which predicts the digest a txn leaves before the
// txn is applied. The pieces go through crc32 in one call from buf, scratch space that is
// returned for reuse (a stack buffer would escape: crc32 dispatches through a function
// value), unless the data is large.
func NodeDigest(buf []byte, path string, data []byte, s *jute.StatPersisted) (uint32, []byte) {
	if strings.HasPrefix(path, "/zookeeper/") {
		return 0, buf
	}
	if path == "/" {
		path = ""
	}
	b := append(buf[:0], path...)
	var c uint32
	if len(data) <= 1024 {
		b = append(b, data...)
	} else {
		c = crc32.Update(crc32.Update(0, crc32.IEEETable, b), crc32.IEEETable, data)
		b = b[:0]
	}
	b = binary.BigEndian.AppendUint64(b, uint64(s.Czxid))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Mzxid))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Pzxid))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Ctime))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Mtime))
	b = binary.BigEndian.AppendUint32(b, uint32(s.Version))
	b = binary.BigEndian.AppendUint32(b, uint32(s.Cversion))
	b = binary.BigEndian.AppendUint32(b, uint32(s.Aversion))
	b = binary.BigEndian.AppendUint64(b, uint64(s.EphemeralOwner))
	return crc32.Update(c, crc32.IEEETable, b), b
}

// Digest is the node's share of the tree digest (NodeDigest). It is hashed from the node
// as read, so ask before the tree changes (prep does, on the tree's goroutine).
func (n *Node) Digest() uint32 {
	if n.t == nil {
		return 0
	}
	d, b := NodeDigest(n.t.scratch, n.t.pathOf(n.i), n.Data, &n.Stat)
	n.t.scratch = b[:0]
	return d
}

// addDigest adds node i's share of the digest; unDigest takes it away. A change of a node
// is bracketed by the two, so the share taken away is hashed from the contents it was
// added for: records keep no digest (4 bytes a node), a change hashes the node twice.
func (t *Tree) addDigest(i uint32) { t.digest += uint64(t.nodeDigest(i)) }

func (t *Tree) unDigest(i uint32) { t.digest -= uint64(t.nodeDigest(i)) }
