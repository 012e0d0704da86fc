package recipe

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkd-io/zkd/zk"
)

var (
	// ErrLocked is returned by Lock on a Mutex (or RWMutex side, Semaphore) that already
	// holds, or is acquiring, its lock: each value is one participant and does not count
	// re-entries.
	ErrLocked = errors.New("recipe: already locked by this participant")
	// ErrNotLocked is returned by Unlock when the value holds no lock.
	ErrNotLocked = errors.New("recipe: not locked")
	// ErrNodeLost means that the node a participant created was deleted by someone else
	// (an administrator, or a revoker that did not wait for consent) while its session lives.
	ErrNodeLost = errors.New("recipe: own node was deleted")
	// ErrNoLeader is returned by Election.Leader when no leader has acknowledged.
	ErrNoLeader = errors.New("recipe: no leader")
	// ErrIndeterminate means that the connection was lost while an update was in flight and
	// the update may or may not have been applied. It wraps zk.ErrConnectionLoss.
	ErrIndeterminate = fmt.Errorf("recipe: update may or may not have been applied: %w", zk.ErrConnectionLoss)
)

// Option configures a recipe. Each recipe documents the options it uses and ignores the rest.
type Option func(*options)

type options struct {
	data     []byte
	acl      []zk.ACL
	onRevoke func()
	hook     func(hookEvent) // tests: observe waits and watch events
}

// WithData sets the data of the nodes a participant creates (lock, semaphore, election and
// membership nodes), e.g. to say who holds a lock.
func WithData(data []byte) Option { return func(o *options) { o.data = data } }

// WithACL sets the ACL of the nodes a recipe creates, its directories included. The default
// is zk.OpenACL().
func WithACL(acl []zk.ACL) Option { return func(o *options) { o.acl = acl } }

// WithRevocation makes a Mutex's or RWMutex's locks revocable, as in ZooKeeper's recipe for
// revocable shared locks: from the moment its node exists until it is deleted, the
// participant watches the node's data, and onRevoke runs (once per lock, on a goroutine of the
// recipe) when someone writes "unlock" to it with Revoke. Revocation needs consent: onRevoke
// decides whether and when to Unlock.
func WithRevocation(onRevoke func()) Option { return func(o *options) { o.onRevoke = onRevoke } }

func newOptions(opts []Option) options {
	o := options{acl: zk.OpenACL()}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// hookKind says what a hookEvent reports.
type hookKind int

const (
	// hookWaiting: a participant set a watch and is about to block on it.
	hookWaiting hookKind = iota
	// hookWoken: a blocked participant received a watch event.
	hookWoken
	// hookListed: a queue consumer listed the queue.
	hookListed
	// hookRecovered: a create whose reply was lost turned out to be applied (found by guid).
	hookRecovered
)

type hookEvent struct {
	kind hookKind
	path string   // the watched node
	ev   zk.Event // for hookWoken
}

func (o *options) emit(h hookEvent) {
	if o.hook != nil {
		o.hook(h)
	}
}

// withHook is for tests: it observes every wait and every watch event of a participant.
func withHook(f func(hookEvent)) Option { return func(o *options) { o.hook = f } }

// Names of protected nodes: "_c_" + 32 hex digits of guid + "-" + kind + sequence.
const (
	protectedPrefix = "_c_"
	guidLen         = 32
	seqLen          = 10 // the server's %010d sequence suffix
)

func newGUID() string {
	var b [guidLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// seqNode is a parsed protected sequential node.
type seqNode struct {
	name string
	guid string
	kind string
	seq  int64
}

// parseSeqNode parses a protected sequential name; ok is false for other names.
func parseSeqNode(name string) (seqNode, bool) {
	rest, ok := strings.CutPrefix(name, protectedPrefix)
	if !ok || len(rest) < guidLen+1+seqLen || rest[guidLen] != '-' {
		return seqNode{}, false
	}
	seq, err := strconv.ParseInt(rest[len(rest)-seqLen:], 10, 64)
	if err != nil {
		return seqNode{}, false
	}
	return seqNode{name: name, guid: rest[:guidLen], kind: rest[guidLen+1 : len(rest)-seqLen], seq: seq}, true
}

// contenders returns the children of the given kinds in sequence order.
func contenders(children []string, kinds ...string) []seqNode {
	var ns []seqNode
	for _, c := range children {
		if n, ok := parseSeqNode(c); ok && slices.Contains(kinds, n.kind) {
			ns = append(ns, n)
		}
	}
	slices.SortFunc(ns, func(a, b seqNode) int { return cmp.Compare(a.seq, b.seq) })
	return ns
}

func indexOf(ns []seqNode, name string) int {
	return slices.IndexFunc(ns, func(n seqNode) bool { return n.name == name })
}

// join makes a child path; dir "/" has no trailing slash to repeat.
func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// isCtxErr reports whether err is ctx's own ending: the request was abandoned, not refused.
func isCtxErr(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// retry runs op until it returns anything but zk.ErrConnectionLoss. Reads, deletes and other
// idempotent operations can simply be reissued: the client holds requests issued while it is
// disconnected until it reconnects (for at most a session timeout, then fails them at once),
// so the backoff only keeps a client that cannot reach any server from spinning.
func retry(ctx context.Context, op func() error) error {
	backoff := 10 * time.Millisecond
	for {
		err := op()
		if err == nil || !errors.Is(err, zk.ErrConnectionLoss) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (after %w)", ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// cleanupContext bounds the removal of a node after the caller's context ended. The removal
// is retried across connection losses; once the client has failed to reach any server for
// longer than the session timeout, the server has expired the session and removed the
// ephemeral node anyway, so waiting longer is pointless.
func cleanupContext(ctx context.Context, c *zk.Conn) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 2*c.SessionTimeout()+time.Second)
}

// ensureDir creates dir and its missing ancestors as persistent nodes.
func ensureDir(ctx context.Context, c *zk.Conn, dir string, acl []zk.ACL) error {
	if dir == "/" || dir == "" {
		return nil
	}
	p := ""
	for _, part := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		p += "/" + part
		err := retry(ctx, func() error {
			_, err := c.Create(ctx, p, nil, acl, zk.ModePersistent)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("recipe: create %s: %w", p, err)
		}
	}
	return nil
}

// create creates a node, making its directory first if it is missing.
func create(ctx context.Context, c *zk.Conn, p string, data []byte, acl []zk.ACL, mode zk.CreateMode) (string, error) {
	for {
		got, err := c.Create(ctx, p, data, acl, mode)
		if errors.Is(err, zk.ErrNoNode) {
			if err := ensureDir(ctx, c, path.Dir(p), acl); err != nil {
				return "", err
			}
			continue
		}
		return got, err
	}
}

// createProtected creates dir/_c_<guid>-<kind>, sequential or not as mode says, and returns
// its path. A create whose reply is lost (ErrConnectionLoss) or abandoned (the context ended)
// may have been applied all the same: the guid finds that node, which is then kept (lost
// reply) or deleted (abandoned), so no orphan is left to block a lock forever.
func createProtected(ctx context.Context, c *zk.Conn, o *options, dir, kind string, data []byte, mode zk.CreateMode) (string, error) {
	guid := newGUID()
	p := join(dir, protectedPrefix+guid+"-"+kind)
	for {
		got, err := create(ctx, c, p, data, o.acl, mode)
		switch {
		case err == nil:
			return got, nil
		case isCtxErr(ctx, err):
			cctx, cancel := cleanupContext(ctx, c)
			defer cancel()
			if found, ferr := findGUID(cctx, c, dir, guid); ferr == nil && found != "" {
				deleteNode(cctx, c, found)
			}
			return "", err
		case errors.Is(err, zk.ErrConnectionLoss):
			found, ferr := findGUID(ctx, c, dir, guid)
			if ferr != nil {
				return "", ferr
			}
			if found != "" {
				o.emit(hookEvent{kind: hookRecovered, path: found})
				return found, nil
			}
		default:
			return "", fmt.Errorf("recipe: create %s: %w", p, err)
		}
	}
}

// findGUID returns the path of dir's child created with guid, or "".
func findGUID(ctx context.Context, c *zk.Conn, dir, guid string) (string, error) {
	var children []string
	err := retry(ctx, func() (err error) {
		children, _, err = c.Children(ctx, dir)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("recipe: list %s: %w", dir, err)
	}
	prefix := protectedPrefix + guid + "-"
	for _, ch := range children {
		if strings.HasPrefix(ch, prefix) {
			return join(dir, ch), nil
		}
	}
	return "", nil
}

// deleteNode deletes p, retrying across connection losses; a node already gone is not an
// error.
func deleteNode(ctx context.Context, c *zk.Conn, p string) error {
	err := retry(ctx, func() error { return c.Delete(ctx, p, zk.AnyVersion) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("recipe: delete %s: %w", p, err)
	}
	return nil
}

// children lists dir, retrying across connection losses; a missing dir has no children.
func children(ctx context.Context, c *zk.Conn, dir string) ([]string, error) {
	var ch []string
	err := retry(ctx, func() (err error) {
		ch, _, err = c.Children(ctx, dir)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("recipe: list %s: %w", dir, err)
	}
	return ch, nil
}

// waitEvent blocks until the watch fires or ctx ends. A watch ended by the session
// (zk.EventNotWatching) is an error wrapping the session's fate (zk.ErrSessionExpired,
// zk.ErrClosed).
func waitEvent(ctx context.Context, o *options, watched string, ch <-chan zk.Event) (zk.Event, error) {
	o.emit(hookEvent{kind: hookWaiting, path: watched})
	select {
	case ev := <-ch:
		o.emit(hookEvent{kind: hookWoken, path: watched, ev: ev})
		if ev.Type == zk.EventNotWatching {
			return ev, fmt.Errorf("recipe: watching %s: %w", watched, ev.Err)
		}
		return ev, nil
	case <-ctx.Done():
		return zk.Event{}, ctx.Err()
	}
}

// watchNode follows a node the client owns, on its own goroutine, until the node is deleted
// or the session ends: onData sees every value it has, gone runs once at the end with nil
// (deleted) or the error that ended the watch. The goroutine needs no stopping: deleting the
// node, closing the client or losing the session ends it.
func watchNode(c *zk.Conn, p string, onData func([]byte), gone func(error)) {
	go func() {
		ctx := context.Background()
		for {
			var data []byte
			var ch <-chan zk.Event
			err := retry(ctx, func() (err error) {
				data, _, ch, err = c.GetW(ctx, p)
				return err
			})
			if errors.Is(err, zk.ErrNoNode) {
				gone(nil)
				return
			}
			if err != nil {
				gone(err)
				return
			}
			if onData != nil {
				onData(data)
			}
			ev := <-ch
			switch ev.Type {
			case zk.EventNodeDeleted:
				gone(nil)
				return
			case zk.EventNotWatching:
				gone(ev.Err)
				return
			}
		}
	}()
}
