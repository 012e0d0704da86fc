package recipe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/zkd-io/zkd/zk"
)

// Queue is a distributed FIFO queue (ZooKeeper's queue recipe, Curator's DistributedQueue,
// kazoo's Queue). Items are persistent sequential nodes in the directory, taken in sequence
// order; any number of producers and consumers may share it, and each item is delivered to
// exactly one consumer.
//
// A consumer lists the directory once per batch: it takes the items of one listing in order
// and lists again only when the batch is used up, so a busy queue costs one getChildren per
// batch, not per item. When the directory is empty it sets a child watch and blocks. An item
// is taken by reading it and then deleting it in a multi that also records the item's name in
// the consumer's own receipt node: if the connection is lost during the delete, the receipt
// says whether this consumer took the item or another one did, so no item is lost or
// delivered twice. Put protects its create with a guid in the name in the same way.
type Queue struct {
	c        *zk.Conn
	dir      string
	opts     *options
	priority bool

	sem     chan struct{} // one Take at a time per value; a channel so waiting honours ctx
	batch   []itemNode    // the rest of the last listing, in order
	receipt string        // this consumer's receipt node, created on first use
}

// PriorityQueue is a Queue whose items carry a priority: items with a lower priority value
// are taken first, and items of equal priority in FIFO order (Curator's
// DistributedPriorityQueue). The priority is part of the node's name, so ordering needs no
// reads. As with Curator, priorities order the items of one listing: an urgent item put
// while a consumer works through a batch waits for the next one.
type PriorityQueue struct {
	q Queue
}

const (
	itemPrefix    = "qn-"
	receiptPrefix = "_r_"
)

// itemNode is a parsed queue item name: "qn-" [priority "-"] guid "-" sequence.
type itemNode struct {
	name string
	prio int64
	guid string
	seq  int64
}

func parseItem(name string, priority bool) (itemNode, bool) {
	rest, ok := strings.CutPrefix(name, itemPrefix)
	if !ok || len(rest) < seqLen {
		return itemNode{}, false
	}
	n := itemNode{name: name}
	seq, err := strconv.ParseInt(rest[len(rest)-seqLen:], 10, 64)
	if err != nil {
		return itemNode{}, false
	}
	n.seq = seq
	rest = strings.TrimSuffix(rest[:len(rest)-seqLen], "-")
	if priority {
		p, g, ok := strings.Cut(rest, "-")
		if !ok || len(p) != 8 {
			return itemNode{}, false
		}
		u, err := strconv.ParseUint(p, 16, 32)
		if err != nil {
			return itemNode{}, false
		}
		n.prio = int64(int32(uint32(u) ^ 0x80000000))
		rest = g
	}
	n.guid = rest
	return n, true
}

// prioName encodes a priority so that names sort by it: the sign bit is flipped, so negative
// priorities come before positive ones in hex order.
func prioName(p int32) string { return fmt.Sprintf("%08x", uint32(p)^0x80000000) }

// NewQueue returns a handle on the FIFO queue at dir. Options: WithACL.
func NewQueue(c *zk.Conn, dir string, opts ...Option) *Queue {
	o := newOptions(opts)
	return &Queue{c: c, dir: dir, opts: &o, sem: make(chan struct{}, 1)}
}

// NewPriorityQueue returns a handle on the priority queue at dir. Options: WithACL.
func NewPriorityQueue(c *zk.Conn, dir string, opts ...Option) *PriorityQueue {
	o := newOptions(opts)
	return &PriorityQueue{q: Queue{c: c, dir: dir, opts: &o, sem: make(chan struct{}, 1), priority: true}}
}

// Put appends an item and returns its node's path.
func (q *Queue) Put(ctx context.Context, data []byte) (string, error) {
	return q.put(ctx, itemPrefix, data)
}

// Put adds an item with the given priority (lower values are taken first) and returns its
// node's path.
func (pq *PriorityQueue) Put(ctx context.Context, data []byte, priority int32) (string, error) {
	return pq.q.put(ctx, itemPrefix+prioName(priority)+"-", data)
}

func (q *Queue) put(ctx context.Context, prefix string, data []byte) (string, error) {
	guid := newGUID()
	p := join(q.dir, prefix+guid+"-")
	for {
		got, err := create(ctx, q.c, p, data, q.opts.acl, zk.ModePersistentSequential)
		if err == nil {
			return got, nil
		}
		if !errors.Is(err, zk.ErrConnectionLoss) {
			// An abandoned Put (ctx ended) may still be applied, like an unacknowledged
			// message; it is delivered once if so.
			return "", fmt.Errorf("recipe: put %s: %w", q.dir, err)
		}
		// A lost reply: look for the item before putting it again.
		ch, err := children(ctx, q.c, q.dir)
		if err != nil {
			return "", err
		}
		for _, name := range ch {
			if n, ok := parseItem(name, q.priority); ok && n.guid == guid {
				q.opts.emit(hookEvent{kind: hookRecovered, path: join(q.dir, name)})
				return join(q.dir, name), nil
			}
		}
	}
}

// Take removes and returns the head of the queue, blocking while it is empty, until ctx ends
// or the session ends. A Queue value serves one Take at a time.
func (q *Queue) Take(ctx context.Context) ([]byte, error) {
	data, _, err := q.take(ctx, true)
	return data, err
}

// TryTake is Take without blocking: ok is false when the queue is empty.
func (q *Queue) TryTake(ctx context.Context) (data []byte, ok bool, err error) {
	return q.take(ctx, false)
}

// Take removes and returns the item with the lowest priority value; see Queue.Take.
func (pq *PriorityQueue) Take(ctx context.Context) ([]byte, error) { return pq.q.Take(ctx) }

// TryTake is Take without blocking.
func (pq *PriorityQueue) TryTake(ctx context.Context) ([]byte, bool, error) {
	return pq.q.TryTake(ctx)
}

// Len returns the number of items in the queue.
func (q *Queue) Len(ctx context.Context) (int, error) {
	ch, err := children(ctx, q.c, q.dir)
	return len(q.items(ch)), err
}

// Len returns the number of items in the queue.
func (pq *PriorityQueue) Len(ctx context.Context) (int, error) { return pq.q.Len(ctx) }

// Close deletes the consumer's receipt node (an ephemeral node, otherwise removed with the
// session). Close it when a long-lived session stops consuming.
func (q *Queue) Close(ctx context.Context) error {
	select {
	case q.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-q.sem }()
	if q.receipt == "" {
		return nil
	}
	err := deleteNode(ctx, q.c, q.receipt)
	q.receipt = ""
	return err
}

// Close deletes the consumer's receipt node; see Queue.Close.
func (pq *PriorityQueue) Close(ctx context.Context) error { return pq.q.Close(ctx) }

func (q *Queue) items(children []string) []itemNode {
	var ns []itemNode
	for _, name := range children {
		if n, ok := parseItem(name, q.priority); ok {
			ns = append(ns, n)
		}
	}
	slices.SortFunc(ns, func(a, b itemNode) int {
		return cmp.Or(cmp.Compare(a.prio, b.prio), cmp.Compare(a.seq, b.seq))
	})
	return ns
}

func (q *Queue) take(ctx context.Context, block bool) ([]byte, bool, error) {
	select {
	case q.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	defer func() { <-q.sem }()
	for {
		for len(q.batch) > 0 {
			item := q.batch[0]
			data, ok, err := q.claim(ctx, join(q.dir, item.name))
			if err != nil {
				return nil, false, err
			}
			q.batch = q.batch[1:]
			if ok {
				return data, true, nil
			}
		}
		ch, err := children(ctx, q.c, q.dir)
		if err != nil {
			return nil, false, err
		}
		q.opts.emit(hookEvent{kind: hookListed, path: q.dir})
		if q.batch = q.items(ch); len(q.batch) > 0 {
			continue
		}
		if !block {
			return nil, false, nil
		}
		var events <-chan zk.Event
		err = retry(ctx, func() (err error) {
			ch, _, events, err = q.c.ChildrenW(ctx, q.dir)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			if err := ensureDir(ctx, q.c, q.dir, q.opts.acl); err != nil {
				return nil, false, err
			}
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("recipe: list %s: %w", q.dir, err)
		}
		q.opts.emit(hookEvent{kind: hookListed, path: q.dir})
		if q.batch = q.items(ch); len(q.batch) > 0 {
			continue // the watch fires, unread, on the next change
		}
		if _, err := waitEvent(ctx, q.opts, q.dir, events); err != nil {
			return nil, false, err
		}
	}
}

// claim tries to take one item: ok is false when another consumer had it first.
func (q *Queue) claim(ctx context.Context, item string) (data []byte, ok bool, err error) {
	if err := q.ensureReceipt(ctx); err != nil {
		return nil, false, err
	}
	err = retry(ctx, func() (err error) {
		data, _, err = q.c.Get(ctx, item)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("recipe: read %s: %w", item, err)
	}
	name := path.Base(item)
	for {
		_, err = q.c.Txn().Delete(item, zk.AnyVersion).Set(q.receipt, []byte(name), zk.AnyVersion).Commit(ctx)
		if err == nil {
			return data, true, nil
		}
		if errors.Is(err, zk.ErrNoNode) {
			var me *zk.MultiError
			if errors.As(err, &me) && me.Index == 1 {
				// The receipt is gone: someone deleted it. Make another.
				q.receipt = ""
				if err := q.ensureReceipt(ctx); err != nil {
					return nil, false, err
				}
				continue
			}
			return nil, false, nil
		}
		rctx := ctx
		if isCtxErr(ctx, err) {
			// The take may still be applied; if it was, the item is ours and must not be
			// dropped. Replies come in order, so the receipt read after it tells.
			cctx, cancel := cleanupContext(ctx, q.c)
			defer cancel()
			rctx = cctx
		} else if !errors.Is(err, zk.ErrConnectionLoss) {
			return nil, false, fmt.Errorf("recipe: take %s: %w", item, err)
		}
		// Did the delete happen, and was it ours?
		var got []byte
		if rerr := retry(rctx, func() (err error) {
			got, _, err = q.c.Get(rctx, q.receipt)
			return err
		}); rerr != nil {
			return nil, false, fmt.Errorf("recipe: take %s: %w", item, rerr)
		}
		if string(got) == name {
			q.opts.emit(hookEvent{kind: hookRecovered, path: item})
			return data, true, nil
		}
		if rctx != ctx {
			return nil, false, err
		}
		// Not applied, or another consumer's: try again, which tells them apart.
	}
}

func (q *Queue) ensureReceipt(ctx context.Context) error {
	if q.receipt != "" {
		return nil
	}
	p, err := createProtected(ctx, q.c, q.opts, q.dir, receiptPrefix, nil, zk.ModeEphemeral)
	if err != nil {
		return err
	}
	q.receipt = p
	return nil
}
