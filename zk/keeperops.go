package zk

import (
	"context"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/jute"
)

// ClickHouse Keeper's extension operations and zkd's create-with-parents (the server's
// keeper-ops extension, docs/beyond.md). Each needs the extension: the call fails with an
// error wrapping ErrUnsupported, before anything is sent, on a server without it.

// ListFilter selects the children FilteredList returns.
type ListFilter byte

// The filters of FilteredList (ClickHouse's ListRequestType).
const (
	ListAll            ListFilter = ListFilter(jute.ListAll)
	ListPersistentOnly ListFilter = ListFilter(jute.ListPersistentOnly)
	ListEphemeralOnly  ListFilter = ListFilter(jute.ListEphemeralOnly)
)

// FilteredList is Children keeping only the persistent or only the ephemeral children
// (containers and TTL nodes count as persistent). The Stat is the node's, whose NumChildren
// counts every child.
func (c *Conn) FilteredList(ctx context.Context, path string, filter ListFilter) ([]string, *Stat, error) {
	if err := c.require(ctx, ext.KeeperOps); err != nil {
		return nil, nil, err
	}
	resp, err := do[jute.GetChildren2Response](ctx, c, spec{op: jute.OpFilteredList, path: path,
		body: func(sp string) (jute.Record, error) {
			return &jute.FilteredListRequest{Path: sp, Type: byte(filter)}, nil
		}})
	if err != nil {
		return nil, nil, err
	}
	return resp.Children, &resp.Stat, nil
}

// CreateIfNotExists creates a node unless it exists; either way it returns the path (which
// is the path asked for when the node existed). Sequential modes are refused
// (ErrBadArguments).
func (c *Conn) CreateIfNotExists(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode) (string, error) {
	if err := c.require(ctx, ext.KeeperOps); err != nil {
		return "", err
	}
	s := createSpec(path, data, acl, mode, 0, false, false)
	s.op = jute.OpCreateIfNotExists
	resp, err := do[jute.CreateResponse](ctx, c, s)
	if err != nil {
		return "", err
	}
	return c.chroot.strip(resp.Path), nil
}

// RemoveRecursive deletes a node and everything under it atomically: a concurrent create
// under it either lands before (and is deleted too) or after (and fails for its missing
// parent). A subtree of more than limit nodes (the node itself counted), or too large for
// one txn, fails with ErrNotEmpty and deletes nothing; ErrNoAuth unless the caller may
// delete from the node's parent and from every node of the subtree.
func (c *Conn) RemoveRecursive(ctx context.Context, path string, limit uint32) error {
	if err := c.require(ctx, ext.KeeperOps); err != nil {
		return err
	}
	_, err := do[noReply](ctx, c, spec{op: jute.OpRemoveRecursive, path: path, body: func(sp string) (jute.Record, error) {
		return &jute.RemoveRecursiveRequest{Path: sp, Limit: limit}, nil
	}})
	return err
}

// CreateWithParents creates a node after its missing ancestors (persistent, empty, with the
// same ACL) in one atomic write, and returns its path and Stat. ErrNodeExists if the node
// itself exists.
func (c *Conn) CreateWithParents(ctx context.Context, path string, data []byte, acl []ACL, mode CreateMode) (string, *Stat, error) {
	if err := c.require(ctx, ext.KeeperOps); err != nil {
		return "", nil, err
	}
	if err := c.requireMode(ctx, mode); err != nil {
		return "", nil, err
	}
	s := createSpec(path, data, acl, mode, 0, true, false)
	if s.err == nil && s.op != jute.OpCreate2 && s.op != jute.OpCreateContainer {
		s.err = badArgs("mode %d cannot be created with parents", mode)
	}
	s.op = jute.OpCreateWithParents
	resp, err := do[jute.Create2Response](ctx, c, s)
	if err != nil {
		return "", nil, err
	}
	return c.chroot.strip(resp.Path), &resp.Stat, nil
}

// CheckNotExistsOp fails the Multi (ErrNodeExists) if the node exists and, unless Version is
// AnyVersion, has this version. It needs the keeper-ops extension.
type CheckNotExistsOp struct {
	Path    string
	Version int32
}

func (o *CheckNotExistsOp) opInfo() (jute.OpCode, string) { return jute.OpCheckNotExists, o.Path }
func (o *CheckNotExistsOp) multiOp(root chroot) (jute.MultiOp, error) {
	sp, err := root.toServer(o.Path, false)
	return jute.MultiOp{Type: jute.OpCheckNotExists, Body: &jute.CheckVersionRequest{Path: sp, Version: o.Version}}, err
}

// CreateIfNotExistsOp is CreateIfNotExists inside a Multi: its result's Path is the path
// asked for, whether it was created or existed. It needs the keeper-ops extension.
type CreateIfNotExistsOp struct {
	Path string
	Data []byte
	ACL  []ACL
	Mode CreateMode
}

func (o *CreateIfNotExistsOp) opInfo() (jute.OpCode, string) {
	return jute.OpCreateIfNotExists, o.Path
}
func (o *CreateIfNotExistsOp) multiOp(root chroot) (jute.MultiOp, error) {
	if !o.Mode.valid() || o.Mode.IsTTL() {
		return jute.MultiOp{}, badArgs("invalid create mode %d", o.Mode)
	}
	if len(o.ACL) == 0 {
		return jute.MultiOp{}, ErrInvalidACL
	}
	sp, err := root.toServer(o.Path, false)
	return jute.MultiOp{Type: jute.OpCreateIfNotExists, Body: &jute.CreateRequest{Path: sp, Data: o.Data, ACL: o.ACL, Flags: int32(o.Mode)}}, err
}

// RemoveRecursiveOp is RemoveRecursive inside a Multi. It needs the keeper-ops extension.
type RemoveRecursiveOp struct {
	Path  string
	Limit uint32
}

func (o *RemoveRecursiveOp) opInfo() (jute.OpCode, string) { return jute.OpRemoveRecursive, o.Path }
func (o *RemoveRecursiveOp) multiOp(root chroot) (jute.MultiOp, error) {
	sp, err := root.toServer(o.Path, false)
	return jute.MultiOp{Type: jute.OpRemoveRecursive, Body: &jute.RemoveRecursiveRequest{Path: sp, Limit: o.Limit}}, err
}

// requireOps asks for the extensions the ops of a Multi need.
func (c *Conn) requireOps(ctx context.Context, ops []Op) error {
	for _, o := range ops {
		op, _ := o.opInfo()
		if row := jute.LookupOp(op); row != nil && row.Ext != "" {
			if err := c.require(ctx, row.Ext); err != nil {
				return err
			}
		}
		if co, ok := o.(*CreateOp); ok {
			if err := c.requireMode(ctx, co.Mode); err != nil {
				return err
			}
		}
	}
	return nil
}
