package compat

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/zktest"
)

// Data directory round trips: one server writes, the other opens a copy of its data directory
// and must show every node exactly as the writer did (data, every Stat field including times
// and session ids, ACLs, children), and must accept the writer's live sessions back.

// call sends a request on a raw session and fails the test unless the reply's error is one of
// want (OK when none is given).
func (s *sess) must(t *testing.T, op jute.OpCode, body, resp jute.Record, want ...jute.Code) jute.Code {
	t.Helper()
	h, b, err := s.call(s.nextXid(), op, body)
	if err != nil {
		t.Fatalf("%v %+v: %v", op, body, err)
	}
	if len(want) == 0 {
		want = []jute.Code{jute.OK}
	}
	for _, w := range want {
		if h.Err == w {
			if h.Err == jute.OK && resp != nil {
				if err := jute.Unmarshal(b, resp); err != nil {
					t.Fatalf("%v: decoding %T: %v", op, resp, err)
				}
			}
			return h.Err
		}
	}
	t.Fatalf("%v %+v: err %d, want one of %v", op, body, h.Err, want)
	return h.Err
}

func mkNode(t *testing.T, s *sess, path string, data []byte, acl []jute.ACL, flags int32) string {
	t.Helper()
	var r jute.Create2Response
	s.must(t, jute.OpCreate2, &jute.CreateRequest{Path: path, Data: data, ACL: acl, Flags: flags}, &r)
	return r.Path
}

// populate writes a varied tree under /dd through two sessions. It returns the session that
// owns ephemerals and stays open.
func populate(t *testing.T, addr, tag string) *sess {
	t.Helper()
	owner := newSession(t, "owner", addr, 40000)
	w := newSession(t, "w", addr, 40000)
	w.must(t, jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: b("dd:pw")}, nil)
	mkNode(t, w, "/dd", b("root of "+tag), open, persistent)
	mkNode(t, w, "/dd/nested", nil, open, persistent)
	mkNode(t, w, "/dd/nested/a", b("a"), open, persistent)
	mkNode(t, w, "/dd/nested/a/b", b("b"), open, persistent)
	mkNode(t, w, "/dd/nested/a/b/c", b("c"), open, persistent)
	mkNode(t, w, "/dd/bin", []byte{0, 1, 2, 0xff, 0xfe, 0x80, 0, '\n'}, open, persistent)
	mkNode(t, w, "/dd/empty", []byte{}, open, persistent)
	mkNode(t, w, "/dd/null", nil, open, persistent)
	mkNode(t, w, "/dd/big", bytes.Repeat([]byte("0123456789abcdef"), 40000), open, persistent)
	mkNode(t, w, "/dd/ünï-€", b("unicode"), open, persistent)
	for i := 0; i < 3; i++ {
		mkNode(t, w, "/dd/seq-", []byte{byte('0' + i)}, open, seq)
	}
	w.must(t, jute.OpDelete, &jute.DeleteRequest{Path: "/dd/seq-0000000007", Version: -1}, nil)
	mkNode(t, w, "/dd/acl", b("digest"), []jute.ACL{
		{Perms: jute.PermAll, ID: jute.ID{Scheme: "digest", ID: digestID("dd", "pw")}},
		{Perms: jute.PermRead, ID: jute.WorldAnyone},
	}, persistent)
	mkNode(t, w, "/dd/acl/auth", b("creator"), jute.CreatorAllACL, persistent)
	mkNode(t, w, "/dd/ip", nil, []jute.ACL{{Perms: jute.PermRead | jute.PermWrite, ID: jute.ID{Scheme: "ip", ID: "127.0.0.0/8"}}}, persistent)
	readAdmin := []jute.ACL{{Perms: jute.PermRead | jute.PermAdmin, ID: jute.WorldAnyone}}
	mkNode(t, w, "/dd/shared-acl-1", nil, readAdmin, persistent)
	mkNode(t, w, "/dd/shared-acl-2", nil, readAdmin, persistent)
	var cr jute.Create2Response
	w.must(t, jute.OpCreateContainer, &jute.CreateRequest{Path: "/dd/ctr", Data: b("ctr"), ACL: open, Flags: jute.FlagContainer}, &cr)
	mkNode(t, w, "/dd/ctr/kid", nil, open, persistent)
	w.must(t, jute.OpCreateContainer, &jute.CreateRequest{Path: "/dd/ctr-unused", ACL: open, Flags: jute.FlagContainer}, &cr)
	w.must(t, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/dd/ttl", Data: b("ttl"), ACL: open, Flags: jute.FlagPersistentWithTTL, TTL: hour}, &cr)
	w.must(t, jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/dd/ttls-", ACL: open, Flags: jute.FlagPersistentSequentialTTL, TTL: 2 * hour}, &cr)
	mkNode(t, w, "/dd/ttl/kid", nil, open, persistent)
	w.must(t, jute.OpSetData, &jute.SetDataRequest{Path: "/dd/ttl", Data: b("ttl2"), Version: -1}, nil)
	for i := 0; i < 3; i++ {
		w.must(t, jute.OpSetData, &jute.SetDataRequest{Path: "/dd/nested/a", Data: []byte{byte('x' + i)}, Version: int32(i)}, nil)
	}
	w.must(t, jute.OpSetData, &jute.SetDataRequest{Path: "/dd/null", Data: nil, Version: 0}, nil)
	w.must(t, jute.OpSetACL, &jute.SetACLRequest{Path: "/dd/shared-acl-2", ACL: open, Version: 0}, nil)
	w.must(t, jute.OpSetACL, &jute.SetACLRequest{Path: "/dd/shared-acl-2", ACL: readAdmin, Version: 1}, nil)
	mkNode(t, w, "/dd/gone", nil, open, persistent)
	w.must(t, jute.OpDelete, &jute.DeleteRequest{Path: "/dd/gone", Version: 0}, nil)
	// Failed writes are logged as error transactions; a failed multi as a MultiTxn holding
	// an error: replaying either must change nothing.
	w.must(t, jute.OpCreate, &jute.CreateRequest{Path: "/dd", ACL: open}, nil, jute.ErrNodeExists)
	w.must(t, jute.OpSetData, &jute.SetDataRequest{Path: "/dd", Version: 42}, nil, jute.ErrBadVersion)
	var mr jute.MultiResponse
	w.must(t, jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
		mCreate("/dd/multi", b("m"), persistent), mCreate("/dd/multi/s-", nil, seq), mSet("/dd", b("multi"), -1), mCheck("/dd/bin", 0), mDelete("/dd/empty", -1),
	}}, &mr)
	w.must(t, jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
		mCreate("/dd/multi-failed", nil, persistent), mSet("/dd/bin", nil, 99),
	}}, &mr)
	// create2 and createContainer without the CONTAINER flag inside a multi: zkd keeps the
	// opcodes as ZooKeeper 3.9 does but must log them so that 3.8.0 applies them too.
	w.must(t, jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
		mCreate2("/dd/multi2", b("m2"), persistent), mOp(jute.OpCreateContainer, "/dd/multi2/ctr", persistent, 0),
		mCreate2("/dd/multi2/s-", nil, seq), mSet("/dd/multi2", b("after"), 0),
	}}, &mr)
	// Ephemerals: those of the owner session stay; the closed session's are gone.
	mkNode(t, owner, "/dd/eph", b("eph"), open, ephemeral)
	mkNode(t, owner, "/dd/ephseq-", nil, open, ephSeq)
	mkNode(t, owner, "/dd/nested/a/eph", nil, open, ephemeral)
	mkNode(t, w, "/dd/eph-of-closed", nil, open, ephemeral)
	w.must(t, jute.OpCloseSession, nil, nil)
	return owner
}

// node is everything a client can learn about one znode.
type node struct {
	data     []byte
	stat     jute.Stat
	acl      []jute.ACL
	aclStat  jute.Stat
	children []string
}

func (n node) String() string {
	return fmt.Sprintf("data=%s stat=%+v acl=%s aclStat-equal=%v children=%q", data(n.data), n.stat, acls(n.acl), n.aclStat == n.stat, n.children)
}

// dump reads the whole tree as the super user.
func dump(t *testing.T, addr string) map[string]node {
	t.Helper()
	s := newSession(t, "dump", addr, 30000)
	defer func() { s.call(s.nextXid(), jute.OpCloseSession, nil); s.c.NC.Close() }()
	s.must(t, jute.OpAuth, &jute.AuthPacket{Scheme: "digest", Auth: b("super:" + superPasswd)}, nil)
	out := map[string]node{}
	var walk func(path string)
	walk = func(path string) {
		var n node
		var gd jute.GetDataResponse
		s.must(t, jute.OpGetData, &jute.GetDataRequest{Path: path}, &gd)
		n.data, n.stat = gd.Data, gd.Stat
		var ga jute.GetACLResponse
		s.must(t, jute.OpGetACL, &jute.GetACLRequest{Path: path}, &ga)
		n.acl, n.aclStat = ga.ACL, ga.Stat
		var gc jute.StringsResponse
		s.must(t, jute.OpGetChildren, &jute.GetChildrenRequest{Path: path}, &gc)
		n.children = append([]string{}, gc.Strings...)
		sort.Strings(n.children)
		out[path] = n
		for _, c := range n.children {
			if path == "/" {
				walk("/" + c)
			} else {
				walk(path + "/" + c)
			}
		}
	}
	walk("/")
	return out
}

// compareDumps reports every node that differs between the writer's and the reader's view.
func compareDumps(t *testing.T, writer, reader string, want, got map[string]node) {
	t.Helper()
	paths := map[string]bool{}
	for p := range want {
		paths[p] = true
	}
	for p := range got {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	bad := 0
	for _, p := range sorted {
		w, inW := want[p]
		g, inG := got[p]
		switch {
		case !inG:
			t.Errorf("%s: written by %s, missing in %s", p, writer, reader)
		case !inW:
			t.Errorf("%s: not written by %s, present in %s: %v", p, writer, reader, g)
		case w.String() != g.String() || !bytes.Equal(w.data, g.data) || (w.data == nil) != (g.data == nil):
			t.Errorf("%s differs\n  %s: %v\n  %s: %v", p, writer, w, reader, g)
		default:
			continue
		}
		if bad++; bad > 20 {
			t.Fatalf("too many differences")
		}
	}
	if len(want) < 25 {
		t.Errorf("the dump holds only %d nodes: populate did not run?", len(want))
	}
}

// copyDir copies a data directory (regular files only; ZooKeeper and zkd write nothing else).
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "data")
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
	return dst
}

func listDir(dir string) string {
	ents, _ := os.ReadDir(filepath.Join(dir, "version-2"))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// resume reconnects to a session (by id and password) on another server and reports whether
// it is accepted as the same session.
func resume(t *testing.T, addr string, s *sess) *sess {
	t.Helper()
	c := rawzk.Dial(t, addr)
	fr, err := handshake(c, &jute.ConnectRequest{LastZxidSeen: s.lastZxid, TimeOut: 40000, SessionID: s.id, Passwd: s.passwd, HasReadOnly: true})
	if err != nil || fr == nil {
		t.Fatalf("resuming session %#x: %v (closed %v)", s.id, err, fr == nil)
	}
	var resp jute.ConnectResponse
	if err := jute.Unmarshal(fr, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.SessionID != s.id || !bytes.Equal(resp.Passwd, s.passwd) || resp.TimeOut <= 0 {
		t.Fatalf("session %#x not resumed: %+v", s.id, resp)
	}
	return &sess{name: s.name, c: c, id: s.id, passwd: s.passwd, timeout: resp.TimeOut, lastZxid: s.lastZxid}
}

// checkRefDigests fails the test when ZooKeeper found a digest mismatch while loading a data
// directory written by zkd (it only logs and counts those).
func checkRefDigests(t *testing.T, ref *refzk.Server) {
	t.Helper()
	out, err := ref.Command("mntr")
	if err != nil {
		t.Fatalf("mntr: %v", err)
	}
	m := regexp.MustCompile(`(?m)^zk_digest_mismatches_count\s+(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("mntr has no zk_digest_mismatches_count:\n%s", out)
	}
	if m[1] != "0" {
		log, _ := os.ReadFile(ref.LogPath())
		var lines []string
		for _, l := range strings.Split(string(log), "\n") {
			if strings.Contains(strings.ToLower(l), "digest") {
				lines = append(lines, l)
			}
		}
		t.Errorf("ZooKeeper counted %s digest mismatches loading zkd's files:\n%s", m[1], strings.Join(lines, "\n"))
	}
}

// TestDataDirZkdToZooKeeper writes with zkd and reads with ZooKeeper, for three states of
// zkd's directory: after a clean stop (the start-up snapshot plus a log), after a restart
// (a snapshot holding everything), and copied while zkd runs (a log never closed). The first
// then continues: ZooKeeper writes more and zkd opens ZooKeeper's directory again.
func TestDataDirZkdToZooKeeper(t *testing.T) {
	refzk.Require(t)
	for _, mode := range []string{"clean-stop", "restart-snapshot", "copied-while-running"} {
		t.Run(mode, func(t *testing.T) {
			z := zktest.Start(t, zkdConfig("", nil))
			owner := populate(t, z.Addr(), "zkd")
			want := dump(t, z.Addr())
			switch mode {
			case "clean-stop":
				z.Stop()
			case "restart-snapshot":
				z.Restart()
				compareDumps(t, "zkd", "zkd after restart", want, dump(t, z.Addr()))
				z.Stop()
			}
			dir := copyDir(t, z.DataDir())
			t.Logf("zkd wrote: %s", listDir(dir))
			ref := refzk.StartStandalone(t, refOptions(dir))
			got := dump(t, ref.Addr())
			compareDumps(t, "zkd", "zookeeper", want, got)
			checkRefDigests(t, ref)

			// The session that owns ephemerals lives on in ZooKeeper with the same password.
			moved := resume(t, ref.Addr(), owner)
			var gd jute.GetDataResponse
			moved.must(t, jute.OpGetData, &jute.GetDataRequest{Path: "/dd/eph"}, &gd)
			if gd.Stat.EphemeralOwner != owner.id {
				t.Errorf("/dd/eph owner %#x in ZooKeeper, want the zkd session %#x", gd.Stat.EphemeralOwner, owner.id)
			}
			if mode != "clean-stop" {
				return
			}

			// Ping-pong: ZooKeeper writes on zkd's files, then zkd reads ZooKeeper's.
			mkNode(t, moved, "/pp", b("from zookeeper"), open, persistent)
			mkNode(t, moved, "/dd/nested/a/b/c/d", nil, open, persistent)
			moved.must(t, jute.OpSetData, &jute.SetDataRequest{Path: "/dd", Data: b("set by zookeeper"), Version: -1}, nil)
			moved.must(t, jute.OpDelete, &jute.DeleteRequest{Path: "/dd/seq-0000000008", Version: -1}, nil)
			mkNode(t, moved, "/dd/seq-", nil, open, seq)
			moved.must(t, jute.OpCloseSession, nil, nil) // its ephemerals go
			other := newSession(t, "other", ref.Addr(), 40000)
			mkNode(t, other, "/pp/eph", nil, open, ephemeral)
			want = dump(t, ref.Addr())
			if _, ok := want["/dd/eph"]; ok {
				t.Errorf("/dd/eph survived its session's close in ZooKeeper")
			}
			ref.Stop()
			dir2 := copyDir(t, ref.DataDir())
			t.Logf("zookeeper wrote: %s", listDir(dir2))
			z2 := zktest.Start(t, zkdConfig(dir2, nil))
			compareDumps(t, "zookeeper", "zkd", want, dump(t, z2.Addr()))
			resumed := resume(t, z2.Addr(), other)
			resumed.must(t, jute.OpCloseSession, nil, nil)
		})
	}
}

// TestDataDirZooKeeperToZkd writes with ZooKeeper, stops it (SIGTERM) and reads a copy of its
// directory with zkd.
func TestDataDirZooKeeperToZkd(t *testing.T) {
	refzk.Require(t)
	ref := refzk.StartStandalone(t, refOptions(""))
	owner := populate(t, ref.Addr(), "zookeeper")
	want := dump(t, ref.Addr())
	ref.Stop()
	dir := copyDir(t, ref.DataDir())
	t.Logf("zookeeper wrote: %s", listDir(dir))
	z := zktest.Start(t, zkdConfig(dir, nil))
	compareDumps(t, "zookeeper", "zkd", want, dump(t, z.Addr()))

	moved := resume(t, z.Addr(), owner)
	var gd jute.GetDataResponse
	moved.must(t, jute.OpGetData, &jute.GetDataRequest{Path: "/dd/eph"}, &gd)
	if gd.Stat.EphemeralOwner != owner.id {
		t.Errorf("/dd/eph owner %#x in zkd, want the ZooKeeper session %#x", gd.Stat.EphemeralOwner, owner.id)
	}
	// zkd goes on from ZooKeeper's last zxid and keeps its own files readable.
	mkNode(t, moved, "/after", b("zkd"), open, persistent)
	moved.must(t, jute.OpCloseSession, nil, nil)
	want = dump(t, z.Addr())
	z.Restart()
	compareDumps(t, "zkd", "zkd after restart", want, dump(t, z.Addr()))
}
