package server_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

func withPagedList(c *server.Config) { c.Extensions = ext.Of(ext.PagedList) }

// TestListPageConsistent: a listing paged through while another session creates, deletes
// and changes children between pages lists exactly the children at the first page's zxid,
// once each, with their Stats as they were; StartAfter begins after the child it names.
func TestListPageConsistent(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(withPagedList))
	ctx := keeperCtx(t)
	c, w := dialZK(t, srv.Addr()), dialZK(t, srv.Addr())
	mkTree(t, ctx, c, "/lp")
	for i := 0; i < 1000; i++ {
		if _, err := c.Create(ctx, fmt.Sprintf("/lp/c%04d", i), []byte(fmt.Sprint(i)), zk.OpenACL(), zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	want, st, err := c.Children(ctx, "/lp")
	if err != nil {
		t.Fatal(err)
	}
	stats := map[string]zk.Stat{}
	for _, name := range want[:50] {
		_, s, err := c.Exists(ctx, "/lp/"+name)
		if err != nil {
			t.Fatal(err)
		}
		stats[name] = *s
	}
	var got []string
	req := zk.PageRequest{Limit: 64, WithStat: true}
	var zxid int64
	for round := 0; ; round++ {
		p, err := c.ListPage(ctx, "/lp", req)
		if err != nil {
			t.Fatalf("page %d: %v", round, err)
		}
		if round == 0 {
			zxid = p.Zxid
			if zxid != st.Pzxid && zxid < st.Pzxid {
				t.Fatalf("view zxid %#x before the children's pzxid %#x", zxid, st.Pzxid)
			}
		} else if p.Zxid != zxid {
			t.Fatalf("page %d from view %#x, the listing's is %#x", round, p.Zxid, zxid)
		}
		if p.Total != len(want) || len(p.Stats) != len(p.Names) {
			t.Fatalf("page %d: total %d (want %d), %d stats for %d names", round, p.Total, len(want), len(p.Stats), len(p.Names))
		}
		for i, name := range p.Names {
			if s, ok := stats[name]; ok && p.Stats[i] != s {
				t.Fatalf("%s: stat %+v, want %+v", name, p.Stats[i], s)
			}
		}
		got = append(got, p.Names...)
		if !p.Truncated {
			if p.Cursor != nil {
				t.Fatal("a last page with a cursor")
			}
			break
		}
		// The tree moves on between pages.
		if err := w.Delete(ctx, fmt.Sprintf("/lp/c%04d", round), -1); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Create(ctx, fmt.Sprintf("/lp/new%d", round), nil, zk.OpenACL(), zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Set(ctx, fmt.Sprintf("/lp/c%04d", 999-round), []byte("changed"), -1); err != nil {
			t.Fatal(err)
		}
		req = zk.PageRequest{Limit: 64, WithStat: true, Cursor: p.Cursor}
	}
	if !slices.Equal(sortedCopy(got), sortedCopy(want)) {
		t.Fatalf("listed %d names, want the %d children at the first page", len(got), len(want))
	}
	// StartAfter: a fresh listing (a new view) begins after the child it names.
	now, _, _ := c.Children(ctx, "/lp")
	p, err := c.ListPage(ctx, "/lp", zk.PageRequest{Limit: len(now)})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := c.ListPage(ctx, "/lp", zk.PageRequest{Limit: 5, StartAfter: p.Names[10]})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p2.Names, p.Names[11:16]) {
		t.Fatalf("after %s: %v, want %v", p.Names[10], p2.Names, p.Names[11:16])
	}
	if _, err := c.ListPage(ctx, "/lp", zk.PageRequest{Limit: 5, StartAfter: "no-such-child"}); !errors.Is(err, zk.ErrBadArguments) {
		t.Fatalf("StartAfter of no child: %v", err)
	}
	if _, err := c.ListPage(ctx, "/nope", zk.PageRequest{Limit: 5}); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("listing a missing node: %v", err)
	}
	for _, limit := range []int{0, -1, 10001} {
		if _, err := c.ListPage(ctx, "/lp", zk.PageRequest{Limit: limit}); !errors.Is(err, zk.ErrBadArguments) {
			t.Fatalf("limit %d: %v", limit, err)
		}
	}
	var all []string
	for name, err := range c.ListAll(ctx, "/lp", 7) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, name)
	}
	if !slices.Equal(sortedCopy(all), sortedCopy(now)) {
		t.Fatalf("ListAll: %d names, want %d", len(all), len(now))
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// TestListPageCursors: a cursor of a view the server dropped (too many listings at once)
// gets ErrListViewExpired; a forged cursor gets BADARGUMENTS and the connection lives; a
// node the session may not read gets NOAUTH.
func TestListPageCursors(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(withPagedList))
	ctx := keeperCtx(t)
	c := dialZK(t, srv.Addr())
	mkTree(t, ctx, c, "/q", "/a", "/b", "/c")
	first, err := c.ListPage(ctx, "/q", zk.PageRequest{Limit: 1})
	if err != nil || !first.Truncated {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	// Listings of later states, one write apart, push the first view out.
	for i := 0; i < 20; i++ {
		if _, err := c.Set(ctx, "/q/a", []byte{byte(i)}, -1); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListPage(ctx, "/q", zk.PageRequest{Limit: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.ListPage(ctx, "/q", zk.PageRequest{Limit: 1, Cursor: first.Cursor}); !errors.Is(err, zk.ErrListViewExpired) {
		t.Fatalf("dropped view: %v, want ErrListViewExpired", err)
	}
	p, err := c.ListPage(ctx, "/q", zk.PageRequest{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, forged := range [][]byte{p.Cursor[:8], append(slices.Clone(p.Cursor[:8]), 0xff, 0xff, 0xff, 0x00, 0, 0, 0, 1)} {
		if _, err := c.ListPage(ctx, "/q", zk.PageRequest{Limit: 1, Cursor: forged}); !errors.Is(err, zk.ErrBadArguments) {
			t.Fatalf("forged cursor %x: %v", forged, err)
		}
	}
	// Another node's cursor on this path.
	if _, err := c.ListPage(ctx, "/q/a", zk.PageRequest{Limit: 1, Cursor: p.Cursor}); !errors.Is(err, zk.ErrBadArguments) {
		t.Fatalf("cursor of another node: %v", err)
	}
	if _, err := c.Create(ctx, "/secret", nil, zk.DigestACL(zk.PermAll, "u", "x"), zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListPage(ctx, "/secret", zk.PageRequest{Limit: 1}); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unreadable node: %v", err)
	}
	if _, _, err := c.Exists(ctx, "/q"); err != nil {
		t.Fatalf("the connection after the refused cursors: %v", err)
	}
}

// TestListPageOff: without the extension, listPage is an opcode zkd does not know
// (UNIMPLEMENTED, the connection closes), and the Go client refuses before sending.
func TestListPageOff(t *testing.T) {
	srv := zktest.Start(t)
	rc := rawzk.Connect(t, srv.Config().ListenAddr)
	h, err := rc.Reply(rc.Send(jute.OpListPage, &jute.ListPageRequest{Path: "/", Limit: 1}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.Err != jute.ErrUnimplemented || !rc.Closed() {
		t.Fatalf("listPage without the extension: %v, closed %v", h.Err, rc.Closed())
	}
	c := dialZK(t, srv.Addr())
	if _, err := c.ListPage(keeperCtx(t), "/", zk.PageRequest{Limit: 1}); !errors.Is(err, zk.ErrUnsupported) {
		t.Fatalf("client on a server without paged-list: %v", err)
	}
}
