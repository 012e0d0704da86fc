package datatree

import (
	"math"
	"slices"

	"github.com/zkd-io/zkd/jute"
)

// OpenACLKey is the ACL key ZooKeeper uses for its built-in nodes: world:anyone ALL,
// never stored in the ACL table.
const OpenACLKey int64 = -1

// aclCache interns ACL lists under int64 keys, as ZooKeeper's ReferenceCountedACLCache
// does: the keys are what nodes and snapshots store.
type aclCache struct {
	byKey   map[int64][]jute.ACL
	byValue map[string]int64
	refs    map[int64]int64
	// next is the last key handed out in sequence. Keys stay within int32 (a node record
	// holds 4 bytes of key): past that, free keys are found by scan.
	next, scan int64
	// pinned defers removal of unreferenced lists while a snapshot walk may still emit
	// nodes whose key must appear in the snapshot's ACL table.
	pinned int
	// last is the most recently interned list: most creates reuse one ACL, and comparing
	// it is much cheaper than encoding the list to look it up.
	last    []jute.ACL
	lastKey int64
}

func newACLCache() *aclCache {
	return &aclCache{byKey: map[int64][]jute.ACL{}, byValue: map[string]int64{}, refs: map[int64]int64{}}
}

func aclString(acls []jute.ACL) string {
	e := jute.Encoder{}
	jute.EncodeACLs(&e, acls)
	return string(e.Buf)
}

// intern returns the key for acls, adding a reference.
func (c *aclCache) intern(acls []jute.ACL) int64 {
	if acls == nil {
		return OpenACLKey
	}
	if c.last != nil && slices.Equal(acls, c.last) {
		if _, ok := c.byKey[c.lastKey]; ok {
			c.refs[c.lastKey]++
			return c.lastKey
		}
	}
	s := aclString(acls)
	k, ok := c.byValue[s]
	if !ok {
		k = c.newKey()
		c.byValue[s] = k
		c.byKey[k] = acls
	}
	c.refs[k]++
	c.last, c.lastKey = acls, k
	return k
}

func (c *aclCache) get(k int64) []jute.ACL {
	if k == OpenACLKey {
		return jute.OpenACLUnsafe
	}
	return c.byKey[k]
}

func (c *aclCache) addRef(k int64) {
	if k != OpenACLKey {
		c.refs[k]++
	}
}

// addRefs is n addRefs of k.
func (c *aclCache) addRefs(k int64, n int) {
	if k != OpenACLKey {
		c.refs[k] += int64(n)
	}
}

func (c *aclCache) release(k int64) {
	if k == OpenACLKey {
		return
	}
	c.refs[k]--
	if c.refs[k] <= 0 && c.pinned == 0 {
		c.drop(k)
	}
}

func (c *aclCache) drop(k int64) {
	if acls, ok := c.byKey[k]; ok {
		delete(c.byValue, aclString(acls))
	}
	delete(c.byKey, k)
	delete(c.refs, k)
}

// newKey returns a key no list and no node uses.
func (c *aclCache) newKey() int64 {
	if c.next < maxACLKey {
		c.next++
		return c.next
	}
	for {
		c.scan = c.scan%maxACLKey + 1
		if _, used := c.byKey[c.scan]; !used && c.refs[c.scan] == 0 {
			return c.scan
		}
	}
}

// maxACLKey is the largest key a node record holds. ZooKeeper's keys are longs counted
// from 1, so a snapshot's keys fit unless it is hostile; the loader gives any that do not
// a key that does (keys appear only in snapshots, which say which list each stands for).
const maxACLKey = math.MaxInt32

// load restores a key from a snapshot without references; the key is in 1..maxACLKey.
func (c *aclCache) load(k int64, acls []jute.ACL) {
	c.byKey[k] = acls
	c.byValue[aclString(acls)] = k
	if k > c.next {
		c.next = k
	}
}

func (c *aclCache) unpin() {
	c.pinned--
	if c.pinned == 0 {
		for k, n := range c.refs {
			if n <= 0 {
				c.drop(k)
			}
		}
	}
}

func (c *aclCache) snapshot() map[int64][]jute.ACL {
	m := make(map[int64][]jute.ACL, len(c.byKey))
	for k, v := range c.byKey {
		m[k] = v
	}
	return m
}
