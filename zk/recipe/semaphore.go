package recipe

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"

	"github.com/zkd-io/zkd/zk"
)

// Semaphore is a distributed counting semaphore: at most n participants hold it at once
// (Curator's InterProcessSemaphoreV2, kazoo's Semaphore). Each Semaphore value is one
// participant.
//
// Holders own ephemeral lease nodes in dir/leases. To take a lease, a participant first
// takes a Mutex at dir/locks, creates its lease node, and holds the semaphore if there are at
// most n leases; otherwise it watches the lease directory, still holding the mutex, until a
// lease goes. The mutex keeps the waiting herd-free: only its holder watches the leases, so a
// release wakes one participant, and the others wait in the mutex's queue, each watching its
// predecessor. Every participant must use the same n.
type Semaphore struct {
	c    *zk.Conn
	dir  string
	n    int
	opts *options
	lock *Mutex

	mu    sync.Mutex
	state int
	lease string
}

// NewSemaphore returns a participant in the semaphore at dir that admits n holders. Options:
// WithData (the lease node's data), WithACL.
func NewSemaphore(c *zk.Conn, dir string, n int, opts ...Option) *Semaphore {
	o := newOptions(opts)
	lo := o
	lo.data = nil
	return &Semaphore{c: c, dir: dir, n: n, opts: &o, lock: &Mutex{k: contender{
		c: c, dir: join(dir, "locks"), kind: "lock-", kinds: []string{"lock-"}, pred: prevNode, opts: &lo}}}
}

// Lock blocks until the participant holds one of the n leases, ctx ends or the session ends.
// On failure its nodes are removed.
func (s *Semaphore) Lock(ctx context.Context) error {
	if err := s.begin(); err != nil {
		return err
	}
	lease, err := s.acquire(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.state = idle
		return err
	}
	s.state, s.lease = held, lease
	return nil
}

func (s *Semaphore) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n < 1 {
		return fmt.Errorf("recipe: semaphore %s admits %d holders", s.dir, s.n)
	}
	if s.state != idle {
		return ErrLocked
	}
	s.state = acquiring
	return nil
}

func (s *Semaphore) acquire(ctx context.Context) (lease string, err error) {
	if err := s.lock.Lock(ctx); err != nil {
		return "", err
	}
	defer func() {
		cctx, cancel := cleanupContext(ctx, s.c)
		defer cancel()
		uerr := s.lock.Unlock(cctx)
		if err == nil && uerr != nil && !errors.Is(uerr, zk.ErrSessionExpired) {
			err = uerr
		}
	}()
	leases := join(s.dir, "leases")
	node, err := createProtected(ctx, s.c, s.opts, leases, "lease-", s.opts.data, zk.ModeEphemeralSequential)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			cctx, cancel := cleanupContext(ctx, s.c)
			defer cancel()
			deleteNode(cctx, s.c, node)
		}
	}()
	name := path.Base(node)
	for {
		var ch []string
		var events <-chan zk.Event
		err := retry(ctx, func() (err error) {
			ch, _, events, err = s.c.ChildrenW(ctx, leases)
			return err
		})
		if err != nil {
			return "", fmt.Errorf("recipe: list %s: %w", leases, err)
		}
		ns := contenders(ch, "lease-")
		if indexOf(ns, name) < 0 {
			return "", fmt.Errorf("recipe: %s: %w", node, ErrNodeLost)
		}
		if len(ns) <= s.n {
			return node, nil
		}
		if _, err := waitEvent(ctx, s.opts, leases, events); err != nil {
			return "", err
		}
	}
}

// TryLock takes a lease only if one is free and no one else is acquiring.
func (s *Semaphore) TryLock(ctx context.Context) (bool, error) {
	if err := s.begin(); err != nil {
		return false, err
	}
	ok, lease, err := s.try(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ok {
		s.state = idle
		return false, err
	}
	s.state, s.lease = held, lease
	return true, nil
}

func (s *Semaphore) try(ctx context.Context) (bool, string, error) {
	if ok, err := s.lock.TryLock(ctx); !ok {
		return false, "", err
	}
	defer func() {
		cctx, cancel := cleanupContext(ctx, s.c)
		defer cancel()
		s.lock.Unlock(cctx)
	}()
	leases := join(s.dir, "leases")
	ch, err := children(ctx, s.c, leases)
	if err != nil {
		return false, "", err
	}
	if len(contenders(ch, "lease-")) >= s.n {
		return false, "", nil
	}
	lease, err := createProtected(ctx, s.c, s.opts, leases, "lease-", s.opts.data, zk.ModeEphemeralSequential)
	if err != nil {
		return false, "", err
	}
	return true, lease, nil
}

// Unlock gives the lease back.
func (s *Semaphore) Unlock(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != held {
		return ErrNotLocked
	}
	err := deleteNode(ctx, s.c, s.lease)
	if err != nil && isCtxErr(ctx, err) {
		return err
	}
	s.state, s.lease = idle, ""
	return err
}

// Holders returns the paths of the current lease nodes.
func (s *Semaphore) Holders(ctx context.Context) ([]string, error) {
	leases := join(s.dir, "leases")
	ch, err := children(ctx, s.c, leases)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range contenders(ch, "lease-") {
		out = append(out, join(leases, n.name))
	}
	return out, nil
}
