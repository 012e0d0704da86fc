package compat

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/testing/difffuzz"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
)

// A script is a list of groups; each group runs on fresh sessions against each server in turn
// and its rendered outcomes are compared step by step. Groups use disjoint paths, so they can
// share one pair of servers; their zxids are shown relative to the group's start.

// step is one line of a script: a request on a named session, or a client-side action.
type step struct {
	label  string
	sess   string
	op     jute.OpCode
	body   jute.Record
	build  func(r *run) jute.Record // builds the body at run time (e.g. from saved zxids)
	xid    int32                    // 0: the session's next ordinary xid
	save   string                   // remember the reply zxid under this name
	closes bool                     // the server should close the connection after replying
	act    func(r *run) string      // a client-side action instead of a request
	// differs, when set, marks a step where zkd deliberately differs from ZooKeeper 3.8.0 (a
	// 3.8.0 bug, behaviour of newer releases that zkd follows, or a documented choice): zkd's
	// outcome must contain differs.zkdWant instead of matching ZooKeeper's.
	differs *deviation
}

type deviation struct{ why, zkdWant string }

// zkdDiffers marks a step where zkd deliberately differs from ZooKeeper 3.8.0 (see
// step.differs); why says why, zkdWant is what zkd's outcome must contain.
func zkdDiffers(why, zkdWant string, st step) step {
	st.differs = &deviation{why, zkdWant}
	return st
}

type group struct {
	name     string
	sessions []string // connected before the first step, in this order
	steps    []step
}

// run is one group running against one server.
type run struct {
	t   *testing.T
	tgt target
	norm
	sess  map[string]*sess
	saved map[string]int64
	// all holds every session the run opened (by id, latest connection), for closeAll.
	all map[int64]*sess
}

func newRun(t *testing.T, tgt target) *run {
	return &run{t: t, tgt: tgt, norm: norm{difffuzz.Norm{Owners: map[int64]string{}, ShowOld: true}}, sess: map[string]*sess{}, saved: map[string]int64{}, all: map[int64]*sess{}}
}

// connect opens a new session under name (replacing any earlier one of that name).
func (r *run) connect(name string, timeout int32) *sess {
	s := newSession(r.t, name, r.tgt.addr, timeout)
	if old := r.sess[name]; old != nil && !old.dead {
		old.c.NC.Close()
	}
	r.sess[name] = s
	r.Owners[s.id] = name
	r.all[s.id] = s
	return s
}

// runGroup runs g against one server and returns one rendered outcome per step.
func runGroup(t *testing.T, tgt target, g group) []string {
	r := newRun(t, tgt)
	for _, name := range g.sessions {
		r.connect(name, 30000)
	}
	if len(g.sessions) > 0 {
		s := r.sess[g.sessions[0]]
		h, _, err := s.call(jute.XidPing, jute.OpPing, nil)
		if err != nil {
			t.Fatalf("%s: ping: %v", tgt.name, err)
		}
		r.Base = h.Zxid
	}
	out := make([]string, len(g.steps))
	for i, st := range g.steps {
		out[i] = r.exec(st)
	}
	r.closeAll()
	return out
}

// closeAll closes every session of the run, reconnecting to those whose connection is gone.
// A session left to expire would consume a zxid at an arbitrary moment of a later group.
func (r *run) closeAll() {
	for _, s := range r.all {
		if s.dead {
			c := rawzk.Dial(r.t, r.tgt.addr)
			fr, err := handshake(c, &jute.ConnectRequest{TimeOut: s.timeout, SessionID: s.id, Passwd: s.passwd, HasReadOnly: true})
			var resp jute.ConnectResponse
			if err != nil || fr == nil || jute.Unmarshal(fr, &resp) != nil || resp.SessionID != s.id {
				continue // already closed or expired
			}
			s.c, s.dead = c, false
		}
		s.call(s.nextXid(), jute.OpCloseSession, nil)
		s.c.NC.Close()
	}
}

func (r *run) exec(st step) string {
	var lines []string
	if st.act != nil {
		lines = append(lines, st.act(r))
	} else {
		lines = append(lines, r.request(st)...)
	}
	return strings.Join(append(lines, r.drain()...), "\n")
}

func (r *run) request(st step) []string {
	s := r.sess[st.sess]
	if s == nil || s.dead {
		return []string{"session " + st.sess + " not connected"}
	}
	xid := st.xid
	if xid == 0 {
		xid = s.nextXid()
	}
	body := st.body
	if st.build != nil {
		body = st.build(r)
	}
	h, b, err := s.call(xid, st.op, body)
	if st.save != "" {
		r.saved[st.save] = h.Zxid
	}
	lines := []string{r.reply(st.op, h, b, err)}
	lines = append(lines, r.events(st.sess, s.takeEvents(), "before reply")...)
	if st.closes && err == nil {
		lines = append(lines, "  then: "+s.closedByServer())
	}
	return lines
}

// drain pings every live session and collects the notifications that arrive before the
// pong: a server queues a notification before the reply of the write that caused it, and
// answers a later ping only after that, so this catches every event the step caused.
func (r *run) drain() []string {
	names := make([]string, 0, len(r.sess))
	for n := range r.sess {
		names = append(names, n)
	}
	sort.Strings(names)
	var lines []string
	for _, n := range names {
		s := r.sess[n]
		if s.dead {
			continue
		}
		_, _, err := s.call(jute.XidPing, jute.OpPing, nil)
		lines = append(lines, r.events(n, s.takeEvents(), "after reply")...)
		if err != nil {
			lines = append(lines, fmt.Sprintf("  %s: %v", n, err))
		}
	}
	return lines
}

// compareScript runs every group against every target and reports each differing step.
func compareScript(t *testing.T, targets []target, groups []group) {
	verbose := os.Getenv("ZKD_COMPAT_VERBOSE") != ""
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			results := make([][]string, len(targets))
			for i, tgt := range targets {
				results[i] = runGroup(t, tgt, g)
			}
			ref := results[0]
			for i := 1; i < len(targets); i++ {
				for j, st := range g.steps {
					if st.differs != nil {
						if !strings.Contains(results[i][j], st.differs.zkdWant) {
							t.Errorf("step %d %s\n(differs from 3.8.0 on purpose: %s)\n%s has\n%s\nwant it to contain %q", j+1, st.describe(),
								st.differs.why, targets[i].name, indent(results[i][j]), st.differs.zkdWant)
						}
						continue
					}
					if ref[j] != results[i][j] {
						t.Errorf("step %d %s\n--- %s\n%s\n+++ %s\n%s", j+1, st.describe(),
							targets[0].name, indent(ref[j]), targets[i].name, indent(results[i][j]))
					}
				}
			}
			if verbose || t.Failed() {
				var b strings.Builder
				for j, st := range g.steps {
					fmt.Fprintf(&b, "%3d %s\n%s\n", j+1, st.describe(), indent(ref[j]))
				}
				t.Logf("%s transcript:\n%s", targets[0].name, b.String())
			}
		})
	}
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

func (st step) describe() string {
	if st.label != "" {
		return fmt.Sprintf("[%s] %s", st.sess, st.label)
	}
	return fmt.Sprintf("[%s] %v", st.sess, st.op)
}

// --- step constructors (one table line per case) ----------------------------------------

func b(s string) []byte { return []byte(s) }

var open = jute.OpenACLUnsafe

func req(sess string, op jute.OpCode, body jute.Record, label string) step {
	return step{sess: sess, op: op, body: body, label: label}
}

func create(sess, path string, d []byte, flags int32) step {
	return createACL(sess, path, d, open, flags)
}

func createACL(sess, path string, d []byte, acl []jute.ACL, flags int32) step {
	return req(sess, jute.OpCreate, &jute.CreateRequest{Path: path, Data: d, ACL: acl, Flags: flags},
		fmt.Sprintf("create %q flags=%d data=%s acl=%s", path, flags, data(d), acls(acl)))
}

func create2(sess, path string, d []byte, flags int32) step {
	return req(sess, jute.OpCreate2, &jute.CreateRequest{Path: path, Data: d, ACL: open, Flags: flags},
		fmt.Sprintf("create2 %q flags=%d data=%s", path, flags, data(d)))
}

func container(sess, path string, flags int32) step {
	return req(sess, jute.OpCreateContainer, &jute.CreateRequest{Path: path, Data: b("c"), ACL: open, Flags: flags},
		fmt.Sprintf("createContainer %q flags=%d", path, flags))
}

func createTTL(sess, path string, flags int32, ttl int64) step {
	return req(sess, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: path, Data: b("t"), ACL: open, Flags: flags, TTL: ttl},
		fmt.Sprintf("createTTL %q flags=%d ttl=%d", path, flags, ttl))
}

func del(sess, path string, version int32) step {
	return req(sess, jute.OpDelete, &jute.DeleteRequest{Path: path, Version: version},
		fmt.Sprintf("delete %q version=%d", path, version))
}

func setData(sess, path string, d []byte, version int32) step {
	return req(sess, jute.OpSetData, &jute.SetDataRequest{Path: path, Data: d, Version: version},
		fmt.Sprintf("setData %q data=%s version=%d", path, data(d), version))
}

func getData(sess, path string, watch bool) step {
	return req(sess, jute.OpGetData, &jute.GetDataRequest{Path: path, Watch: watch},
		fmt.Sprintf("getData %q watch=%v", path, watch))
}

func exists(sess, path string, watch bool) step {
	return req(sess, jute.OpExists, &jute.ExistsRequest{Path: path, Watch: watch},
		fmt.Sprintf("exists %q watch=%v", path, watch))
}

func children(sess, path string, watch bool) step {
	return req(sess, jute.OpGetChildren, &jute.GetChildrenRequest{Path: path, Watch: watch},
		fmt.Sprintf("getChildren %q watch=%v", path, watch))
}

func children2(sess, path string, watch bool) step {
	return req(sess, jute.OpGetChildren2, &jute.GetChildren2Request{Path: path, Watch: watch},
		fmt.Sprintf("getChildren2 %q watch=%v", path, watch))
}

func getACL(sess, path string) step {
	return req(sess, jute.OpGetACL, &jute.GetACLRequest{Path: path}, fmt.Sprintf("getACL %q", path))
}

// ipACL is an ACL of one ip id with every permission.
func ipACL(id string) []jute.ACL {
	return []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "ip", ID: id}}}
}

// zk4240 is why zkd accepts IPv6 ip ACL ids where 3.8.0 answers INVALIDACL.
const zk4240 = "ZOOKEEPER-4240 (3.9.4): IPv6 ip ACL ids are valid; 3.8.0 and 3.9.0-3.9.3 answer INVALIDACL"

func setACL(sess, path string, acl []jute.ACL, version int32) step {
	return req(sess, jute.OpSetACL, &jute.SetACLRequest{Path: path, ACL: acl, Version: version},
		fmt.Sprintf("setACL %q acl=%s version=%d", path, acls(acl), version))
}

func syncPath(sess, path string) step {
	return req(sess, jute.OpSync, &jute.SyncRequest{Path: path}, fmt.Sprintf("sync %q", path))
}

func allChildren(sess, path string) step {
	return req(sess, jute.OpGetAllChildrenNumber, &jute.GetAllChildrenNumberRequest{Path: path},
		fmt.Sprintf("getAllChildrenNumber %q", path))
}

func ephemerals(sess, prefix string) step {
	return req(sess, jute.OpGetEphemerals, &jute.GetEphemeralsRequest{Path: prefix},
		fmt.Sprintf("getEphemerals %q", prefix))
}

func whoAmI(sess string) step { return req(sess, jute.OpWhoAmI, nil, "whoAmI") }

func auth(sess, scheme, cred string) step {
	st := req(sess, jute.OpAuth, &jute.AuthPacket{Scheme: scheme, Auth: b(cred)}, fmt.Sprintf("auth %s %q", scheme, cred))
	st.xid = jute.XidAuth
	return st
}

func addWatch(sess, path string, mode int32) step {
	return req(sess, jute.OpAddWatch, &jute.AddWatchRequest{Path: path, Mode: mode},
		fmt.Sprintf("addWatch %q mode=%d", path, mode))
}

func checkWatches(sess, path string, typ jute.WatcherType) step {
	return req(sess, jute.OpCheckWatches, &jute.WatchesRequest{Path: path, Type: typ},
		fmt.Sprintf("checkWatches %q type=%d", path, typ))
}

func removeWatches(sess, path string, typ jute.WatcherType) step {
	return req(sess, jute.OpRemoveWatches, &jute.WatchesRequest{Path: path, Type: typ},
		fmt.Sprintf("removeWatches %q type=%d", path, typ))
}

func closeSession(sess string) step {
	st := req(sess, jute.OpCloseSession, nil, "closeSession")
	st.closes = true
	return st
}

func multi(sess string, ops ...jute.MultiOp) step {
	return req(sess, jute.OpMulti, &jute.MultiRequest{Ops: ops}, "multi "+opsLabel(ops))
}

func multiRead(sess string, ops ...jute.MultiOp) step {
	return req(sess, jute.OpMultiRead, &jute.MultiRequest{Ops: ops}, "multiRead "+opsLabel(ops))
}

func opsLabel(ops []jute.MultiOp) string {
	parts := make([]string, len(ops))
	for i, o := range ops {
		path := ""
		switch b := o.Body.(type) {
		case *jute.CreateRequest:
			path = fmt.Sprintf("%q flags=%d", b.Path, b.Flags)
		case *jute.CreateTTLRequest:
			path = fmt.Sprintf("%q ttl=%d", b.Path, b.TTL)
		case *jute.PathVersionRequest:
			path = fmt.Sprintf("%q v=%d", b.Path, b.Version)
		case *jute.SetDataRequest:
			path = fmt.Sprintf("%q v=%d", b.Path, b.Version)
		case *jute.PathWatchRequest:
			path = fmt.Sprintf("%q", b.Path)
		}
		parts[i] = fmt.Sprintf("%v %s", o.Type, path)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Multi op constructors.
func mCreate(path string, d []byte, flags int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpCreate, Body: &jute.CreateRequest{Path: path, Data: d, ACL: open, Flags: flags}}
}
func mCreate2(path string, d []byte, flags int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpCreate2, Body: &jute.CreateRequest{Path: path, Data: d, ACL: open, Flags: flags}}
}
func mContainer(path string) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpCreateContainer, Body: &jute.CreateRequest{Path: path, ACL: open, Flags: jute.FlagContainer}}
}
func mTTL(path string, ttl int64) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpCreateTTL, Body: &jute.CreateTTLRequest{Path: path, ACL: open, Flags: jute.FlagPersistentWithTTL, TTL: ttl}}
}
func mDelete(path string, v int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpDelete, Body: &jute.DeleteRequest{Path: path, Version: v}}
}
func mSet(path string, d []byte, v int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpSetData, Body: &jute.SetDataRequest{Path: path, Data: d, Version: v}}
}
func mCheck(path string, v int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpCheck, Body: &jute.CheckVersionRequest{Path: path, Version: v}}
}
func mGetData(path string) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpGetData, Body: &jute.GetDataRequest{Path: path}}
}
func mChildren(path string) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpGetChildren, Body: &jute.GetChildrenRequest{Path: path}}
}

// setWatches re-registers watches after a reconnect, relative to a zxid saved by an earlier
// step (or to the session's last seen zxid when rel is "").
func setWatches(sess, rel string, v2 bool, xid int32, w jute.SetWatches) step {
	return setWatchesLists(sess, rel, v2, xid, w, false)
}

// setWatchesLists is setWatches, sending null lists as null when nullLists is set.
// watchList renders a setWatches list as sent: a nil list goes out as null when nullLists is set.
func watchList(v []string, nullLists bool) string {
	if v == nil && nullLists {
		return "null"
	}
	return fmt.Sprintf("%q", v)
}

func setWatchesLists(sess, rel string, v2 bool, xid int32, w jute.SetWatches, nullLists bool) step {
	op := jute.OpSetWatches
	if v2 {
		op = jute.OpSetWatches2
	}
	return step{sess: sess, op: op, xid: xid,
		label: fmt.Sprintf("%v rel=%s data=%s exist=%s child=%s persistent=%s recursive=%s",
			op, relName(rel), watchList(w.DataWatches, nullLists), watchList(w.ExistWatches, nullLists), watchList(w.ChildWatches, nullLists),
			watchList(w.PersistentWatches, nullLists), watchList(w.PersistentRecursiveWatches, nullLists)),
		build: func(r *run) jute.Record {
			body := w
			body.V2 = v2
			// Clients send empty lists, never null ones (ZooKeeper fails on a null list with a
			// NullPointerException, see the setwatches-null-lists group).
			for _, l := range []*[]string{&body.DataWatches, &body.ExistWatches, &body.ChildWatches, &body.PersistentWatches, &body.PersistentRecursiveWatches} {
				if *l == nil && !nullLists {
					*l = []string{}
				}
			}
			if rel == "" {
				body.RelativeZxid = r.sess[sess].lastZxid
			} else {
				z, ok := r.saved[rel]
				if !ok {
					r.t.Fatalf("setWatches: no zxid saved as %q", rel)
				}
				body.RelativeZxid = z
			}
			return &body
		}}
}

func relName(rel string) string {
	if rel == "" {
		return "lastSeen"
	}
	return rel
}

// saving makes a step remember its reply zxid.
func saving(name string, st step) step { st.save = name; return st }

// closing marks a step after whose reply the server must close the connection.
func closing(st step) step { st.closes = true; return st }

// withXid sends a step with a fixed xid.
func withXid(xid int32, st step) step { st.xid = xid; return st }

// --- client-side actions -------------------------------------------------------------------

// drop closes a session's TCP connection without closing the session.
func drop(sess string) step {
	return step{sess: sess, label: "drop connection", act: func(r *run) string {
		s := r.sess[sess]
		s.c.NC.Close()
		s.dead = true
		return "dropped"
	}}
}

// reconnect resumes a session on a new connection, announcing the session's last seen zxid.
func reconnect(name string) step {
	return step{sess: name, label: "reconnect", act: func(r *run) string {
		old := r.sess[name]
		if !old.dead {
			old.c.NC.Close()
		}
		c := rawzk.Dial(r.t, r.tgt.addr)
		fr, err := handshake(c, &jute.ConnectRequest{LastZxidSeen: old.lastZxid, TimeOut: 30000, SessionID: old.id, Passwd: old.passwd, HasReadOnly: true})
		if err != nil || fr == nil {
			return fmt.Sprintf("handshake failed: %v (closed %v)", err, fr == nil)
		}
		var resp jute.ConnectResponse
		if err := jute.Unmarshal(fr, &resp); err != nil {
			return "bad ConnectResponse: " + err.Error()
		}
		s := &sess{name: name, c: c, id: resp.SessionID, passwd: resp.Passwd, timeout: resp.TimeOut,
			lastZxid: old.lastZxid, xid: old.xid}
		r.sess[name] = s
		if resp.SessionID != 0 {
			r.all[resp.SessionID] = s
		}
		return fmt.Sprintf("timeout=%d same-session=%v same-passwd=%v", resp.TimeOut, resp.SessionID == old.id, string(resp.Passwd) == string(old.passwd))
	}}
}
