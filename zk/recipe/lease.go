package recipe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/zkd-io/zkd/zk"
)

// Lease is a time-limited, non-blocking exclusive right (kazoo's NonBlockingLease and
// MultiNonBlockingLease): a holder's name and expiry time are written to a node, and anyone
// may take the lease over once it has expired. Unlike a lock it survives its holder's session
// (a batch job that runs at most once an hour, on any machine), and it trusts the clocks of
// the participants to agree to well within the lease's duration.
//
// TryAcquire is a compare-and-set on the node's version, so two clients that find the lease
// expired at once cannot both take it.
type Lease struct {
	c      *zk.Conn
	paths  []string
	holder string
	opts   *options
	now    func() time.Time
}

// leaseData is the node's content, as JSON.
type leaseData struct {
	Holder string    `json:"holder"`
	Expiry time.Time `json:"expiry"`
}

// NewLease returns a lease at p to be held by holder (a name that identifies the process).
// Options: WithACL.
func NewLease(c *zk.Conn, p, holder string, opts ...Option) *Lease {
	o := newOptions(opts)
	return &Lease{c: c, paths: []string{p}, holder: holder, opts: &o, now: time.Now}
}

// NewMultiLease returns n leases at dir/0 ... dir/n-1, of which TryAcquire takes any one
// (kazoo's MultiNonBlockingLease): at most n holders at a time.
func NewMultiLease(c *zk.Conn, dir string, n int, holder string, opts ...Option) *Lease {
	l := NewLease(c, "", holder, opts...)
	l.paths = nil
	for i := range n {
		l.paths = append(l.paths, join(dir, strconv.Itoa(i)))
	}
	return l
}

// TryAcquire takes the lease for d, or extends it if the holder has it already, and reports
// whether the holder has it now.
func (l *Lease) TryAcquire(ctx context.Context, d time.Duration) (bool, error) {
	// A lease held by us anywhere is extended rather than a second one taken.
	for _, p := range l.paths {
		ld, _, err := l.read(ctx, p)
		if err != nil {
			return false, err
		}
		if ld != nil && ld.Holder == l.holder {
			return l.tryOne(ctx, p, d)
		}
	}
	for _, p := range l.paths {
		ok, err := l.tryOne(ctx, p, d)
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

func (l *Lease) read(ctx context.Context, p string) (*leaseData, *zk.Stat, error) {
	var data []byte
	var st *zk.Stat
	err := retry(ctx, func() (err error) {
		data, st, err = l.c.Get(ctx, p)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("recipe: lease %s: %w", p, err)
	}
	var ld leaseData
	if err := json.Unmarshal(data, &ld); err != nil {
		return &leaseData{}, st, nil // unreadable: treated as expired
	}
	return &ld, st, nil
}

func (l *Lease) tryOne(ctx context.Context, p string, d time.Duration) (bool, error) {
	for {
		ld, st, err := l.read(ctx, p)
		if err != nil {
			return false, err
		}
		now := l.now()
		if ld != nil && ld.Holder != l.holder && now.Before(ld.Expiry) {
			return false, nil
		}
		data, err := json.Marshal(leaseData{Holder: l.holder, Expiry: now.Add(d)})
		if err != nil {
			return false, err
		}
		if ld == nil {
			_, err = create(ctx, l.c, p, data, l.opts.acl, zk.ModePersistent)
		} else {
			_, err = l.c.Set(ctx, p, data, st.Version)
		}
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrBadVersion),
			errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrConnectionLoss):
			// Someone else moved first, or our reply was lost: look again; a lease that
			// names us is ours.
			continue
		default:
			return false, fmt.Errorf("recipe: lease %s: %w", p, err)
		}
	}
}

// Release gives the lease up early, if the holder has it.
func (l *Lease) Release(ctx context.Context) error {
	for _, p := range l.paths {
		ld, st, err := l.read(ctx, p)
		if err != nil {
			return err
		}
		if ld == nil || ld.Holder != l.holder {
			continue
		}
		err = retry(ctx, func() error { return l.c.Delete(ctx, p, st.Version) })
		if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
			return fmt.Errorf("recipe: lease %s: %w", p, err)
		}
	}
	return nil
}
