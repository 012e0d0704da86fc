package zk

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// Every operation is one blocking method, which takes a context and returns when the reply
// arrives or the context ends, written as a spec for do, so that chroot, encoding, waiting,
// errors and watches are handled in one place (AddAuth, whose reply comes through the
// session's credentials, shares do's waiting, await). Go pipelines them.
//
// Errors are *OpError values wrapping a Code (errors.Is(err, ErrNoNode)), ErrClosed, or the
// context's error. When a context ends before the reply, the request may still be applied.

// pathErr reports a request refused before it was sent.
func pathErr(op jute.OpCode, path string, err error) error {
	return &OpError{Op: op.String(), Path: path, Err: err}
}

func ttlMillis(mode CreateMode, ttl time.Duration) (int64, error) {
	ms := ttl.Milliseconds()
	if !mode.IsTTL() {
		return 0, badArgs("mode %d is not a TTL mode", mode)
	}
	if ms < 1 || ms > jute.MaxTTL {
		return 0, badArgs("TTL %v out of range", ttl)
	}
	return ms, nil
}

// createSpec is create (1), create2 (15), createContainer (19) or createTTL (21). Create
// sends create, which returns no Stat, unless it makes a container; the others send create2.
func createSpec(path string, data []byte, acl []ACL, mode CreateMode, ttl time.Duration, withStat, wantTTL bool) spec {
	op := jute.OpCreate
	if withStat {
		op = jute.OpCreate2
	}
	var err error
	switch {
	case !mode.valid():
		err = badArgs("invalid create mode %d", mode)
	case wantTTL || mode.IsTTL():
		op = jute.OpCreateTTL
		if !wantTTL {
			err = badArgs("mode %d needs CreateTTL", mode)
		}
	case mode == ModeContainer:
		op = jute.OpCreateContainer
	}
	if err == nil && len(acl) == 0 {
		err = ErrInvalidACL
	}
	return spec{op: op, path: path, seq: mode.IsSequential(), size: len(data) + len(acl)*32, err: err,
		body: func(sp string) (jute.Record, error) {
			if op != jute.OpCreateTTL {
				return &jute.CreateRequest{Path: sp, Data: data, ACL: acl, Flags: int32(mode)}, nil
			}
			ms, err := ttlMillis(mode, ttl)
			return &jute.CreateTTLRequest{Path: sp, Data: data, ACL: acl, Flags: int32(mode), TTL: ms}, err
		}}
}

func (c *Conn) create(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode, ttl time.Duration, withStat, wantTTL bool) (string, *Stat, error) {
	if err := c.requireMode(ctx, mode); err != nil {
		return "", nil, err
	}
	s := createSpec(path, data, acl, mode, ttl, withStat, wantTTL)
	if s.op == jute.OpCreate {
		resp, err := do[jute.CreateResponse](ctx, c, s)
		if err != nil {
			return "", nil, err
		}
		return c.chroot.strip(resp.Path), nil, nil
	}
	resp, err := do[jute.Create2Response](ctx, c, s)
	if err != nil {
		return "", nil, err
	}
	return c.chroot.strip(resp.Path), &resp.Stat, nil
}

// Create creates a node and returns its path (with the sequence number for sequential modes).
// ModeContainer creates a container (as CreateContainer); TTL modes need CreateTTL.
func (c *Conn) Create(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode) (string, error) {
	p, _, err := c.create(ctx, path, data, acl, mode, 0, mode == ModeContainer, false)
	return p, err
}

// Create2 is Create that also returns the new node's Stat (create2).
func (c *Conn) Create2(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode) (string, *Stat, error) {
	return c.create(ctx, path, data, acl, mode, 0, true, false)
}

// CreateContainer creates a container node: the server deletes it once it has had children
// and has none left.
func (c *Conn) CreateContainer(ctx context.Context, path string, data []byte, acl []ACL) (string, *Stat, error) {
	return c.create(ctx, path, data, acl, ModeContainer, 0, true, false)
}

// CreateTTL creates a node with ModePersistentTTL or ModePersistentSequentialTTL that the
// server deletes when it has had no children and no change for ttl (1 ms to 2^40-1 ms). The
// server must have extended types enabled, else it answers ErrUnimplemented.
func (c *Conn) CreateTTL(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode, ttl time.Duration) (string, *Stat, error) {
	return c.create(ctx, path, data, acl, mode, ttl, true, true)
}

// Delete deletes a node if its version matches (AnyVersion matches any).
func (c *Conn) Delete(ctx context.Context, path string, version int32) error {
	_, err := do[noReply](ctx, c, spec{op: jute.OpDelete, path: path, body: func(sp string) (jute.Record, error) {
		return &jute.DeleteRequest{Path: sp, Version: version}, nil
	}})
	return err
}

// readSpec is a read that can leave a one-time watch of kind (exists, getData,
// getChildren2).
func readSpec(op jute.OpCode, path string, kind watchKind, watch bool) spec {
	s := spec{op: op, path: path, body: func(sp string) (jute.Record, error) {
		return &jute.PathWatchRequest{Path: sp, Watch: watch}, nil
	}}
	if watch {
		s.watch = &watchEntry{kind: kind, path: path, q: newEventQueue(oneShotBuffer)}
	}
	return s
}

func watchChan(e *watchEntry) <-chan Event {
	if e == nil {
		return nil
	}
	return e.q.ch
}

func (c *Conn) exists(ctx context.Context, path string, watch bool) (bool, *Stat, <-chan Event, error) {
	s := readSpec(jute.OpExists, path, kindData, watch)
	resp, err := do[jute.ExistsResponse](ctx, c, s)
	switch {
	case errors.Is(err, ErrNoNode):
		return false, nil, watchChan(s.watch), nil
	case err != nil:
		return false, nil, nil, err
	}
	return true, &resp.Stat, watchChan(s.watch), nil
}

// Exists reports whether a node exists, with its Stat if it does.
func (c *Conn) Exists(ctx context.Context, path string) (bool, *Stat, error) {
	ok, st, _, err := c.exists(ctx, path, false)
	return ok, st, err
}

// ExistsW is Exists that also sets a one-time watch, whether or not the node exists: the
// channel receives the next NodeCreated, NodeDeleted or NodeDataChanged of the node, or an
// EventNotWatching if the session ends first, and is then closed. The watch survives
// reconnects. No channel is returned with an error.
func (c *Conn) ExistsW(ctx context.Context, path string) (bool, *Stat, <-chan Event, error) {
	return c.exists(ctx, path, true)
}

// getData reads a node with getData, or ConfigNode, outside the chroot, for getConfig.
func (c *Conn) getData(ctx context.Context, s spec) ([]byte, *Stat, <-chan Event, error) {
	resp, err := do[jute.GetDataResponse](ctx, c, s)
	if err != nil {
		return nil, nil, nil, err
	}
	return resp.Data, &resp.Stat, watchChan(s.watch), nil
}

// Get returns a node's data and Stat.
func (c *Conn) Get(ctx context.Context, path string) ([]byte, *Stat, error) {
	data, st, _, err := c.getData(ctx, readSpec(jute.OpGetData, path, kindData, false))
	return data, st, err
}

// GetW is Get that also sets a one-time watch: the channel receives the node's next
// NodeDataChanged or NodeDeleted (or EventNotWatching if the session ends first) and is then
// closed. The watch survives reconnects.
func (c *Conn) GetW(ctx context.Context, path string) ([]byte, *Stat, <-chan Event, error) {
	return c.getData(ctx, readSpec(jute.OpGetData, path, kindData, true))
}

func (c *Conn) children(ctx context.Context, path string, watch bool) ([]string, *Stat, <-chan Event, error) {
	s := readSpec(jute.OpGetChildren2, path, kindChild, watch)
	resp, err := do[jute.GetChildren2Response](ctx, c, s)
	if err != nil {
		return nil, nil, nil, err
	}
	return resp.Children, &resp.Stat, watchChan(s.watch), nil
}

// Children returns the names of a node's children, in no particular order, and the node's
// Stat (getChildren2).
func (c *Conn) Children(ctx context.Context, path string) ([]string, *Stat, error) {
	ch, st, _, err := c.children(ctx, path, false)
	return ch, st, err
}

// ChildrenW is Children that also sets a one-time watch: the channel receives the next
// NodeChildrenChanged or NodeDeleted of the node (or EventNotWatching) and is then closed.
func (c *Conn) ChildrenW(ctx context.Context, path string) ([]string, *Stat, <-chan Event, error) {
	return c.children(ctx, path, true)
}

// stat runs s, whose reply is a Stat (setData, setACL).
func (c *Conn) stat(ctx context.Context, s spec) (*Stat, error) {
	resp, err := do[jute.StatResponse](ctx, c, s)
	if err != nil {
		return nil, err
	}
	return &resp.Stat, nil
}

// Set replaces a node's data if its version matches (AnyVersion matches any) and returns the
// new Stat.
func (c *Conn) Set(ctx context.Context, path string, data []byte, version int32) (*Stat, error) {
	return c.stat(ctx, setSpec(path, data, version))
}

func setSpec(path string, data []byte, version int32) spec {
	return spec{op: jute.OpSetData, path: path, size: len(data), body: func(sp string) (jute.Record, error) {
		return &jute.SetDataRequest{Path: sp, Data: data, Version: version}, nil
	}}
}

// GetACL returns a node's ACL and Stat.
func (c *Conn) GetACL(ctx context.Context, path string) ([]ACL, *Stat, error) {
	resp, err := do[jute.GetACLResponse](ctx, c, spec{op: jute.OpGetACL, path: path, body: func(sp string) (jute.Record, error) {
		return &jute.GetACLRequest{Path: sp}, nil
	}})
	if err != nil {
		return nil, nil, err
	}
	return resp.ACL, &resp.Stat, nil
}

// SetACL replaces a node's ACL if its ACL version (Stat.Aversion) matches.
func (c *Conn) SetACL(ctx context.Context, path string, acl []ACL, version int32) (*Stat, error) {
	return c.stat(ctx, spec{op: jute.OpSetACL, path: path, size: len(acl) * 32, body: func(sp string) (jute.Record, error) {
		if len(acl) == 0 {
			return nil, ErrInvalidACL
		}
		return &jute.SetACLRequest{Path: sp, ACL: acl, Version: version}, nil
	}})
}

// pathSpec is a request whose body is just its path.
func pathSpec(op jute.OpCode, path string) spec {
	return spec{op: op, path: path, body: func(sp string) (jute.Record, error) { return &jute.PathRequest{Path: sp}, nil }}
}

// AllChildrenNumber returns the number of a node's descendants (getAllChildrenNumber).
func (c *Conn) AllChildrenNumber(ctx context.Context, path string) (int, error) {
	resp, err := do[jute.GetAllChildrenNumberResponse](ctx, c, pathSpec(jute.OpGetAllChildrenNumber, path))
	if err != nil {
		return 0, err
	}
	return int(resp.N), nil
}

// Sync makes the server the client is connected to catch up with the leader, so that reads
// after it see every write committed before it.
func (c *Conn) Sync(ctx context.Context, path string) error {
	_, err := do[jute.SyncResponse](ctx, c, pathSpec(jute.OpSync, path))
	return err
}

// Ephemerals returns the session's ephemeral nodes whose path starts with prefix (a string
// prefix, not necessarily a node; "" or "/" for all).
func (c *Conn) Ephemerals(ctx context.Context, prefix string) ([]string, error) {
	// The prefix is a plain string prefix, not a path; under a chroot, "" and "/" must not
	// match siblings of the chroot that share its name as a prefix.
	sp := prefix
	if c.chroot != "" {
		if prefix == "" || prefix == "/" {
			sp = string(c.chroot) + "/"
		} else {
			sp = string(c.chroot) + prefix
		}
	}
	s := spec{op: jute.OpGetEphemerals, path: prefix, raw: true, body: record(&jute.GetEphemeralsRequest{Path: sp})}
	if prefix != "" && !strings.HasPrefix(prefix, "/") {
		s.err = badArgs("prefix must start with /")
	}
	resp, err := do[jute.GetEphemeralsResponse](ctx, c, s)
	if err != nil {
		return nil, err
	}
	return c.stripAll(resp.Strings), nil
}

func (c *Conn) stripAll(paths []string) []string {
	if c.chroot == "" {
		return paths
	}
	out := paths[:0]
	for _, p := range paths {
		if s, ok := c.chroot.toClient(p); ok {
			out = append(out, s)
		}
	}
	return out
}

// WhoAmI returns the identities the server associates with the session (3.7+).
func (c *Conn) WhoAmI(ctx context.Context) ([]ClientInfo, error) {
	resp, err := do[jute.WhoAmIResponse](ctx, c, spec{op: jute.OpWhoAmI, raw: true})
	if err != nil {
		return nil, err
	}
	return resp.ClientInfo, nil
}

// AddWatch sets a persistent watch (3.6+): AddWatchPersistent fires for every NodeCreated,
// NodeDeleted, NodeDataChanged and NodeChildrenChanged of path; AddWatchPersistentRecursive
// for every NodeCreated, NodeDeleted and NodeDataChanged of path and its descendants. The
// watch stays until removed or the session ends, and is re-registered after reconnects, with
// the changes missed while disconnected replayed by the server.
func (c *Conn) AddWatch(ctx context.Context, path string, mode AddWatchMode) (*Watcher, error) {
	kind := kindPersistent
	if mode == AddWatchPersistentRecursive {
		kind = kindRecursive
	}
	w := &Watcher{c: c, mode: mode, entry: &watchEntry{kind: kind, path: path, q: newEventQueue(persistentBuffer)}}
	s := spec{op: jute.OpAddWatch, path: path, watch: w.entry, body: func(sp string) (jute.Record, error) {
		return &jute.AddWatchRequest{Path: sp, Mode: int32(mode)}, nil
	}}
	if mode != AddWatchPersistent && mode != AddWatchPersistentRecursive {
		s.err = badArgs("invalid watch mode %d", mode)
	}
	if _, err := do[jute.ErrorResponse](ctx, c, s); err != nil {
		return nil, err
	}
	return w, nil
}

// watchesCall runs checkWatches or removeWatches.
func (c *Conn) watchesCall(ctx context.Context, op jute.OpCode, path string, t WatcherType) error {
	s := spec{op: op, path: path, body: func(sp string) (jute.Record, error) {
		return &jute.WatchesRequest{Path: sp, Type: jute.WatcherType(t)}, nil
	}}
	if t < WatcherChildren || t > WatcherPersistentRecursive {
		s.err = badArgs("invalid watcher type %d", t)
	}
	_, err := do[noReply](ctx, c, s)
	return err
}

// CheckWatches asks the server whether this session has watches of type t on path; it
// returns ErrNoWatcher if not.
func (c *Conn) CheckWatches(ctx context.Context, path string, t WatcherType) error {
	return c.watchesCall(ctx, jute.OpCheckWatches, path, t)
}

// RemoveWatches removes all of this session's watches of type t on path, on the server and in
// the client: each removed watch receives EventDataWatchRemoved, EventChildWatchRemoved or
// EventPersistentWatchRemoved and its channel is closed. It returns ErrNoWatcher if the
// server had none.
func (c *Conn) RemoveWatches(ctx context.Context, path string, t WatcherType) error {
	if err := c.watchesCall(ctx, jute.OpRemoveWatches, path, t); err != nil {
		return err
	}
	c.removedWatches(path, t)
	return nil
}
