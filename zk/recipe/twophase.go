package recipe

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/zkd-io/zkd/zk"
)

// Outcome is the decision of a two-phase commit.
type Outcome int

const (
	// Undecided: some site has not voted and none has voted abort.
	Undecided Outcome = iota
	// Committed: every site voted commit.
	Committed
	// Aborted: at least one site voted abort.
	Aborted
)

func (o Outcome) String() string {
	switch o {
	case Committed:
		return "committed"
	case Aborted:
		return "aborted"
	}
	return "undecided"
}

const (
	voteCommit = "commit"
	voteAbort  = "abort"
)

// Tx is a two-phase commit (ZooKeeper's two-phased commit recipe). The coordinator creates
// the transaction node, holding the transaction, and one empty child per site, in one multi.
// Each site reads the transaction, decides, and votes by writing "commit" or "abort" to its
// child, once (the write requires the child's first version, so a vote is never changed).
// Every party watches the children and decides on its own as soon as the votes allow: abort
// at the first abort vote, commit when all sites have voted commit. The coordinator can
// force an abort (a timeout, say) with Abort, which votes abort for every site that has not
// voted.
type Tx struct {
	c    *zk.Conn
	path string
	opts *options
}

// NewTx returns a handle on the transaction at p, for the coordinator or a site. Options:
// WithACL.
func NewTx(c *zk.Conn, p string, opts ...Option) *Tx {
	o := newOptions(opts)
	return &Tx{c: c, path: p, opts: &o}
}

// Begin creates the transaction with its data and one child per site, atomically. It fails
// with an error wrapping zk.ErrNodeExists if the transaction exists already.
func (t *Tx) Begin(ctx context.Context, data []byte, sites []string) error {
	if len(sites) == 0 {
		return fmt.Errorf("recipe: transaction %s has no sites", t.path)
	}
	for {
		txn := t.c.Txn().Create(t.path, data, t.opts.acl, zk.ModePersistent)
		for _, s := range sites {
			txn.Create(join(t.path, s), nil, t.opts.acl, zk.ModePersistent)
		}
		_, err := txn.Commit(ctx)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if err := ensureDir(ctx, t.c, parentDir(t.path), t.opts.acl); err != nil {
				return err
			}
		case errors.Is(err, zk.ErrConnectionLoss):
			// Applied, if the transaction node is there with exactly these sites.
			got, _, gerr := t.read(ctx)
			if gerr == nil && slices.Equal(sortedNames(got), sortedNames(sites)) {
				return nil
			}
			if gerr != nil && !errors.Is(gerr, zk.ErrNoNode) {
				return gerr
			}
			if gerr == nil {
				return fmt.Errorf("recipe: begin %s: %w", t.path, zk.ErrNodeExists)
			}
		default:
			return fmt.Errorf("recipe: begin %s: %w", t.path, err)
		}
	}
}

func sortedNames(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func parentDir(p string) string {
	i := len(p) - 1
	for i > 0 && p[i] != '/' {
		i--
	}
	if i == 0 {
		return "/"
	}
	return p[:i]
}

// Data returns the transaction's data, for a site to decide on.
func (t *Tx) Data(ctx context.Context) ([]byte, error) {
	var data []byte
	err := retry(ctx, func() (err error) {
		data, _, err = t.c.Get(ctx, t.path)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("recipe: transaction %s: %w", t.path, err)
	}
	return data, nil
}

// Sites returns the sites of the transaction.
func (t *Tx) Sites(ctx context.Context) ([]string, error) {
	sites, _, err := t.read(ctx)
	return sites, err
}

func (t *Tx) read(ctx context.Context) ([]string, *zk.Stat, error) {
	var ch []string
	var st *zk.Stat
	err := retry(ctx, func() (err error) {
		ch, st, err = t.c.Children(ctx, t.path)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("recipe: transaction %s: %w", t.path, err)
	}
	return ch, st, nil
}

// Vote records site's vote. A site votes once: voting again fails with an error wrapping
// zk.ErrBadVersion, unless it repeats the same vote.
func (t *Tx) Vote(ctx context.Context, site string, commit bool) error {
	v := voteAbort
	if commit {
		v = voteCommit
	}
	return t.vote(ctx, site, v)
}

func (t *Tx) vote(ctx context.Context, site, v string) error {
	node := join(t.path, site)
	err := retry(ctx, func() error {
		_, err := t.c.Set(ctx, node, []byte(v), 0)
		if errors.Is(err, zk.ErrBadVersion) {
			// Voted already: our own retry after a lost reply, or a second vote.
			data, _, gerr := t.c.Get(ctx, node)
			if gerr != nil {
				return gerr
			}
			if string(data) == v {
				return nil
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("recipe: vote %s: %w", node, err)
	}
	return nil
}

// Abort votes abort for every site that has not voted yet, deciding the transaction unless
// every site has voted commit already.
func (t *Tx) Abort(ctx context.Context) error {
	sites, _, err := t.read(ctx)
	if err != nil {
		return err
	}
	for _, s := range sites {
		if err := t.vote(ctx, s, voteAbort); err != nil && !errors.Is(err, zk.ErrBadVersion) {
			return err
		}
	}
	return nil
}

// Outcome returns the decision as the votes stand, without waiting.
func (t *Tx) Outcome(ctx context.Context) (Outcome, error) {
	o, _, err := t.poll(ctx, false)
	return o, err
}

// Wait blocks until the transaction is decided: at the first abort vote, or when every site
// has voted commit.
func (t *Tx) Wait(ctx context.Context) (Outcome, error) {
	for {
		o, watches, err := t.poll(ctx, true)
		if err != nil || o != Undecided {
			return o, err
		}
		// Wait for any undecided site's vote: one select over all their watches, so no
		// goroutine is left behind when ctx ends.
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())}}
		for _, w := range watches {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w)})
		}
		t.opts.emit(hookEvent{kind: hookWaiting, path: t.path})
		i, v, _ := reflect.Select(cases)
		if i == 0 {
			return Undecided, ctx.Err()
		}
		ev := v.Interface().(zk.Event)
		t.opts.emit(hookEvent{kind: hookWoken, path: t.path, ev: ev})
		if ev.Type == zk.EventNotWatching {
			return Undecided, fmt.Errorf("recipe: transaction %s: %w", t.path, ev.Err)
		}
	}
}

// poll reads every vote (with watches on the undecided ones if watch is set).
func (t *Tx) poll(ctx context.Context, watch bool) (Outcome, []<-chan zk.Event, error) {
	sites, _, err := t.read(ctx)
	if err != nil {
		return Undecided, nil, err
	}
	var watches []<-chan zk.Event
	undecided := false
	for _, s := range sites {
		node := join(t.path, s)
		var data []byte
		var events <-chan zk.Event
		err := retry(ctx, func() (err error) {
			if watch {
				data, _, events, err = t.c.GetW(ctx, node)
			} else {
				data, _, err = t.c.Get(ctx, node)
			}
			return err
		})
		if err != nil {
			return Undecided, nil, fmt.Errorf("recipe: transaction %s: %w", t.path, err)
		}
		switch string(data) {
		case voteAbort:
			return Aborted, nil, nil
		case voteCommit:
		default:
			undecided = true
			watches = append(watches, events)
		}
	}
	if undecided {
		return Undecided, watches, nil
	}
	return Committed, nil, nil
}

// Delete removes the transaction once it is decided and every party has read the outcome.
func (t *Tx) Delete(ctx context.Context) error {
	sites, _, err := t.read(ctx)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, s := range sites {
		if err := deleteNode(ctx, t.c, join(t.path, s)); err != nil {
			return err
		}
	}
	return deleteNode(ctx, t.c, t.path)
}
