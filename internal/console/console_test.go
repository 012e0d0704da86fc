package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/console"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

// fixture is a server with the AdminServer on and a client that made the test tree:
// /app with many children (paging), data in several shapes, a node only "alice" may read.
type fixture struct {
	srv  *zktest.Server
	zk   *zk.Conn
	base string // http://host:port/console
}

const manyChildren = 1203

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.AdminAddr = "127.0.0.1:0" }))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := zk.Connect(ctx, srv.Addr(), zk.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	mk := func(p string, data []byte, acl []zk.ACL) {
		t.Helper()
		if _, err := c.Create(ctx, p, data, acl, 0); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	// Console writes need an identity / 's ACL names with ADMIN: alice and bob are named
	// (the tests' writers); anyone else keeps every permission through world:anyone.
	root := append(zk.WorldACL(zk.PermAll), zk.DigestACL(zk.PermAll, "alice", "wonder")...)
	if _, err := c.SetACL(ctx, "/", append(root, zk.DigestACL(zk.PermAll, "bob", "builder")...), -1); err != nil {
		t.Fatalf("setAcl /: %v", err)
	}
	mk("/app", nil, zk.OpenACL())
	mk("/app/json", []byte(`{"a":1,"b":[true,null]}`), zk.OpenACL())
	mk("/app/bin", []byte{0, 1, 0xfe, 0xff}, zk.OpenACL())
	mk("/app/secret", []byte("alice only"), zk.DigestACL(zk.PermAll, "alice", "wonder"))
	mk("/many", nil, zk.OpenACL())
	// Pipelined, so that a loaded machine does not spend a second per fsync round.
	creates := make([]*zk.Pending[string], manyChildren)
	for i := range creates {
		creates[i] = zk.Go(ctx, func(ctx context.Context) (string, error) {
			return c.Create(ctx, fmt.Sprintf("/many/c%04d", i), nil, zk.OpenACL(), 0)
		})
	}
	for _, cr := range creates {
		if _, err := cr.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{srv: srv, zk: c, base: "http://" + srv.AdminAddr() + "/console"}
}

// do sends one request; hdr may set Authorization, the CSRF header and others.
func (f *fixture) do(t *testing.T, method, path string, hdr map[string]string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, f.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" { // net/http sends req.Host, not a Host header
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// getJSON decodes a GET's answer into v, which it zeroes first.
func getJSON[T any](t *testing.T, f *fixture, path string, hdr map[string]string, v *T) {
	t.Helper()
	var zero T
	*v = zero
	code, body := f.do(t, http.MethodGet, path, hdr, nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

func TestConsolePage(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"/", "/static/app.js", "/static/style.css"} {
		code, body := f.do(t, http.MethodGet, p, nil, nil)
		if code != http.StatusOK || len(body) == 0 {
			t.Errorf("GET %s: %d, %d bytes", p, code, len(body))
		}
	}
	// The commands stay where they were.
	resp, err := http.Get("http://" + f.srv.AdminAddr() + "/commands/ruok")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/commands/ruok: %d", resp.StatusCode)
	}
}

func TestConsoleChildrenPaging(t *testing.T) {
	f := newFixture(t)
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > manyChildren {
			t.Fatal("paging does not end")
		}
		var page console.ChildPage
		getJSON(t, f, "/api/children?path=/many&after="+url.QueryEscape(after), nil, &page)
		if page.Total != manyChildren {
			t.Fatalf("total %d, want %d", page.Total, manyChildren)
		}
		if len(page.Children) > console.PageSize {
			t.Fatalf("page of %d, more than %d", len(page.Children), console.PageSize)
		}
		for _, c := range page.Children {
			got = append(got, c.Name)
		}
		if page.Next == "" {
			if pages != 2 {
				t.Errorf("%d pages, want 3", pages+1)
			}
			break
		}
		after = page.Next
	}
	if len(got) != manyChildren || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != manyChildren {
		t.Fatalf("paged %d names (sorted %v), want %d distinct sorted", len(got), slices.IsSorted(got), manyChildren)
	}
	var root console.ChildPage
	getJSON(t, f, "/api/children?path=/", nil, &root)
	var many *console.Child
	for i := range root.Children {
		if root.Children[i].Name == "many" {
			many = &root.Children[i]
		}
	}
	if many == nil || many.NumChildren != manyChildren {
		t.Errorf("root's children: %+v, want many with %d", root.Children, manyChildren)
	}
	if code, _ := f.do(t, http.MethodGet, "/api/children?path=/nope", nil, nil); code != http.StatusNotFound {
		t.Errorf("children of a missing node: %d, want 404", code)
	}
	if code, _ := f.do(t, http.MethodGet, "/api/children?path=/many&limit=0", nil, nil); code != http.StatusBadRequest {
		t.Errorf("limit=0: %d, want 400", code)
	}
}

func TestConsoleNodeViews(t *testing.T) {
	f := newFixture(t)
	var n console.NodeJSON
	getJSON(t, f, "/api/node?path=/app/json", nil, &n)
	if n.Data == nil || n.Data.JSON == nil || !strings.Contains(*n.Data.JSON, "\n  \"a\": 1,") {
		t.Errorf("JSON view of /app/json: %+v", n.Data)
	}
	if n.Stat.DataLength != 23 || len(n.ACL) != 1 || n.ACL[0].Perms != "cdrwa" || n.ACL[0].Scheme != "world" {
		t.Errorf("stat/acl of /app/json: %+v %+v", n.Stat, n.ACL)
	}
	getJSON(t, f, "/api/node?path=/app/bin", nil, &n)
	if n.Data == nil || n.Data.Text != nil || n.Data.JSON != nil || !strings.HasPrefix(n.Data.Hex, "00000000  00 01 fe ff") {
		t.Errorf("hex view of /app/bin: %+v", n.Data)
	}
	getJSON(t, f, "/api/node?path=/app/secret", nil, &n)
	if !n.DataHidden || n.Data != nil {
		t.Errorf("/app/secret without credentials: %+v", n)
	}
	getJSON(t, f, "/api/node?path=/app/secret", map[string]string{"Authorization": "digest alice:wonder"}, &n)
	if n.DataHidden || n.Data == nil || n.Data.Text == nil || *n.Data.Text != "alice only" {
		t.Errorf("/app/secret as alice: %+v", n)
	}
	if code, _ := f.do(t, http.MethodGet, "/api/node?path=/app/secret", map[string]string{"Authorization": "digest"}, nil); code != http.StatusUnauthorized {
		t.Errorf("bad credentials on a read: %d, want 401", code)
	}
	if code, _ := f.do(t, http.MethodGet, "/api/node?path=/app/none", nil, nil); code != http.StatusNotFound {
		t.Errorf("missing node: %d, want 404", code)
	}
}

func TestConsoleSearchBounds(t *testing.T) {
	f := newFixture(t)
	var r console.SearchResult
	getJSON(t, f, "/api/search?mode=prefix&q=/many/c000", nil, &r)
	if len(r.Matches) != 10 || r.Stopped != "" || r.Matches[0] != "/many/c0000" {
		t.Errorf("prefix /many/c000: %+v", r)
	}
	getJSON(t, f, "/api/search?mode=prefix&q=/many/c0&max=5", nil, &r)
	if len(r.Matches) != 5 || !strings.Contains(r.Stopped, "5 matches") {
		t.Errorf("prefix with max=5: %+v", r)
	}
	getJSON(t, f, "/api/search?mode=substring&q=c11&visit=50", nil, &r)
	if r.Visited != 50 || !strings.Contains(r.Stopped, "visited 50") {
		t.Errorf("substring with visit=50: %+v", r)
	}
	getJSON(t, f, "/api/search?mode=substring&q=json", nil, &r)
	if !slices.Equal(r.Matches, []string{"/app/json"}) || r.Stopped != "" || r.Visited < manyChildren {
		t.Errorf("substring json: matches %v stopped %q visited %d", r.Matches, r.Stopped, r.Visited)
	}
	if code, _ := f.do(t, http.MethodGet, "/api/search?mode=prefix&q=app", nil, nil); code != http.StatusBadRequest {
		t.Errorf("prefix without /: %d, want 400", code)
	}
}

func TestConsoleWrites(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	csrf := map[string]string{console.CSRFHeader: "1"}
	withAuth := map[string]string{console.CSRFHeader: "1", "Authorization": "digest alice:wonder"}
	set := console.SetRequest{Path: "/app/json", Data: "changed", Encoding: "text", Version: 0}
	// A DNS-rebinding page: its own name, resolved to the loopback-bound AdminServer, in
	// both Host and Origin, so that they match each other.
	_, port, err := net.SplitHostPort(f.srv.AdminAddr())
	if err != nil {
		t.Fatal(err)
	}
	rebound := map[string]string{console.CSRFHeader: "1", "Authorization": "digest alice:wonder",
		"Host": "evil.example:" + port, "Origin": "http://evil.example:" + port}
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no CSRF header", map[string]string{"Authorization": "digest alice:wonder"}, http.StatusForbidden},
		{"foreign origin", map[string]string{console.CSRFHeader: "1", "Authorization": "digest alice:wonder", "Origin": "http://evil.example"}, http.StatusForbidden},
		{"no credentials", csrf, http.StatusUnauthorized},
		{"bad credentials", map[string]string{console.CSRFHeader: "1", "Authorization": "digest"}, http.StatusUnauthorized},
		{"unknown scheme", map[string]string{console.CSRFHeader: "1", "Authorization": "kerberos x"}, http.StatusUnauthorized},
		// carol is let in by / 's world:anyone entry only: anybody can name a digest user.
		{"made-up digest credentials", map[string]string{console.CSRFHeader: "1", "Authorization": "digest carol:anything"}, http.StatusForbidden},
		{"ip", map[string]string{console.CSRFHeader: "1", "Authorization": "ip"}, http.StatusForbidden},
		{"rebinding Host and Origin", rebound, http.StatusForbidden},
	} {
		if code, body := f.do(t, http.MethodPost, "/api/set", tc.hdr, set); code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
		}
	}
	if data, st, err := f.zk.Get(ctx, "/app/json"); err != nil || string(data) == "changed" || st.Version != 0 {
		t.Fatalf("after refused writes: %q version %d %v", data, st.Version, err)
	}

	// A write with credentials lands, as alice's session: the client reads it back.
	code, body := f.do(t, http.MethodPost, "/api/set", withAuth, set)
	if code != http.StatusOK {
		t.Fatalf("set: %d %s", code, body)
	}
	if data, st, err := f.zk.Get(ctx, "/app/json"); err != nil || string(data) != "changed" || st.Version != 1 {
		t.Fatalf("read back: %q version %d %v", data, st.Version, err)
	}
	// The version check is the server's.
	if code, body := f.do(t, http.MethodPost, "/api/set", withAuth, set); code != http.StatusConflict {
		t.Errorf("stale version: %d %s, want 409", code, body)
	}
	hexSet := console.SetRequest{Path: "/app/secret", Data: "00 ff", Encoding: "hex", Version: -1}
	if code, body := f.do(t, http.MethodPost, "/api/set", withAuth, hexSet); code != http.StatusOK {
		t.Fatalf("hex set of alice's node as alice: %d %s", code, body)
	}
	if data, _, err := f.zk.Get(ctx, "/app/secret"); err == nil {
		t.Errorf("the test client reads /app/secret (%q): its ACL should refuse", data)
	}
	// The node's own ACL applies to the write: bob is authorized on / but not on
	// alice's node.
	bob := map[string]string{console.CSRFHeader: "1", "Authorization": "digest bob:builder"}
	if code, body := f.do(t, http.MethodPost, "/api/set", bob, hexSet); code != http.StatusForbidden {
		t.Errorf("set of alice's node as bob: %d %s, want 403", code, body)
	}
	// setACL: give the test client's world read, then read alice's data with it.
	acl := console.SetACLRequest{Path: "/app/secret", Version: 0, ACL: []console.ACLJSON{
		{Scheme: "digest", ID: zk.DigestID("alice", "wonder"), Perms: "cdrwa"},
		{Scheme: "world", ID: "anyone", Perms: "r"},
	}}
	if code, body := f.do(t, http.MethodPost, "/api/setacl", withAuth, acl); code != http.StatusOK {
		t.Fatalf("setacl: %d %s", code, body)
	}
	if data, _, err := f.zk.Get(ctx, "/app/secret"); err != nil || !bytes.Equal(data, []byte{0, 0xff}) {
		t.Errorf("read after setacl: %q %v", data, err)
	}

	// Writes need every permission on / as the AdminServer's commands do: once / is
	// alice's alone, bob is refused before anything is sent.
	if _, err := f.zk.SetACL(ctx, "/", append(zk.DigestACL(zk.PermAll, "alice", "wonder"), zk.WorldACL(zk.PermRead)...), -1); err != nil {
		t.Fatal(err)
	}
	bobSet := console.SetRequest{Path: "/app/bin", Data: "bob", Version: -1}
	if code, body := f.do(t, http.MethodPost, "/api/set", bob, bobSet); code != http.StatusForbidden {
		t.Errorf("bob after / became alice's: %d %s, want 403", code, body)
	}
	if data, _, err := f.zk.Get(ctx, "/app/bin"); err != nil || string(data) == "bob" {
		t.Errorf("/app/bin after a refused write: %q %v", data, err)
	}
}

func TestConsoleSessionsWatchesEnsembleMetrics(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := f.zk.Create(ctx, "/eph", nil, zk.OpenACL(), zk.ModeEphemeral); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := f.zk.GetW(ctx, "/app/json"); err != nil {
		t.Fatal(err)
	}
	sid := fmt.Sprintf("0x%x", f.zk.SessionID())
	var ss []console.Session
	getJSON(t, f, "/api/sessions", nil, &ss)
	var mine *console.Session
	for i := range ss {
		if ss[i].IDHex == sid {
			mine = &ss[i]
		}
	}
	if mine == nil || mine.Ephemerals != 1 || !strings.HasPrefix(mine.Remote, "127.0.0.1:") {
		t.Fatalf("sessions %+v: want %s with one ephemeral", ss, sid)
	}
	var eph []string
	getJSON(t, f, "/api/ephemerals?session="+sid, nil, &eph)
	if !slices.Equal(eph, []string{"/eph"}) {
		t.Errorf("ephemerals: %v", eph)
	}
	var ws []console.PathWatches
	getJSON(t, f, "/api/watches", nil, &ws)
	if !slices.ContainsFunc(ws, func(w console.PathWatches) bool { return w.Path == "/app/json" && slices.Contains(w.Sessions, sid) }) {
		t.Errorf("watches %+v: want /app/json by %s", ws, sid)
	}
	var e console.Ensemble
	getJSON(t, f, "/api/ensemble", nil, &e)
	if e.Mode != "standalone" || e.Leader != -1 || len(e.Members) != 0 {
		t.Errorf("ensemble: %+v", e)
	}
	var m map[string]any
	getJSON(t, f, "/api/metrics", nil, &m)
	for _, k := range []string{"outstanding_requests", "avg_latency", "max_latency", "znode_count", "packets_received", "packets_sent", "num_alive_connections", "time_ms"} {
		if _, ok := m[k]; !ok {
			t.Errorf("metrics lack %s: %v", k, m)
		}
	}
	if n, _ := m["znode_count"].(float64); n < manyChildren {
		t.Errorf("znode_count %v", m["znode_count"])
	}
}
