package recipe

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/zkd-io/zkd/zk"
)

// Barrier blocks participants until it is removed (ZooKeeper's barrier recipe, kazoo's
// Barrier): it is up while its node exists. Wait watches the node with exists, so it wakes
// when the node is deleted and needs no polling.
type Barrier struct {
	c    *zk.Conn
	path string
	opts *options
}

// NewBarrier returns the barrier whose node is p. Options: WithACL.
func NewBarrier(c *zk.Conn, p string, opts ...Option) *Barrier {
	o := newOptions(opts)
	return &Barrier{c: c, path: p, opts: &o}
}

// Set puts the barrier up (creates its node); a barrier already up is not an error.
func (b *Barrier) Set(ctx context.Context) error {
	err := retry(ctx, func() error {
		_, err := create(ctx, b.c, b.path, nil, b.opts.acl, zk.ModePersistent)
		return err
	})
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("recipe: barrier %s: %w", b.path, err)
	}
	return nil
}

// Remove takes the barrier down, releasing every waiter.
func (b *Barrier) Remove(ctx context.Context) error { return deleteNode(ctx, b.c, b.path) }

// Wait blocks until the barrier is down (returning at once if it is), ctx ends, or the
// session ends.
func (b *Barrier) Wait(ctx context.Context) error {
	for {
		var up bool
		var events <-chan zk.Event
		err := retry(ctx, func() (err error) {
			up, _, events, err = b.c.ExistsW(ctx, b.path)
			return err
		})
		if err != nil {
			return fmt.Errorf("recipe: barrier %s: %w", b.path, err)
		}
		if !up {
			// The exists watch stays set on the absent node; it fires, unread, if the
			// barrier is ever set again.
			return nil
		}
		if _, err := waitEvent(ctx, b.opts, b.path, events); err != nil {
			return err
		}
	}
}

// DoubleBarrier lets a fixed number of participants start and finish a computation together
// (ZooKeeper's double barrier recipe, Curator's DistributedDoubleBarrier).
//
// Enter creates the participant's ephemeral node in the directory, with an exists watch set
// beforehand on dir/ready; the participant that brings the count to n creates ready, which
// wakes all the others at once. Leave follows the recipe's trick to avoid a herd: the
// participant with the lowest node waits for the highest one to go, and every other
// participant deletes its node and waits for the lowest one, so each deletion wakes at most
// one waiter until the lowest is alone and leaves last, taking ready down for the next round.
type DoubleBarrier struct {
	c    *zk.Conn
	dir  string
	n    int
	opts *options
	name string // this participant's node name
}

const readyNode = "ready"

// NewDoubleBarrier returns a participant in the double barrier at dir for n participants.
// Options: WithData, WithACL.
func NewDoubleBarrier(c *zk.Conn, dir string, n int, opts ...Option) *DoubleBarrier {
	o := newOptions(opts)
	return &DoubleBarrier{c: c, dir: dir, n: n, opts: &o, name: protectedPrefix + newGUID() + "-p"}
}

// Enter blocks until n participants have entered. If it fails, the participant's node is
// removed.
func (b *DoubleBarrier) Enter(ctx context.Context) (err error) {
	ready := join(b.dir, readyNode)
	var isReady bool
	var events <-chan zk.Event
	if err := ensureDir(ctx, b.c, b.dir, b.opts.acl); err != nil {
		return err
	}
	// Watch ready before joining, so its creation cannot be missed.
	err = retry(ctx, func() (err error) {
		isReady, _, events, err = b.c.ExistsW(ctx, ready)
		return err
	})
	if err != nil {
		return fmt.Errorf("recipe: double barrier %s: %w", b.dir, err)
	}
	own := join(b.dir, b.name)
	if err := createOwnEphemeral(ctx, b.c, own, b.opts.data, b.opts.acl); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			cctx, cancel := cleanupContext(ctx, b.c)
			defer cancel()
			deleteNode(cctx, b.c, own)
		}
	}()
	if isReady {
		return nil
	}
	ch, err := children(ctx, b.c, b.dir)
	if err != nil {
		return err
	}
	if len(participants(ch)) >= b.n {
		err := retry(ctx, func() error {
			_, err := b.c.Create(ctx, ready, nil, b.opts.acl, zk.ModePersistent)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("recipe: double barrier %s: %w", b.dir, err)
		}
		return nil
	}
	_, err = waitEvent(ctx, b.opts, ready, events)
	return err
}

// Leave blocks until every participant has left.
func (b *DoubleBarrier) Leave(ctx context.Context) error {
	own := join(b.dir, b.name)
	for {
		ch, err := children(ctx, b.c, b.dir)
		if err != nil {
			return err
		}
		ps := participants(ch)
		if len(ps) == 0 {
			return nil
		}
		mine := slices.Contains(ps, b.name)
		if len(ps) == 1 && mine {
			// The last one out takes ready down first, so that no one who saw the barrier
			// empty enters the next round and finds it still open.
			if err := deleteNode(ctx, b.c, join(b.dir, readyNode)); err != nil {
				return err
			}
			return deleteNode(ctx, b.c, own)
		}
		var watched string
		if mine && ps[0] == b.name {
			watched = join(b.dir, ps[len(ps)-1])
		} else {
			if mine {
				if err := deleteNode(ctx, b.c, own); err != nil {
					return err
				}
			}
			watched = join(b.dir, ps[0])
		}
		var events <-chan zk.Event
		err = retry(ctx, func() (err error) {
			_, _, events, err = b.c.GetW(ctx, watched)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("recipe: double barrier %s: %w", b.dir, err)
		}
		if _, err := waitEvent(ctx, b.opts, watched, events); err != nil {
			return err
		}
	}
}

// participants returns the participant nodes among a double barrier's children, sorted.
func participants(children []string) []string {
	var ps []string
	for _, c := range children {
		if c != readyNode {
			ps = append(ps, c)
		}
	}
	slices.Sort(ps)
	return ps
}

// createOwnEphemeral creates an ephemeral node with a fixed name. After a lost reply, a
// node that exists and belongs to this session is the one this call created.
func createOwnEphemeral(ctx context.Context, c *zk.Conn, p string, data []byte, acl []zk.ACL) error {
	for {
		_, err := create(ctx, c, p, data, acl, zk.ModeEphemeral)
		if err == nil {
			return nil
		}
		if isCtxErr(ctx, err) {
			// The create may still be applied: remove it if so.
			cctx, cancel := cleanupContext(ctx, c)
			defer cancel()
			if ok, st, serr := c.Exists(cctx, p); serr == nil && ok && st.EphemeralOwner == c.SessionID() {
				deleteNode(cctx, c, p)
			}
			return err
		}
		if errors.Is(err, zk.ErrConnectionLoss) || errors.Is(err, zk.ErrNodeExists) {
			var ok bool
			var st *zk.Stat
			serr := retry(ctx, func() (err error) {
				ok, st, err = c.Exists(ctx, p)
				return err
			})
			if serr != nil {
				return fmt.Errorf("recipe: create %s: %w", p, serr)
			}
			if ok && st.EphemeralOwner == c.SessionID() {
				return nil
			}
			if ok {
				return fmt.Errorf("recipe: create %s: %w", p, zk.ErrNodeExists)
			}
			continue
		}
		return fmt.Errorf("recipe: create %s: %w", p, err)
	}
}
