package zk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/jute"
)

func testCreateGetSetDelete(t *testing.T, e *env) {
	c, _ := e.connect(t)
	ctx := testCtx(t)

	if p := mustCreate(t, c, "/a", []byte("hello"), ModePersistent); p != "/a" {
		t.Fatalf("create returned %q", p)
	}
	data, st, err := c.Get(ctx, "/a")
	if err != nil || string(data) != "hello" || st.Version != 0 || st.DataLength != 5 || st.Czxid == 0 {
		t.Fatalf("get: %q %+v %v", data, st, err)
	}
	st2, err := c.Set(ctx, "/a", []byte("world"), 0)
	if err != nil || st2.Version != 1 || st2.Mzxid <= st.Mzxid {
		t.Fatalf("set: %+v %v", st2, err)
	}
	// Typed errors: errors.Is with the package's constants, the jute.Code itself, and
	// errors.As for the operation and path.
	_, err = c.Set(ctx, "/a", []byte("x"), 0)
	if !errors.Is(err, ErrBadVersion) || !errors.Is(err, jute.ErrBadVersion) {
		t.Fatalf("set with stale version: %v", err)
	}
	var oe *OpError
	if !errors.As(err, &oe) || oe.Op != "setData" || oe.Path != "/a" {
		t.Fatalf("error %#v is not an OpError for setData /a", err)
	}
	var code Code
	if !errors.As(err, &code) || code != ErrBadVersion {
		t.Fatalf("errors.As code: %v", code)
	}
	if _, err := c.Create(ctx, "/a", nil, OpenACL(), ModePersistent); !errors.Is(err, ErrNodeExists) {
		t.Fatalf("create existing: %v", err)
	}
	if _, _, err := c.Get(ctx, "/missing"); !errors.Is(err, ErrNoNode) {
		t.Fatalf("get missing: %v", err)
	}
	if _, err := c.Create(ctx, "/missing/child", nil, OpenACL(), ModePersistent); !errors.Is(err, ErrNoNode) {
		t.Fatalf("create under missing parent: %v", err)
	}

	ok, st3, err := c.Exists(ctx, "/a")
	if !ok || err != nil || st3.Version != 1 {
		t.Fatalf("exists: %v %+v %v", ok, st3, err)
	}
	ok, st3, err = c.Exists(ctx, "/missing")
	if ok || st3 != nil || err != nil {
		t.Fatalf("exists missing: %v %v %v", ok, st3, err)
	}

	// nil data is stored as null, empty as empty; both read back with length 0.
	mustCreate(t, c, "/nil", nil, ModePersistent)
	mustCreate(t, c, "/empty", []byte{}, ModePersistent)
	for _, p := range []string{"/nil", "/empty"} {
		d, st, err := c.Get(ctx, p)
		if err != nil || len(d) != 0 || st.DataLength != 0 {
			t.Fatalf("get %s: %q %v", p, d, err)
		}
	}
	big := bytes.Repeat([]byte("z"), 512<<10)
	mustSet(t, c, "/nil", big)
	if d, _, err := c.Get(ctx, "/nil"); err != nil || !bytes.Equal(d, big) {
		t.Fatalf("big value: %d bytes, %v", len(d), err)
	}

	mustCreate(t, c, "/a/child", nil, ModePersistent)
	if err := c.Delete(ctx, "/a", AnyVersion); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("delete non-empty: %v", err)
	}
	if err := c.Delete(ctx, "/a/child", 5); !errors.Is(err, ErrBadVersion) {
		t.Fatalf("delete bad version: %v", err)
	}
	if err := c.Delete(ctx, "/a/child", 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "/a", 1); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "/a", AnyVersion); !errors.Is(err, ErrNoNode) {
		t.Fatalf("delete missing: %v", err)
	}
}

func testCreateModes(t *testing.T, e *env) {
	c, _ := e.connect(t)
	ctx := testCtx(t)
	mustCreate(t, c, "/seq", nil, ModePersistent)

	var names []string
	for range 3 {
		names = append(names, mustCreate(t, c, "/seq/n-", nil, ModePersistentSequential))
	}
	want := []string{"/seq/n-0000000000", "/seq/n-0000000001", "/seq/n-0000000002"}
	if !slices.Equal(names, want) {
		t.Fatalf("sequential names %v, want %v", names, want)
	}
	// A sequential create may end in '/': the server appends the number to the parent path.
	if p := mustCreate(t, c, "/seq/", nil, ModeEphemeralSequential); p != "/seq/0000000003" {
		t.Fatalf("sequential create of /seq/: %q", p)
	}

	p, st, err := c.Create2(ctx, "/eph", []byte("e"), OpenACL(), ModeEphemeral)
	if err != nil || p != "/eph" || st.EphemeralOwner != c.SessionID() || st.DataLength != 1 {
		t.Fatalf("create2 ephemeral: %q %+v %v (session 0x%x)", p, st, err, c.SessionID())
	}
	if _, err := c.Create(ctx, "/eph/child", nil, OpenACL(), ModePersistent); !errors.Is(err, ErrNoChildrenForEphemerals) {
		t.Fatalf("child of ephemeral: %v", err)
	}

	p, st, err = c.CreateContainer(ctx, "/box", nil, OpenACL())
	if err != nil || p != "/box" || st.EphemeralOwner != 0 {
		t.Fatalf("create container: %q %+v %v", p, st, err)
	}
	mustCreate(t, c, "/box/item", nil, ModePersistent)
	if p, err := c.Create(ctx, "/box2", nil, OpenACL(), ModeContainer); err != nil || p != "/box2" {
		t.Fatalf("create with ModeContainer: %q %v", p, err)
	}
	if e.fastContainers {
		// A container is removed once it has had a child and has none left.
		if err := c.Delete(ctx, "/box/item", AnyVersion); err != nil {
			t.Fatal(err)
		}
		eventually(t, "container removal", func() error {
			if ok, _, err := c.Exists(ctx, "/box"); err != nil || ok {
				return fmt.Errorf("exists=%v err=%v", ok, err)
			}
			return nil
		})
	}

	if !e.extendedTypes {
		return
	}
	p, st, err = c.CreateTTL(ctx, "/ttl", []byte("t"), OpenACL(), ModePersistentTTL, time.Hour)
	if err != nil || p != "/ttl" || st.EphemeralOwner != 0 {
		t.Fatalf("createTTL: %q %+v %v", p, st, err)
	}
	p, _, err = c.CreateTTL(ctx, "/ttl-", nil, OpenACL(), ModePersistentSequentialTTL, time.Minute)
	if err != nil || !strings.HasPrefix(p, "/ttl-00000") {
		t.Fatalf("createTTL sequential: %q %v", p, err)
	}
}

func testClientSideValidation(t *testing.T, e *env) {
	c, _ := e.connect(t)
	ctx := testCtx(t)
	bad := []string{"", "a", "/a/", "/a//b", "/a/./b", "/a/../b", "/a\x00b", "/a\x01"}
	for _, p := range bad {
		if _, _, err := c.Get(ctx, p); !errors.Is(err, ErrBadArguments) {
			t.Errorf("get %q: %v, want ErrBadArguments", p, err)
		}
	}
	if _, err := c.Create(ctx, "/x", nil, OpenACL(), ModePersistentTTL); !errors.Is(err, ErrBadArguments) {
		t.Errorf("TTL mode via Create: %v", err)
	}
	if _, _, err := c.CreateTTL(ctx, "/x", nil, OpenACL(), ModePersistent, time.Second); !errors.Is(err, ErrBadArguments) {
		t.Errorf("CreateTTL with a non-TTL mode: %v", err)
	}
	if _, _, err := c.CreateTTL(ctx, "/x", nil, OpenACL(), ModePersistentTTL, 0); !errors.Is(err, ErrBadArguments) {
		t.Errorf("CreateTTL with zero TTL: %v", err)
	}
	if _, err := c.Create(ctx, "/x", nil, nil, ModePersistent); !errors.Is(err, ErrInvalidACL) {
		t.Errorf("create with no ACL: %v", err)
	}
	if _, err := c.Create(ctx, "/x", nil, OpenACL(), CreateMode(42)); !errors.Is(err, ErrBadArguments) {
		t.Errorf("bad mode: %v", err)
	}
	// The connection is still healthy: nothing invalid reached the server.
	if _, _, err := c.Get(ctx, "/"); err != nil {
		t.Fatal(err)
	}
}

func testChildrenAndCounts(t *testing.T, e *env) {
	c, _ := e.connect(t)
	ctx := testCtx(t)
	mustCreate(t, c, "/p", nil, ModePersistent)
	for _, n := range []string{"b", "a", "c"} {
		mustCreate(t, c, "/p/"+n, nil, ModePersistent)
	}
	mustCreate(t, c, "/p/a/x", nil, ModePersistent)
	mustCreate(t, c, "/p/a/y", nil, ModeEphemeral)
	mustCreate(t, c, "/p/c/e", nil, ModeEphemeral)

	kids, st, err := c.Children(ctx, "/p")
	if err != nil || !slices.Equal(sorted(kids), []string{"a", "b", "c"}) || st.NumChildren != 3 {
		t.Fatalf("children: %v %+v %v", kids, st, err)
	}
	if kids, _, err := c.Children(ctx, "/p/b"); err != nil || len(kids) != 0 {
		t.Fatalf("children of leaf: %v %v", kids, err)
	}
	if _, _, err := c.Children(ctx, "/nope"); !errors.Is(err, ErrNoNode) {
		t.Fatalf("children of missing: %v", err)
	}
	if n, err := c.AllChildrenNumber(ctx, "/p"); err != nil || n != 6 {
		t.Fatalf("all children number: %d %v", n, err)
	}
	eph, err := c.Ephemerals(ctx, "/")
	if err != nil || !slices.Equal(sorted(eph), []string{"/p/a/y", "/p/c/e"}) {
		t.Fatalf("ephemerals: %v %v", eph, err)
	}
	eph, err = c.Ephemerals(ctx, "/p/a")
	if err != nil || !slices.Equal(eph, []string{"/p/a/y"}) {
		t.Fatalf("ephemerals /p/a: %v %v", eph, err)
	}
}

func testSyncWhoAmIReconfig(t *testing.T, e *env) {
	c, _ := e.connect(t)
	ctx := testCtx(t)
	if err := c.Sync(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	ids, err := c.WhoAmI(ctx)
	if err != nil || len(ids) != 1 || ids[0].AuthScheme != "ip" {
		t.Fatalf("whoAmI: %v %v", ids, err)
	}
	if err := c.AddAuth(ctx, "digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	ids, err = c.WhoAmI(ctx)
	if err != nil || !slices.Contains(ids, ClientInfo{AuthScheme: "digest", User: "alice"}) {
		t.Fatalf("whoAmI after digest auth: %v %v", ids, err)
	}
	// Standalone servers do not reconfigure.
	_, _, err = c.Reconfig(ctx, []string{"server.9=127.0.0.1:1:2:participant;3"}, -1)
	if !errors.Is(err, ErrUnimplemented) && !errors.Is(err, ErrReconfigDisabled) && !errors.Is(err, ErrNoAuth) {
		t.Fatalf("reconfig on a standalone server: %v", err)
	}
}

func testACLAndAuth(t *testing.T, e *env) {
	alice, root := e.connect(t)
	ctx := testCtx(t)
	if got := DigestID("user", "pass"); got != "user:smGaoVKd/cQkjm7b88GyorAUz20=" {
		t.Fatalf("DigestID = %q", got)
	}
	if err := alice.AddAuth(ctx, "digest", []byte("alice:pw")); err != nil {
		t.Fatal(err)
	}
	// Adding the same credentials again is a no-op that succeeds.
	if err := alice.AddAuth(ctx, "digest", []byte("alice:pw")); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Create(ctx, "/secret", []byte("s"), DigestACL(PermAll, "alice", "pw"), ModePersistent); err != nil {
		t.Fatal(err)
	}
	acl, st, err := alice.GetACL(ctx, "/secret")
	if err != nil || len(acl) != 1 || acl[0].ID.ID != DigestID("alice", "pw") || acl[0].Perms != PermAll {
		t.Fatalf("getACL: %v %v", acl, err)
	}

	bob := dial(t, connString(e.servers, root))
	catchUp(t, bob)
	if _, _, err := bob.Get(ctx, "/secret"); !errors.Is(err, ErrNoAuth) {
		t.Fatalf("unauthenticated read: %v", err)
	}
	if err := bob.AddAuth(ctx, "digest", []byte("alice:pw")); err != nil {
		t.Fatal(err)
	}
	if d, _, err := bob.Get(ctx, "/secret"); err != nil || string(d) != "s" {
		t.Fatalf("authenticated read: %q %v", d, err)
	}

	// CreatorAllACL needs an authenticated identity and is rewritten to it.
	anon := dial(t, connString(e.servers, root))
	catchUp(t, anon)
	if _, err := anon.Create(ctx, "/mine", nil, CreatorAllACL(), ModePersistent); !errors.Is(err, ErrInvalidACL) {
		t.Fatalf("creator-all without auth: %v", err)
	}
	if _, err := alice.Create(ctx, "/mine", nil, CreatorAllACL(), ModePersistent); err != nil {
		t.Fatal(err)
	}
	acl, _, err = alice.GetACL(ctx, "/mine")
	if err != nil || len(acl) != 1 || acl[0].ID != (ID{Scheme: "digest", ID: DigestID("alice", "pw")}) {
		t.Fatalf("creator-all rewritten to %v (%v)", acl, err)
	}

	// setACL checks the ACL version; the IP scheme matches the loopback client.
	if _, err := alice.SetACL(ctx, "/secret", WorldACL(PermRead), st.Aversion+1); !errors.Is(err, ErrBadVersion) {
		t.Fatalf("setACL with stale aversion: %v", err)
	}
	st2, err := alice.SetACL(ctx, "/secret", IPACL(PermRead, "127.0.0.1"), st.Aversion)
	if err != nil || st2.Aversion != st.Aversion+1 {
		t.Fatalf("setACL: %+v %v", st2, err)
	}
	catchUp(t, anon)
	if d, _, err := anon.Get(ctx, "/secret"); err != nil || string(d) != "s" {
		t.Fatalf("read through the ip ACL: %q %v", d, err)
	}
	if _, err := anon.Set(ctx, "/secret", nil, AnyVersion); !errors.Is(err, ErrNoAuth) {
		t.Fatalf("write through a read-only ip ACL: %v", err)
	}
}

func testMulti(t *testing.T, e *env) {
	c, _ := e.connect(t)
	ctx := testCtx(t)
	mustCreate(t, c, "/m", []byte("0"), ModePersistent)

	res, err := c.Txn().
		Create("/m/a", []byte("a"), OpenACL(), ModePersistent).
		Create("/m/s-", nil, OpenACL(), ModePersistentSequential).
		Set("/m", []byte("1"), 0).
		Check("/m", 1).
		Create("/m/a/b", nil, OpenACL(), ModeEphemeral).
		Delete("/m/a/b", 0).
		Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Create results carry a Stat only from servers that report one (zkd; ZooKeeper 3.8
	// answers create2 inside multi with a plain create result).
	if len(res) != 6 || res[0].Path != "/m/a" || res[1].Path != "/m/s-0000000001" ||
		res[2].Stat == nil || res[2].Stat.Version != 1 || res[4].Path != "/m/a/b" {
		t.Fatalf("results: %+v", res)
	}
	// One transaction, one zxid.
	_, ast, err := c.Exists(ctx, "/m/a")
	if err != nil || ast.Czxid != res[2].Stat.Mzxid {
		t.Fatalf("multi ops got different zxids: %+v %d (%v)", ast, res[2].Stat.Mzxid, err)
	}

	// A failing op aborts the whole transaction.
	res, err = c.Multi(ctx,
		&CreateOp{Path: "/m/new", ACL: OpenACL()},
		&CheckOp{Path: "/m", Version: 0},
		&DeleteOp{Path: "/m/a", Version: AnyVersion},
	)
	var me *MultiError
	if !errors.As(err, &me) || me.Index != 1 || !errors.Is(err, ErrBadVersion) {
		t.Fatalf("failed multi: %v", err)
	}
	if len(res) != 3 || res[0].Err != nil || !errors.Is(res[1].Err, ErrBadVersion) || !errors.Is(res[2].Err, ErrRuntimeInconsistency) {
		t.Fatalf("failed multi results: %+v", res)
	}
	if ok, _, _ := c.Exists(ctx, "/m/new"); ok {
		t.Fatal("an op of a failed multi was applied")
	}
	var oe *OpError
	if !errors.As(err, &oe) || oe.Path != "/m" || oe.Op != "check" {
		t.Fatalf("failed multi's OpError: %v", oe)
	}

	if res, err := c.Multi(ctx); err != nil || len(res) != 0 {
		t.Fatalf("empty multi: %v %v", res, err)
	}
	// Client-side validation names the offending op.
	if _, err := c.Multi(ctx, &SetOp{Path: "/m", Version: -1}, &DeleteOp{Path: "bad"}); !errors.As(err, &me) || me.Index != 1 || !errors.Is(err, ErrBadArguments) {
		t.Fatalf("invalid op: %v", err)
	}
	if e.extendedTypes {
		res, err := c.Multi(ctx, &CreateOp{Path: "/m/ttl", ACL: OpenACL(), Mode: ModePersistentTTL, TTL: time.Hour},
			&CreateOp{Path: "/m/box", ACL: OpenACL(), Mode: ModeContainer})
		if err != nil || res[0].Path != "/m/ttl" || res[1].Path != "/m/box" {
			t.Fatalf("multi with TTL and container: %+v %v", res, err)
		}
	}

	res, err = Go(ctx, c.Txn().Set("/m", []byte("2"), AnyVersion).Commit).Wait(ctx)
	if err != nil || res[0].Stat.Version != 2 {
		t.Errorf("pipelined multi: %+v %v", res, err)
	}
}

func testMultiRead(t *testing.T, e *env) {
	c, _ := e.connect(t)
	ctx := testCtx(t)
	mustCreate(t, c, "/r", []byte("data"), ModePersistent)
	mustCreate(t, c, "/r/k", nil, ModePersistent)
	res, err := c.MultiRead(ctx, &GetOp{Path: "/r"}, &ChildrenOp{Path: "/r"}, &GetOp{Path: "/nope"}, &ChildrenOp{Path: "/nope"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res[0].Data) != "data" || res[0].Stat == nil || res[0].Stat.NumChildren != 1 ||
		!slices.Equal(res[1].Children, []string{"k"}) ||
		!errors.Is(res[2].Err, ErrNoNode) || !errors.Is(res[3].Err, ErrNoNode) {
		t.Fatalf("multiRead: %+v", res)
	}
	res, err = Go(ctx, func(ctx context.Context) ([]ReadResult, error) { return c.MultiRead(ctx, &GetOp{Path: "/r/k"}) }).Wait(ctx)
	if err != nil || res[0].Err != nil {
		t.Errorf("pipelined multiRead: %+v %v", res, err)
	}
}

// testPipelining issues many requests without waiting and checks that they complete in the
// order issued, from one goroutine (Go) and from many (blocking).
func testPipelining(t *testing.T, e *env) {
	c, _ := e.connect(t)
	ctx := testCtx(t)
	mustCreate(t, c, "/ctr", []byte("0"), ModePersistent)

	// Sets and gets alternate; a get's result is the data it read and its Stat.
	type result struct {
		data []byte
		st   *Stat
	}
	const n = 2000
	ops := make([]*Pending[result], n)
	for i := range n {
		ops[i] = Go(ctx, func(ctx context.Context) (result, error) {
			if i%2 == 0 {
				st, err := c.Set(ctx, "/ctr", []byte(fmt.Sprint(i)), AnyVersion)
				return result{st: st}, err
			}
			d, st, err := c.Get(ctx, "/ctr")
			return result{d, st}, err
		})
	}
	var last *Stat // the Stat the previous set returned
	for i, p := range ops {
		r, err := p.Wait(ctx)
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
		if i%2 == 0 {
			// The server applied the sets in the order issued.
			if last != nil && r.st.Mzxid <= last.Mzxid {
				t.Fatalf("set %d applied at zxid %d, after set %d at %d", i, r.st.Mzxid, i-2, last.Mzxid)
			}
			last = r.st
			continue
		}
		// Every read sees exactly the write issued just before it: FIFO.
		if string(r.data) != fmt.Sprint(i-1) || r.st.Mzxid != last.Mzxid {
			t.Fatalf("read %q (mzxid %d) after writing %d (zxid %d)", r.data, r.st.Mzxid, i-1, last.Mzxid)
		}
	}

	// Blocking calls from many goroutines share the connection.
	var g sync.WaitGroup
	errs := make(chan error, 32)
	for w := range 32 {
		g.Add(1)
		go func() {
			defer g.Done()
			p := fmt.Sprintf("/w%d", w)
			if _, err := c.Create(ctx, p, nil, OpenACL(), ModePersistent); err != nil {
				errs <- err
				return
			}
			for j := range 50 {
				if _, err := c.Set(ctx, p, []byte(fmt.Sprint(j)), int32(j)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	g.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// testGo checks that every operation can be pipelined with Go, errors found before sending
// included.
func testGo(t *testing.T, e *env) {
	c, _ := e.connect(t)
	ctx := testCtx(t)
	check := func(what string, f func(ctx context.Context) error) func() {
		p := goErr(ctx, f)
		return func() {
			if _, err := p.Wait(ctx); err != nil {
				t.Errorf("%s: %v", what, err)
			}
		}
	}
	checks := []func(){
		check("create", func(ctx context.Context) error {
			p, err := c.Create(ctx, "/a", []byte("x"), OpenACL(), ModePersistent)
			if p != "/a" && err == nil {
				err = fmt.Errorf("path %q", p)
			}
			return err
		}),
		check("create2", func(ctx context.Context) error {
			_, st, err := c.Create2(ctx, "/b", nil, OpenACL(), ModeEphemeral)
			if err == nil && st.EphemeralOwner == 0 {
				err = fmt.Errorf("not ephemeral")
			}
			return err
		}),
		check("container", func(ctx context.Context) error {
			_, _, err := c.CreateContainer(ctx, "/box", nil, OpenACL())
			return err
		}),
	}
	if e.extendedTypes {
		checks = append(checks, check("ttl", func(ctx context.Context) error {
			_, _, err := c.CreateTTL(ctx, "/ttl", nil, OpenACL(), ModePersistentTTL, time.Hour)
			return err
		}))
	}
	checks = append(checks,
		check("exists", func(ctx context.Context) error {
			ok, _, err := c.Exists(ctx, "/a")
			if err == nil && !ok {
				err = fmt.Errorf("missing")
			}
			return err
		}),
		check("existsW", func(ctx context.Context) error {
			ok, _, ch, err := c.ExistsW(ctx, "/nope")
			if err == nil && (ok || ch == nil) {
				err = fmt.Errorf("ok=%v ch=%v", ok, ch)
			}
			return err
		}),
		check("getW", func(ctx context.Context) error {
			d, _, ch, err := c.GetW(ctx, "/a")
			if err == nil && (string(d) != "x" || ch == nil) {
				err = fmt.Errorf("data %q", d)
			}
			return err
		}),
		check("childrenW", func(ctx context.Context) error {
			_, _, _, err := c.ChildrenW(ctx, "/")
			return err
		}),
		check("children", func(ctx context.Context) error {
			_, _, err := c.Children(ctx, "/")
			return err
		}),
		check("getACL", func(ctx context.Context) error {
			_, _, err := c.GetACL(ctx, "/a")
			return err
		}),
		check("setACL", func(ctx context.Context) error {
			_, err := c.SetACL(ctx, "/a", OpenACL(), AnyVersion)
			return err
		}),
		check("allChildrenNumber", func(ctx context.Context) error {
			_, err := c.AllChildrenNumber(ctx, "/")
			return err
		}),
		check("sync", func(ctx context.Context) error { return c.Sync(ctx, "/") }),
		check("ephemerals", func(ctx context.Context) error {
			p, err := c.Ephemerals(ctx, "/")
			if err == nil && !slices.Equal(p, []string{"/b"}) {
				err = fmt.Errorf("ephemerals %v", p)
			}
			return err
		}),
		check("whoAmI", func(ctx context.Context) error {
			_, err := c.WhoAmI(ctx)
			return err
		}),
		check("addAuth", func(ctx context.Context) error { return c.AddAuth(ctx, "digest", []byte("u:p")) }),
		check("addWatch", func(ctx context.Context) error {
			w, err := c.AddWatch(ctx, "/a", AddWatchPersistent)
			if err == nil {
				w.Stop()
			}
			return err
		}),
		check("checkWatches", func(ctx context.Context) error { return c.CheckWatches(ctx, "/a", WatcherData) }),
		check("removeWatches", func(ctx context.Context) error { return c.RemoveWatches(ctx, "/a", WatcherData) }),
		check("reconfig", func(ctx context.Context) error {
			_, _, err := c.Reconfig(ctx, []string{"server.9=127.0.0.1:1:2:participant;3"}, -1)
			if errors.Is(err, ErrUnimplemented) || errors.Is(err, ErrReconfigDisabled) || errors.Is(err, ErrNoAuth) {
				err = nil
			}
			return err
		}),
		check("delete missing", func(ctx context.Context) error {
			err := c.Delete(ctx, "/missing", AnyVersion)
			if errors.Is(err, ErrNoNode) {
				err = nil
			}
			return err
		}),
		check("invalid path", func(ctx context.Context) error {
			_, _, err := c.Get(ctx, "bad path")
			if errors.Is(err, ErrBadArguments) {
				err = nil
			}
			return err
		}),
	)
	for _, wait := range checks {
		wait()
	}
}

func testContext(t *testing.T, e *env) {
	c, _ := e.connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := c.Get(ctx, "/")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	if err := c.AddAuth(ctx, "digest", []byte("a:b")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled AddAuth: %v", err)
	}
	if _, _, err := c.Get(testCtx(t), "/"); err != nil {
		t.Fatal(err)
	}
}

func testClose(t *testing.T, e *env) {
	c, root := e.connect(t)
	ctx := testCtx(t)
	rec := recordStates(c)
	other := dial(t, connString(e.servers, root))
	mustCreate(t, c, "/eph", nil, ModeEphemeral)
	mustCreate(t, c, "/n", nil, ModePersistent)
	_, _, oneShot, err := c.GetW(ctx, "/n")
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.AddWatch(ctx, "/n", AddWatchPersistentRecursive)
	if err != nil {
		t.Fatal(err)
	}
	// Requests issued before Close are answered before the session closes.
	last := Go(ctx, func(ctx context.Context) (*Stat, error) { return c.Set(ctx, "/n", []byte("last"), AnyVersion) })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := last.Wait(ctx); err != nil {
		t.Fatalf("request issued before Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	catchUp(t, other)
	if ok, _, err := other.Exists(ctx, "/eph"); ok || err != nil {
		t.Fatalf("ephemeral after close: %v %v", ok, err)
	}
	if _, _, err := c.Get(ctx, "/n"); !errors.Is(err, ErrClosed) {
		t.Fatalf("get after close: %v", err)
	}
	if c.State() != StateClosed {
		t.Fatalf("state %v", c.State())
	}
	rec.waitFor(t, StateClosed, 1)
	if s := rec.states(); !slices.Equal(s, []State{StateConnected, StateClosed}) {
		t.Fatalf("states %v", s)
	}
	// The one-shot watch fired on the last set; the recursive one got it and then ended.
	expectEvent(t, oneShot, EventNodeDataChanged, "/n")
	expectClosed(t, oneShot)
	expectEvent(t, w.Events(), EventNodeDataChanged, "/n")
	ev := nextEvent(t, w.Events())
	if ev.Type != EventNotWatching || !errors.Is(ev.Err, ErrClosed) {
		t.Fatalf("persistent watch's last event %v", ev)
	}
	expectClosed(t, w.Events())
}

func testSessionResumeAndExpiry(t *testing.T, e *env) {
	root := e.ns(t)
	ps := e.proxies(t, 1)
	c1 := dial(t, connString(proxyAddrs(ps), root))
	rec := recordStates(c1)
	ctx := testCtx(t)
	mustCreate(t, c1, "/eph", nil, ModeEphemeral)
	id, pw := c1.SessionID(), c1.SessionPassword()
	if id == 0 || len(pw) != 16 || c1.SessionTimeout() <= 0 {
		t.Fatalf("session 0x%x, password %x, timeout %v", id, pw, c1.SessionTimeout())
	}

	// Cut c1 off, and take its session over from another client.
	ps[0].SetRefuse(true)
	ps[0].DropAll()
	rec.waitFor(t, StateDisconnected, 1)
	c2 := dial(t, connString(e.servers, root), WithSession(id, pw))
	if c2.SessionID() != id {
		t.Fatalf("resumed session 0x%x, want 0x%x", c2.SessionID(), id)
	}
	catchUp(t, c2)
	eph, err := c2.Ephemerals(ctx, "/")
	if err != nil || !slices.Equal(eph, []string{"/eph"}) {
		t.Fatalf("resumed session's ephemerals: %v %v", eph, err)
	}
	// Closing the session through c2 expires it for c1.
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	ps[0].SetRefuse(false)
	rec.waitFor(t, StateExpired, 1)
	if _, _, err := c1.Get(ctx, "/"); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("request on an expired session: %v", err)
	}
	if c1.SessionID() != id {
		t.Fatalf("expired client changed session to 0x%x", c1.SessionID())
	}
}

func testResumeUnknownSession(t *testing.T, e *env) {
	_, err := Connect(testCtx(t), connString(e.servers, ""), WithLogger(testLogger(t)),
		WithSession(0x7fffffff0000, make([]byte, 16)))
	if !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("resuming an unknown session: %v", err)
	}
}

// TestConnectErrors covers Connect's failures that need no server.
func TestConnectErrors(t *testing.T) {
	ctx := testCtx(t)
	for _, cs := range []string{"", ",", "host:notaport", "h:1/bad/", "h:1/a//b"} {
		if _, err := Connect(ctx, cs); !errors.Is(err, ErrBadArguments) {
			t.Errorf("Connect(%q): %v", cs, err)
		}
	}
	if _, err := Connect(ctx, "127.0.0.1:9", WithSessionTimeout(-1)); !errors.Is(err, ErrBadArguments) {
		t.Errorf("negative timeout: %v", err)
	}
	// Nothing listens there: Connect gives up when its context ends and says why.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = Connect(short, dead, WithLogger(testLogger(t)), WithReconnectBackoff(time.Millisecond, 10*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), dead) {
		t.Fatalf("connect to nothing: %v", err)
	}
}
