package server_test

import (
	"slices"
	"testing"

	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// rawAuth sends an auth packet (xid -4) and fails the test unless it succeeds.
func rawAuth(t *testing.T, c *rawzk.Client, scheme, cred string) {
	t.Helper()
	xid := c.SendXid(jute.XidAuth, jute.OpAuth, &jute.AuthPacket{Scheme: scheme, Auth: []byte(cred)})
	if h, err := c.Reply(xid, nil); err != nil || h.Err != jute.OK {
		t.Fatalf("auth %s: %v %v", scheme, h.Err, err)
	}
}

// takeEvents returns the notifications c received so far and forgets them. A round trip
// first: every event a write caused is queued on the watcher's connection before the
// write's reply, so an answer to a request sent after that reply comes after the event.
func takeEvents(c *rawzk.Client) []string {
	c.Call(jute.OpExists, &jute.ExistsRequest{Path: "/"}, &jute.ExistsResponse{})
	var out []string
	for _, e := range c.Events {
		out = append(out, e.Type.String()+" "+e.Path)
	}
	c.Events = nil
	return out
}

func requireEvents(t *testing.T, who string, c *rawzk.Client, want ...string) {
	t.Helper()
	if got := takeEvents(c); !slices.Equal(got, want) {
		t.Errorf("%s got events %q, want %q", who, got, want)
	}
}

// TestWatchEventsNeedRead: as ZooKeeper 3.8.4+/3.9.2+ (CVE-2024-23944), a watch event
// reaches a connection only when its credentials have READ on the node the event is about,
// as its ACL stood at the change (the parent's for NodeChildrenChanged, the deleted node's
// for NodeDeleted), for every mode of watch; a one-shot watch whose event is withheld is
// used up all the same; super sees everything.
func TestWatchEventsNeedRead(t *testing.T) {
	const superPw = "s3cret"
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.SuperDigest = auth.DigestID("super", superPw)
	}))
	alice := rawzk.Connect(t, srv.Addr())
	rawAuth(t, alice, "digest", "alice:pw")
	w := rawzk.Connect(t, srv.Addr()) // no credentials but its ip
	su := rawzk.Connect(t, srv.Addr())
	rawAuth(t, su, "digest", "super:"+superPw)
	friend := rawzk.Connect(t, srv.Addr())
	rawAuth(t, friend, "digest", "alice:pw")

	call := func(c *rawzk.Client, op jute.OpCode, body, resp jute.Record) jute.Code {
		t.Helper()
		return c.Call(op, body, resp).Err
	}
	mustOK := func(c *rawzk.Client, op jute.OpCode, body, resp jute.Record) {
		t.Helper()
		if code := call(c, op, body, resp); code != jute.OK {
			t.Fatalf("%v: %v", op, code)
		}
	}
	create := func(path string, acl []jute.ACL) {
		t.Helper()
		mustOK(alice, jute.OpCreate, &jute.CreateRequest{Path: path, ACL: acl}, &jute.CreateResponse{})
	}
	setData := func(path string) {
		t.Helper()
		mustOK(alice, jute.OpSetData, &jute.SetDataRequest{Path: path, Version: -1}, &jute.SetDataResponse{})
	}
	setACL := func(path string, acl []jute.ACL) {
		t.Helper()
		mustOK(alice, jute.OpSetACL, &jute.SetACLRequest{Path: path, ACL: acl, Version: -1}, &jute.SetACLResponse{})
	}
	addWatch := func(c *rawzk.Client, path string, mode int32) {
		t.Helper()
		mustOK(c, jute.OpAddWatch, &jute.AddWatchRequest{Path: path, Mode: mode}, &jute.ErrorResponse{})
	}
	private := jute.CreatorAllACL

	create("/s", private)
	create("/o", jute.OpenACLUnsafe)
	for _, c := range []*rawzk.Client{w, su, friend} {
		addWatch(c, "/s", jute.AddWatchPersistent)
		addWatch(c, "/", jute.AddWatchPersistentRecursive)
	}
	mustOK(w, jute.OpGetChildren, &jute.GetChildrenRequest{Path: "/", Watch: true}, &jute.GetChildrenResponse{})
	if code := call(w, jute.OpExists, &jute.ExistsRequest{Path: "/n", Watch: true}, &jute.ExistsResponse{}); code != jute.ErrNoNode {
		t.Fatalf("exists /n: %v", code)
	}

	noWatch := func(c *rawzk.Client, path string, typ jute.WatcherType) {
		t.Helper()
		if code := call(c, jute.OpCheckWatches, &jute.WatchesRequest{Path: path, Type: typ}, nil); code != jute.ErrNoWatcher {
			t.Errorf("checkWatches %s %v: %v, want NOWATCHER (the watch was used up)", path, typ, code)
		}
	}
	both := func(want ...string) {
		t.Helper()
		requireEvents(t, "super", su, want...)
		requireEvents(t, "alice's other connection", friend, want...)
	}

	// Persistent and recursive watches on an unreadable node: nothing for w.
	setData("/s")
	requireEvents(t, "w", w)
	both("NodeDataChanged /s")

	// A readable child of an unreadable parent: its own event passes, the parent's
	// NodeChildrenChanged (checked against the parent's ACL) does not.
	create("/s/k", jute.OpenACLUnsafe)
	requireEvents(t, "w", w, "NodeCreated /s/k")
	both("NodeCreated /s/k", "NodeChildrenChanged /s")

	// An exist watch on a node born unreadable is used up without an event; the root's
	// child watch fires (the root is readable).
	create("/n", private)
	requireEvents(t, "w", w, "NodeChildrenChanged /")
	both("NodeCreated /n")
	noWatch(w, "/n", jute.WatcherData)

	// NodeDeleted is checked against the deleted node's ACL.
	mustOK(alice, jute.OpDelete, &jute.DeleteRequest{Path: "/n", Version: -1}, nil)
	requireEvents(t, "w", w)
	both("NodeDeleted /n")
	mustOK(alice, jute.OpDelete, &jute.DeleteRequest{Path: "/s/k", Version: -1}, nil)
	requireEvents(t, "w", w, "NodeDeleted /s/k")
	both("NodeDeleted /s/k", "NodeChildrenChanged /s")

	// The ACL at the time of the change counts, not the one when the watch was set; the
	// one-shot watch is used up either way.
	mustOK(w, jute.OpGetData, &jute.GetDataRequest{Path: "/o", Watch: true}, &jute.GetDataResponse{})
	setACL("/o", private)
	setData("/o")
	requireEvents(t, "w", w)
	both("NodeDataChanged /o")
	noWatch(w, "/o", jute.WatcherData)
	setACL("/o", jute.OpenACLUnsafe)
	setData("/o")
	requireEvents(t, "w", w, "NodeDataChanged /o") // the recursive watch only
	both("NodeDataChanged /o")

	// The connection's ip id counts as a credential.
	create("/ip", []jute.ACL{{Perms: jute.PermRead, ID: jute.ID{Scheme: "ip", ID: "127.0.0.0/8"}}, private[0]})
	requireEvents(t, "w", w, "NodeCreated /ip")
	both("NodeCreated /ip")
}

// TestWatchEventsSkipACL: with skipACL nothing is checked, watch events included.
func TestWatchEventsSkipACL(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.SkipACL = true }))
	alice := rawzk.Connect(t, srv.Addr())
	rawAuth(t, alice, "digest", "alice:pw")
	w := rawzk.Connect(t, srv.Addr())
	w.Call(jute.OpAddWatch, &jute.AddWatchRequest{Path: "/", Mode: jute.AddWatchPersistentRecursive}, &jute.ErrorResponse{})
	if h := alice.Call(jute.OpCreate, &jute.CreateRequest{Path: "/s", ACL: jute.CreatorAllACL}, &jute.CreateResponse{}); h.Err != jute.OK {
		t.Fatal(h.Err)
	}
	requireEvents(t, "w", w, "NodeCreated /s")
}
