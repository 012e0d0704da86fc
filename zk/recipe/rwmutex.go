package recipe

import (
	"context"

	"github.com/zkd-io/zkd/zk"
)

const (
	readKind  = "read-"
	writeKind = "write-"
)

// RWMutex is a distributed readers-writer lock: ZooKeeper's shared-lock recipe (Curator's
// InterProcessReadWriteLock). Any number of readers hold it together; a writer holds it alone.
//
// Readers and writers create ephemeral sequential nodes in one directory, so they share one
// order. A writer waits for the node just before its own, whatever its kind, exactly like
// Mutex. A reader waits only for the last writer before it: readers queued behind the same
// writer all proceed when it goes, and no reader is ever woken by another reader. Waiting
// readers do not let later writers starve: a writer queued before a reader goes first.
//
// Each RWMutex value is one participant, holding at most one read and one write lock. It may
// take the read lock while holding the write lock (a downgrade: its reader does not wait for
// its own writer), not the reverse.
type RWMutex struct {
	r, w contender
}

// NewRWMutex returns a participant in the readers-writer lock at dir. Options: WithData,
// WithACL, WithRevocation.
func NewRWMutex(c *zk.Conn, dir string, opts ...Option) *RWMutex {
	o := newOptions(opts)
	kinds := []string{readKind, writeKind}
	rw := &RWMutex{}
	rw.w = contender{c: c, dir: dir, kind: writeKind, kinds: kinds, pred: prevNode, opts: &o}
	rw.r = contender{c: c, dir: dir, kind: readKind, kinds: kinds, opts: &o, pred: func(ns []seqNode, i int) string {
		own := rw.w.current()
		for j := i - 1; j >= 0; j-- {
			if ns[j].kind == writeKind && join(dir, ns[j].name) != own {
				return ns[j].name
			}
		}
		return ""
	}}
	return rw
}

// RLock blocks until the read lock is held; see Mutex.Lock.
func (rw *RWMutex) RLock(ctx context.Context) error { return rw.r.acquire(ctx) }

// TryRLock takes the read lock only if no writer holds it or waits before this reader.
func (rw *RWMutex) TryRLock(ctx context.Context) (bool, error) { return rw.r.try(ctx) }

// RUnlock releases the read lock.
func (rw *RWMutex) RUnlock(ctx context.Context) error { return rw.r.release(ctx) }

// Lock blocks until the write lock is held; see Mutex.Lock.
func (rw *RWMutex) Lock(ctx context.Context) error { return rw.w.acquire(ctx) }

// TryLock takes the write lock only if no one holds or waits for the lock.
func (rw *RWMutex) TryLock(ctx context.Context) (bool, error) { return rw.w.try(ctx) }

// Unlock releases the write lock.
func (rw *RWMutex) Unlock(ctx context.Context) error { return rw.w.release(ctx) }

// ReadNode and WriteNode are the participant's nodes while it acquires or holds the read or
// write lock, or "" (for Revoke).
func (rw *RWMutex) ReadNode() string { return rw.r.current() }

// WriteNode: see ReadNode.
func (rw *RWMutex) WriteNode() string { return rw.w.current() }

// Contenders returns the paths of every read and write node in lock order.
func (rw *RWMutex) Contenders(ctx context.Context) ([]string, error) { return rw.w.list(ctx) }
