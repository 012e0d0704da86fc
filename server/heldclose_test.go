package server_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
)

// sendBurst writes requests in one TCP write, so the server reads them together: the
// later ones arrive while the first (a sync) is still unanswered.
func sendBurst(t *testing.T, c *rawzk.Client, reqs ...func(*jute.Encoder)) {
	t.Helper()
	var out []byte
	for _, r := range reqs {
		var e jute.Encoder
		r(&e)
		var l [4]byte
		binary.BigEndian.PutUint32(l[:], uint32(len(e.Buf)))
		out = append(append(out, l[:]...), e.Buf...)
	}
	c.NC.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.NC.Write(out); err != nil {
		t.Fatal(err)
	}
}

func req(xid int32, op jute.OpCode, body jute.Record) func(*jute.Encoder) {
	return func(e *jute.Encoder) {
		(&jute.RequestHeader{Xid: xid, Type: op}).Encode(e)
		if body != nil {
			body.Encode(e)
		}
	}
}

// TestEnsembleWriteBehindHeldCloseIsExpired pipelines sync, closeSession and an ephemeral
// create. The sync holds back the close and the create; once it is answered, the close
// makes the session closing, and the create sent after it must fail SESSIONEXPIRED as it
// does when nothing held it back: it must never reach the tree (an ephemeral of a closed
// session lives forever), and on a learner its outstanding slot must come back.
func TestEnsembleWriteBehindHeldCloseIsExpired(t *testing.T) {
	e := startEnsembleConfig(t, 3, func(c *server.Config) { c.FourLetterWhitelist = []string{"*"} })
	e.waitServing()
	const rounds = 10
	for i, addr := range e.addrs() {
		for r := 0; r < rounds; r++ {
			c := rawzk.Connect(t, addr)
			path := fmt.Sprintf("/orphan-%d-%d", i, r)
			sendBurst(t, c,
				req(1, jute.OpSync, &jute.PathRequest{Path: "/"}),
				req(2, jute.OpCloseSession, nil),
				req(3, jute.OpCreate, &jute.CreateRequest{Path: path, ACL: jute.OpenACLUnsafe, Flags: 1}),
			)
			if !c.Closed() {
				t.Fatalf("member %d: the close did not close the connection", i+1)
			}
		}
	}
	// Every create above was proposed no later than its session's close: a write made
	// after them commits after them.
	check := rawzk.Connect(t, e.addrs()[0])
	check.Call(jute.OpCreate, &jute.CreateRequest{Path: "/marker", ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{})
	check.Call(jute.OpSync, &jute.PathRequest{Path: "/"}, &jute.SyncResponse{})
	var children jute.GetChildrenResponse
	check.Call(jute.OpGetChildren, &jute.GetChildrenRequest{Path: "/"}, &children)
	for _, ch := range children.Strings {
		if strings.HasPrefix(ch, "orphan-") {
			t.Errorf("/%s exists: created after its session closed", ch)
		}
	}
	for i, addr := range e.addrs() {
		waitFor(t, fmt.Sprintf("no outstanding requests on member %d", i+1), func() bool {
			return strings.Contains(fourLetter(t, addr, "mntr"), "zk_outstanding_requests\t0\n")
		})
	}
}

// TestEnsembleReconnectDuringHeldCloseIsClosed: a session's close waits behind a sync on a
// follower while its client reconnects there on a new connection. The leader finds the
// session alive (the close has not reached it), so the new connection is attached; then
// the close is submitted and commits. The session is gone: its new connection must be
// closed, not left attached to a session that no longer exists.
func TestEnsembleReconnectDuringHeldCloseIsClosed(t *testing.T) {
	e := startEnsembleConfig(t, 3, func(c *server.Config) {
		// A write's commit waits for fsyncs, and a sync for every earlier commit: the sync
		// below stays unanswered while the client reconnects.
		c.FS = slowSyncFS{delay: 150 * time.Millisecond}
	})
	e.waitServing()
	f := (e.leaderIndex() + 1) % 3
	addr := e.members[f].cfg.ListenAddr
	a := rawzk.Connect(t, addr)
	sendBurst(t, a,
		req(1, jute.OpCreate, &jute.CreateRequest{Path: "/slow", ACL: jute.OpenACLUnsafe}),
		req(2, jute.OpSync, &jute.PathRequest{Path: "/"}),
		req(3, jute.OpCloseSession, nil),
	)
	// The burst is written before the reconnect is sent, but the two connections reach the
	// core on their own goroutines: a reconnect handled first closes the old connection and
	// its requests are never read, so the session rightly stays open. Reconnect only once
	// the close waits in the session's queue (or the session is gone already).
	waitFor(t, "the close queued behind the sync", func() bool {
		ops, ok := server.SessionQueue(e.members[f].srv, a.Session)
		return !ok || slices.Contains(ops, jute.OpCloseSession)
	})
	b := rawzk.Dial(t, addr)
	resp, err := b.Handshake(&jute.ConnectRequest{TimeOut: a.Timeout, SessionID: a.Session, Passwd: a.Passwd, HasReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp.SessionID == 0 {
		t.Skip("the close reached the leader before the reconnect: nothing to check")
	}
	if !b.Closed() {
		t.Fatal("the session closed, but its new connection stays open")
	}
}
