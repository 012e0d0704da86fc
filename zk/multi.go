package zk

import (
	"context"
	"fmt"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// Op is one operation of a Multi: *CreateOp, *DeleteOp, *SetOp or *CheckOp, or with the
// keeper-ops extension *CheckNotExistsOp, *CreateIfNotExistsOp or *RemoveRecursiveOp.
type Op interface {
	multiOp(root chroot) (jute.MultiOp, error)
	opInfo() (jute.OpCode, string)
}

// CreateOp creates a node. Mode ModeContainer makes a container; the TTL modes need TTL.
type CreateOp struct {
	Path string
	Data []byte
	ACL  []ACL
	Mode CreateMode
	TTL  time.Duration
}

// DeleteOp deletes a node if its version matches.
type DeleteOp struct {
	Path    string
	Version int32
}

// SetOp replaces a node's data if its version matches.
type SetOp struct {
	Path    string
	Data    []byte
	Version int32
}

// CheckOp fails the Multi unless the node exists with this version (AnyVersion: exists).
type CheckOp struct {
	Path    string
	Version int32
}

func (o *CreateOp) opInfo() (jute.OpCode, string) {
	switch {
	case o.Mode.IsTTL():
		return jute.OpCreateTTL, o.Path
	case o.Mode == ModeContainer:
		return jute.OpCreateContainer, o.Path
	}
	return jute.OpCreate2, o.Path
}

func (o *CreateOp) multiOp(root chroot) (jute.MultiOp, error) {
	op, _ := o.opInfo()
	if !o.Mode.valid() {
		return jute.MultiOp{}, badArgs("invalid create mode %d", o.Mode)
	}
	if len(o.ACL) == 0 {
		return jute.MultiOp{}, ErrInvalidACL
	}
	sp, err := root.toServer(o.Path, o.Mode.IsSequential())
	if err != nil {
		return jute.MultiOp{}, err
	}
	if op == jute.OpCreateTTL {
		ms, err := ttlMillis(o.Mode, o.TTL)
		if err != nil {
			return jute.MultiOp{}, err
		}
		return jute.MultiOp{Type: op, Body: &jute.CreateTTLRequest{Path: sp, Data: o.Data, ACL: o.ACL, Flags: int32(o.Mode), TTL: ms}}, nil
	}
	if o.TTL != 0 {
		return jute.MultiOp{}, badArgs("TTL with non-TTL mode %d", o.Mode)
	}
	return jute.MultiOp{Type: op, Body: &jute.CreateRequest{Path: sp, Data: o.Data, ACL: o.ACL, Flags: int32(o.Mode)}}, nil
}

func (o *DeleteOp) opInfo() (jute.OpCode, string) { return jute.OpDelete, o.Path }
func (o *DeleteOp) multiOp(root chroot) (jute.MultiOp, error) {
	sp, err := root.toServer(o.Path, false)
	return jute.MultiOp{Type: jute.OpDelete, Body: &jute.DeleteRequest{Path: sp, Version: o.Version}}, err
}

func (o *SetOp) opInfo() (jute.OpCode, string) { return jute.OpSetData, o.Path }
func (o *SetOp) multiOp(root chroot) (jute.MultiOp, error) {
	sp, err := root.toServer(o.Path, false)
	return jute.MultiOp{Type: jute.OpSetData, Body: &jute.SetDataRequest{Path: sp, Data: o.Data, Version: o.Version}}, err
}

func (o *CheckOp) opInfo() (jute.OpCode, string) { return jute.OpCheck, o.Path }
func (o *CheckOp) multiOp(root chroot) (jute.MultiOp, error) {
	sp, err := root.toServer(o.Path, false)
	return jute.MultiOp{Type: jute.OpCheck, Body: &jute.CheckVersionRequest{Path: sp, Version: o.Version}}, err
}

// OpResult is the result of one operation of a Multi. Path is the created node's path (for
// creates); Stat is set for sets, and for creates when the server reports it (zkd and
// ZooKeeper 3.9 do; 3.8 answers creates inside a multi without a Stat). In a failed Multi nothing was applied; Err is
// the failing operation's error, ErrRuntimeInconsistency for the operations after it, and nil
// for those before it.
type OpResult struct {
	Path string
	Stat *Stat
	Err  error
}

// multiRequest encodes ops; a bad one fails the whole Multi before anything is sent.
func (c *Conn) multiRequest(ops []Op) (*jute.MultiRequest, int, error) {
	m := &jute.MultiRequest{Ops: make([]jute.MultiOp, 0, len(ops))}
	size := 0
	for i, o := range ops {
		mo, err := o.multiOp(c.chroot)
		if err != nil {
			op, path := o.opInfo()
			return nil, 0, &MultiError{Index: i, Err: pathErr(op, path, err)}
		}
		if d, ok := mo.Body.(*jute.SetDataRequest); ok {
			size += len(d.Data)
		}
		if d, ok := mo.Body.(*jute.CreateRequest); ok {
			size += len(d.Data)
		}
		size += 64
		m.Ops = append(m.Ops, mo)
	}
	return m, size, nil
}

// multiResults converts a multi reply, reporting a failed transaction as a *MultiError.
func (c *Conn) multiResults(ops []Op, resp *jute.MultiResponse) ([]OpResult, error) {
	if len(resp.Results) != len(ops) {
		return nil, &OpError{Op: jute.OpMulti.String(), Err: fmt.Errorf("%w: %d results for %d ops", ErrMarshallingError, len(resp.Results), len(ops))}
	}
	out := make([]OpResult, len(ops))
	failed := -1
	for i, res := range resp.Results {
		switch b := res.Body.(type) {
		case *jute.CreateResponse:
			out[i].Path = c.chroot.strip(b.Path)
		case *jute.Create2Response:
			out[i].Path = c.chroot.strip(b.Path)
			out[i].Stat = &b.Stat
		case *jute.SetDataResponse:
			out[i].Stat = &b.Stat
		}
		if res.Type == jute.OpError && res.Err != jute.OK {
			op, path := ops[i].opInfo()
			out[i].Err = &OpError{Op: op.String(), Path: path, Err: res.Err}
			if failed < 0 {
				failed = i
			}
		}
	}
	if failed >= 0 {
		return out, &MultiError{Index: failed, Err: out[failed].Err, Results: out}
	}
	return out, nil
}

// Multi applies ops atomically: all of them, or none if one fails (a *MultiError, which
// errors.Is matches against the failing operation's code). Later operations see the effects
// of earlier ones.
func (c *Conn) Multi(ctx context.Context, ops ...Op) ([]OpResult, error) {
	if err := c.requireOps(ctx, ops); err != nil {
		return nil, err
	}
	m, size, err := c.multiRequest(ops)
	if err != nil {
		return nil, err
	}
	resp, err := do[jute.MultiResponse](ctx, c, spec{op: jute.OpMulti, raw: true, body: record(m), size: size})
	if err != nil {
		return nil, err
	}
	return c.multiResults(ops, resp)
}

// Txn builds a Multi: c.Txn().Create(...).Set(...).Check(...).Commit(ctx).
type Txn struct {
	c   *Conn
	ops []Op
}

// Txn starts a transaction.
func (c *Conn) Txn() *Txn { return &Txn{c: c} }

// Create adds a create.
func (t *Txn) Create(path string, data []byte, acl []ACL, mode CreateMode) *Txn {
	t.ops = append(t.ops, &CreateOp{Path: path, Data: data, ACL: acl, Mode: mode})
	return t
}

// CreateTTL adds a create of a TTL node.
func (t *Txn) CreateTTL(path string, data []byte, acl []ACL, mode CreateMode, ttl time.Duration) *Txn {
	t.ops = append(t.ops, &CreateOp{Path: path, Data: data, ACL: acl, Mode: mode, TTL: ttl})
	return t
}

// Delete adds a delete.
func (t *Txn) Delete(path string, version int32) *Txn {
	t.ops = append(t.ops, &DeleteOp{Path: path, Version: version})
	return t
}

// Set adds a data update.
func (t *Txn) Set(path string, data []byte, version int32) *Txn {
	t.ops = append(t.ops, &SetOp{Path: path, Data: data, Version: version})
	return t
}

// Check adds a version check.
func (t *Txn) Check(path string, version int32) *Txn {
	t.ops = append(t.ops, &CheckOp{Path: path, Version: version})
	return t
}

// Ops returns the operations added so far.
func (t *Txn) Ops() []Op { return t.ops }

// Commit runs the transaction (Multi).
func (t *Txn) Commit(ctx context.Context) ([]OpResult, error) { return t.c.Multi(ctx, t.ops...) }

// ReadOp is one operation of MultiRead: *GetOp or *ChildrenOp.
type ReadOp interface {
	readOp(root chroot) (jute.MultiOp, error)
	opInfo() (jute.OpCode, string)
}

// GetOp reads a node's data and Stat.
type GetOp struct{ Path string }

// ChildrenOp reads a node's children.
type ChildrenOp struct{ Path string }

func (o *GetOp) opInfo() (jute.OpCode, string) { return jute.OpGetData, o.Path }
func (o *GetOp) readOp(root chroot) (jute.MultiOp, error) {
	sp, err := root.toServer(o.Path, false)
	return jute.MultiOp{Type: jute.OpGetData, Body: &jute.GetDataRequest{Path: sp}}, err
}

func (o *ChildrenOp) opInfo() (jute.OpCode, string) { return jute.OpGetChildren, o.Path }
func (o *ChildrenOp) readOp(root chroot) (jute.MultiOp, error) {
	sp, err := root.toServer(o.Path, false)
	return jute.MultiOp{Type: jute.OpGetChildren, Body: &jute.GetChildrenRequest{Path: sp}}, err
}

// ReadResult is the result of one MultiRead operation: Data and Stat for a GetOp, Children
// for a ChildrenOp, or Err.
type ReadResult struct {
	Data     []byte
	Stat     *Stat
	Children []string
	Err      error
}

func (c *Conn) multiReadRequest(ops []ReadOp) (*jute.MultiRequest, error) {
	m := &jute.MultiRequest{Ops: make([]jute.MultiOp, 0, len(ops))}
	for _, o := range ops {
		mo, err := o.readOp(c.chroot)
		if err != nil {
			op, path := o.opInfo()
			return nil, pathErr(op, path, err)
		}
		m.Ops = append(m.Ops, mo)
	}
	return m, nil
}

func readResults(ops []ReadOp, resp *jute.MultiResponse) ([]ReadResult, error) {
	if len(resp.Results) != len(ops) {
		return nil, &OpError{Op: jute.OpMultiRead.String(), Err: fmt.Errorf("%w: %d results for %d ops", ErrMarshallingError, len(resp.Results), len(ops))}
	}
	out := make([]ReadResult, len(ops))
	for i, res := range resp.Results {
		switch b := res.Body.(type) {
		case *jute.GetDataResponse:
			out[i].Data, out[i].Stat = b.Data, &b.Stat
		case *jute.GetChildrenResponse:
			out[i].Children = b.Strings
		}
		// ZooKeeper's failed result has type -1; ClickHouse Keeper's keeps the op's type.
		if res.Err != jute.OK {
			op, path := ops[i].opInfo()
			out[i].Err = &OpError{Op: op.String(), Path: path, Err: res.Err}
		}
	}
	return out, nil
}

// MultiRead runs several reads in one request (3.6+). It is not atomic: each read succeeds or
// fails on its own (ReadResult.Err), and the call fails only if the request as a whole does.
func (c *Conn) MultiRead(ctx context.Context, ops ...ReadOp) ([]ReadResult, error) {
	m, err := c.multiReadRequest(ops)
	if err != nil {
		return nil, err
	}
	resp, err := do[jute.MultiResponse](ctx, c, spec{op: jute.OpMultiRead, raw: true, body: record(m), size: 64 * len(ops)})
	if err != nil {
		return nil, err
	}
	return readResults(ops, resp)
}
