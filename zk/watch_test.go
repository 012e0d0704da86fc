package zk

import (
	"errors"
	"fmt"
	"testing"
)

func testOneShotWatches(t *testing.T, e *env) {
	c, _ := e.connect(t)
	ctx := testCtx(t)
	mustCreate(t, c, "/d", []byte("1"), ModePersistent)

	_, _, data1, err := c.GetW(ctx, "/d")
	if err != nil {
		t.Fatal(err)
	}
	_, _, data2, err := c.GetW(ctx, "/d") // two watchers, one server watch: both fire
	if err != nil {
		t.Fatal(err)
	}
	ok, _, exist, err := c.ExistsW(ctx, "/new")
	if err != nil || ok || exist == nil {
		t.Fatalf("existsW on a missing node: %v %v %v", ok, exist, err)
	}
	_, _, kids, err := c.ChildrenW(ctx, "/d")
	if err != nil {
		t.Fatal(err)
	}

	mustSet(t, c, "/d", []byte("2"))
	mustSet(t, c, "/d", []byte("3")) // one-shot: no second event
	expectEvent(t, data1, EventNodeDataChanged, "/d")
	expectClosed(t, data1)
	expectEvent(t, data2, EventNodeDataChanged, "/d")
	expectClosed(t, data2)

	mustCreate(t, c, "/new", nil, ModePersistent)
	expectEvent(t, exist, EventNodeCreated, "/new")
	expectClosed(t, exist)

	mustCreate(t, c, "/d/k", nil, ModePersistent)
	expectEvent(t, kids, EventNodeChildrenChanged, "/d")
	expectClosed(t, kids)

	// Deletion fires data, exists and child watches with NodeDeleted.
	ok, _, ex, err := c.ExistsW(ctx, "/new")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	_, _, dw, _ := c.GetW(ctx, "/new")
	_, _, cw, _ := c.ChildrenW(ctx, "/new")
	if err := c.Delete(ctx, "/new", AnyVersion); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan Event{ex, dw, cw} {
		expectEvent(t, ch, EventNodeDeleted, "/new")
		expectClosed(t, ch)
	}

	// A failed read leaves no watch and returns no channel.
	if _, _, ch, err := c.GetW(ctx, "/missing"); !errors.Is(err, ErrNoNode) || ch != nil {
		t.Fatalf("getW on a missing node: %v %v", ch, err)
	}
}

func testPersistentWatches(t *testing.T, e *env) {
	c, _ := e.connect(t)
	ctx := testCtx(t)
	mustCreate(t, c, "/p", nil, ModePersistent)
	mustCreate(t, c, "/r", nil, ModePersistent)

	pw, err := c.AddWatch(ctx, "/p", AddWatchPersistent)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := c.AddWatch(ctx, "/r", AddWatchPersistentRecursive)
	if err != nil {
		t.Fatal(err)
	}
	if pw.Path() != "/p" || pw.Mode() != AddWatchPersistent || rw.Mode() != AddWatchPersistentRecursive {
		t.Fatalf("watcher accessors: %s %v %v", pw.Path(), pw.Mode(), rw.Mode())
	}

	// A persistent watch sees every change of the node, data and children, and stays.
	for i := range 5 {
		mustSet(t, c, "/p", []byte{byte(i)})
	}
	mustCreate(t, c, "/p/c", nil, ModePersistent)
	mustCreate(t, c, "/p/c/deeper", nil, ModePersistent) // not a child of /p: no event
	if err := c.Delete(ctx, "/p/c/deeper", AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "/p/c", AnyVersion); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		expectEvent(t, pw.Events(), EventNodeDataChanged, "/p")
	}
	expectEvent(t, pw.Events(), EventNodeChildrenChanged, "/p")
	expectEvent(t, pw.Events(), EventNodeChildrenChanged, "/p")

	// A recursive watch sees creations, changes and deletions below, never child-list changes.
	mustCreate(t, c, "/r/a", nil, ModePersistent)
	mustCreate(t, c, "/r/a/b", nil, ModePersistent)
	mustSet(t, c, "/r/a/b", []byte("x"))
	mustSet(t, c, "/r", []byte("y"))
	if err := c.Delete(ctx, "/r/a/b", AnyVersion); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, rw.Events(), EventNodeCreated, "/r/a")
	expectEvent(t, rw.Events(), EventNodeCreated, "/r/a/b")
	expectEvent(t, rw.Events(), EventNodeDataChanged, "/r/a/b")
	expectEvent(t, rw.Events(), EventNodeDataChanged, "/r")
	expectEvent(t, rw.Events(), EventNodeDeleted, "/r/a/b")

	// Two watchers on one path share the server's watch; removing one keeps the other.
	pw2, err := c.AddWatch(ctx, "/p", AddWatchPersistent)
	if err != nil {
		t.Fatal(err)
	}
	if err := pw.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, pw.Events(), EventPersistentWatchRemoved, "/p")
	expectClosed(t, pw.Events())
	mustSet(t, c, "/p", []byte("after"))
	expectEvent(t, pw2.Events(), EventNodeDataChanged, "/p")
	// WatcherAny: ZooKeeper 3.8 cannot check persistent watches by type (ZOOKEEPER-4472).
	if err := c.CheckWatches(ctx, "/p", WatcherAny); err != nil {
		t.Fatalf("server watch gone while a watcher remains: %v", err)
	}
	if err := pw2.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, pw2.Events(), EventPersistentWatchRemoved, "/p")
	expectClosed(t, pw2.Events())
	if err := c.CheckWatches(ctx, "/p", WatcherAny); !errors.Is(err, ErrNoWatcher) {
		t.Fatalf("server watch after removing the last watcher: %v", err)
	}
	if err := pw2.Remove(ctx); err != nil {
		t.Fatalf("second Remove: %v", err)
	}

	// Stop ends a watch at once on the client.
	rw.Stop()
	for range rw.Events() {
	}
	mustSet(t, c, "/r", []byte("z"))
	if _, _, err := c.Get(ctx, "/r"); err != nil { // a round trip after the change
		t.Fatal(err)
	}
}

func testRemoveAndCheckWatches(t *testing.T, e *env) {
	c, _ := e.connect(t)
	ctx := testCtx(t)
	mustCreate(t, c, "/x", nil, ModePersistent)
	_, _, dw, _ := c.GetW(ctx, "/x")
	_, _, cw, _ := c.ChildrenW(ctx, "/x")

	if err := c.CheckWatches(ctx, "/x", WatcherData); err != nil {
		t.Fatalf("check data watch: %v", err)
	}
	// ZooKeeper 3.8 answers MARSHALLINGERROR for persistent watcher types (ZOOKEEPER-4472).
	if err := c.CheckWatches(ctx, "/x", WatcherPersistent); !errors.Is(err, ErrNoWatcher) && !errors.Is(err, ErrMarshallingError) {
		t.Fatalf("check missing persistent watch: %v", err)
	}
	if err := c.RemoveWatches(ctx, "/x", WatcherData); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, dw, EventDataWatchRemoved, "/x")
	expectClosed(t, dw)
	// The child watch is untouched.
	mustCreate(t, c, "/x/k", nil, ModePersistent)
	expectEvent(t, cw, EventNodeChildrenChanged, "/x")

	if err := c.RemoveWatches(ctx, "/x", WatcherAny); !errors.Is(err, ErrNoWatcher) {
		t.Fatalf("remove with nothing left: %v", err)
	}
	_, _, cw, _ = c.ChildrenW(ctx, "/x")
	if err := c.RemoveWatches(ctx, "/x", WatcherAny); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, cw, EventChildWatchRemoved, "/x")
	if err := c.CheckWatches(ctx, "/x", WatcherType(9)); !errors.Is(err, ErrBadArguments) {
		t.Fatalf("bad watcher type: %v", err)
	}
}

// testSlowWatchConsumer checks that a watch nobody reads never holds up the connection, and
// that its events are all delivered, in order, once read.
func testSlowWatchConsumer(t *testing.T, e *env) {
	c, _ := e.connect(t)
	ctx := testCtx(t)
	mustCreate(t, c, "/s", nil, ModePersistent)
	w, err := c.AddWatch(ctx, "/s", AddWatchPersistent)
	if err != nil {
		t.Fatal(err)
	}
	const n = 500 // far more than the channel buffers
	for i := range n {
		if _, err := c.Set(ctx, "/s", []byte(fmt.Sprint(i)), int32(i)); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		expectEvent(t, w.Events(), EventNodeDataChanged, "/s")
	}
	expectNoEvent(t, w.Events())
	w.Stop()
	expectClosed(t, w.Events())
}
