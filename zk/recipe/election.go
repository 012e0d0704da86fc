package recipe

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/zkd-io/zkd/zk"
)

// Election is one candidate in a leader election (ZooKeeper's leader election recipe,
// Curator's LeaderLatch, etcd's concurrency.Election).
//
// Each candidate creates an ephemeral sequential node; the lowest is the leader. A candidate
// that is not watches only the candidate just below it, so a leader's departure wakes one
// candidate, not all (no herd). Being lowest does not mean that the candidate knows it leads
// yet, so, as the recipe suggests, the new leader acknowledges by creating the ephemeral node
// dir/leader naming its candidate node: Leader and Observe report acknowledged leaders only,
// and a new leader waits for its predecessor's acknowledgement to be gone (resigned, or its
// session ended) before it takes over, so there is never more than one acknowledged leader.
//
// Leadership is tied to the candidate's node, so writes can be fenced with it: a Multi that
// includes zk.CheckOp{Path: e.Node(), Version: zk.AnyVersion} succeeds only while the
// candidate still leads. Done reports when leadership ends.
type Election struct {
	k contender
}

// Leader is an acknowledged leader: its candidate node and the data it campaigned with.
type Leader struct {
	Node string
	Data []byte
}

const ackNode = "leader"

// NewElection returns a candidate in the election at dir. Options: WithACL.
func NewElection(c *zk.Conn, dir string, opts ...Option) *Election {
	o := newOptions(opts)
	return &Election{k: contender{c: c, dir: dir, kind: "n_", kinds: []string{"n_"}, pred: prevNode, opts: &o}}
}

// Campaign puts the candidate up with data (shown by Leader) and blocks until it leads, ctx
// ends or the session ends. When it fails, the candidate's node is removed.
func (e *Election) Campaign(ctx context.Context, data []byte) error {
	k := &e.k
	if err := k.begin(); err != nil {
		return err
	}
	// The candidate's node is watched from the start, so Done is ready when Campaign returns.
	node, err := createProtected(ctx, k.c, k.opts, k.dir, k.kind, data, zk.ModeEphemeralSequential)
	if err != nil {
		k.finish(false)
		return err
	}
	gone := make(chan struct{})
	watchNode(k.c, node, nil, func(error) {
		// The node is gone. If it went without Resign (an administrator, say) while the
		// session lives, withdraw the acknowledgement too, so the next leader can start.
		cctx, cancel := cleanupContext(context.Background(), k.c)
		defer cancel()
		e.withdraw(cctx, node)
		close(gone)
	})
	k.mu.Lock()
	k.node, k.gone = node, gone
	k.mu.Unlock()
	if err := k.wait(ctx, node, false); err != nil {
		k.abandon(ctx, node)
		return err
	}
	if err := e.acknowledge(ctx, node); err != nil {
		cctx, cancel := cleanupContext(ctx, k.c)
		defer cancel()
		e.withdraw(cctx, node)
		k.abandon(ctx, node)
		return err
	}
	k.finish(true)
	return nil
}

// acknowledge creates dir/leader naming node, once any previous acknowledgement is gone.
func (e *Election) acknowledge(ctx context.Context, node string) error {
	c, ack, name := e.k.c, join(e.k.dir, ackNode), path.Base(node)
	for {
		_, err := c.Create(ctx, ack, []byte(name), e.k.opts.acl, zk.ModeEphemeral)
		if err == nil {
			return nil
		}
		if !errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, zk.ErrConnectionLoss) {
			return fmt.Errorf("recipe: acknowledge %s: %w", ack, err)
		}
		var data []byte
		var events <-chan zk.Event
		err = retry(ctx, func() (err error) {
			data, _, events, err = c.GetW(ctx, ack)
			return err
		})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue
		case err != nil:
			return fmt.Errorf("recipe: acknowledge %s: %w", ack, err)
		case string(data) == name:
			return nil // our create, whose reply was lost
		}
		if _, err := waitEvent(ctx, e.k.opts, ack, events); err != nil {
			return err
		}
	}
}

// withdraw deletes dir/leader if it names node.
func (e *Election) withdraw(ctx context.Context, node string) error {
	c, ack := e.k.c, join(e.k.dir, ackNode)
	var data []byte
	var st *zk.Stat
	err := retry(ctx, func() (err error) {
		data, st, err = c.Get(ctx, ack)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) || (err == nil && string(data) != path.Base(node)) {
		return nil
	}
	if err == nil {
		err = retry(ctx, func() error { return c.Delete(ctx, ack, st.Version) })
	}
	if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
		return fmt.Errorf("recipe: withdraw %s: %w", ack, err)
	}
	return nil
}

// Resign gives leadership up (or withdraws a candidacy that has not won): the
// acknowledgement and the candidate's node are deleted together, in one multi.
func (e *Election) Resign(ctx context.Context) error {
	k := &e.k
	k.mu.Lock()
	if k.state != held {
		k.mu.Unlock()
		return ErrNotLocked
	}
	node := k.node
	k.mu.Unlock()
	c, ack := k.c, join(k.dir, ackNode)
	var err error
	for {
		var data []byte
		var st *zk.Stat
		err = retry(ctx, func() (err error) {
			data, st, err = c.Get(ctx, ack)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			break
		}
		if err != nil || string(data) != path.Base(node) {
			err = deleteNode(ctx, c, node)
			break
		}
		err = retry(ctx, func() error {
			_, err := c.Txn().Delete(ack, st.Version).Delete(node, zk.AnyVersion).Commit(ctx)
			return err
		})
		if !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
			break
		}
		// A retry after a lost reply, or the ack changed: look again.
	}
	if err != nil && isCtxErr(ctx, err) {
		return err
	}
	k.finish(false)
	if err != nil {
		return fmt.Errorf("recipe: resign %s: %w", node, err)
	}
	return nil
}

// Node is the candidate's node while it campaigns or leads, or "".
func (e *Election) Node() string { return e.k.current() }

// Done is closed when the candidacy of the last Campaign ends: after Resign, when its node is
// deleted, or when the session ends. A leader must stop acting as one then. It is nil before
// the first Campaign.
func (e *Election) Done() <-chan struct{} {
	e.k.mu.Lock()
	defer e.k.mu.Unlock()
	return e.k.gone
}

// Leader returns the acknowledged leader, or ErrNoLeader.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	c, ack := e.k.c, join(e.k.dir, ackNode)
	for {
		var name, data []byte
		err := retry(ctx, func() (err error) {
			name, _, err = c.Get(ctx, ack)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			return Leader{}, ErrNoLeader
		}
		if err != nil {
			return Leader{}, fmt.Errorf("recipe: leader %s: %w", e.k.dir, err)
		}
		node := join(e.k.dir, string(name))
		err = retry(ctx, func() (err error) {
			data, _, err = c.Get(ctx, node)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue // the leader left meanwhile
		}
		if err != nil {
			return Leader{}, fmt.Errorf("recipe: leader %s: %w", e.k.dir, err)
		}
		return Leader{Node: node, Data: data}, nil
	}
}

// Candidates returns the candidates' nodes, the presumptive leader first.
func (e *Election) Candidates(ctx context.Context) ([]string, error) { return e.k.list(ctx) }

// Observe reports each newly acknowledged leader, starting with the current one, until ctx
// ends or the session ends; then the channel is closed. Consecutive leaders are always
// different; a vacancy in between is not reported.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	out := make(chan Leader)
	go func() {
		defer close(out)
		c, ack := e.k.c, join(e.k.dir, ackNode)
		last := ""
		for {
			var exists bool
			var events <-chan zk.Event
			err := retry(ctx, func() (err error) {
				exists, _, events, err = c.ExistsW(ctx, ack)
				return err
			})
			if err != nil {
				return
			}
			if exists {
				l, err := e.Leader(ctx)
				if err == nil && l.Node != last {
					select {
					case out <- l:
						last = l.Node
					case <-ctx.Done():
						return
					}
				} else if err != nil && !errors.Is(err, ErrNoLeader) {
					return
				}
			}
			if _, err := waitEvent(ctx, e.k.opts, ack, events); err != nil {
				return
			}
		}
	}()
	return out
}
