package server_test

import (
	"testing"

	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/zktest"
)

// nextNotification reads c's next frame, which must be a notification.
func nextNotification(t *testing.T, c *rawzk.Client) (jute.ReplyHeader, jute.WatcherEvent) {
	t.Helper()
	b, err := c.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	d := jute.NewDecoder(b)
	var h jute.ReplyHeader
	var ev jute.WatcherEvent
	h.Decode(d)
	ev.Decode(d)
	if d.Err() != nil || h.Xid != jute.XidNotification {
		t.Fatalf("frame % x: want a notification (%v)", b, d.Err())
	}
	return h, ev
}

// TestNotificationCarriesTxnZxid: a notification's header holds the zxid of the txn that
// fired the watch, as ZooKeeper 3.9 sends it (ZOOKEEPER-4655; 3.8 sends -1), and -1 for
// the events setWatches sends at once, which no txn fired.
func TestNotificationCarriesTxnZxid(t *testing.T) {
	z := zktest.Start(t)
	a, b := rawzk.Connect(t, z.Addr()), rawzk.Connect(t, z.Addr())
	b.Call(jute.OpCreate, &jute.CreateRequest{Path: "/n", ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{})
	a.Call(jute.OpGetData, &jute.PathWatchRequest{Path: "/n", Watch: true}, &jute.GetDataResponse{})
	h := b.Call(jute.OpSetData, &jute.SetDataRequest{Path: "/n", Data: []byte("x"), Version: -1}, &jute.StatResponse{})
	nh, ev := nextNotification(t, a)
	if ev.Type != jute.EventNodeDataChanged || nh.Zxid != h.Zxid {
		t.Fatalf("notification %v zxid %#x, want NodeDataChanged with the setData's zxid %#x", ev.Type, nh.Zxid, h.Zxid)
	}
	// Inside a multi every event carries the multi's zxid.
	a.Call(jute.OpGetChildren, &jute.PathWatchRequest{Path: "/n", Watch: true}, &jute.GetChildrenResponse{})
	h = b.Call(jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpCreate, Body: &jute.CreateRequest{Path: "/n/c", ACL: jute.OpenACLUnsafe}},
	}}, &jute.MultiResponse{})
	if nh, ev = nextNotification(t, a); ev.Type != jute.EventNodeChildrenChanged || nh.Zxid != h.Zxid {
		t.Fatalf("notification %v zxid %#x, want NodeChildrenChanged with the multi's zxid %#x", ev.Type, nh.Zxid, h.Zxid)
	}
	// setWatches: /gone is missing, so NodeDeleted goes out at once, fired by no txn.
	a.SendXid(jute.XidSetWatches, jute.OpSetWatches, &jute.SetWatches{DataWatches: []string{"/gone"}, ExistWatches: []string{}, ChildWatches: []string{}})
	if nh, ev = nextNotification(t, a); ev.Type != jute.EventNodeDeleted || nh.Zxid != -1 {
		t.Fatalf("setWatches' notification %v zxid %#x, want NodeDeleted with -1", ev.Type, nh.Zxid)
	}
}
