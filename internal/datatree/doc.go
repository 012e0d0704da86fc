// Package datatree owns the in-memory znode tree: nodes, their Stats and ACL keys, the
// per-session ephemeral sets, container and TTL bookkeeping, and the tree digest. It
// applies logged transactions exactly as Apache ZooKeeper's DataTree does, so that replaying
// a ZooKeeper log gives ZooKeeper's tree. It is a pure state machine: no I/O, no clock, no
// goroutines; the caller serializes access, except to a View, which any goroutine may read.
//
// # Storage
//
// The tree is made for tens of millions of nodes (store.go says why it is shaped so): a
// node is a record of fixed size in a page of 256, addressed by its index; its path and
// data are one entry in an arena of 1 MiB chunks; a table of 64-bit words indexes paths.
// The collector sees one pointer per page, chunk and child list, none per node.
//
// A record, 80 bytes, so a page of 256 is exactly an allocator size class (little-endian in
// memory; nothing here is ever written to disk):
//
//	 0       8       16      24      32      40      48
//	+-------+-------+-------+-------+-------+-------+
//	| czxid | mzxid | ctime | mtime | pzxid |  off  |           int64 each; off = chunk<<32 | offset
//	+---+---+---+---+---+---+---+---+-------+-------+           (all ones: a free record)
//	|ver|cv |av |own|acl|par|pos|kid|                           int32/uint32 each
//	+---+---+---+---+---+---+---+---+
//	 48  52  56  60  64  68  72  76  80
//
//	ver, cv, av  version, cversion, aversion
//	own          ephemeral owner's id in the tree's owner table (0: none); a View copies the table
//	acl          ACL key (kept within int32; the loader gives a snapshot's bigger keys new ones)
//	par, pos     parent's index and place in its child list (0xffffffff: listed by none)
//	kid          the node's child list (0: none)
//
// The data's length is the entry's, and a node's share of the tree digest is hashed when
// a change needs it (before and after the change) rather than kept.
//
// An arena entry, at off; chunks are append-only, so a reader or a View keeps the bytes it
// was given whatever the tree does next:
//
//	+-------------------+---------------------------+-------------+-------------+
//	| uvarint path len  | uvarint data len + 1      | path bytes  | data bytes  |
//	|                   | (0: null data)            |             |             |
//	+-------------------+---------------------------+-------------+-------------+
//
// A change stores a new entry and leaves the old one dead; a chunk more than half dead is
// compacted by later writes, a few entries each (live: the node its path names is stored
// at that offset; entries freed in the chunk are listed, up to a bound, and skipped without
// a look-up). An entry over 128 KiB gets a chunk of its own, dropped when it dies.
//
// A path-index word: the path's 32-bit hash (whose top bits are its home slot, so the table
// grows without reading paths) above the record index plus one; 0 is an empty slot.
// Linear probing; a delete shifts the run back.
//
// # Views
//
// Capture takes a View, the tree at one moment, by copying the page and chunk tables (one
// word per 256 nodes and per MiB of paths and data) and moving the tree to a new
// generation: a page or child list of an older generation is copied the first time the
// tree changes it afterwards. Snapshots, SNAP streams and paged listings read views on
// other goroutines while the tree goes on applying txns.
package datatree
