package zk

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// Every operation has a blocking form, which takes a context and returns when the reply
// arrives or the context ends, and an Async form, which returns at once and runs its callback
// with the same results. Callbacks run one at a time, in reply order, on a goroutine of the
// client's: they may issue further requests, but should not block for long.
//
// Errors are *OpError values wrapping a Code (errors.Is(err, ErrNoNode)), ErrClosed, or the
// context's error. When a context ends before the reply, the request may still be applied.

// pathErr reports a request refused before it was sent.
func pathErr(op jute.OpCode, path string, err error) error {
	return &OpError{Op: op.String(), Path: path, Err: err}
}

// createResp decodes both create replies: path only (create) or path and Stat (the others).
type createResp struct {
	jute.Create2Response
	withStat bool
}

func (r *createResp) Encode(e *jute.Encoder) { r.Create2Response.Encode(e) }
func (r *createResp) Decode(d *jute.Decoder) {
	r.Path = d.String()
	if r.withStat {
		r.Stat.Decode(d)
	}
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

// createReq builds create (1), create2 (15), createContainer (19) or createTTL (21).
func (c *Conn) createReq(path string, data []byte, acl []ACL, mode CreateMode, ttl time.Duration, withStat, wantTTL bool) (*request, *createResp, error) {
	op := jute.OpCreate
	if withStat {
		op = jute.OpCreate2
	}
	switch {
	case !mode.valid():
		return nil, nil, pathErr(op, path, badArgs("invalid create mode %d", mode))
	case wantTTL || mode.IsTTL():
		op = jute.OpCreateTTL
		if !wantTTL {
			return nil, nil, pathErr(op, path, badArgs("mode %d needs CreateTTL", mode))
		}
	case mode == ModeContainer:
		op = jute.OpCreateContainer
	}
	if len(acl) == 0 {
		return nil, nil, pathErr(op, path, ErrInvalidACL)
	}
	sp, err := c.chroot.toServer(path, mode.IsSequential())
	if err != nil {
		return nil, nil, pathErr(op, path, err)
	}
	resp := &createResp{withStat: op != jute.OpCreate}
	var body jute.Record
	if op == jute.OpCreateTTL {
		ms, err := ttlMillis(mode, ttl)
		if err != nil {
			return nil, nil, pathErr(op, path, err)
		}
		body = &jute.CreateTTLRequest{Path: sp, Data: data, ACL: acl, Flags: int32(mode), TTL: ms}
	} else {
		body = &jute.CreateRequest{Path: sp, Data: data, ACL: acl, Flags: int32(mode)}
	}
	return newRequest(op, path, body, resp, len(data)+len(acl)*32), resp, nil
}

// Create creates a node and returns its path (with the sequence number for sequential modes).
// ModeContainer creates a container (as CreateContainer); TTL modes need CreateTTL.
func (c *Conn) Create(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode) (string, error) {
	r, resp, err := c.createReq(path, data, acl, mode, 0, mode == ModeContainer, false)
	if err != nil {
		return "", err
	}
	if err := c.call(ctx, r); err != nil {
		return "", err
	}
	return c.chroot.strip(resp.Path), nil
}

// CreateAsync is Create with a callback.
func (c *Conn) CreateAsync(path string, data []byte, acl []ACL, mode CreateMode, cb func(string, error)) {
	r, resp, err := c.createReq(path, data, acl, mode, 0, mode == ModeContainer, false)
	if err != nil {
		c.asyncErr(func() { cb("", err) })
		return
	}
	c.callAsync(r, func(err error) {
		if err != nil {
			cb("", err)
			return
		}
		cb(c.chroot.strip(resp.Path), nil)
	})
}

// Create2 is Create that also returns the new node's Stat (create2).
func (c *Conn) Create2(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode) (string, *Stat, error) {
	r, resp, err := c.createReq(path, data, acl, mode, 0, true, false)
	return c.finishCreate(ctx, r, resp, err)
}

// Create2Async is Create2 with a callback.
func (c *Conn) Create2Async(path string, data []byte, acl []ACL, mode CreateMode, cb func(string, *Stat, error)) {
	r, resp, err := c.createReq(path, data, acl, mode, 0, true, false)
	c.finishCreateAsync(r, resp, err, cb)
}

// CreateContainer creates a container node: the server deletes it once it has had children
// and has none left.
func (c *Conn) CreateContainer(ctx context.Context, path string, data []byte, acl []ACL) (string, *Stat, error) {
	r, resp, err := c.createReq(path, data, acl, ModeContainer, 0, true, false)
	return c.finishCreate(ctx, r, resp, err)
}

// CreateContainerAsync is CreateContainer with a callback.
func (c *Conn) CreateContainerAsync(path string, data []byte, acl []ACL, cb func(string, *Stat, error)) {
	r, resp, err := c.createReq(path, data, acl, ModeContainer, 0, true, false)
	c.finishCreateAsync(r, resp, err, cb)
}

// CreateTTL creates a node with ModePersistentTTL or ModePersistentSequentialTTL that the
// server deletes when it has had no children and no change for ttl (1 ms to 2^40-1 ms). The
// server must have extended types enabled, else it answers ErrUnimplemented.
func (c *Conn) CreateTTL(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode, ttl time.Duration) (string, *Stat, error) {
	r, resp, err := c.createReq(path, data, acl, mode, ttl, true, true)
	return c.finishCreate(ctx, r, resp, err)
}

// CreateTTLAsync is CreateTTL with a callback.
func (c *Conn) CreateTTLAsync(path string, data []byte, acl []ACL, mode CreateMode, ttl time.Duration, cb func(string, *Stat, error)) {
	r, resp, err := c.createReq(path, data, acl, mode, ttl, true, true)
	c.finishCreateAsync(r, resp, err, cb)
}

func (c *Conn) finishCreate(ctx context.Context, r *request, resp *createResp, err error) (string, *Stat, error) {
	if err != nil {
		return "", nil, err
	}
	if err := c.call(ctx, r); err != nil {
		return "", nil, err
	}
	return c.chroot.strip(resp.Path), &resp.Stat, nil
}

func (c *Conn) finishCreateAsync(r *request, resp *createResp, err error, cb func(string, *Stat, error)) {
	if err != nil {
		c.asyncErr(func() { cb("", nil, err) })
		return
	}
	c.callAsync(r, func(err error) {
		if err != nil {
			cb("", nil, err)
			return
		}
		cb(c.chroot.strip(resp.Path), &resp.Stat, nil)
	})
}

func (c *Conn) deleteReq(path string, version int32) (*request, error) {
	sp, err := c.chroot.toServer(path, false)
	if err != nil {
		return nil, pathErr(jute.OpDelete, path, err)
	}
	return newRequest(jute.OpDelete, path, &jute.DeleteRequest{Path: sp, Version: version}, nil, 0), nil
}

// Delete deletes a node if its version matches (AnyVersion matches any).
func (c *Conn) Delete(ctx context.Context, path string, version int32) error {
	r, err := c.deleteReq(path, version)
	if err != nil {
		return err
	}
	return c.call(ctx, r)
}

// DeleteAsync is Delete with a callback.
func (c *Conn) DeleteAsync(path string, version int32, cb func(error)) {
	r, err := c.deleteReq(path, version)
	if err != nil {
		c.asyncErr(func() { cb(err) })
		return
	}
	c.callAsync(r, cb)
}

// pathWatchReq builds the read requests that can leave a watch (exists, getData,
// getChildren2).
func (c *Conn) pathWatchReq(op jute.OpCode, path string, resp jute.Record, kind watchKind, watch bool) (*request, *watchEntry, error) {
	sp, err := c.chroot.toServer(path, false)
	if err != nil {
		return nil, nil, pathErr(op, path, err)
	}
	r := newRequest(op, path, &jute.PathWatchRequest{Path: sp, Watch: watch}, resp, 0)
	if watch {
		r.watch = &watchEntry{kind: kind, path: path, q: newEventQueue(oneShotBuffer)}
	}
	return r, r.watch, nil
}

func watchChan(e *watchEntry) <-chan Event {
	if e == nil {
		return nil
	}
	return e.q.ch
}

func (c *Conn) exists(ctx context.Context, path string, watch bool) (bool, *Stat, <-chan Event, error) {
	resp := &jute.ExistsResponse{}
	r, e, err := c.pathWatchReq(jute.OpExists, path, resp, kindData, watch)
	if err != nil {
		return false, nil, nil, err
	}
	if err := c.call(ctx, r); err != nil {
		var oe *OpError
		if errors.As(err, &oe) && oe.Err == ErrNoNode {
			return false, nil, watchChan(e), nil
		}
		return false, nil, nil, err
	}
	return true, &resp.Stat, watchChan(e), nil
}

func (c *Conn) existsAsync(path string, watch bool, cb func(bool, *Stat, <-chan Event, error)) {
	resp := &jute.ExistsResponse{}
	r, e, err := c.pathWatchReq(jute.OpExists, path, resp, kindData, watch)
	if err != nil {
		c.asyncErr(func() { cb(false, nil, nil, err) })
		return
	}
	c.callAsync(r, func(err error) {
		switch {
		case r.err == ErrNoNode:
			cb(false, nil, watchChan(e), nil)
		case err != nil:
			cb(false, nil, nil, err)
		default:
			cb(true, &resp.Stat, watchChan(e), nil)
		}
	})
}

// Exists reports whether a node exists, with its Stat if it does.
func (c *Conn) Exists(ctx context.Context, path string) (bool, *Stat, error) {
	ok, st, _, err := c.exists(ctx, path, false)
	return ok, st, err
}

// ExistsAsync is Exists with a callback.
func (c *Conn) ExistsAsync(path string, cb func(bool, *Stat, error)) {
	c.existsAsync(path, false, func(ok bool, st *Stat, _ <-chan Event, err error) { cb(ok, st, err) })
}

// ExistsW is Exists that also sets a one-time watch, whether or not the node exists: the
// channel receives the next NodeCreated, NodeDeleted or NodeDataChanged of the node, or an
// EventNotWatching if the session ends first, and is then closed. The watch survives
// reconnects. No channel is returned with an error.
func (c *Conn) ExistsW(ctx context.Context, path string) (bool, *Stat, <-chan Event, error) {
	return c.exists(ctx, path, true)
}

// ExistsWAsync is ExistsW with a callback.
func (c *Conn) ExistsWAsync(path string, cb func(bool, *Stat, <-chan Event, error)) {
	c.existsAsync(path, true, cb)
}

func (c *Conn) get(ctx context.Context, path string, watch bool) ([]byte, *Stat, <-chan Event, error) {
	resp := &jute.GetDataResponse{}
	r, e, err := c.pathWatchReq(jute.OpGetData, path, resp, kindData, watch)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := c.call(ctx, r); err != nil {
		return nil, nil, nil, err
	}
	return resp.Data, &resp.Stat, watchChan(e), nil
}

func (c *Conn) getAsync(path string, watch bool, cb func([]byte, *Stat, <-chan Event, error)) {
	resp := &jute.GetDataResponse{}
	r, e, err := c.pathWatchReq(jute.OpGetData, path, resp, kindData, watch)
	if err != nil {
		c.asyncErr(func() { cb(nil, nil, nil, err) })
		return
	}
	c.callAsync(r, func(err error) {
		if err != nil {
			cb(nil, nil, nil, err)
			return
		}
		cb(resp.Data, &resp.Stat, watchChan(e), nil)
	})
}

// Get returns a node's data and Stat.
func (c *Conn) Get(ctx context.Context, path string) ([]byte, *Stat, error) {
	data, st, _, err := c.get(ctx, path, false)
	return data, st, err
}

// GetAsync is Get with a callback.
func (c *Conn) GetAsync(path string, cb func([]byte, *Stat, error)) {
	c.getAsync(path, false, func(d []byte, st *Stat, _ <-chan Event, err error) { cb(d, st, err) })
}

// GetW is Get that also sets a one-time watch: the channel receives the node's next
// NodeDataChanged or NodeDeleted (or EventNotWatching if the session ends first) and is then
// closed. The watch survives reconnects.
func (c *Conn) GetW(ctx context.Context, path string) ([]byte, *Stat, <-chan Event, error) {
	return c.get(ctx, path, true)
}

// GetWAsync is GetW with a callback.
func (c *Conn) GetWAsync(path string, cb func([]byte, *Stat, <-chan Event, error)) {
	c.getAsync(path, true, cb)
}

func (c *Conn) children(ctx context.Context, path string, watch bool) ([]string, *Stat, <-chan Event, error) {
	resp := &jute.GetChildren2Response{}
	r, e, err := c.pathWatchReq(jute.OpGetChildren2, path, resp, kindChild, watch)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := c.call(ctx, r); err != nil {
		return nil, nil, nil, err
	}
	return resp.Children, &resp.Stat, watchChan(e), nil
}

func (c *Conn) childrenAsync(path string, watch bool, cb func([]string, *Stat, <-chan Event, error)) {
	resp := &jute.GetChildren2Response{}
	r, e, err := c.pathWatchReq(jute.OpGetChildren2, path, resp, kindChild, watch)
	if err != nil {
		c.asyncErr(func() { cb(nil, nil, nil, err) })
		return
	}
	c.callAsync(r, func(err error) {
		if err != nil {
			cb(nil, nil, nil, err)
			return
		}
		cb(resp.Children, &resp.Stat, watchChan(e), nil)
	})
}

// Children returns the names of a node's children, in no particular order, and the node's
// Stat (getChildren2).
func (c *Conn) Children(ctx context.Context, path string) ([]string, *Stat, error) {
	ch, st, _, err := c.children(ctx, path, false)
	return ch, st, err
}

// ChildrenAsync is Children with a callback.
func (c *Conn) ChildrenAsync(path string, cb func([]string, *Stat, error)) {
	c.childrenAsync(path, false, func(ch []string, st *Stat, _ <-chan Event, err error) { cb(ch, st, err) })
}

// ChildrenW is Children that also sets a one-time watch: the channel receives the next
// NodeChildrenChanged or NodeDeleted of the node (or EventNotWatching) and is then closed.
func (c *Conn) ChildrenW(ctx context.Context, path string) ([]string, *Stat, <-chan Event, error) {
	return c.children(ctx, path, true)
}

// ChildrenWAsync is ChildrenW with a callback.
func (c *Conn) ChildrenWAsync(path string, cb func([]string, *Stat, <-chan Event, error)) {
	c.childrenAsync(path, true, cb)
}

func (c *Conn) setReq(path string, data []byte, version int32) (*request, *jute.SetDataResponse, error) {
	sp, err := c.chroot.toServer(path, false)
	if err != nil {
		return nil, nil, pathErr(jute.OpSetData, path, err)
	}
	resp := &jute.SetDataResponse{}
	r := newRequest(jute.OpSetData, path, &jute.SetDataRequest{Path: sp, Data: data, Version: version}, resp, len(data))
	return r, resp, nil
}

// Set replaces a node's data if its version matches (AnyVersion matches any) and returns the
// new Stat.
func (c *Conn) Set(ctx context.Context, path string, data []byte, version int32) (*Stat, error) {
	r, resp, err := c.setReq(path, data, version)
	if err != nil {
		return nil, err
	}
	if err := c.call(ctx, r); err != nil {
		return nil, err
	}
	return &resp.Stat, nil
}

// SetAsync is Set with a callback.
func (c *Conn) SetAsync(path string, data []byte, version int32, cb func(*Stat, error)) {
	r, resp, err := c.setReq(path, data, version)
	c.statAsync(r, resp, err, cb)
}

func (c *Conn) statAsync(r *request, resp *jute.StatResponse, err error, cb func(*Stat, error)) {
	if err != nil {
		c.asyncErr(func() { cb(nil, err) })
		return
	}
	c.callAsync(r, func(err error) {
		if err != nil {
			cb(nil, err)
			return
		}
		cb(&resp.Stat, nil)
	})
}

func (c *Conn) getACLReq(path string) (*request, *jute.GetACLResponse, error) {
	sp, err := c.chroot.toServer(path, false)
	if err != nil {
		return nil, nil, pathErr(jute.OpGetACL, path, err)
	}
	resp := &jute.GetACLResponse{}
	return newRequest(jute.OpGetACL, path, &jute.GetACLRequest{Path: sp}, resp, 0), resp, nil
}

// GetACL returns a node's ACL and Stat.
func (c *Conn) GetACL(ctx context.Context, path string) ([]ACL, *Stat, error) {
	r, resp, err := c.getACLReq(path)
	if err != nil {
		return nil, nil, err
	}
	if err := c.call(ctx, r); err != nil {
		return nil, nil, err
	}
	return resp.ACL, &resp.Stat, nil
}

// GetACLAsync is GetACL with a callback.
func (c *Conn) GetACLAsync(path string, cb func([]ACL, *Stat, error)) {
	r, resp, err := c.getACLReq(path)
	if err != nil {
		c.asyncErr(func() { cb(nil, nil, err) })
		return
	}
	c.callAsync(r, func(err error) {
		if err != nil {
			cb(nil, nil, err)
			return
		}
		cb(resp.ACL, &resp.Stat, nil)
	})
}

func (c *Conn) setACLReq(path string, acl []ACL, version int32) (*request, *jute.SetACLResponse, error) {
	sp, err := c.chroot.toServer(path, false)
	if err != nil {
		return nil, nil, pathErr(jute.OpSetACL, path, err)
	}
	if len(acl) == 0 {
		return nil, nil, pathErr(jute.OpSetACL, path, ErrInvalidACL)
	}
	resp := &jute.SetACLResponse{}
	return newRequest(jute.OpSetACL, path, &jute.SetACLRequest{Path: sp, ACL: acl, Version: version}, resp, len(acl)*32), resp, nil
}

// SetACL replaces a node's ACL if its ACL version (Stat.Aversion) matches.
func (c *Conn) SetACL(ctx context.Context, path string, acl []ACL, version int32) (*Stat, error) {
	r, resp, err := c.setACLReq(path, acl, version)
	if err != nil {
		return nil, err
	}
	if err := c.call(ctx, r); err != nil {
		return nil, err
	}
	return &resp.Stat, nil
}

// SetACLAsync is SetACL with a callback.
func (c *Conn) SetACLAsync(path string, acl []ACL, version int32, cb func(*Stat, error)) {
	r, resp, err := c.setACLReq(path, acl, version)
	c.statAsync(r, resp, err, cb)
}

func (c *Conn) pathReq(op jute.OpCode, path string, resp jute.Record) (*request, error) {
	sp, err := c.chroot.toServer(path, false)
	if err != nil {
		return nil, pathErr(op, path, err)
	}
	return newRequest(op, path, &jute.PathRequest{Path: sp}, resp, 0), nil
}

// AllChildrenNumber returns the number of a node's descendants (getAllChildrenNumber).
func (c *Conn) AllChildrenNumber(ctx context.Context, path string) (int, error) {
	resp := &jute.GetAllChildrenNumberResponse{}
	r, err := c.pathReq(jute.OpGetAllChildrenNumber, path, resp)
	if err != nil {
		return 0, err
	}
	if err := c.call(ctx, r); err != nil {
		return 0, err
	}
	return int(resp.N), nil
}

// AllChildrenNumberAsync is AllChildrenNumber with a callback.
func (c *Conn) AllChildrenNumberAsync(path string, cb func(int, error)) {
	resp := &jute.GetAllChildrenNumberResponse{}
	r, err := c.pathReq(jute.OpGetAllChildrenNumber, path, resp)
	if err != nil {
		c.asyncErr(func() { cb(0, err) })
		return
	}
	c.callAsync(r, func(err error) {
		if err != nil {
			cb(0, err)
			return
		}
		cb(int(resp.N), nil)
	})
}

// Sync makes the server the client is connected to catch up with the leader, so that reads
// after it see every write committed before it.
func (c *Conn) Sync(ctx context.Context, path string) error {
	r, err := c.pathReq(jute.OpSync, path, &jute.SyncResponse{})
	if err != nil {
		return err
	}
	return c.call(ctx, r)
}

// SyncAsync is Sync with a callback.
func (c *Conn) SyncAsync(path string, cb func(error)) {
	r, err := c.pathReq(jute.OpSync, path, &jute.SyncResponse{})
	if err != nil {
		c.asyncErr(func() { cb(err) })
		return
	}
	c.callAsync(r, cb)
}

func (c *Conn) ephemeralsReq(prefix string) (*request, *jute.GetEphemeralsResponse, error) {
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
	if prefix != "" && !strings.HasPrefix(prefix, "/") {
		return nil, nil, pathErr(jute.OpGetEphemerals, prefix, badArgs("prefix must start with /"))
	}
	resp := &jute.GetEphemeralsResponse{}
	return newRequest(jute.OpGetEphemerals, prefix, &jute.GetEphemeralsRequest{Path: sp}, resp, 0), resp, nil
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

// Ephemerals returns the session's ephemeral nodes whose path starts with prefix (a string
// prefix, not necessarily a node; "" or "/" for all).
func (c *Conn) Ephemerals(ctx context.Context, prefix string) ([]string, error) {
	r, resp, err := c.ephemeralsReq(prefix)
	if err != nil {
		return nil, err
	}
	if err := c.call(ctx, r); err != nil {
		return nil, err
	}
	return c.stripAll(resp.Strings), nil
}

// EphemeralsAsync is Ephemerals with a callback.
func (c *Conn) EphemeralsAsync(prefix string, cb func([]string, error)) {
	r, resp, err := c.ephemeralsReq(prefix)
	if err != nil {
		c.asyncErr(func() { cb(nil, err) })
		return
	}
	c.callAsync(r, func(err error) {
		if err != nil {
			cb(nil, err)
			return
		}
		cb(c.stripAll(resp.Strings), nil)
	})
}

// WhoAmI returns the identities the server associates with the session (3.7+).
func (c *Conn) WhoAmI(ctx context.Context) ([]ClientInfo, error) {
	resp := &jute.WhoAmIResponse{}
	r := newRequest(jute.OpWhoAmI, "", nil, resp, 0)
	if err := c.call(ctx, r); err != nil {
		return nil, err
	}
	return resp.ClientInfo, nil
}

// WhoAmIAsync is WhoAmI with a callback.
func (c *Conn) WhoAmIAsync(cb func([]ClientInfo, error)) {
	resp := &jute.WhoAmIResponse{}
	r := newRequest(jute.OpWhoAmI, "", nil, resp, 0)
	c.callAsync(r, func(err error) {
		if err != nil {
			cb(nil, err)
			return
		}
		cb(resp.ClientInfo, nil)
	})
}

func (c *Conn) addWatchReq(path string, mode AddWatchMode) (*request, *Watcher, error) {
	if mode != AddWatchPersistent && mode != AddWatchPersistentRecursive {
		return nil, nil, pathErr(jute.OpAddWatch, path, badArgs("invalid watch mode %d", mode))
	}
	sp, err := c.chroot.toServer(path, false)
	if err != nil {
		return nil, nil, pathErr(jute.OpAddWatch, path, err)
	}
	kind := kindPersistent
	if mode == AddWatchPersistentRecursive {
		kind = kindRecursive
	}
	w := &Watcher{c: c, mode: mode, entry: &watchEntry{kind: kind, path: path, q: newEventQueue(persistentBuffer)}}
	r := newRequest(jute.OpAddWatch, path, &jute.AddWatchRequest{Path: sp, Mode: int32(mode)}, &jute.ErrorResponse{}, 0)
	r.watch = w.entry
	return r, w, nil
}

// AddWatch sets a persistent watch (3.6+): AddWatchPersistent fires for every NodeCreated,
// NodeDeleted, NodeDataChanged and NodeChildrenChanged of path; AddWatchPersistentRecursive
// for every NodeCreated, NodeDeleted and NodeDataChanged of path and its descendants. The
// watch stays until removed or the session ends, and is re-registered after reconnects, with
// the changes missed while disconnected replayed by the server.
func (c *Conn) AddWatch(ctx context.Context, path string, mode AddWatchMode) (*Watcher, error) {
	r, w, err := c.addWatchReq(path, mode)
	if err != nil {
		return nil, err
	}
	if err := c.call(ctx, r); err != nil {
		return nil, err
	}
	return w, nil
}

// AddWatchAsync is AddWatch with a callback.
func (c *Conn) AddWatchAsync(path string, mode AddWatchMode, cb func(*Watcher, error)) {
	r, w, err := c.addWatchReq(path, mode)
	if err != nil {
		c.asyncErr(func() { cb(nil, err) })
		return
	}
	c.callAsync(r, func(err error) {
		if err != nil {
			cb(nil, err)
			return
		}
		cb(w, nil)
	})
}

func (c *Conn) watchesReq(op jute.OpCode, path string, t WatcherType) (*request, error) {
	if t < WatcherChildren || t > WatcherPersistentRecursive {
		return nil, pathErr(op, path, badArgs("invalid watcher type %d", t))
	}
	sp, err := c.chroot.toServer(path, false)
	if err != nil {
		return nil, pathErr(op, path, err)
	}
	return newRequest(op, path, &jute.WatchesRequest{Path: sp, Type: jute.WatcherType(t)}, nil, 0), nil
}

// CheckWatches asks the server whether this session has watches of type t on path; it
// returns ErrNoWatcher if not.
func (c *Conn) CheckWatches(ctx context.Context, path string, t WatcherType) error {
	r, err := c.watchesReq(jute.OpCheckWatches, path, t)
	if err != nil {
		return err
	}
	return c.call(ctx, r)
}

// CheckWatchesAsync is CheckWatches with a callback.
func (c *Conn) CheckWatchesAsync(path string, t WatcherType, cb func(error)) {
	r, err := c.watchesReq(jute.OpCheckWatches, path, t)
	if err != nil {
		c.asyncErr(func() { cb(err) })
		return
	}
	c.callAsync(r, cb)
}

// RemoveWatches removes all of this session's watches of type t on path, on the server and in
// the client: each removed watch receives EventDataWatchRemoved, EventChildWatchRemoved or
// EventPersistentWatchRemoved and its channel is closed. It returns ErrNoWatcher if the
// server had none.
func (c *Conn) RemoveWatches(ctx context.Context, path string, t WatcherType) error {
	r, err := c.watchesReq(jute.OpRemoveWatches, path, t)
	if err != nil {
		return err
	}
	if err := c.call(ctx, r); err != nil {
		return err
	}
	c.removedWatches(path, t)
	return nil
}

// RemoveWatchesAsync is RemoveWatches with a callback.
func (c *Conn) RemoveWatchesAsync(path string, t WatcherType, cb func(error)) {
	r, err := c.watchesReq(jute.OpRemoveWatches, path, t)
	if err != nil {
		c.asyncErr(func() { cb(err) })
		return
	}
	c.callAsync(r, func(err error) {
		if err == nil {
			c.removedWatches(path, t)
		}
		cb(err)
	})
}

// removeWatchesServer removes the server's registration only (Watcher.Remove).
func (c *Conn) removeWatchesServer(ctx context.Context, path string, t WatcherType) error {
	r, err := c.watchesReq(jute.OpRemoveWatches, path, t)
	if err != nil {
		return err
	}
	return c.call(ctx, r)
}
