package zk

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/zkd-io/zkd/internal/testing/faultnet"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// testGetConfig: getConfig reads the server's /zookeeper/config whatever the chroot (a
// standalone server's is empty), as a getData of it without the chroot does.
func testGetConfig(t *testing.T, e *env) {
	c, root := e.connect(t)
	raw := e.connectRaw(t)
	ctx := testCtx(t)
	want, wantSt, err := raw.Get(ctx, ConfigNode)
	if err != nil {
		t.Fatal(err)
	}
	if wantSt.Aversion != -1 {
		t.Errorf("/zookeeper/config's aversion is %d, want -1 (its READ-only ACL is set at start)", wantSt.Aversion)
	}
	data, st, err := c.GetConfig(ctx)
	if err != nil || !bytes.Equal(data, want) || *st != *wantSt {
		t.Fatalf("GetConfig under chroot %s = %q %+v %v, want %q %+v", root, data, st, err, want, wantSt)
	}
	// The chroot applies to Get, not to GetConfig.
	if _, _, err := c.Get(ctx, ConfigNode); !errors.Is(err, ErrNoNode) {
		t.Errorf("Get(%s) under chroot %s: %v, want NONODE", ConfigNode, root, err)
	}
	data, st, ch, err := c.GetConfigW(ctx)
	if err != nil || !bytes.Equal(data, want) || *st != *wantSt || ch == nil {
		t.Fatalf("GetConfigW = %q %+v %v %v", data, st, ch, err)
	}
	type res struct {
		data []byte
		st   *Stat
	}
	r, err := Go(ctx, func(ctx context.Context) (res, error) {
		data, st, err := c.GetConfig(ctx)
		return res{data, st}, err
	}).Wait(ctx)
	if err != nil || !bytes.Equal(r.data, want) || *r.st != *wantSt {
		t.Fatalf("GetConfig with Go = %q %+v %v", r.data, r.st, err)
	}
}

// TestGetConfigWatch: getConfig's watch fires on a change of the server's /zookeeper/config
// for a chrooted client, with the node's own path, also when the change happened while the
// client was disconnected (the watch is re-set unchrooted), and RemoveWatches ends it.
func TestGetConfigWatch(t *testing.T) {
	const superPw = "pw"
	s := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.SuperDigest = DigestID("super", superPw) }))
	ctx := testCtx(t)
	su := dial(t, s.Addr())
	if err := su.AddAuth(ctx, "digest", []byte("super:"+superPw)); err != nil {
		t.Fatal(err)
	}
	// A super user may write the node (ZooKeeper checks only its ACL), which stands in
	// here for a reconfiguration.
	set := func(text string) {
		t.Helper()
		if _, err := su.Set(ctx, ConfigNode, []byte(text), AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, su, "/app", nil, ModePersistent)
	p, err := faultnet.Start(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c := dial(t, p.Addr()+"/app")
	rec := recordStates(c)

	_, _, ch, err := c.GetConfigW(ctx)
	if err != nil {
		t.Fatal(err)
	}
	set("version=1")
	expectEvent(t, ch, EventNodeDataChanged, ConfigNode)
	expectClosed(t, ch)

	data, _, ch, err := c.GetConfigW(ctx)
	if err != nil || string(data) != "version=1" {
		t.Fatalf("GetConfigW after the change = %q %v", data, err)
	}
	p.SetRefuse(true)
	p.DropAll()
	rec.waitFor(t, StateDisconnected, 1)
	set("version=2")
	p.SetRefuse(false)
	expectEvent(t, ch, EventNodeDataChanged, ConfigNode)

	// Without a chroot, removing the data watches of /zookeeper/config ends getConfig's.
	raw := dial(t, s.Addr())
	if _, _, ch, err = raw.GetConfigW(ctx); err != nil {
		t.Fatal(err)
	}
	if err := raw.RemoveWatches(ctx, ConfigNode, WatcherData); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, ch, EventDataWatchRemoved, ConfigNode)
	expectClosed(t, ch)
}
