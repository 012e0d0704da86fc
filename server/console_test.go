package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/console"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

// consoleDo sends one console API request to the AdminServer at admin (host:port).
func consoleDo(t *testing.T, method, admin, path string, hdr map[string]string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+admin+server.ConsoleURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
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

// TestConsoleChildrenInBatches: a child list longer than a core step's batch is copied in
// several steps, none larger than the batch, and pages come out whole and sorted.
func TestConsoleChildrenInBatches(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.AdminAddr = "127.0.0.1:0" }))
	c := connectZK(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.Create(ctx, "/big", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	n := 2*server.AdminBatch + 100
	pipelined(t, n, func(ctx context.Context, i int) error {
		_, err := c.Create(ctx, fmt.Sprintf("/big/n%06d", i), nil, zk.OpenACL(), 0)
		return err
	})
	stepsBefore, _ := server.AdminSteps()
	code, body := consoleDo(t, http.MethodGet, srv.AdminAddr(), "/api/children?path=/big&limit=5000&after=n010000", nil, nil)
	if code != http.StatusOK {
		t.Fatalf("children: %d %s", code, body)
	}
	var page console.ChildPage
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	if page.Total != n || len(page.Children) != 5000 || page.Children[0].Name != "n010001" || page.Next != "n015000" {
		t.Errorf("page: total %d, %d children from %v, next %q", page.Total, len(page.Children), page.Children[:min(1, len(page.Children))], page.Next)
	}
	if steps, _ := server.AdminSteps(); steps-stepsBefore < 4 {
		t.Errorf("children took %d core steps; want the list copied in batches", steps-stepsBefore)
	}
	if _, maxItems := server.AdminSteps(); maxItems > server.AdminBatch+64 {
		t.Errorf("one core step copied %d items; batches are %d", maxItems, server.AdminBatch)
	}
}

// TestConsoleEnsemble: a write through a follower's console is forwarded, committed and
// seen on every member; the leader's ensemble view knows its followers and their lag.
func TestConsoleEnsemble(t *testing.T) {
	e := startEnsembleConfig(t, 3, func(c *server.Config) { c.AdminAddr = "127.0.0.1:0" })
	e.waitServing()
	leader, follower := -1, -1
	for i, mode := range e.modes() {
		switch mode {
		case "leader":
			leader = i
		case "follower":
			follower = i
		}
	}
	if leader < 0 || follower < 0 {
		t.Fatalf("modes %v", e.modes())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lc := connectZK(t, e.members[leader].srv.Addr())
	// Console writes need an identity / 's ACL names with ADMIN; /x is created after it,
	// so a follower that has /x has the ACL too.
	if _, err := lc.SetACL(ctx, "/", append(zk.WorldACL(zk.PermAll), zk.DigestACL(zk.PermAll, "alice", "wonder")...), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.Create(ctx, "/x", []byte("before"), zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	fAdmin := e.members[follower].srv.AdminAddr()
	hdr := map[string]string{console.CSRFHeader: "1", "Authorization": "digest alice:wonder"}
	// The follower may not have applied /x yet: wait for it to appear in its console.
	waitFor(t, "the follower to have /x", func() bool {
		code, _ := consoleDo(t, http.MethodGet, fAdmin, "/api/node?path=/x", nil, nil)
		return code == http.StatusOK
	})
	code, body := consoleDo(t, http.MethodPost, fAdmin, "/api/set", hdr, console.SetRequest{Path: "/x", Data: "after", Version: 0})
	if code != http.StatusOK {
		t.Fatalf("set through the follower: %d %s", code, body)
	}
	if err := lc.Sync(ctx, "/x"); err != nil {
		t.Fatal(err)
	}
	if data, st, err := lc.Get(ctx, "/x"); err != nil || string(data) != "after" || st.Version != 1 {
		t.Fatalf("the leader reads %q version %v: %v", data, st, err)
	}

	lAdmin := e.members[leader].srv.AdminAddr()
	waitFor(t, "the leader to see both followers caught up", func() bool {
		code, body := consoleDo(t, http.MethodGet, lAdmin, "/api/ensemble", nil, nil)
		var ens console.Ensemble
		if code != http.StatusOK || json.Unmarshal(body, &ens) != nil || ens.Mode != "leader" || len(ens.Members) != 3 {
			return false
		}
		caughtUp := 0
		for _, m := range ens.Members {
			if !m.Leader && m.Known && m.Synced && m.Lag != nil && *m.Lag == 0 {
				caughtUp++
			}
		}
		return caughtUp == 2
	})
	code, body = consoleDo(t, http.MethodGet, fAdmin, "/api/ensemble", nil, nil)
	var ens console.Ensemble
	if code != http.StatusOK || json.Unmarshal(body, &ens) != nil {
		t.Fatalf("follower's ensemble: %d %s", code, body)
	}
	if ens.Mode != "follower" || ens.Leader != int64(leader+1) {
		t.Errorf("follower's ensemble view: %+v", ens)
	}
}

// TestConsoleWriteClosesItsSession: a console write is made by a session of its own, which
// it closes before answering (closeSession is answered once applied), so the session list
// holds only the test client's afterwards, and the pipe's connection goes away.
func TestConsoleWriteClosesItsSession(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.AdminAddr = "127.0.0.1:0" }))
	c := connectZK(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.SetACL(ctx, "/", append(zk.WorldACL(zk.PermAll), zk.DigestACL(zk.PermAll, "alice", "wonder")...), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, "/x", []byte("before"), zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	sessions := func() []console.Session {
		t.Helper()
		code, body := consoleDo(t, http.MethodGet, srv.AdminAddr(), "/api/sessions", nil, nil)
		var ss []console.Session
		if code != http.StatusOK || json.Unmarshal(body, &ss) != nil {
			t.Fatalf("sessions: %d %s", code, body)
		}
		return ss
	}
	mine := fmt.Sprintf("0x%x", c.SessionID())
	onlyMine := func(ss []console.Session) bool { return len(ss) == 1 && ss[0].IDHex == mine }
	if ss := sessions(); !onlyMine(ss) {
		t.Fatalf("sessions before the write: %+v, want only %s", ss, mine)
	}
	hdr := map[string]string{console.CSRFHeader: "1", "Authorization": "digest alice:wonder"}
	for i, want := range []int{http.StatusOK, http.StatusConflict} {
		// The second write's version is stale: a failed write closes its session too.
		code, body := consoleDo(t, http.MethodPost, srv.AdminAddr(), "/api/set", hdr, console.SetRequest{Path: "/x", Data: "after", Version: 0})
		if code != want {
			t.Fatalf("write %d: %d %s, want %d", i, code, body, want)
		}
		if ss := sessions(); !onlyMine(ss) {
			t.Fatalf("sessions after write %d: %+v, want only %s", i, ss, mine)
		}
	}
	waitFor(t, "the console's connections to go away", func() bool {
		code, body := consoleDo(t, http.MethodGet, srv.AdminAddr(), "/api/metrics", nil, nil)
		var m map[string]any
		return code == http.StatusOK && json.Unmarshal(body, &m) == nil && m["num_alive_connections"] == float64(1)
	})
}

// TestConsoleWriteRefusedConnection: the internal session's connection is the console's
// HTTP client's, so maxClientCnxns counts it; one the server closes at once (as it closes
// every connection once stopping) is refused at the handshake, the write is answered 503,
// and nothing is written.
func TestConsoleWriteRefusedConnection(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.AdminAddr = "127.0.0.1:0"
		c.MaxClientCnxns = 1
	}))
	c := connectZK(t, srv.Addr()) // 127.0.0.1's one connection
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.SetACL(ctx, "/", append(zk.WorldACL(zk.PermAll), zk.DigestACL(zk.PermAll, "alice", "wonder")...), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, "/x", []byte("before"), zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	hdr := map[string]string{console.CSRFHeader: "1", "Authorization": "digest alice:wonder"}
	code, body := consoleDo(t, http.MethodPost, srv.AdminAddr(), "/api/set", hdr, console.SetRequest{Path: "/x", Data: "after", Version: -1})
	if code != http.StatusServiceUnavailable {
		t.Fatalf("write past the connection limit: %d %s, want 503", code, body)
	}
	if data, _, err := c.Get(ctx, "/x"); err != nil || string(data) != "before" {
		t.Fatalf("/x after a refused write: %q %v", data, err)
	}
}
