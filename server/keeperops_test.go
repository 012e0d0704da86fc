package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

func withKeeperOps(c *server.Config) { c.Extensions = ext.Of(ext.KeeperOps) }

func keeperCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func dialZK(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	c, err := zk.Connect(keeperCtx(t), addr, zk.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// mkTree creates root and, under it, the nodes named by rel (parents first).
func mkTree(t testing.TB, ctx context.Context, c *zk.Conn, root string, rel ...string) {
	t.Helper()
	for _, p := range append([]string{""}, rel...) {
		if _, err := c.Create(ctx, root+p, []byte(p), zk.OpenACL(), zk.ModePersistent); err != nil {
			t.Fatalf("create %s: %v", root+p, err)
		}
	}
}

func exists(t testing.TB, ctx context.Context, c *zk.Conn, p string) bool {
	t.Helper()
	ok, _, err := c.Exists(ctx, p)
	if err != nil {
		t.Fatalf("exists %s: %v", p, err)
	}
	return ok
}

// TestKeeperOps runs each extension op through the Go client on a server enabling it.
func TestKeeperOps(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(withKeeperOps))
	ctx := keeperCtx(t)
	c := dialZK(t, srv.Config().ListenAddr)

	t.Run("FilteredList", func(t *testing.T) {
		mkTree(t, ctx, c, "/fl", "/p1", "/p2")
		if _, err := c.Create(ctx, "/fl/e1", nil, zk.OpenACL(), zk.ModeEphemeral); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.CreateContainer(ctx, "/fl/c1", nil, zk.OpenACL()); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			f    zk.ListFilter
			want []string
		}{
			{zk.ListAll, []string{"c1", "e1", "p1", "p2"}},
			{zk.ListPersistentOnly, []string{"c1", "p1", "p2"}},
			{zk.ListEphemeralOnly, []string{"e1"}},
		} {
			names, st, err := c.FilteredList(ctx, "/fl", tc.f)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.want) || st.NumChildren != 4 {
				t.Errorf("filter %d: %v numChildren %d, want %v and 4", tc.f, names, st.NumChildren, tc.want)
			}
		}
		if _, _, err := c.FilteredList(ctx, "/nope", zk.ListAll); !errors.Is(err, zk.ErrNoNode) {
			t.Errorf("missing node: %v", err)
		}
	})

	t.Run("CreateIfNotExists", func(t *testing.T) {
		p, err := c.CreateIfNotExists(ctx, "/cine", []byte("a"), zk.OpenACL(), zk.ModePersistent)
		if err != nil || p != "/cine" {
			t.Fatalf("first: %q %v", p, err)
		}
		p, err = c.CreateIfNotExists(ctx, "/cine", []byte("b"), zk.OpenACL(), zk.ModePersistent)
		if err != nil || p != "/cine" {
			t.Fatalf("second: %q %v", p, err)
		}
		if d, _, _ := c.Get(ctx, "/cine"); string(d) != "a" {
			t.Errorf("data %q, want the first create's", d)
		}
		if _, err := c.CreateIfNotExists(ctx, "/nope/x", nil, zk.OpenACL(), zk.ModePersistent); !errors.Is(err, zk.ErrNoNode) {
			t.Errorf("missing parent: %v", err)
		}
		if _, err := c.CreateIfNotExists(ctx, "/cine/s", nil, zk.OpenACL(), zk.ModePersistentSequential); !errors.Is(err, zk.ErrBadArguments) {
			t.Errorf("sequential: %v", err)
		}
	})

	t.Run("RemoveRecursive", func(t *testing.T) {
		mkTree(t, ctx, c, "/rr", "/a", "/a/b", "/a/b/c", "/d")
		if _, err := c.Create(ctx, "/rr/a/e", nil, zk.OpenACL(), zk.ModeEphemeral); err != nil {
			t.Fatal(err)
		}
		// 6 nodes: a limit of 5 deletes nothing.
		if err := c.RemoveRecursive(ctx, "/rr", 5); !errors.Is(err, zk.ErrNotEmpty) {
			t.Fatalf("limit 5: %v", err)
		}
		if n, err := c.AllChildrenNumber(ctx, "/rr"); err != nil || n != 5 {
			t.Fatalf("after a refused removal: %d descendants, %v", n, err)
		}
		if err := c.RemoveRecursive(ctx, "/rr", 6); err != nil {
			t.Fatalf("limit 6: %v", err)
		}
		if exists(t, ctx, c, "/rr") {
			t.Fatal("/rr still exists")
		}
		if err := c.RemoveRecursive(ctx, "/rr", 100); !errors.Is(err, zk.ErrNoNode) {
			t.Errorf("missing: %v", err)
		}
		if err := c.RemoveRecursive(ctx, "/zookeeper", 100); !errors.Is(err, zk.ErrBadArguments) {
			t.Errorf("/zookeeper: %v", err)
		}
		// The ephemeral is gone from its session's list too.
		eph, err := c.Ephemerals(ctx, "/rr")
		if err != nil || len(eph) != 0 {
			t.Errorf("ephemerals under /rr: %v %v", eph, err)
		}
	})

	t.Run("RemoveRecursiveACL", func(t *testing.T) {
		mkTree(t, ctx, c, "/ra", "/x")
		noDelete := zk.WorldACL(zk.PermAll &^ zk.PermDelete)
		if _, err := c.Create(ctx, "/ra/x/locked", nil, noDelete, zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(ctx, "/ra/x/locked/leaf", nil, zk.OpenACL(), zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
		if err := c.RemoveRecursive(ctx, "/ra", 100); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("no DELETE on a node of the subtree: %v", err)
		}
		if !exists(t, ctx, c, "/ra/x/locked/leaf") {
			t.Fatal("a refused removal deleted something")
		}
	})

	t.Run("CreateWithParents", func(t *testing.T) {
		p, st, err := c.CreateWithParents(ctx, "/cwp/a/b", []byte("leaf"), zk.OpenACL(), zk.ModeEphemeral)
		if err != nil || p != "/cwp/a/b" || st.EphemeralOwner == 0 {
			t.Fatalf("%q %+v %v", p, st, err)
		}
		_, ast, err := c.Get(ctx, "/cwp/a")
		if err != nil || ast.EphemeralOwner != 0 || ast.Czxid != st.Czxid {
			t.Fatalf("parent: %+v %v (one txn: same czxid as the leaf)", ast, err)
		}
		if _, _, err := c.CreateWithParents(ctx, "/cwp/a/b", nil, zk.OpenACL(), zk.ModePersistent); !errors.Is(err, zk.ErrNodeExists) {
			t.Errorf("existing: %v", err)
		}
		p, _, err = c.CreateWithParents(ctx, "/cwp/s/n-", nil, zk.OpenACL(), zk.ModePersistentSequential)
		if err != nil || !strings.HasPrefix(p, "/cwp/s/n-") {
			t.Errorf("sequential: %q %v", p, err)
		}
		// A failure creates no ancestor: /cwp/a/b is ephemeral.
		if _, _, err := c.CreateWithParents(ctx, "/cwp/a/b/c/d", nil, zk.OpenACL(), zk.ModePersistent); !errors.Is(err, zk.ErrNoChildrenForEphemerals) {
			t.Errorf("under an ephemeral: %v", err)
		}
	})

	t.Run("Multi", func(t *testing.T) {
		mkTree(t, ctx, c, "/m", "/old", "/old/x", "/old/y")
		res, err := c.Multi(ctx,
			&zk.CheckNotExistsOp{Path: "/m/new", Version: zk.AnyVersion},
			&zk.RemoveRecursiveOp{Path: "/m/old", Limit: 10},
			&zk.CreateIfNotExistsOp{Path: "/m/new", ACL: zk.OpenACL()},
			&zk.CreateIfNotExistsOp{Path: "/m/new", ACL: zk.OpenACL()},
			&zk.SetOp{Path: "/m/new", Data: []byte("v"), Version: 0},
			&zk.CheckNotExistsOp{Path: "/m/new", Version: 0}, // version is 1 now
		)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 6 || res[2].Path != "/m/new" || res[3].Path != "/m/new" || res[4].Stat == nil || res[4].Stat.Version != 1 {
			t.Fatalf("results %+v", res)
		}
		if exists(t, ctx, c, "/m/old") {
			t.Error("/m/old not removed")
		}
		// A failing check undoes the removal before it.
		mkTree(t, ctx, c, "/m/old2", "/z")
		res, err = c.Multi(ctx,
			&zk.RemoveRecursiveOp{Path: "/m/old2", Limit: 10},
			&zk.CheckNotExistsOp{Path: "/m/new", Version: zk.AnyVersion},
			&zk.CreateOp{Path: "/m/x", ACL: zk.OpenACL()},
		)
		var me *zk.MultiError
		if !errors.As(err, &me) || me.Index != 1 || !errors.Is(err, zk.ErrNodeExists) || len(res) != 3 {
			t.Fatalf("failing multi: %v %+v", err, res)
		}
		if !errors.Is(res[2].Err, zk.ErrRuntimeInconsistency) || res[0].Err != nil {
			t.Errorf("results %+v", res)
		}
		if !exists(t, ctx, c, "/m/old2/z") || exists(t, ctx, c, "/m/x") {
			t.Error("a failed multi changed the tree")
		}
	})

	t.Run("CheckNotExistsAlone", func(t *testing.T) {
		// On its own, through raw frames (the Go client sends it only in a Multi).
		rc := rawzk.Connect(t, srv.Config().ListenAddr)
		if h := rc.Call(jute.OpCheckNotExists, &jute.CheckVersionRequest{Path: "/nope", Version: -1}, nil); h.Err != jute.OK {
			t.Errorf("missing node: %v", h.Err)
		}
		if h := rc.Call(jute.OpCheckNotExists, &jute.CheckVersionRequest{Path: "/cine", Version: -1}, nil); h.Err != jute.ErrNodeExists {
			t.Errorf("existing node: %v", h.Err)
		}
		if h := rc.Call(jute.OpCheckNotExists, &jute.CheckVersionRequest{Path: "/cine", Version: 7}, nil); h.Err != jute.OK {
			t.Errorf("existing node, other version: %v", h.Err)
		}
	})
}

// TestKeeperOpsRawLayouts checks the replies byte for byte as ClickHouse's client reads
// them (src/Common/ZooKeeper/ZooKeeperCommon.cpp): a multi's results carry ClickHouse's
// types 501, 502 and 503.
func TestKeeperOpsRawLayouts(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(withKeeperOps))
	rc := rawzk.Connect(t, srv.Config().ListenAddr)
	open := jute.OpenACLUnsafe
	var cr jute.CreateResponse
	if h := rc.Call(jute.OpCreateIfNotExists, &jute.CreateRequest{Path: "/a", ACL: open}, &cr); h.Err != jute.OK || cr.Path != "/a" {
		t.Fatalf("createIfNotExists: %v %q", h.Err, cr.Path)
	}
	var fl jute.GetChildren2Response
	if h := rc.Call(jute.OpFilteredList, &jute.FilteredListRequest{Path: "/", Type: jute.ListPersistentOnly}, &fl); h.Err != jute.OK || !slices.Contains(fl.Children, "a") {
		t.Fatalf("filteredList: %v %v", h.Err, fl.Children)
	}
	var mr jute.MultiResponse
	h := rc.Call(jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpCheckNotExists, Body: &jute.CheckVersionRequest{Path: "/b", Version: -1}},
		{Type: jute.OpCreateIfNotExists, Body: &jute.CreateRequest{Path: "/a", ACL: open}},
		{Type: jute.OpRemoveRecursive, Body: &jute.RemoveRecursiveRequest{Path: "/a", Limit: 1}},
	}}, &mr)
	want := []jute.MultiResult{
		{Type: jute.OpCheckNotExists},
		{Type: jute.OpCreateIfNotExists, Body: &jute.CreateResponse{Path: "/a"}},
		{Type: jute.OpRemoveRecursive},
	}
	if h.Err != jute.OK || !reflect.DeepEqual(mr.Results, want) {
		t.Fatalf("multi: %v %v, want %v", h.Err, mr.Results, want)
	}
}

// TestKeeperOpsOffAnswerAsUnknown: without the extension (the default), each of its
// opcodes gets exactly what an opcode zkd does not know gets (UNIMPLEMENTED, then the
// connection closes), and a multi holding one what a multi holding an unknown op gets.
func TestKeeperOpsOffAnswerAsUnknown(t *testing.T) {
	srv := zktest.Start(t)
	addr := srv.Config().ListenAddr
	type answer struct {
		err    jute.Code
		closed bool
	}
	alone := func(op jute.OpCode, body jute.Record) answer {
		rc := rawzk.Connect(t, addr)
		h, err := rc.Reply(rc.Send(op, body), nil)
		if err != nil {
			t.Fatalf("%v: %v", op, err)
		}
		return answer{h.Err, rc.Closed()}
	}
	unknown := alone(599, &jute.PathRequest{Path: "/"})
	if unknown != (answer{jute.ErrUnimplemented, true}) {
		t.Fatalf("unknown opcode answered %+v", unknown)
	}
	bodies := map[jute.OpCode]jute.Record{
		jute.OpFilteredList:      &jute.FilteredListRequest{Path: "/"},
		jute.OpCheckNotExists:    &jute.CheckVersionRequest{Path: "/", Version: -1},
		jute.OpCreateIfNotExists: &jute.CreateRequest{Path: "/x", ACL: jute.OpenACLUnsafe},
		jute.OpRemoveRecursive:   &jute.RemoveRecursiveRequest{Path: "/x", Limit: 10},
		jute.OpCreateWithParents: &jute.CreateRequest{Path: "/x/y", ACL: jute.OpenACLUnsafe},
	}
	for op, body := range bodies {
		if got := alone(op, body); got != unknown {
			t.Errorf("%v: %+v, want %+v", op, got, unknown)
		}
	}
	inMulti := func(op jute.OpCode, body jute.Record) string {
		rc := rawzk.Connect(t, addr)
		e := jute.Encoder{}
		(&jute.MultiHeader{Type: op, Err: -1}).Encode(&e)
		body.Encode(&e)
		(&jute.MultiHeader{Type: -1, Done: true, Err: -1}).Encode(&e)
		var mr jute.MultiResponse
		h, err := rc.Reply(rc.Send(jute.OpMulti, rawBody(e.Buf)), &mr)
		// Then whether the connection still serves.
		after, aerr := rc.TrySend(jute.OpExists, &jute.ExistsRequest{Path: "/"})
		var ah jute.ReplyHeader
		if aerr == nil {
			ah, aerr = rc.Reply(after, &jute.ExistsResponse{})
		}
		return fmt.Sprintf("%v %v %+v; then %v %v", h.Err, err, mr.Results, ah.Err, aerr)
	}
	unknownMulti := inMulti(599, &jute.CheckVersionRequest{Path: "/", Version: -1})
	for _, op := range []jute.OpCode{jute.OpCheckNotExists, jute.OpCreateIfNotExists, jute.OpRemoveRecursive} {
		if got := inMulti(op, bodies[op]); got != unknownMulti {
			t.Errorf("multi holding %v: %s, want %s", op, got, unknownMulti)
		}
	}
	// Nothing was written.
	c := dialZK(t, addr)
	if exists(t, keeperCtx(t), c, "/x") {
		t.Error("/x was created")
	}
}

// rawBody is a request body sent as is.
type rawBody []byte

func (b rawBody) Encode(e *jute.Encoder) { e.Buf = append(e.Buf, b...) }
func (b rawBody) Decode(*jute.Decoder)   {}

// TestRemoveRecursiveAtomicUnderCreates: while other sessions keep creating nodes under a
// subtree, a RemoveRecursive either removes the whole subtree, or fails (NOTEMPTY, its
// limit) having deleted nothing. Each round checks the tree right after the call on the
// same session, which sees its own write.
func TestRemoveRecursiveAtomicUnderCreates(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(withKeeperOps))
	ctx := keeperCtx(t)
	addr := srv.Config().ListenAddr
	c := dialZK(t, addr)
	const rounds, creators = 45, 3
	removed, refused := 0, 0
	defer func() {
		if !t.Failed() && (removed < rounds/3 || refused < rounds/3) {
			t.Errorf("%d removals and %d refusals in %d rounds: a kind of round did not happen", removed, refused, rounds)
		}
	}()
	for round := range rounds {
		root := fmt.Sprintf("/atomic%d", round)
		mkTree(t, ctx, c, root, "/a", "/a/b")
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range creators {
			wc := dialZK(t, addr)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					parent := []string{root, root + "/a", root + "/a/b"}[i%3]
					_, err := wc.Create(ctx, fmt.Sprintf("%s/w%d-%d", parent, w, i), nil, zk.OpenACL(), zk.ModePersistent)
					if errors.Is(err, zk.ErrNoNode) {
						return // the subtree is gone
					}
					if err != nil {
						t.Errorf("create: %v", err)
						return
					}
				}
			}()
		}
		// Let the creators get going, then remove with a limit that is sometimes too small.
		waitFor(t, "creators to start", func() bool {
			n, err := c.AllChildrenNumber(ctx, root)
			return err == nil && n >= 3+round%5
		})
		// Nodes are only added meanwhile: each one listed now exists until the removal.
		before := listSubtree(t, ctx, c, root)
		// A limit too small, one ample, one about the size (either outcome).
		limit := []uint32{uint32(len(before) - 1), 1 << 20, uint32(len(before) + 2)}[round%3]
		err := c.RemoveRecursive(ctx, root, limit)
		switch {
		case err == nil:
			removed++
			if exists(t, ctx, c, root) {
				t.Fatalf("round %d: removal succeeded but %s exists", round, root)
			}
		case errors.Is(err, zk.ErrNotEmpty):
			refused++
			for _, p := range before {
				if !exists(t, ctx, c, p) {
					t.Fatalf("round %d: a refused removal deleted %s", round, p)
				}
			}
		default:
			t.Fatalf("round %d: %v", round, err)
		}
		close(stop)
		wg.Wait()
		if err != nil {
			if err := c.RemoveRecursive(ctx, root, 1<<20); err != nil {
				t.Fatalf("round %d: cleanup: %v", round, err)
			}
		}
	}
}

// listSubtree lists root and every node under it.
func listSubtree(t testing.TB, ctx context.Context, c *zk.Conn, root string) []string {
	t.Helper()
	out := []string{root}
	for i := 0; i < len(out); i++ {
		kids, _, err := c.Children(ctx, out[i])
		if err != nil {
			t.Fatalf("children %s: %v", out[i], err)
		}
		for _, k := range kids {
			out = append(out, out[i]+"/"+k)
		}
	}
	return out
}

// TestRemoveRecursiveTxnLimit: a subtree whose txn would exceed jute.maxbuffer is refused
// with NOTEMPTY and nothing is deleted, whatever the node limit.
func TestRemoveRecursiveTxnLimit(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		withKeeperOps(c)
		c.JuteMaxBuffer = 8 << 10
	}))
	ctx := keeperCtx(t)
	c := dialZK(t, srv.Config().ListenAddr)
	mkTree(t, ctx, c, "/big")
	name := strings.Repeat("n", 200)
	for i := range 60 { // 60 deletes of ~210 bytes: over 8 KiB
		if _, err := c.Create(ctx, fmt.Sprintf("/big/%s%02d", name, i), nil, zk.OpenACL(), zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.RemoveRecursive(ctx, "/big", 1<<20); !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("oversized removal: %v", err)
	}
	if n, _ := c.AllChildrenNumber(ctx, "/big"); n != 60 {
		t.Fatalf("%d children left, want 60", n)
	}
	// A smaller one still works.
	mkTree(t, ctx, c, "/small", "/x")
	if err := c.RemoveRecursive(ctx, "/small", 10); err != nil {
		t.Fatal(err)
	}
}

// TestKeeperOpsReplay: the txns the extension writes are ZooKeeper's and replay from the
// log to the same tree after a restart.
func TestKeeperOpsReplay(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(withKeeperOps))
	ctx := keeperCtx(t)
	c := dialZK(t, srv.Config().ListenAddr)
	keeperWorkload(t, ctx, c, "/r")
	want := dumpTree(t, ctx, c, "/r")
	c.Close()
	srv.Restart()
	c = dialZK(t, srv.Config().ListenAddr)
	if got := dumpTree(t, ctx, c, "/r"); got != want {
		t.Fatalf("after restart:\n%s\nwant\n%s", got, want)
	}
}

// keeperWorkload runs every extension write under root.
func keeperWorkload(t testing.TB, ctx context.Context, c *zk.Conn, root string) {
	t.Helper()
	mkTree(t, ctx, c, root, "/a", "/a/b", "/a/b/c", "/d")
	steps := []func() error{
		func() error { return c.RemoveRecursive(ctx, root+"/a", 10) },
		func() error {
			_, _, err := c.CreateWithParents(ctx, root+"/p/q/r", []byte("r"), zk.OpenACL(), zk.ModePersistent)
			return err
		},
		func() error {
			_, err := c.CreateIfNotExists(ctx, root+"/p", nil, zk.OpenACL(), zk.ModePersistent)
			return err
		},
		func() error {
			_, err := c.CreateIfNotExists(ctx, root+"/p/new", []byte("n"), zk.OpenACL(), zk.ModePersistent)
			return err
		},
		func() error {
			_, err := c.Multi(ctx,
				&zk.CheckNotExistsOp{Path: root + "/gone", Version: zk.AnyVersion},
				&zk.RemoveRecursiveOp{Path: root + "/p/q", Limit: 10},
				&zk.CreateIfNotExistsOp{Path: root + "/p/q", Data: []byte("again"), ACL: zk.OpenACL()},
				&zk.CreateOp{Path: root + "/d/e", ACL: zk.OpenACL()},
			)
			return err
		},
		func() error {
			// A failing one: nothing of it applies.
			_, err := c.Multi(ctx,
				&zk.RemoveRecursiveOp{Path: root + "/d", Limit: 10},
				&zk.CheckNotExistsOp{Path: root + "/p", Version: zk.AnyVersion},
			)
			if errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			return fmt.Errorf("want NODEEXISTS, got %w", err)
		},
	}
	for i, s := range steps {
		if err := s(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
}

// dumpTree lists root's subtree: paths, data and the Stat fields txns decide.
func dumpTree(t testing.TB, ctx context.Context, c *zk.Conn, root string) string {
	t.Helper()
	var b strings.Builder
	var walk func(p string)
	walk = func(p string) {
		d, st, err := c.Get(ctx, p)
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		fmt.Fprintf(&b, "%s %q czxid=%d mzxid=%d pzxid=%d cversion=%d version=%d children=%d\n",
			p, d, st.Czxid, st.Mzxid, st.Pzxid, st.Cversion, st.Version, st.NumChildren)
		kids, _, err := c.Children(ctx, p)
		if err != nil {
			t.Fatalf("children %s: %v", p, err)
		}
		slices.Sort(kids)
		for _, k := range kids {
			walk(p + "/" + k)
		}
	}
	walk(root)
	return b.String()
}

// TestKeeperOpsEnsemble: on a 3-member ensemble, extension writes sent to a follower and to
// the leader leave every member with the same tree and digest.
func TestKeeperOpsEnsemble(t *testing.T) {
	e := startEnsembleConfig(t, 3, withKeeperOps)
	e.waitServing()
	ctx := keeperCtx(t)
	leader := e.leaderIndex()
	follower := (leader + 1) % 3
	cf := dialZK(t, e.members[follower].cfg.ListenAddr)
	keeperWorkload(t, ctx, cf, "/viaFollower")
	// checkNotExists on its own and a refused removal, through the follower too.
	rc := rawzk.Connect(t, e.members[follower].cfg.ListenAddr)
	for _, tc := range []struct {
		op   jute.OpCode
		body jute.Record
		want jute.Code
	}{
		{jute.OpCheckNotExists, &jute.CheckVersionRequest{Path: "/viaFollower/p", Version: -1}, jute.ErrNodeExists},
		{jute.OpCheckNotExists, &jute.CheckVersionRequest{Path: "/viaFollower/none", Version: -1}, jute.OK},
		{jute.OpRemoveRecursive, &jute.RemoveRecursiveRequest{Path: "/viaFollower", Limit: 2}, jute.ErrNotEmpty},
	} {
		if h := rc.Call(tc.op, tc.body, nil); h.Err != tc.want {
			t.Errorf("%v through the follower: %v, want %v", tc.op, h.Err, tc.want)
		}
	}
	cl := dialZK(t, e.members[leader].cfg.ListenAddr)
	keeperWorkload(t, ctx, cl, "/viaLeader")
	if err := cl.Sync(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	var want string
	for i := range e.members {
		c := dialZK(t, e.members[i].cfg.ListenAddr)
		if err := c.Sync(ctx, "/"); err != nil {
			t.Fatal(err)
		}
		got := dumpTree(t, ctx, c, "/viaFollower") + dumpTree(t, ctx, c, "/viaLeader")
		if i == 0 {
			want = got
		} else if got != want {
			t.Errorf("member %d's tree:\n%s\nmember 0's:\n%s", i, got, want)
		}
	}
	waitFor(t, "every member to apply the same last zxid", func() bool {
		var zx []int64
		for _, m := range e.members {
			_, z := server.TreeDigest(m.srv)
			zx = append(zx, z)
		}
		return zx[0] == zx[1] && zx[1] == zx[2]
	})
	d0, _ := server.TreeDigest(e.members[0].srv)
	for i, m := range e.members {
		if d, _ := server.TreeDigest(m.srv); d != d0 {
			t.Errorf("member %d's digest %x, member 0's %x", i, d, d0)
		}
	}
}

// TestKeeperMultiRead: a session that read /keeper/feature_flags (as ClickHouse's client
// does first) gets ClickHouse Keeper's multiRead: exists and filteredList allowed, a failed
// op keeps its type and has no body. Any other session gets ZooKeeper's, byte for byte what
// a server without the extension answers.
func TestKeeperMultiRead(t *testing.T) {
	on := zktest.Start(t, zktest.WithConfig(withKeeperOps))
	off := zktest.Start(t)
	mk := func(addr string) {
		rc := rawzk.Connect(t, addr)
		if h := rc.Call(jute.OpCreate, &jute.CreateRequest{Path: "/k", Data: []byte("d"), ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{}); h.Err != jute.OK {
			t.Fatal(h.Err)
		}
	}
	mk(on.Config().ListenAddr)
	mk(off.Config().ListenAddr)
	zkReads := &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpGetData, Body: &jute.GetDataRequest{Path: "/missing"}},
		{Type: jute.OpGetChildren, Body: &jute.GetChildrenRequest{Path: "/k"}},
	}}
	keeperReads := &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpGetData, Body: &jute.GetDataRequest{Path: "/missing"}},
		{Type: jute.OpExists, Body: &jute.ExistsRequest{Path: "/k"}},
		{Type: jute.OpExists, Body: &jute.ExistsRequest{Path: "/missing"}},
		{Type: jute.OpFilteredList, Body: &jute.FilteredListRequest{Path: "/", Type: jute.ListPersistentOnly}},
	}}
	frame := func(addr string, negotiate bool, m *jute.MultiRequest) string {
		rc := rawzk.Connect(t, addr)
		if negotiate {
			rc.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/keeper/feature_flags"}, &jute.GetDataResponse{})
		}
		if err := rc.WriteFrame(append([]byte{0, 0, 0, 9, 0, 0, 0, 22}, jute.Marshal(m)...)); err != nil {
			t.Fatal(err)
		}
		b, err := rc.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%x", b[12:]) // past xid and zxid
	}
	// Without the read: ZooKeeper's answers, as a server without the extension gives them.
	for _, m := range []*jute.MultiRequest{zkReads, keeperReads} {
		if got, want := frame(on.Config().ListenAddr, false, m), frame(off.Config().ListenAddr, false, m); got != want {
			t.Errorf("multiRead %v: %s, without the extension %s", m.Ops[1].Type, got, want)
		}
	}
	// With it: ClickHouse's layout.
	rc := rawzk.Connect(t, on.Config().ListenAddr)
	rc.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/keeper/feature_flags"}, &jute.GetDataResponse{})
	var mr jute.MultiResponse
	if h := rc.Call(jute.OpMultiRead, keeperReads, &mr); h.Err != jute.OK || len(mr.Results) != 4 {
		t.Fatalf("%v %+v", h.Err, mr.Results)
	}
	r := mr.Results
	if r[0].Type != jute.OpGetData || r[0].Err != jute.ErrNoNode || r[0].Body != nil {
		t.Errorf("failed getData: %+v", r[0])
	}
	if st, ok := r[1].Body.(*jute.StatResponse); r[1].Type != jute.OpExists || !ok || st.Stat.DataLength != 1 {
		t.Errorf("exists: %+v", r[1])
	}
	if r[2].Type != jute.OpExists || r[2].Err != jute.ErrNoNode || r[2].Body != nil {
		t.Errorf("failed exists: %+v", r[2])
	}
	if l, ok := r[3].Body.(*jute.GetChildren2Response); r[3].Type != jute.OpGetChildren2 || !ok || !slices.Contains(l.Children, "k") {
		t.Errorf("filteredList: %+v", r[3])
	}
	// The raw bytes of the failed getData: type 4, not done, NONODE, and no body.
	got := frame(on.Config().ListenAddr, true, &jute.MultiRequest{Ops: keeperReads.Ops[:1]})
	if want := "00000000" + "00000004" + "00" + "ffffff9b" + "ffffffff" + "01" + "ffffffff"; got != want {
		t.Errorf("failed getData bytes %s, want %s", got, want)
	}
}

// TestMixedKeeperOpsZkdLeads: a zkd leader with the extension and two Apache ZooKeeper 3.8
// followers. ZooKeeper applies the txns the extension's writes are logged as, checks the
// digest each carries, and ends with the same tree, with no digest mismatch anywhere.
func TestMixedKeeperOpsZkdLeads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	members := startMixedWith(t, map[int64]bool{3: true}, []int64{1, 3, 2},
		func(c *server.Config) { c.FourLetterWhitelist = []string{"*"}; withKeeperOps(c) },
		[]string{"4lw.commands.whitelist=*"})
	leader := members[2]
	if m := leader.mode(t); m != "leader" {
		t.Fatalf("zkd (sid 3) is %q", m)
	}
	ctx := keeperCtx(t)
	keeperWorkload(t, ctx, dialZK(t, leader.addr), "/mixed")
	want := ""
	for i, m := range members {
		c := dialZK(t, m.addr)
		if err := c.Sync(ctx, "/"); err != nil {
			t.Fatal(err)
		}
		got := dumpTree(t, ctx, c, "/mixed")
		if i == 0 {
			want = got
		} else if got != want {
			t.Errorf("member %d's tree:\n%s\nmember %d's:\n%s", m.id, got, members[0].id, want)
		}
	}
	noMismatches(t, members)
}
