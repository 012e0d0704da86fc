package recipe

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/zkd-io/zkd/zk"
)

// Group is a group membership directory (ZooKeeper's group membership recipe, Curator's
// GroupMember): each member is an ephemeral child, so a member that crashes leaves the group
// when its session ends. Members are listed with getChildren, and watched with a child watch
// that is set again with each listing, so no change is missed.
type Group struct {
	c    *zk.Conn
	dir  string
	opts *options
}

// NewGroup returns the group at dir. Options: WithACL.
func NewGroup(c *zk.Conn, dir string, opts ...Option) *Group {
	o := newOptions(opts)
	return &Group{c: c, dir: dir, opts: &o}
}

// Membership is a member's place in a group.
type Membership struct {
	c    *zk.Conn
	node string
}

// Join adds the session to the group as member name (a node name, unique in the group),
// with data. It fails with an error wrapping zk.ErrNodeExists if another session is member
// name. If the reply is lost, the node is recognised as this session's by its owner.
func (g *Group) Join(ctx context.Context, name string, data []byte) (*Membership, error) {
	node := join(g.dir, name)
	if err := createOwnEphemeral(ctx, g.c, node, data, g.opts.acl); err != nil {
		return nil, err
	}
	return &Membership{c: g.c, node: node}, nil
}

// Node is the member's node.
func (m *Membership) Node() string { return m.node }

// Leave removes the member from the group.
func (m *Membership) Leave(ctx context.Context) error { return deleteNode(ctx, m.c, m.node) }

// Update replaces the member's data.
func (m *Membership) Update(ctx context.Context, data []byte) error {
	err := retry(ctx, func() error {
		_, err := m.c.Set(ctx, m.node, data, zk.AnyVersion)
		return err
	})
	if err != nil {
		return fmt.Errorf("recipe: update %s: %w", m.node, err)
	}
	return nil
}

// Members returns the members' names, sorted.
func (g *Group) Members(ctx context.Context) ([]string, error) {
	ch, err := children(ctx, g.c, g.dir)
	slices.Sort(ch)
	return ch, err
}

// MembersW returns the members' names, sorted, and a channel that receives one event at the
// next change of membership (or zk.EventNotWatching when the session ends).
func (g *Group) MembersW(ctx context.Context) ([]string, <-chan zk.Event, error) {
	for {
		var ch []string
		var events <-chan zk.Event
		err := retry(ctx, func() (err error) {
			ch, _, events, err = g.c.ChildrenW(ctx, g.dir)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			if err := ensureDir(ctx, g.c, g.dir, g.opts.acl); err != nil {
				return nil, nil, err
			}
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("recipe: list %s: %w", g.dir, err)
		}
		slices.Sort(ch)
		return ch, events, nil
	}
}

// Watch sends the membership, sorted, now and after every change, until ctx ends or the
// session ends; then the channel is closed. A reader that falls behind gets the latest
// membership, not every intermediate one.
func (g *Group) Watch(ctx context.Context) <-chan []string {
	out := make(chan []string, 1)
	go func() {
		defer close(out)
		var last []string
		first := true
		for {
			ms, events, err := g.MembersW(ctx)
			if err != nil {
				return
			}
			if first || !slices.Equal(ms, last) {
				first = false
				// Replace an unread snapshot with the newer one.
				select {
				case <-out:
				default:
				}
				out <- ms
				last = ms
			}
			if _, err := waitEvent(ctx, g.opts, g.dir, events); err != nil {
				return
			}
		}
	}()
	return out
}
