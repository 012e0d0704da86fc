// Package datatree owns the in-memory znode tree: nodes, their Stats and ACL keys, the
// per-session ephemeral sets, container and TTL bookkeeping, and the tree digest. It
// applies logged transactions exactly as Apache ZooKeeper's DataTree does, so that replaying
// a ZooKeeper log gives ZooKeeper's tree. It is a pure state machine: no I/O, no clock, no
// goroutines; the caller serializes access.
package datatree

import (
	"hash/crc32"
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
	Data     []byte
	ACL      int64
	Stat     jute.StatPersisted
	children map[string]struct{}
}

// NumChildren is the current number of children.
func (n *Node) NumChildren() int { return len(n.children) }

// Children returns the child names in no particular order.
func (n *Node) Children() []string {
	out := make([]string, 0, len(n.children))
	for c := range n.children {
		out = append(out, c)
	}
	return out
}

// HasChild reports whether name is a child.
func (n *Node) HasChild(name string) bool {
	_, ok := n.children[name]
	return ok
}

func (n *Node) addChild(name string) {
	if n.children == nil {
		n.children = make(map[string]struct{}, 1)
	}
	n.children[name] = struct{}{}
}

func (n *Node) removeChild(name string) {
	delete(n.children, name)
	if len(n.children) == 0 {
		n.children = nil
	}
}

// Event is a change that watches may observe.
type Event struct {
	Type jute.EventType
	Path string
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

	// ExtendedTypes enables TTL nodes (zookeeper.extendedTypesEnabled).
	ExtendedTypes bool

	// replaying skips the per-change digest and event bookkeeping while a log is replayed;
	// EndReplay recomputes the digest once.
	replaying bool
}

// BeginReplay makes Apply skip work that replaying a log does not need: keeping the digest
// up to date change by change, and reporting events (there are no watches yet).
func (t *Tree) BeginReplay() { t.replaying = true }

// EndReplay recomputes the digest and returns the tree to normal operation.
func (t *Tree) EndReplay() {
	if !t.replaying {
		return
	}
	t.replaying = false
	t.digest = 0
	for p, n := range t.nodes {
		t.digest += nodeDigest(p, n)
	}
}

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
	t.digest += nodeDigest("/", root)
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

func (t *Tree) ensureNode(parent, path string, n *Node) bool {
	if _, ok := t.nodes[path]; ok {
		return false
	}
	t.nodes[path] = n
	t.nodes[parent].addChild(Base(path))
	t.digest += nodeDigest(path, n)
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
	nc := int32(len(n.children))
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
	for c := range n.children {
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
		if n := t.nodes[p]; n != nil && len(n.children) == 0 && n.Stat.Cversion > 0 {
			out = append(out, p)
		}
	}
	for p := range t.ttls {
		if len(out) >= limit {
			break
		}
		n := t.nodes[p]
		if n == nil || len(n.children) != 0 {
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

var crcTable = crc32.MakeTable(crc32.IEEE)

// nodeDigest is ZooKeeper's DigestCalculator: CRC32 over path, data and the stat block;
// nodes under /zookeeper/ do not count.
func nodeDigest(path string, n *Node) uint64 {
	if strings.HasPrefix(path, "/zookeeper/") {
		return 0
	}
	if path == "/" {
		path = ""
	}
	c := crc32.Update(0, crcTable, []byte(path))
	if n.Data != nil {
		c = crc32.Update(c, crcTable, n.Data)
	}
	var b [60]byte
	s := &n.Stat
	put64 := func(off int, v int64) {
		for i := 0; i < 8; i++ {
			b[off+i] = byte(v >> (56 - 8*i))
		}
	}
	put32 := func(off int, v int32) {
		for i := 0; i < 4; i++ {
			b[off+i] = byte(v >> (24 - 8*i))
		}
	}
	put64(0, s.Czxid)
	put64(8, s.Mzxid)
	put64(16, s.Pzxid)
	put64(24, s.Ctime)
	put64(32, s.Mtime)
	put32(40, s.Version)
	put32(44, s.Cversion)
	put32(48, s.Aversion)
	put64(52, s.EphemeralOwner)
	c = crc32.Update(c, crcTable, b[:])
	return uint64(c)
}

// beginChange and endChange bracket a mutation of a node so the digest follows it.
func (t *Tree) beginChange(path string, n *Node) {
	if !t.replaying {
		t.digest -= nodeDigest(path, n)
	}
}

func (t *Tree) endChange(path string, n *Node) {
	if !t.replaying {
		t.digest += nodeDigest(path, n)
	}
}
