// Package datatree owns the in-memory znode tree: nodes, their Stats and ACL keys, the
// per-session ephemeral sets, container and TTL bookkeeping, and the tree digest. It
// applies logged transactions exactly as Apache ZooKeeper's DataTree does, so that replaying
// a ZooKeeper log gives ZooKeeper's tree. It is a pure state machine: no I/O, no clock, no
// goroutines; the caller serializes access.
package datatree

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"sort"
	"strings"

	"github.com/zkd-io/zkd/jute"
)

// Special ephemeralOwner values (fact sheet §5.8).
const (
	ContainerOwner int64 = -0x8000000000000000
	ttlMask        int64 = -0x0100000000000000 // high byte 0xFF
)

// TTLOwner encodes a TTL in an ephemeralOwner.
func TTLOwner(ttl int64) int64 { return ttlMask | (ttl & jute.MaxTTL) }

// Node is one znode. Data is never mutated in place: a setData installs a new slice, so a
// reader may hand Data to another goroutine for encoding.
type Node struct {
	Data []byte
	ACL  int64
	Stat jute.StatPersisted
	// idx is the node's position in its parent's child list.
	idx int32
	// digest is the node's share of the tree digest, as last computed: a change subtracts
	// it rather than hashing the old contents again.
	digest uint32
	// children lists the child names (substrings of the children's paths) in no order;
	// nil for a leaf. A list, not a set: it costs no hashing to build, which dominates
	// loading a large snapshot, and the tree's path map answers membership.
	children *childList
}

type childList struct {
	names []string
	// shared is set when a reader may hold names[:len(names)] (SharedChildren): the next
	// change of a name in place copies the list first.
	shared bool
}

// NumChildren is the current number of children.
func (n *Node) NumChildren() int {
	if n.children == nil {
		return 0
	}
	return len(n.children.names)
}

// Children returns the child names in no particular order.
func (n *Node) Children() []string {
	if n.children == nil {
		return []string{}
	}
	return append([]string(nil), n.children.names...)
}

// SharedChildren returns the child names in no particular order without copying them, for
// a reply encoded on another goroutine: the caller only reads the slice, and the tree
// copies the list before it changes a name the slice holds (adding a child writes past
// its end). A getChildren of a node with a million children copied 16 MB of string
// headers on the tree's goroutine, which the collector then scanned; now the first delete
// of a child after such a read copies the list instead (at most one copy per read, as
// before, but on the write).
func (n *Node) SharedChildren() []string {
	if n.children == nil {
		return []string{}
	}
	n.children.shared = true
	names := n.children.names
	return names[:len(names):len(names)]
}

// childNames is the list itself, for iteration inside the package.
func (n *Node) childNames() []string {
	if n.children == nil {
		return nil
	}
	return n.children.names
}

// hasChild reports whether c, the node the path map holds for parentName/name, is listed by
// n. A node can be in the path map without being listed: replaying a log over a fuzzy
// snapshot can delete and recreate a parent while the snapshot still holds a child.
func (n *Node) hasChild(name string, c *Node) bool {
	if c == nil || n.children == nil {
		return false
	}
	names := n.children.names
	return int(c.idx) < len(names) && names[c.idx] == name
}

func (n *Node) addChild(name string, c *Node) {
	if n.children == nil {
		n.children = &childList{}
	}
	l := n.children
	c.idx = int32(len(l.names))
	if len(l.names) == cap(l.names) {
		// The append moves the list: what a reader holds is no longer the tree's.
		l.shared = false
	}
	l.names = append(l.names, name)
}

// removeChild unlists c (named name, path parentPath/name) from parent n: the last name
// takes its place.
func (t *Tree) removeChild(parentPath string, n *Node, name string, c *Node) {
	if !n.hasChild(name, c) {
		return
	}
	l := n.children
	if l.shared {
		l.names = slices.Clone(l.names)
		l.shared = false
	}
	last := len(l.names) - 1
	if i := c.idx; int(i) != last {
		moved := l.names[last]
		l.names[i] = moved
		if m := t.nodes[Join(parentPath, moved)]; m != nil {
			m.idx = i
		}
	}
	l.names[last] = ""
	l.names = l.names[:last]
	switch {
	case last == 0:
		n.children = nil
	case cap(l.names) > 64 && last < cap(l.names)/4:
		// Give back the memory of a list that has shrunk a lot.
		l.names = append(make([]string, 0, 2*last), l.names...)
	}
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
	nodes      map[string]*Node
	acls       *aclCache
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
	t := &Tree{
		nodes:      make(map[string]*Node),
		acls:       newACLCache(),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
	}
	root := &Node{Data: []byte{}, ACL: OpenACLKey}
	t.nodes["/"] = root
	t.addDigest("/", root)
	t.dataSize += int64(len("/"))
	t.addSystemNodes()
	return t
}

func (t *Tree) addSystemNodes() {
	t.ensureNode("/", ZookeeperPath, &Node{Data: []byte{}, ACL: OpenACLKey})
	t.ensureNode(ZookeeperPath, QuotaPath, &Node{Data: []byte{}, ACL: OpenACLKey})
	cfg := &Node{Data: []byte{}, Stat: jute.StatPersisted{Aversion: -1}}
	cfg.ACL = t.acls.intern(jute.ReadACLUnsafe)
	if !t.ensureNode(ZookeeperPath, ConfigPath, cfg) {
		t.acls.release(cfg.ACL)
	}
}

// SetConfig stores a quorum configuration in /zookeeper/config as ZooKeeper's
// ZKDatabase.initConfigInZKDatabase does when a member starts or syncs with its leader: no
// txn, the data replaced, Mzxid set to the configuration's version, Version to -1 and
// Mtime to now. It returns the NodeDataChanged event for the node's watches.
func (t *Tree) SetConfig(data []byte, configVersion, now int64) []Event {
	if t.nodes[ConfigPath] == nil {
		t.addSystemNodes()
	}
	var ev []Event
	// The node's only writers are this and reconfig, which sets version -1 as well.
	t.setData(ConfigPath, data, -1, configVersion, now, &ev)
	return ev
}

func (t *Tree) ensureNode(parent, path string, n *Node) bool {
	if _, ok := t.nodes[path]; ok {
		return false
	}
	t.nodes[path] = n
	t.nodes[parent].addChild(Base(path), n)
	t.addDigest(path, n)
	t.dataSize += int64(len(path) + len(n.Data))
	return true
}

// Get returns the node at path, or nil. The node must not be modified.
func (t *Tree) Get(path string) *Node { return t.nodes[path] }

// ACL returns the ACL list for a key.
func (t *Tree) ACL(key int64) []jute.ACL { return t.acls.get(key) }

// LastZxid is the zxid of the last applied txn.
func (t *Tree) LastZxid() int64 { return t.lastZxid }

// SetLastZxid sets the last applied zxid (after loading a snapshot).
func (t *Tree) SetLastZxid(z int64) { t.lastZxid = z }

// NodeCount is the number of znodes, including the root and reserved nodes.
func (t *Tree) NodeCount() int { return len(t.nodes) }

// ApproximateDataSize is the sum of path and data lengths, as ZooKeeper reports it.
func (t *Tree) ApproximateDataSize() int64 { return t.dataSize }

// Digest is the tree digest (fact sheet §12.5).
func (t *Tree) Digest() int64 { return int64(t.digest) }

// EphemeralOwner returns what clients see as ephemeralOwner: containers and TTL nodes show 0.
func (t *Tree) clientOwner(owner int64) int64 {
	if owner == ContainerOwner || (t.ExtendedTypes && owner < 0 && owner&ttlMask == ttlMask) {
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
	n := t.nodes[path]
	if n == nil {
		return 0
	}
	count := 0
	for _, c := range n.childNames() {
		count += 1 + t.CountDescendants(Join(path, c))
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
		if n := t.nodes[p]; n != nil && n.NumChildren() == 0 && n.Stat.Cversion > 0 {
			out = append(out, p)
		}
	}
	for p := range t.ttls {
		if len(out) >= limit {
			break
		}
		n := t.nodes[p]
		if n == nil || n.NumChildren() != 0 {
			continue
		}
		if ttl, ok := t.IsTTL(n.Stat.EphemeralOwner); ok && ttl != 0 && nowMs-n.Stat.Mtime > ttl {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// nodeSize is ZooKeeper's getNodeSize: Java String.length() (UTF-16 units) plus data length.
func nodeSize(path string, data []byte) int64 {
	n := int64(len(data))
	for _, r := range path {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// nodeDigest is the node's share of the tree digest (NodeDigest), hashed in the buffer
// the tree keeps.
func (t *Tree) nodeDigest(path string, n *Node) uint64 {
	d, b := NodeDigest(t.scratch, path, n.Data, &n.Stat)
	t.scratch = b[:0]
	return uint64(d)
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

// Digest is the node's share of the tree digest (NodeDigest), as the tree last computed it.
func (n *Node) Digest() uint32 { return n.digest }

// beginChange and endChange bracket a mutation of a node so the digest follows it.
func (t *Tree) beginChange(path string, n *Node) {
	t.unDigest(path, n)
}

func (t *Tree) endChange(path string, n *Node) {
	t.addDigest(path, n)
}
