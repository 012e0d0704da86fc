package zk

import (
	"errors"
	"slices"
	"testing"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// TestKeeperOpsChroot: the keeper-ops calls go through the chroot like the others: paths
// are sent under it and come back without it.
func TestKeeperOpsChroot(t *testing.T) {
	s := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.Extensions = ext.Of(ext.KeeperOps) }))
	ctx := testCtx(t)
	raw := dial(t, s.Addr())
	if _, err := raw.Create(ctx, "/root", nil, OpenACL(), ModePersistent); err != nil {
		t.Fatal(err)
	}
	c := dial(t, s.Addr()+"/root")
	p, st, err := c.CreateWithParents(ctx, "/a/b", []byte("x"), OpenACL(), ModePersistent)
	if err != nil || p != "/a/b" || st.DataLength != 1 {
		t.Fatalf("createWithParents: %q %+v %v", p, st, err)
	}
	if p, err := c.CreateIfNotExists(ctx, "/a/b", nil, OpenACL(), ModePersistent); err != nil || p != "/a/b" {
		t.Fatalf("createIfNotExists of an existing node: %q %v", p, err)
	}
	if _, err := c.Create(ctx, "/a/e", nil, OpenACL(), ModeEphemeral); err != nil {
		t.Fatal(err)
	}
	names, _, err := c.FilteredList(ctx, "/a", ListEphemeralOnly)
	if err != nil || !slices.Equal(names, []string{"e"}) {
		t.Fatalf("filteredList: %v %v", names, err)
	}
	res, err := c.Multi(ctx, &CheckNotExistsOp{Path: "/z", Version: AnyVersion}, &CreateIfNotExistsOp{Path: "/z", ACL: OpenACL()})
	if err != nil || res[1].Path != "/z" {
		t.Fatalf("multi: %+v %v", res, err)
	}
	if err := c.RemoveRecursive(ctx, "/a", 10); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := raw.Exists(ctx, "/root/a"); ok {
		t.Error("/root/a survived")
	}
	if ok, _, _ := raw.Exists(ctx, "/root/z"); !ok {
		t.Error("/root/z was not created under the chroot")
	}
	if _, _, err := c.CreateWithParents(ctx, "/t", nil, OpenACL(), ModePersistentTTL); !errors.Is(err, ErrBadArguments) {
		t.Errorf("a TTL mode: %v", err)
	}
}
