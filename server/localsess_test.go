package server_test

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
)

func startLocalSessions(t *testing.T, upgrading bool) *testEnsemble {
	e := startEnsembleConfig(t, 3, func(c *server.Config) {
		c.LocalSessions, c.LocalSessionsUpgrading = true, upgrading
		c.FourLetterWhitelist = []string{"mntr", "srvr"}
	})
	e.waitServing()
	return e
}

// zxids are the members' last applied zxids.
func (e *testEnsemble) zxids() []int64 {
	var out []int64
	for _, m := range e.members {
		out = append(out, server.LastZxid(m.srv))
	}
	return out
}

// settled waits until every member applied zxid.
func (e *testEnsemble) settled(zxid int64) {
	e.t.Helper()
	waitFor(e.t, "every member to apply the last txn", func() bool {
		for _, z := range e.zxids() {
			if z != zxid {
				return false
			}
		}
		return true
	})
}

// loggedSessionTxns lists the session ids of the createSession and closeSession txns in a
// member's log.
func loggedSessionTxns(t *testing.T, m *ensembleMember) (created, closed map[int64]bool) {
	t.Helper()
	created, closed = map[int64]bool{}, map[int64]bool{}
	_, err := storage.ReadLog(storage.OSFS{}, filepath.Join(m.cfg.DataDir, "version-2"), 0, func(_ int64, b []byte) error {
		txn, err := jute.DecodeTxn(b)
		if err != nil {
			return err
		}
		switch txn.Header.Type {
		case jute.OpCreateSession:
			created[txn.Header.ClientID] = true
		case jute.OpCloseSession:
			closed[txn.Header.ClientID] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return created, closed
}

func handshake(t *testing.T, addr string, id int64, pw []byte, timeout int32) (*rawzk.Client, *jute.ConnectResponse) {
	t.Helper()
	c := rawzk.Dial(t, addr)
	if pw == nil {
		pw = make([]byte, 16)
	}
	resp, err := c.Handshake(&jute.ConnectRequest{TimeOut: timeout, SessionID: id, Passwd: pw, HasReadOnly: true})
	if err != nil {
		t.Fatalf("handshake with %s: %v", addr, err)
	}
	return c, resp
}

// TestLocalSessionsUpgrade: a session made on a follower with local sessions is no quorum
// txn; it reads and writes persistent nodes; its first ephemeral create upgrades it with a
// createSession txn, after which it is an ordinary global session.
func TestLocalSessionsUpgrade(t *testing.T) {
	e := startLocalSessions(t, true)
	li := e.leaderIndex()
	fi := (li + 1) % 3
	other := (li + 2) % 3
	f := e.members[fi]
	before := e.zxids()[li]
	e.settled(before)

	c, resp := handshake(t, f.cfg.ListenAddr, 0, nil, 30000)
	if resp.SessionID == 0 || resp.SessionID>>56 != f.cfg.ServerID {
		t.Fatalf("session id %#x: want one of server %d", resp.SessionID, f.cfg.ServerID)
	}
	c.Session, c.Passwd = resp.SessionID, resp.Passwd
	if known, local := server.SessionKind(f.srv, c.Session); !known || !local {
		t.Fatalf("follower: session known %v, local %v", known, local)
	}
	for i, m := range e.members {
		if i != fi {
			if known, _ := server.SessionKind(m.srv, c.Session); known {
				t.Fatalf("member %d knows the follower's local session", i)
			}
		}
	}
	if got := e.zxids(); got[li] != before || got[fi] != before {
		t.Fatalf("zxids %x after a local session, want %x: it was a txn", got, before)
	}

	// A persistent create goes through the leader without upgrading the session.
	h := c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/p", Data: []byte("v"), ACL: openACL}, &jute.CreateResponse{})
	if h.Err != jute.OK {
		t.Fatalf("persistent create: %v", h.Err)
	}
	// The first txn of the leader's epoch: the session made none.
	if h.Zxid&0xffffffff != 1 {
		t.Fatalf("persistent create's zxid %#x: want the epoch's first", h.Zxid)
	}
	before = h.Zxid - 1
	var get jute.GetDataResponse
	if h := c.Call(jute.OpGetData, &jute.PathWatchRequest{Path: "/p"}, &get); h.Err != jute.OK || string(get.Data) != "v" {
		t.Fatalf("read: %v %q", h.Err, get.Data)
	}
	e.settled(before + 1)
	if _, local := server.SessionKind(f.srv, c.Session); !local {
		t.Fatal("a persistent create upgraded the session")
	}
	// mntr counts it as ZooKeeper does: a local session of the follower, no global one.
	m := mntrLines(t, fourLetter(t, f.cfg.ListenAddr, "mntr"))
	if l, _ := mntrInt(m, "local_sessions"); l != 1 {
		t.Errorf("follower's local_sessions = %s, want 1", m["local_sessions"])
	}
	if g, _ := mntrInt(m, "global_sessions"); g != 0 {
		t.Errorf("follower's global_sessions = %s, want 0", m["global_sessions"])
	}

	// An ephemeral create: a createSession txn first, then the create.
	var cr jute.Create2Response
	if h := c.Call(jute.OpCreate2, &jute.CreateRequest{Path: "/e", ACL: openACL, Flags: jute.FlagEphemeral}, &cr); h.Err != jute.OK {
		t.Fatalf("ephemeral create: %v", h.Err)
	}
	if cr.Stat.EphemeralOwner != c.Session || cr.Stat.Czxid != before+3 {
		t.Fatalf("ephemeral stat %+v: want owner %#x, czxid %#x (after the upgrade's createSession)", cr.Stat, c.Session, before+3)
	}
	e.settled(before + 3)
	for i, m := range e.members {
		known, local := server.SessionKind(m.srv, c.Session)
		if !known || local {
			t.Fatalf("member %d after the upgrade: known %v, local %v", i, known, local)
		}
	}
	created, _ := loggedSessionTxns(t, e.members[li])
	if !created[c.Session] {
		t.Fatal("the leader's log has no createSession for the upgraded session")
	}

	// A second local session, closed: neither its creation nor its close is a txn.
	c2, resp2 := handshake(t, e.members[other].cfg.ListenAddr, 0, nil, 30000)
	c2.Session = resp2.SessionID
	if h := c2.Call(jute.OpCloseSession, nil, nil); h.Err != jute.OK {
		t.Fatalf("close of a local session: %v", h.Err)
	}
	c2.NC.SetReadDeadline(time.Now().Add(60 * time.Second))
	if _, err := c2.ReadFrame(); err == nil {
		t.Fatal("connection open after closeSession")
	}
	if known, _ := server.SessionKind(e.members[other].srv, c2.Session); known {
		t.Fatal("closed local session still known")
	}
	// A write after it, so the check below sees everything logged up to now.
	if h := c.Call(jute.OpSetData, &jute.SetDataRequest{Path: "/p", Data: []byte("w"), Version: -1}, &jute.StatResponse{}); h.Err != jute.OK {
		t.Fatalf("setData: %v", h.Err)
	}
	e.settled(before + 4)
	for i, m := range e.members {
		created, closed := loggedSessionTxns(t, m)
		if created[c2.Session] || closed[c2.Session] {
			t.Fatalf("member %d logged a txn of a local session", i)
		}
	}

	// Closing the upgraded session is a quorum txn that removes its ephemeral everywhere.
	if h := c.Call(jute.OpCloseSession, nil, nil); h.Err != jute.OK {
		t.Fatalf("close of the upgraded session: %v", h.Err)
	}
	e.settled(before + 5)
	r := rawzk.Connect(t, e.members[li].cfg.ListenAddr)
	if h := r.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/e"}, &jute.StatResponse{}); h.Err != jute.ErrNoNode {
		t.Fatalf("ephemeral after its session closed: %v", h.Err)
	}
}

// TestLocalSessionsNoUpgrade: without upgrading, an ephemeral create on a local session
// fails with EPHEMERALONLOCALSESSION, on a follower as on the leader, and creates nothing.
func TestLocalSessionsNoUpgrade(t *testing.T) {
	e := startLocalSessions(t, false)
	li := e.leaderIndex()
	for _, i := range []int{(li + 1) % 3, li} {
		c, resp := handshake(t, e.members[i].cfg.ListenAddr, 0, nil, 30000)
		c.Session = resp.SessionID
		for _, op := range []jute.OpCode{jute.OpCreate, jute.OpCreate2} {
			h := c.Call(op, &jute.CreateRequest{Path: "/e", ACL: openACL, Flags: jute.FlagEphemeralSequential}, &jute.CreateResponse{})
			if h.Err != jute.ErrEphemeralOnLocalSession {
				t.Fatalf("member %d (%s) op %d: ephemeral create answered %v, want %v", i, e.modes()[i], op, h.Err, jute.ErrEphemeralOnLocalSession)
			}
		}
		multi := &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpCreate, Body: &jute.CreateRequest{Path: "/m", ACL: openACL}},
			{Type: jute.OpCreate, Body: &jute.CreateRequest{Path: "/m/e", ACL: openACL, Flags: jute.FlagEphemeral}},
		}}
		// Op by op, as ZooKeeper answers it: the leader fails the create for the local
		// session, a follower's leader for a session it does not know.
		want := jute.ErrSessionExpired
		if i == li {
			want = jute.ErrEphemeralOnLocalSession
		}
		checkMultiFailed(t, c, multi, want)
		if h := c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/p", ACL: openACL}, &jute.CreateResponse{}); h.Err != jute.OK && h.Err != jute.ErrNodeExists {
			t.Fatalf("member %d: persistent create: %v", i, h.Err)
		}
		for _, p := range []string{"/m", "/m/e"} {
			if h := c.Call(jute.OpExists, &jute.PathWatchRequest{Path: p}, &jute.StatResponse{}); h.Err != jute.ErrNoNode {
				t.Fatalf("member %d: %s after a failed create: %v", i, p, h.Err)
			}
		}
		var ch jute.StringsResponse
		if h := c.Call(jute.OpGetChildren, &jute.PathWatchRequest{Path: "/"}, &ch); h.Err != jute.OK {
			t.Fatal(h.Err)
		}
		for _, name := range ch.Strings {
			if name != "p" && name != "zookeeper" {
				t.Fatalf("member %d: unexpected node /%s", i, name)
			}
		}
		if known, local := server.SessionKind(e.members[i].srv, c.Session); !known || !local {
			t.Fatalf("member %d: session known %v, local %v: want still local", i, known, local)
		}
	}
	for i, m := range e.members {
		if created, _ := loggedSessionTxns(t, m); len(created) != 0 {
			t.Fatalf("member %d logged createSession txns %v", i, created)
		}
	}
}

// TestLocalSessionsExpireAndMove: a local session lives on its member alone. Its member
// takes it back on a reconnect; another member answers it as expired; when its client goes
// quiet its member expires it, without a txn, and then answers it as expired too.
func TestLocalSessionsExpireAndMove(t *testing.T) {
	e := startLocalSessions(t, true)
	li := e.leaderIndex()
	for _, i := range []int{(li + 1) % 3, li} {
		m := e.members[i]
		zxid := server.LastZxid(m.srv)
		c, resp := handshake(t, m.cfg.ListenAddr, 0, nil, 30000)
		id, pw := resp.SessionID, resp.Passwd
		c.NC.Close()
		for j, o := range e.members {
			if j == i {
				continue
			}
			if _, r := handshake(t, o.cfg.ListenAddr, id, pw, 30000); r.SessionID != 0 {
				t.Fatalf("member %d took member %d's local session: %+v", j, i, r)
			}
		}
		back, r := handshake(t, m.cfg.ListenAddr, id, pw, 400)
		if r.SessionID != id {
			t.Fatalf("member %d (%s) refused its own local session back: %+v", i, e.modes()[i], r)
		}
		// No pings: the member expires it and closes the connection.
		back.NC.SetReadDeadline(time.Now().Add(60 * time.Second))
		if _, err := back.ReadFrame(); err == nil {
			t.Fatal("a frame on a quiet session's connection")
		}
		waitFor(t, "the local session to expire", func() bool {
			known, _ := server.SessionKind(m.srv, id)
			return !known
		})
		if _, r := handshake(t, m.cfg.ListenAddr, id, pw, 30000); r.SessionID != 0 {
			t.Fatalf("expired local session reconnected: %+v", r)
		}
		if got := server.LastZxid(m.srv); got != zxid {
			t.Fatalf("member %d zxid %#x after a local session's life, want %#x", i, got, zxid)
		}
	}
}

// TestLocalSessionsStandalone: a standalone server ignores localSessionsEnabled, as
// ZooKeeper's (only a quorum peer has local sessions): its sessions are logged, and
// ephemerals work.
func TestLocalSessionsStandalone(t *testing.T) {
	dir := t.TempDir()
	srv, err := server.New(server.Config{ListenAddr: "127.0.0.1:0", DataDir: dir, TickTime: 100, LocalSessions: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := rawzk.Connect(t, srv.Addr())
	if h := c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/e", ACL: openACL, Flags: jute.FlagEphemeral}, &jute.CreateResponse{}); h.Err != jute.OK {
		t.Fatalf("ephemeral create: %v", h.Err)
	}
	if z := server.LastZxid(srv); z != 2 {
		t.Fatalf("zxid %#x, want 2 (createSession, create)", z)
	}
}

// checkMultiFailed sends multi, whose last op is an ephemeral create on a local session,
// and checks ZooKeeper's answer: the header OK, each op an error result, the last one want.
func checkMultiFailed(t *testing.T, c *rawzk.Client, multi *jute.MultiRequest, want jute.Code) {
	t.Helper()
	var mr jute.MultiResponse
	h := c.Call(jute.OpMulti, multi, &mr)
	if h.Err != jute.OK || len(mr.Results) != len(multi.Ops) {
		t.Fatalf("multi with an ephemeral create: %v %+v", h.Err, mr)
	}
	for i, r := range mr.Results {
		w := jute.OK
		if i == len(mr.Results)-1 {
			w = want
		}
		if r.Type != jute.OpError || r.Err != w {
			t.Fatalf("multi with an ephemeral create: result %d is %+v, want error %v", i, r, w)
		}
	}
}

// TestLocalSessionsEndWithTheRole: a member that loses its leader forgets its local
// sessions, which no other server could take over; after the next election their clients
// are answered as expired.
func TestLocalSessionsEndWithTheRole(t *testing.T) {
	e := startLocalSessions(t, true)
	li := e.leaderIndex()
	fi := (li + 1) % 3
	f := e.members[fi]
	c, resp := handshake(t, f.cfg.ListenAddr, 0, nil, 30000)
	c.NC.Close()
	e.stop(li)
	waitFor(t, "a new leader", func() bool {
		for i, m := range e.modes() {
			if i != li && m == "leader" {
				return true
			}
		}
		return false
	})
	waitFor(t, "the member to serve again", func() bool { return f.srv.Mode() == "leader" || f.srv.Mode() == "follower" })
	if known, _ := server.SessionKind(f.srv, resp.SessionID); known {
		t.Fatal("local session kept across a role change")
	}
	if _, r := handshake(t, f.cfg.ListenAddr, resp.SessionID, resp.Passwd, 30000); r.SessionID != 0 {
		t.Fatalf("local session back after a role change: %+v", r)
	}
}
