package server_test

import (
	"testing"

	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
)

// roHandshake opens a session on addr asking for read-only (or not).
func roHandshake(t *testing.T, addr string, readOnly bool, id int64, pw []byte) (*rawzk.Client, *jute.ConnectResponse, error) {
	t.Helper()
	c := rawzk.Dial(t, addr)
	if pw == nil {
		pw = make([]byte, 16)
	}
	resp, err := c.Handshake(&jute.ConnectRequest{TimeOut: 10000, SessionID: id, Passwd: pw, ReadOnly: readOnly, HasReadOnly: true})
	return c, resp, err
}

// TestReadOnlyMode cuts one member of three off its quorum: it serves reads to read-only
// clients and refuses everything else, as ZooKeeper's read-only server, until the others
// come back.
func TestReadOnlyMode(t *testing.T) {
	e := startEnsembleConfig(t, 3, func(c *server.Config) { c.ReadOnlyMode = true })
	e.waitServing()
	li := e.leaderIndex()
	survivor := (li + 1) % 3
	addr := e.members[survivor].cfg.ListenAddr

	// A global session and a node, seen by the survivor.
	g := rawzk.Connect(t, addr)
	if h := g.Call(jute.OpCreate, &jute.CreateRequest{Path: "/ro", Data: []byte("data"), ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "world", ID: "anyone"}}}}, &jute.CreateResponse{}); h.Err != jute.OK {
		t.Fatalf("create: %v", h.Err)
	}
	g.NC.Close()
	if got := fourLetter(t, addr, "isro"); got != "rw" {
		t.Fatalf("isro on a follower = %q, want rw", got)
	}

	for i := range e.members {
		if i != survivor {
			e.stop(i)
		}
	}
	waitFor(t, "the survivor to serve read-only", func() bool { return e.members[survivor].srv.Mode() == "read-only" })
	if got := fourLetter(t, addr, "isro"); got != "ro" {
		t.Fatalf("isro = %q, want ro", got)
	}

	// A read-write client is refused without an answer.
	if _, _, err := roHandshake(t, addr, false, 0, nil); err == nil {
		t.Fatal("read-write client got a session from a read-only server")
	}
	// The global session cannot come back here: the quorum owns it.
	if _, _, err := roHandshake(t, addr, true, g.Session, g.Passwd); err == nil {
		t.Fatal("global session reconnected to a read-only server")
	}

	c, resp, err := roHandshake(t, addr, true, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.ReadOnly || resp.SessionID == 0 || resp.SessionID>>56 != e.members[survivor].cfg.ServerID {
		t.Fatalf("connect response %+v: want readOnly and a session id of server %d", resp, e.members[survivor].cfg.ServerID)
	}
	var get jute.GetDataResponse
	if h := c.Call(jute.OpGetData, &jute.PathWatchRequest{Path: "/ro"}, &get); h.Err != jute.OK || string(get.Data) != "data" {
		t.Fatalf("read in read-only mode: %v %q", h.Err, get.Data)
	}
	var get0 jute.GetDataResponse
	zxid := c.Call(jute.OpGetData, &jute.PathWatchRequest{Path: "/ro"}, &get0).Zxid
	for _, w := range []struct {
		op   jute.OpCode
		body jute.Record
	}{
		{jute.OpCreate, &jute.CreateRequest{Path: "/w", ACL: []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "world", ID: "anyone"}}}}},
		{jute.OpSetData, &jute.SetDataRequest{Path: "/ro", Version: -1}},
		{jute.OpDelete, &jute.PathVersionRequest{Path: "/ro", Version: -1}},
		{jute.OpSync, &jute.PathRequest{Path: "/ro"}},
		{jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{{Type: jute.OpCheck, Body: &jute.PathVersionRequest{Path: "/ro", Version: -1}}}}},
	} {
		if h := c.Call(w.op, w.body, nil); h.Err != jute.ErrNotReadOnly || h.Zxid != zxid {
			t.Errorf("%v in read-only mode: %v zxid %#x, want NOTREADONLY zxid %#x", w.op, h.Err, h.Zxid, zxid)
		}
	}
	// The local session reconnects on a new connection.
	c2, resp2, err := roHandshake(t, addr, true, c.Session, c.Passwd)
	if err != nil || resp2.SessionID != c.Session || !resp2.ReadOnly {
		t.Fatalf("local session reconnect: %+v %v", resp2, err)
	}
	if !c.Closed() {
		t.Fatal("old connection of the reconnected session stays open")
	}

	// The quorum comes back: the read-only server shuts and closes its clients.
	for i := range e.members {
		if i != survivor {
			e.start(i)
		}
	}
	e.waitServing()
	if !c2.Closed() {
		t.Fatal("read-only connection stays open after the quorum formed")
	}
	if got := fourLetter(t, addr, "isro"); got != "rw" {
		t.Fatalf("isro after rejoining = %q, want rw", got)
	}
	// The local session is gone, the global one lives on.
	if _, resp, err := roHandshake(t, addr, false, c.Session, c.Passwd); err != nil || resp.SessionID != 0 {
		t.Fatalf("local session after read-only mode: %+v %v", resp, err)
	}
	if _, resp, err := roHandshake(t, addr, false, g.Session, g.Passwd); err != nil || resp.SessionID != g.Session {
		t.Fatalf("global session after read-only mode: %+v %v", resp, err)
	}
}
