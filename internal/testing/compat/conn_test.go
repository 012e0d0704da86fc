package compat

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/zktest"
)

// Connection-level steps: handshakes and frames no ordinary client sends.

// handshakeStep opens a new connection and sends the ConnectRequest mk builds (from the state
// of the run: session ids, passwords, zxids). A new session it creates is closed at once, so
// that it cannot expire in the middle of a later step.
func handshakeStep(label string, mk func(r *run) jute.ConnectRequest) step {
	return step{sess: "-", label: "handshake " + label, act: func(r *run) string {
		c := rawzk.Dial(r.t, r.tgt.addr)
		req := mk(r)
		fr, err := handshake(c, &req)
		if err != nil {
			return "ERROR " + err.Error()
		}
		if fr == nil {
			return "closed without a response"
		}
		var resp jute.ConnectResponse
		if err := jute.Unmarshal(fr, &resp); err != nil {
			return fmt.Sprintf("undecodable response % x", fr)
		}
		session := "new"
		switch name, known := r.Owners[resp.SessionID]; {
		case resp.SessionID == 0:
			session = "0"
		case known:
			session = "sess(" + name + ")"
		}
		passwd := fmt.Sprintf("%dB", len(resp.Passwd))
		if bytes.Equal(resp.Passwd, make([]byte, 16)) {
			passwd = "16 zero bytes"
		}
		out := fmt.Sprintf("len=%d proto=%d timeout=%d session=%s passwd=%s readOnly=%v(present %v)",
			len(fr), resp.ProtocolVersion, resp.TimeOut, session, passwd, resp.ReadOnly, resp.HasReadOnly)
		s := &sess{name: "-", c: c, id: resp.SessionID, passwd: resp.Passwd, timeout: resp.TimeOut}
		if session != "new" {
			return out + "; then " + s.closedByServer()
		}
		h, body, err := s.call(s.nextXid(), jute.OpCloseSession, nil)
		return out + "; closeSession " + r.reply(jute.OpCloseSession, h, body, err)
	}}
}

// rawFrame sends bytes as they are (length prefix included) on a session's connection and
// renders whatever comes back: a reply, or the connection closing.
func rawFrame(sess, label string, frame []byte) step {
	return step{sess: sess, label: "raw frame: " + label, act: func(r *run) string {
		s := r.sess[sess]
		s.c.NC.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := s.c.NC.Write(frame); err != nil {
			s.dead = true
			return "write failed: connection closed"
		}
		if len(frame) >= 12 {
			xid := int32(binary.BigEndian.Uint32(frame[4:]))
			op := jute.OpCode(binary.BigEndian.Uint32(frame[8:]))
			h, b, err := s.read(xid)
			if err == errNoReply {
				return "closed without a reply"
			}
			out := r.reply(op, h, b, err)
			out += r.eventsLine(s)
			switch {
			case h.Err == jute.ErrUnimplemented:
				// Both servers close after this answer, ZooKeeper asynchronously: a probe
				// ping may still be answered before its close, so wait for the close
				// without sending anything.
				return out + "; then " + s.closedByServer()
			case h.Err != 0:
				return out + "; then " + s.closedOrPing()
			}
			return out
		}
		return s.closedByServer()
	}}
}

// frame builds a length-prefixed request frame from a header and raw body bytes.
func frame(xid int32, op jute.OpCode, body []byte) []byte {
	e := jute.Encoder{}
	e.Int(int32(8 + len(body)))
	(&jute.RequestHeader{Xid: xid, Type: op}).Encode(&e)
	return append(e.Buf, body...)
}

// nullPath is rec's encoding with its first field, a path, encoded as a null string.
func nullPath(rec jute.Record) []byte {
	b := jute.Marshal(rec) // the path is "": a zero length
	return append([]byte{0xff, 0xff, 0xff, 0xff}, b[4:]...)
}

// createACLCount is a create request body of path whose ACL list has only a count, n.
func createACLCount(path string, n int32) []byte {
	e := jute.Encoder{}
	e.String(path)
	e.Buffer([]byte("x"))
	e.Int(n)
	e.Int(0) // flags: persistent
	return e.Buf
}

// setACLCount is a setACL request body of path whose ACL list has only a count, n.
func setACLCount(path string, n int32) []byte {
	e := jute.Encoder{}
	e.String(path)
	e.Int(n)
	e.Int(-1) // any version
	return e.Buf
}

func lengthOnly(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

// setDataFrame is a setData request of /mf whose frame (without the length prefix) is n bytes.
func setDataFrame(xid int32, n int) []byte {
	const overhead = 8 + 4 + len("/mf") + 4 + 4
	return frame(xid, jute.OpSetData, jute.Marshal(&jute.SetDataRequest{Path: "/mf", Data: bytes.Repeat([]byte{'m'}, n-overhead), Version: -1}))
}

func (r *run) eventsLine(s *sess) string {
	ev := r.events(s.name, s.takeEvents(), "before reply")
	if len(ev) == 0 {
		return ""
	}
	return "\n" + joinLines(ev)
}

func joinLines(v []string) string {
	var b bytes.Buffer
	for i, l := range v {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
	return b.String()
}

// closedOrPing tells a connection the server closed from one it kept: a ping must then be
// answered.
func (s *sess) closedOrPing() string {
	_, _, err := s.call(jute.XidPing, jute.OpPing, nil)
	if err == errNoReply {
		return "closed"
	}
	if err != nil {
		return "ERROR " + err.Error()
	}
	return "open"
}

func connGroups() []group {
	a := func(r *run) *sess { return r.sess["a"] }
	return []group{
		{name: "handshake", sessions: []string{"a"}, steps: []step{
			handshakeStep("timeout=1", func(*run) jute.ConnectRequest {
				return jute.ConnectRequest{TimeOut: 1, Passwd: make([]byte, 16), HasReadOnly: true}
			}),
			handshakeStep("timeout=0", func(*run) jute.ConnectRequest {
				return jute.ConnectRequest{TimeOut: 0, Passwd: make([]byte, 16), HasReadOnly: true}
			}),
			handshakeStep("timeout=-5", func(*run) jute.ConnectRequest {
				return jute.ConnectRequest{TimeOut: -5, Passwd: make([]byte, 16), HasReadOnly: true}
			}),
			handshakeStep("timeout=3999", func(*run) jute.ConnectRequest {
				return jute.ConnectRequest{TimeOut: 3999, Passwd: make([]byte, 16), HasReadOnly: true}
			}),
			handshakeStep("timeout=10001", func(*run) jute.ConnectRequest {
				return jute.ConnectRequest{TimeOut: 10001, Passwd: make([]byte, 16), HasReadOnly: true}
			}),
			handshakeStep("timeout=40000", func(*run) jute.ConnectRequest {
				return jute.ConnectRequest{TimeOut: 40000, Passwd: make([]byte, 16), HasReadOnly: true}
			}),
			handshakeStep("timeout=100000", func(*run) jute.ConnectRequest {
				return jute.ConnectRequest{TimeOut: 100000, Passwd: make([]byte, 16), HasReadOnly: true}
			}),
			handshakeStep("without the readOnly byte (44 bytes)", func(*run) jute.ConnectRequest {
				return jute.ConnectRequest{TimeOut: 100000, Passwd: make([]byte, 16)}
			}),
			handshakeStep("readOnly=true", func(*run) jute.ConnectRequest {
				return jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16), ReadOnly: true, HasReadOnly: true}
			}),
			handshakeStep("protocolVersion=7, short password", func(*run) jute.ConnectRequest {
				return jute.ConnectRequest{ProtocolVersion: 7, TimeOut: 10000, Passwd: []byte{1}, HasReadOnly: true}
			}),
			handshakeStep("null password", func(*run) jute.ConnectRequest {
				return jute.ConnectRequest{TimeOut: 10000, HasReadOnly: true}
			}),
			// ZooKeeper closes a session's current connection before it checks the password of
			// a reconnect (see the reconnect-kicks-connection group), so these run while a has no
			// connection.
			drop("a"),
			handshakeStep("session a, wrong password", func(r *run) jute.ConnectRequest {
				p := append([]byte(nil), a(r).passwd...)
				p[0] ^= 0xff
				return jute.ConnectRequest{LastZxidSeen: a(r).lastZxid, TimeOut: 10000, SessionID: a(r).id, Passwd: p, HasReadOnly: true}
			}),
			handshakeStep("unknown session id", func(r *run) jute.ConnectRequest {
				return jute.ConnectRequest{TimeOut: 10000, SessionID: a(r).id ^ 0x5a5a, Passwd: make([]byte, 16), HasReadOnly: true}
			}),
			handshakeStep("session a, wrong password, no readOnly byte", func(r *run) jute.ConnectRequest {
				return jute.ConnectRequest{TimeOut: 10000, SessionID: a(r).id, Passwd: make([]byte, 16)}
			}),
			reconnect("a"), // the failed attempts left the session alone
			handshakeStep("new session, lastZxidSeen ahead of the server", func(r *run) jute.ConnectRequest {
				return jute.ConnectRequest{LastZxidSeen: a(r).lastZxid + 1000, TimeOut: 10000, Passwd: make([]byte, 16), HasReadOnly: true}
			}),
			handshakeStep("session a, lastZxidSeen ahead of the server", func(r *run) jute.ConnectRequest {
				return jute.ConnectRequest{LastZxidSeen: a(r).lastZxid + 1, TimeOut: 10000, SessionID: a(r).id, Passwd: a(r).passwd, HasReadOnly: true}
			}),
			create("a", "/hs", nil, ephemeral),
			reconnect("a"), // same session, password and ephemeral
			exists("a", "/hs", false),
			getData("a", "/hs", true),
			drop("a"),
			reconnect("a"),
			setWatches("a", "", false, 0, jute.SetWatches{DataWatches: []string{"/hs"}}),
			closeSession("a"),
			reconnect("a"), // a closed session: expired answer
		}},
		{name: "bad-frames", sessions: []string{"a", "b", "c", "d", "e", "f", "g"}, steps: []step{
			rawFrame("a", "length above jute.maxbuffer", lengthOnly(0x00200000)),
			rawFrame("b", "negative length", lengthOnly(0xffffffff)),
			rawFrame("c", "unknown opcode 999", frame(1, 999, nil)),
			rawFrame("d", "opcode 0 (notification)", frame(1, 0, nil)),
			// ZooKeeper 3.8.0 runs a client's createSession (-10) through its pipeline: the empty
			// body fails to parse (-5) after a zxid was taken, and the connection stays; with a
			// body it would create a session. The fact sheet (§3.1) has servers refuse it.
			zkdDiffers("createSession (-10) is not a client opcode (fact sheet §3.1)", "err=-6 zxid=-1; then closed",
				rawFrame("e", "opcode -10 (createSession)", frame(1, -10, nil))),
			rawFrame("f", "opcode -1 (error)", frame(1, -1, nil)),
			rawFrame("g", "frame shorter than a request header", append(lengthOnly(4), 0, 0, 0, 1)),
		}},
		{name: "bad-bodies", sessions: []string{"a"}, steps: []step{
			create("a", "/bb", b("x"), persistent),
			rawFrame("a", "getData, string longer than the body", frame(1001, jute.OpGetData, []byte{0, 0, 0, 9, '/', 'b', 'b'})),
			rawFrame("a", "getData, no watch byte", frame(1002, jute.OpGetData, []byte{0, 0, 0, 3, '/', 'b', 'b'})),
			rawFrame("a", "getData, trailing bytes", frame(1003, jute.OpGetData, []byte{0, 0, 0, 3, '/', 'b', 'b', 0, 9, 9, 9})),
			rawFrame("a", "exists, empty body", frame(1004, jute.OpExists, nil)),
			rawFrame("a", "setData, truncated", frame(1005, jute.OpSetData, []byte{0, 0, 0, 3, '/', 'b', 'b', 0, 0, 0, 1})),
			rawFrame("a", "create, truncated ACL vector", frame(1006, jute.OpCreate, []byte{0, 0, 0, 3, '/', 'b', 'c', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 5})),
			rawFrame("a", "create, huge ACL count", frame(1007, jute.OpCreate, []byte{0, 0, 0, 3, '/', 'b', 'c', 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff})),
			rawFrame("a", "delete, empty body", frame(1008, jute.OpDelete, nil)),
			rawFrame("a", "multi, missing end marker", frame(1009, jute.OpMulti, append(jute.Marshal(&jute.MultiHeader{Type: jute.OpCheck, Err: -1}), jute.Marshal(&jute.CheckVersionRequest{Path: "/bb", Version: -1})...))),
			rawFrame("a", "multi holding getData", frame(1010, jute.OpMulti, jute.Marshal(&jute.MultiRequest{Ops: []jute.MultiOp{mGetData("/bb")}}))),
			rawFrame("a", "multi holding op 99", frame(1011, jute.OpMulti, jute.Marshal(&jute.MultiHeader{Type: 99, Err: -1}))),
			getData("a", "/bb", false),
		}},
		{name: "max-frame", sessions: []string{"a", "b"}, steps: []step{
			create("a", "/mf", nil, persistent),
			rawFrame("a", "setData, frame of exactly jute.maxbuffer (0xfffff) bytes", setDataFrame(1, 0xfffff)),
			getData("a", "/mf", false),
			rawFrame("b", "setData, frame of jute.maxbuffer+1 bytes", setDataFrame(1, 0x100000)),
			exists("a", "/mf", false),
		}},
		// ZooKeeper closes the session's current connection before it checks a reconnect's
		// password (ZooKeeperServer.processConnectRequest closes the old connection first).
		{name: "reconnect-kicks-connection", sessions: []string{"a"},
			steps: []step{
				handshakeStep("session a, wrong password", func(r *run) jute.ConnectRequest {
					return jute.ConnectRequest{TimeOut: 10000, SessionID: a(r).id, Passwd: make([]byte, 16), HasReadOnly: true}
				}),
				reconnect("a"),
				syncPath("a", "/"),
			}},
		// Without a SASL server ZooKeeper answers a sasl request with err 0 and a null token and
		// keeps the connection (the missing SASL server's NullPointerException is caught); zkd
		// fails it and closes (row zkd-sasl-unconfigured).
		{name: "sasl-unconfigured", sessions: []string{"a"},
			steps: []step{
				zkdDiffers("zkd-sasl-unconfigured", "err=-115 zxid=0 error body ff ff ff ff; then closed",
					rawFrame("a", "sasl", frame(1, jute.OpSASL, jute.Marshal(&jute.SASLToken{Token: b("x")})))),
			}},
		{name: "reconfig-disabled", sessions: []string{"a"},
			steps: []step{
				rawFrame("a", "reconfig on a standalone server", frame(1, jute.OpReconfig, jute.Marshal(&jute.ReconfigRequest{CurConfigID: -1}))),
				syncPath("a", "/"),
			}},
		// A null path (string length -1) fails in ZooKeeper where it uses the path without a
		// null check (a NullPointerException, answered with MARSHALLINGERROR; writes still
		// take a zxid); setData and setACL validate it first and answer BADARGUMENTS.
		{name: "null-strings", sessions: []string{"a"},
			steps: []step{
				rawFrame("a", "string length -1 (null path) in getData", frame(1, jute.OpGetData, []byte{0xff, 0xff, 0xff, 0xff, 0})),
				rawFrame("a", "null path in create", frame(2, jute.OpCreate, nullPath(&jute.CreateRequest{ACL: open}))),
				rawFrame("a", "null path in exists", frame(3, jute.OpExists, []byte{0xff, 0xff, 0xff, 0xff, 0})),
				rawFrame("a", "null path in getChildren2", frame(4, jute.OpGetChildren2, []byte{0xff, 0xff, 0xff, 0xff, 0})),
				rawFrame("a", "null path in getACL", frame(5, jute.OpGetACL, []byte{0xff, 0xff, 0xff, 0xff})),
				rawFrame("a", "null path in getAllChildrenNumber", frame(6, jute.OpGetAllChildrenNumber, []byte{0xff, 0xff, 0xff, 0xff})),
				rawFrame("a", "null path in checkWatches", frame(7, jute.OpCheckWatches, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1})),
				rawFrame("a", "null path in delete", frame(8, jute.OpDelete, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})),
				rawFrame("a", "null path in create2", frame(9, jute.OpCreate2, nullPath(&jute.CreateRequest{ACL: open}))),
				rawFrame("a", "null path in createTTL", frame(10, jute.OpCreateTTL, nullPath(&jute.CreateTTLRequest{ACL: open, Flags: 5, TTL: 1000}))),
				rawFrame("a", "null path in setData", frame(11, jute.OpSetData, nullPath(&jute.SetDataRequest{Version: -1}))),
				rawFrame("a", "null path in setACL", frame(12, jute.OpSetACL, nullPath(&jute.SetACLRequest{ACL: open, Version: -1}))),
			}},
		// An ACL list whose count is below -1 reads as empty in Java's BinaryInputArchive
		// (its vector index is done once the count is <= 0), so ZooKeeper answers
		// INVALIDACL, checked before the parent or node exists, and a write still takes a
		// zxid; a null (-1) list is INVALIDACL too.
		{name: "acl-count", sessions: []string{"a"},
			steps: []step{
				create("a", "/ac", nil, persistent),
				rawFrame("a", "create /ac/x with ACL count -2", frame(1, jute.OpCreate, createACLCount("/ac/x", -2))),
				rawFrame("a", "create /none/x with ACL count -2", frame(2, jute.OpCreate, createACLCount("/none/x", -2))),
				rawFrame("a", "create /ac/x with ACL count min int", frame(3, jute.OpCreate, createACLCount("/ac/x", -1<<31))),
				rawFrame("a", "create /ac/x with ACL count -1", frame(4, jute.OpCreate, createACLCount("/ac/x", -1))),
				rawFrame("a", "setACL /ac with ACL count -2", frame(5, jute.OpSetACL, setACLCount("/ac", -2))),
				rawFrame("a", "setACL /none with ACL count -2", frame(6, jute.OpSetACL, setACLCount("/none", -2))),
				rawFrame("a", "setACL /ac with ACL count -1", frame(7, jute.OpSetACL, setACLCount("/ac", -1))),
				getACL("a", "/ac"),
				exists("a", "/ac/x", false),
				del("a", "/ac", -1),
			}},
		// A multiRead holding only writes decodes and fails at its first op, after ZooKeeper
		// started a MultiResponse; one mixing reads and writes does not decode (no body).
		{name: "multiread-with-write", sessions: []string{"a"},
			steps: []step{
				create("a", "/mr", b("x"), persistent),
				rawFrame("a", "multiRead holding setData", frame(1001, jute.OpMultiRead, jute.Marshal(&jute.MultiRequest{Ops: []jute.MultiOp{mSet("/mr", nil, -1)}}))),
				rawFrame("a", "multiRead holding check", frame(1002, jute.OpMultiRead, jute.Marshal(&jute.MultiRequest{Ops: []jute.MultiOp{mCheck("/mr", -1)}}))),
				rawFrame("a", "multiRead holding getData, setData", frame(1003, jute.OpMultiRead, jute.Marshal(&jute.MultiRequest{Ops: []jute.MultiOp{mGetData("/mr"), mSet("/mr", nil, -1)}}))),
				rawFrame("a", "multiRead holding setData, getData", frame(1004, jute.OpMultiRead, jute.Marshal(&jute.MultiRequest{Ops: []jute.MultiOp{mSet("/mr", nil, -1), mGetData("/mr")}}))),
			}},
		// ZooKeeper walks setWatches' lists in order and fails with MARSHALLINGERROR at a null
		// (-1) one, after re-arming the lists before it.
		{name: "setwatches-null-lists", sessions: []string{"a", "b"},
			steps: []step{
				create("b", "/sn", nil, persistent),
				setWatchesLists("a", "", false, 0, jute.SetWatches{DataWatches: []string{"/sn"}}, true),
				setData("b", "/sn", b("x"), -1),
				setWatchesLists("a", "", true, 0, jute.SetWatches{DataWatches: []string{"/sn"}, ExistWatches: []string{}, ChildWatches: []string{}}, true),
				setData("b", "/sn", b("y"), -1),
				setWatchesLists("a", "", true, 0, jute.SetWatches{DataWatches: []string{}, ExistWatches: []string{}, ChildWatches: []string{}, PersistentWatches: []string{"/sn"}}, true),
				setData("b", "/sn", b("z"), -1),
			}},
	}
}

// TestZkdRefusesOpcodes covers what zkd refuses on purpose where ZooKeeper 3.8.0 answers, so
// it is not compared. A top-level check (13) gets no reply from 3.8.0 (nor 3.9.0-3.9.2): it
// takes a zxid and logs a txn of type 13 that the server cannot read back, so it no longer
// starts ("Unsupported Txn with type=%d13"). ZOOKEEPER-2623 (3.8.5, 3.9.3: Request.isValid is
// false for check) answers it as an unknown opcode, as zkd does: UnimplementedRequestProcessor
// replies {xid, zxid -1, err -6} and closes the connection. deleteContainer (20) deletes
// without an ACL check in every release, which no client needs.
func TestZkdRefusesOpcodes(t *testing.T) {
	z := zktest.Start(t, zkdConfig("", nil))
	for _, tc := range []struct {
		name string
		op   jute.OpCode
		body jute.Record
	}{
		{"check", jute.OpCheck, &jute.CheckVersionRequest{Path: "/", Version: -1}},
		{"deleteContainer", jute.OpDeleteContainer, &jute.DeleteContainerRequest{Path: "/c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t, "a", z.Addr(), 30000)
			h, _, err := s.call(s.nextXid(), jute.OpCreate, &jute.CreateRequest{Path: "/c", ACL: open, Flags: persistent})
			if err != nil || (h.Err != 0 && h.Err != jute.ErrNodeExists) {
				t.Fatalf("create /c: %+v %v", h, err)
			}
			xid := s.nextXid()
			h, b, err := s.call(xid, tc.op, tc.body)
			if err != nil || h.Xid != xid || h.Zxid != -1 || h.Err != jute.ErrUnimplemented || len(b) != 0 {
				t.Errorf("%v: reply %+v body % x err %v; want {xid %d, zxid -1, err -6}", tc.op, h, b, err, xid)
			}
			if got := s.closedByServer(); got != "closed" {
				t.Errorf("%v: connection %s after the reply, want closed", tc.op, got)
			}
			s2 := newSession(t, "b", z.Addr(), 30000)
			if h, _, err := s2.call(1, jute.OpExists, &jute.ExistsRequest{Path: "/c"}); err != nil || h.Err != 0 {
				t.Errorf("/c after %v: %+v %v; want it untouched", tc.op, h, err)
			}
			s2.call(2, jute.OpCloseSession, nil)
		})
	}
}
