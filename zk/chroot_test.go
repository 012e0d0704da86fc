package zk

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// testChroot runs every operation through a chroot and checks, with a client that has none,
// that requests land under it and that replies, created names and watch paths come back
// relative to it, including after a reconnect (setWatches).
func testChroot(t *testing.T, e *env) {
	root := e.ns(t)
	app := root + "/app"
	admin := dial(t, connString(e.servers, ""))
	ctx := testCtx(t)
	mustCreate(t, admin, app, nil, ModePersistent)
	mustCreate(t, admin, root+"/apple", nil, ModePersistent) // a sibling sharing the prefix
	ps := e.proxies(t, 1)
	c := dial(t, connString(proxyAddrs(ps), app))
	rec := recordStates(c)

	// Creates of every kind.
	if p := mustCreate(t, c, "/x", []byte("1"), ModePersistent); p != "/x" {
		t.Fatalf("create: %q", p)
	}
	catchUp(t, admin)
	if d, _, err := admin.Get(ctx, app+"/x"); err != nil || string(d) != "1" {
		t.Fatalf("created node seen without chroot: %q %v", d, err)
	}
	if p := mustCreate(t, c, "/x/s-", nil, ModePersistentSequential); p != "/x/s-0000000000" {
		t.Fatalf("sequential create: %q", p)
	}
	if p, st, err := c.Create2(ctx, "/y", nil, OpenACL(), ModePersistent); err != nil || p != "/y" || st.Czxid == 0 {
		t.Fatalf("create2: %q %v", p, err)
	}
	if p, _, err := c.CreateContainer(ctx, "/box", nil, OpenACL()); err != nil || p != "/box" {
		t.Fatalf("createContainer: %q %v", p, err)
	}
	if e.extendedTypes {
		if p, _, err := c.CreateTTL(ctx, "/ttl-", nil, OpenACL(), ModePersistentSequentialTTL, time.Hour); err != nil || p != "/ttl-0000000003" {
			t.Fatalf("createTTL: %q %v", p, err)
		}
	}

	// "/" is the chroot node itself.
	_, rootStat, err := admin.Exists(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	if ok, st, err := c.Exists(ctx, "/"); !ok || err != nil || st.Czxid != rootStat.Czxid {
		t.Fatalf("exists /: %v %v", ok, err)
	}
	kids, _, err := c.Children(ctx, "/")
	if err != nil || !slices.Contains(kids, "x") || !slices.Contains(kids, "y") {
		t.Fatalf("children of /: %v %v", kids, err)
	}

	// Reads, writes and metadata.
	if _, err := c.Set(ctx, "/x", []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	if d, _, err := c.Get(ctx, "/x"); err != nil || string(d) != "2" {
		t.Fatalf("get: %q %v", d, err)
	}
	if _, err := c.SetACL(ctx, "/y", ReadACL(), AnyVersion); err != nil {
		t.Fatal(err)
	}
	catchUp(t, admin)
	if acl, _, err := admin.GetACL(ctx, app+"/y"); err != nil || !slices.Equal(acl, ReadACL()) {
		t.Fatalf("ACL seen without chroot: %v %v", acl, err)
	}
	if acl, _, err := c.GetACL(ctx, "/y"); err != nil || !slices.Equal(acl, ReadACL()) {
		t.Fatalf("getACL: %v %v", acl, err)
	}
	if n, err := c.AllChildrenNumber(ctx, "/x"); err != nil || n != 1 {
		t.Fatalf("allChildrenNumber: %d %v", n, err)
	}
	if err := c.Sync(ctx, "/x"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "/y", AnyVersion); err != nil {
		t.Fatal(err)
	}
	catchUp(t, admin)
	if ok, _, _ := admin.Exists(ctx, app+"/y"); ok {
		t.Fatal("delete went elsewhere")
	}
	var oe *OpError
	if _, _, err := c.Get(ctx, "/nope"); !errors.As(err, &oe) || oe.Path != "/nope" || !errors.Is(err, ErrNoNode) {
		t.Fatalf("error path: %v", err)
	}

	// Ephemerals are listed relative to the chroot.
	mustCreate(t, c, "/e", nil, ModeEphemeral)
	for _, prefix := range []string{"", "/", "/e"} {
		if eph, err := c.Ephemerals(ctx, prefix); err != nil || !slices.Equal(eph, []string{"/e"}) {
			t.Fatalf("ephemerals(%q): %v %v", prefix, eph, err)
		}
	}

	// multi and multiRead.
	res, err := c.Multi(ctx,
		&CreateOp{Path: "/m", ACL: OpenACL()},
		&CreateOp{Path: "/m/s-", ACL: OpenACL(), Mode: ModePersistentSequential},
		&SetOp{Path: "/x", Data: []byte("3"), Version: AnyVersion},
		&CheckOp{Path: "/x", Version: 2},
		&DeleteOp{Path: "/m/s-0000000000", Version: AnyVersion},
	)
	if err != nil || res[0].Path != "/m" || res[1].Path != "/m/s-0000000000" {
		t.Fatalf("multi: %+v %v", res, err)
	}
	catchUp(t, admin)
	if ok, _, _ := admin.Exists(ctx, app+"/m"); !ok {
		t.Fatal("multi create went elsewhere")
	}
	_, err = c.Multi(ctx, &CheckOp{Path: "/nope", Version: AnyVersion})
	if !errors.As(err, &oe) || oe.Path != "/nope" || !errors.Is(err, ErrNoNode) {
		t.Fatalf("failed multi under chroot: %v", err)
	}
	rr, err := c.MultiRead(ctx, &GetOp{Path: "/x"}, &ChildrenOp{Path: "/x"})
	if err != nil || string(rr[0].Data) != "3" || !slices.Equal(rr[1].Children, []string{"s-0000000000"}) {
		t.Fatalf("multiRead: %+v %v", rr, err)
	}

	// Watch events carry client paths. (The child watch on "/" fires before the recursive
	// watch on "/" is added: ZooKeeper 3.8 lets addWatch change the mode of a session's
	// other watches on the same path, ZOOKEEPER-4466.)
	_, _, cw, _ := c.ChildrenW(ctx, "/")
	mustCreate(t, admin, app+"/new", nil, ModePersistent)
	expectEvent(t, cw, EventNodeChildrenChanged, "/")
	_, _, dw, _ := c.GetW(ctx, "/x")
	_, _, ew, _ := c.ExistsW(ctx, "/later")
	rw, err := c.AddWatch(ctx, "/", AddWatchPersistentRecursive)
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, admin, app+"/x", []byte("4"))
	expectEvent(t, dw, EventNodeDataChanged, "/x")
	expectEvent(t, rw.Events(), EventNodeDataChanged, "/x")
	mustCreate(t, admin, app+"/new/deep", nil, ModePersistent)
	expectEvent(t, rw.Events(), EventNodeCreated, "/new/deep")
	mustSet(t, admin, app, []byte("root"))
	expectEvent(t, rw.Events(), EventNodeDataChanged, "/")
	if err := c.CheckWatches(ctx, "/", WatcherAny); err != nil {
		t.Fatal(err)
	}

	// After a reconnect the re-registered watches still use the chroot.
	_, _, dw, _ = c.GetW(ctx, "/x")
	ps[0].DropAll()
	rec.waitFor(t, StateConnected, 2)
	// Requests are answered in order, so once this one is, setWatches has been processed.
	if _, _, err := c.Get(ctx, "/x"); err != nil {
		t.Fatal(err)
	}
	mustSet(t, admin, app+"/x", []byte("5"))
	mustCreate(t, admin, app+"/later", nil, ModePersistent)
	expectEvent(t, dw, EventNodeDataChanged, "/x")
	expectEvent(t, ew, EventNodeCreated, "/later")
	expectEvent(t, rw.Events(), EventNodeDataChanged, "/x")
	expectEvent(t, rw.Events(), EventNodeCreated, "/later")
	if err := rw.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, rw.Events(), EventPersistentWatchRemoved, "/")
	expectClosed(t, rw.Events())
}
