package recipe

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"

	"github.com/zkd-io/zkd/zk"
)

// predFunc chooses, among the contenders in sequence order, the node that contender i must
// see deleted before it may hold the lock: "" means it holds it now.
type predFunc func(ns []seqNode, i int) string

// prevNode is the exclusive lock's rule: wait for the node just before.
func prevNode(ns []seqNode, i int) string {
	if i == 0 {
		return ""
	}
	return ns[i-1].name
}

// participant states
const (
	idle = iota
	acquiring
	held
)

// contender is one participant's sequential node in a lock-like directory: the engine of
// Mutex, RWMutex, Election and the Semaphore's internal lock.
type contender struct {
	c     *zk.Conn
	dir   string
	kind  string   // the kind of node this contender creates
	kinds []string // the kinds that take part in the order
	pred  predFunc
	opts  *options

	mu    sync.Mutex
	state int
	node  string        // full path while acquiring or held
	gone  chan struct{} // Election: closed once node is deleted or the session ends
}

// begin moves the contender from idle to acquiring.
func (k *contender) begin() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.state != idle {
		return ErrLocked
	}
	k.state = acquiring
	return nil
}

func (k *contender) setNode(node string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.node = node
}

func (k *contender) finish(ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ok {
		k.state = held
	} else {
		k.state, k.node = idle, ""
	}
}

// create makes the contender's node and, for a revocable lock, starts watching its data.
func (k *contender) create(ctx context.Context) (string, error) {
	node, err := createProtected(ctx, k.c, k.opts, k.dir, k.kind, k.opts.data, zk.ModeEphemeralSequential)
	if err != nil {
		return "", err
	}
	if onRevoke := k.opts.onRevoke; onRevoke != nil {
		var once sync.Once
		watchNode(k.c, node, func(data []byte) {
			if string(data) == revokeData {
				once.Do(onRevoke)
			}
		}, func(error) {})
	}
	k.setNode(node)
	return node, nil
}

// acquire creates the contender's node and waits for its turn. On any failure the node is
// removed again.
func (k *contender) acquire(ctx context.Context) error {
	if err := k.begin(); err != nil {
		return err
	}
	node, err := k.create(ctx)
	if err != nil {
		k.finish(false)
		return err
	}
	if err := k.wait(ctx, node, false); err != nil {
		k.abandon(ctx, node)
		return err
	}
	k.finish(true)
	return nil
}

// try is acquire without waiting: it reports false, and removes its node, when another
// participant goes first.
func (k *contender) try(ctx context.Context) (bool, error) {
	if err := k.begin(); err != nil {
		return false, err
	}
	node, err := k.create(ctx)
	if err != nil {
		k.finish(false)
		return false, err
	}
	if err := k.wait(ctx, node, true); err != nil {
		k.abandon(ctx, node)
		if errors.Is(err, errWouldWait) {
			return false, nil
		}
		return false, err
	}
	k.finish(true)
	return true, nil
}

var errWouldWait = errors.New("recipe: would wait")

// abandon removes the node of a failed acquisition, even when ctx has ended.
func (k *contender) abandon(ctx context.Context, node string) {
	cctx, cancel := cleanupContext(ctx, k.c)
	defer cancel()
	deleteNode(cctx, k.c, node) // a failure leaves it to the session's end
	k.finish(false)
}

// wait implements the lock recipe's loop: list the directory, find the node that must go
// first (pred), and watch only that node, so that a release wakes exactly one waiter (no
// herd). The watch is set with getData, which sets none when the node is already gone, so
// no watch is left behind on a node that will never come back.
func (k *contender) wait(ctx context.Context, node string, noWait bool) error {
	name := path.Base(node)
	for {
		ch, err := children(ctx, k.c, k.dir)
		if err != nil {
			return err
		}
		ns := contenders(ch, k.kinds...)
		i := indexOf(ns, name)
		if i < 0 {
			return fmt.Errorf("recipe: %s: %w", node, ErrNodeLost)
		}
		first := k.pred(ns, i)
		if first == "" {
			return nil
		}
		if noWait {
			return errWouldWait
		}
		watched := join(k.dir, first)
		var events <-chan zk.Event
		err = retry(ctx, func() (err error) {
			_, _, events, err = k.c.GetW(ctx, watched)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("recipe: watch %s: %w", watched, err)
		}
		if _, err := waitEvent(ctx, k.opts, watched, events); err != nil {
			return err
		}
	}
}

// release deletes the held node.
func (k *contender) release(ctx context.Context) error {
	k.mu.Lock()
	if k.state != held {
		k.mu.Unlock()
		return ErrNotLocked
	}
	node := k.node
	k.mu.Unlock()
	err := deleteNode(ctx, k.c, node)
	if err != nil && isCtxErr(ctx, err) {
		return err // still held: the caller may try again
	}
	k.finish(false)
	return err
}

func (k *contender) current() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.node
}

// list returns the contenders' paths in lock order.
func (k *contender) list(ctx context.Context) ([]string, error) {
	ch, err := children(ctx, k.c, k.dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range contenders(ch, k.kinds...) {
		out = append(out, join(k.dir, n.name))
	}
	return out, nil
}

// Mutex is a distributed exclusive lock (ZooKeeper's lock recipe, Curator's
// InterProcessMutex). Each Mutex value is one participant; it is not re-entrant.
//
// Lock creates an ephemeral sequential node in the directory and holds the lock when its
// node has the lowest sequence number. Otherwise it watches only the node just before its own
// and checks again when that one goes, so a release wakes exactly one waiter instead of all
// of them (no herd effect), and a waiter that gives up only wakes its successor. The node's
// name carries a guid, so a create whose reply was lost is found instead of repeated. The
// lock is released by deleting the node, or by the session's end: a crashed holder's lock
// passes on after its session timeout.
type Mutex struct {
	k contender
}

// NewMutex returns a participant in the lock at dir. Options: WithData, WithACL,
// WithRevocation.
func NewMutex(c *zk.Conn, dir string, opts ...Option) *Mutex {
	o := newOptions(opts)
	return &Mutex{k: contender{c: c, dir: dir, kind: "lock-", kinds: []string{"lock-"}, pred: prevNode, opts: &o}}
}

// Lock blocks until the lock is held, ctx ends (the context's error) or the session ends
// (zk.ErrSessionExpired, zk.ErrClosed). When it fails, the node it created is removed.
func (m *Mutex) Lock(ctx context.Context) error { return m.k.acquire(ctx) }

// TryLock takes the lock only if no one holds or waits for it.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) { return m.k.try(ctx) }

// Unlock releases the lock by deleting the node. It fails with ErrNotLocked if the lock is
// not held; an error wrapping zk.ErrSessionExpired means that the lock was lost earlier, with
// the session.
func (m *Mutex) Unlock(ctx context.Context) error { return m.k.release(ctx) }

// Node is the path of the participant's lock node while it acquires or holds the lock, or "".
// Pass it to Revoke to ask the holder to release.
func (m *Mutex) Node() string { return m.k.current() }

// Contenders returns the paths of every lock node, holder first, then the waiters in order.
func (m *Mutex) Contenders(ctx context.Context) ([]string, error) { return m.k.list(ctx) }

// revokeData is what a revoker writes to a lock node (ZooKeeper's recipe).
const revokeData = "unlock"

// Revoke asks the holder of (or waiter for) a revocable lock to release it, by writing
// "unlock" to its node; the holder's WithRevocation callback decides. A node already gone is
// not an error.
func Revoke(ctx context.Context, c *zk.Conn, node string) error {
	err := retry(ctx, func() error {
		_, err := c.Set(ctx, node, []byte(revokeData), zk.AnyVersion)
		return err
	})
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("recipe: revoke %s: %w", node, err)
	}
	return nil
}
