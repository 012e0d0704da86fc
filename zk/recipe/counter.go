package recipe

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/zkd-io/zkd/zk"
)

// Counter is a shared integer in a node (Curator's SharedCount, kazoo's Counter), stored as
// decimal text. Updates are compare-and-set on the node's version, so concurrent Adds never
// lose an increment: a writer that lost the race reads again and retries.
//
// If the connection is lost while an update is in flight, the counter reads the node back:
// an unchanged version means the update was not applied and is retried; a version that
// moved to a value other than the one written means another writer won and the update is
// retried on the new value; anything else cannot be told apart from a concurrent writer's
// identical update and is reported as ErrIndeterminate.
type Counter struct {
	c    *zk.Conn
	path string
	opts *options
}

// NewCounter returns the counter at p; a missing node counts as 0. Options: WithACL.
func NewCounter(c *zk.Conn, p string, opts ...Option) *Counter {
	o := newOptions(opts)
	return &Counter{c: c, path: p, opts: &o}
}

// Get returns the value and the node's version (-1 if it does not exist), for TrySet.
func (k *Counter) Get(ctx context.Context) (value int64, version int32, err error) {
	var data []byte
	var st *zk.Stat
	err = retry(ctx, func() (err error) {
		data, st, err = k.c.Get(ctx, k.path)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return 0, -1, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("recipe: counter %s: %w", k.path, err)
	}
	v, err := parseCount(data)
	if err != nil {
		return 0, 0, fmt.Errorf("recipe: counter %s: %w", k.path, err)
	}
	return v, st.Version, nil
}

func parseCount(data []byte) (int64, error) {
	s := strings.TrimSpace(string(data))
	if s == "" {
		return 0, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// TrySet sets the value if the node's version is still version (from Get; -1: the node does
// not exist yet), and reports whether it did.
func (k *Counter) TrySet(ctx context.Context, value int64, version int32) (bool, error) {
	data := []byte(strconv.FormatInt(value, 10))
	var err error
	if version < 0 {
		_, err = create(ctx, k.c, k.path, data, k.opts.acl, zk.ModePersistent)
	} else {
		_, err = k.c.Set(ctx, k.path, data, version)
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrNoNode):
		return false, nil
	case errors.Is(err, zk.ErrConnectionLoss):
		v, ver, gerr := k.Get(ctx)
		if gerr != nil {
			return false, gerr
		}
		if ver == version || (ver == version+1 && v != value) {
			return false, nil // not applied: the caller retries on the value it reads
		}
		return false, fmt.Errorf("recipe: counter %s: %w", k.path, ErrIndeterminate)
	}
	return false, fmt.Errorf("recipe: counter %s: %w", k.path, err)
}

// Add adds delta and returns the new value.
func (k *Counter) Add(ctx context.Context, delta int64) (int64, error) {
	for {
		v, ver, err := k.Get(ctx)
		if err != nil {
			return 0, err
		}
		ok, err := k.TrySet(ctx, v+delta, ver)
		if err != nil {
			return 0, err
		}
		if ok {
			return v + delta, nil
		}
	}
}

// Set sets the value unconditionally.
func (k *Counter) Set(ctx context.Context, value int64) error {
	data := []byte(strconv.FormatInt(value, 10))
	for {
		err := retry(ctx, func() error {
			_, err := k.c.Set(ctx, k.path, data, zk.AnyVersion)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			_, err = create(ctx, k.c, k.path, data, k.opts.acl, zk.ModePersistent)
			if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrConnectionLoss) {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("recipe: counter %s: %w", k.path, err)
		}
		return nil
	}
}
