package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

// adminDo sends one request to the AdminServer with an optional Authorization header.
func adminDo(t *testing.T, method, url, authz string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	var hdr map[string]string
	if authz != "" {
		hdr = map[string]string{"Authorization": authz}
	}
	return adminSend(t, method, url, "", hdr, body)
}

// adminSend sends one request. host, when set, is the Host header; hdr are more headers.
func adminSend(t *testing.T, method, url, host string, hdr map[string]string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp, b
}

// wantAdminError checks a JSON answer's status and error text.
func wantAdminError(t *testing.T, what string, resp *http.Response, body []byte, code int, cmd string, errText any) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %v in %s", what, err, body)
	}
	if resp.StatusCode != code || m["command"] != cmd || m["error"] != errText {
		t.Errorf("%s: %d %s, want %d with command %q and error %v", what, resp.StatusCode, body, code, cmd, errText)
	}
}

// treeOf reads every node's data under path (system nodes excluded), depth first.
func treeOf(t *testing.T, c *zk.Conn, path string, out map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data, _, err := c.Get(ctx, path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	out[path] = string(data)
	kids, _, err := c.Children(ctx, path)
	if err != nil {
		t.Fatalf("children %s: %v", path, err)
	}
	for _, k := range kids {
		child := strings.TrimSuffix(path, "/") + "/" + k
		if child != "/zookeeper" {
			treeOf(t, c, child, out)
		}
	}
}

// adminSuperPw is the super user's password of adminSnapServer's servers: snapshot and
// restore need an identity the server vouches for, and / 's default ACL names none.
const adminSuperPw = "admin-super-secret"

func adminSnapServer(t *testing.T, snap server.AdminSnapConfig) (*zktest.Server, string) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.AdminAddr = "127.0.0.1:0"
		c.AdminSnap = snap
		c.SuperDigest = auth.DigestID("super", adminSuperPw)
	}))
	return srv, "http://" + srv.AdminAddr() + "/commands"
}

// TestAdminSnapshotAndRestore streams a snapshot from one server, checks it reads as a
// snapshot carrying 3.9's lastProcessedZxid, restores it into another server with other
// data, and compares the trees, also after a restart.
func TestAdminSnapshotAndRestore(t *testing.T) {
	const authz = "digest super:" + adminSuperPw
	a, baseA := adminSnapServer(t, server.AdminSnapConfig{})
	ca := connectZK(t, a.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range 50 {
		p := fmt.Sprintf("/app%d", i%5)
		if i < 5 {
			if _, err := ca.Create(ctx, p, []byte(p), zk.OpenACL(), zk.ModePersistent); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ca.Create(ctx, fmt.Sprintf("%s/n%d", p, i), []byte(strconv.Itoa(i)), zk.OpenACL(), zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{}
	treeOf(t, ca, "/", want)

	// Authentication comes first, as in ZooKeeper.
	resp, body := adminDo(t, http.MethodGet, baseA+"/snapshot", "", nil)
	wantAdminError(t, "snapshot without credentials", resp, body, http.StatusUnauthorized, "snapshot", "Auth info is missing for the command")
	resp, body = adminDo(t, http.MethodGet, baseA+"/snapshot", "x509", nil)
	wantAdminError(t, "snapshot with x509 over HTTP", resp, body, http.StatusUnauthorized, "snapshot", "Not authenticated")
	resp, body = adminDo(t, http.MethodGet, baseA+"/snapshot", "digest a b c", nil)
	wantAdminError(t, "snapshot with three words", resp, body, http.StatusUnauthorized, "snapshot", "Not authenticated")

	resp, snap := adminDo(t, http.MethodGet, baseA+"/snap?streaming=true", authz, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("snapshot: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if size := resp.Header.Get("snapshot_size"); size != strconv.Itoa(len(snap)) {
		t.Errorf("snapshot_size %q, streamed %d bytes", size, len(snap))
	}
	zxid, err := strconv.ParseUint(strings.TrimPrefix(resp.Header.Get("last_zxid"), "0x"), 16, 64)
	if err != nil || !strings.HasPrefix(resp.Header.Get("last_zxid"), "0x") || zxid == 0 {
		t.Fatalf("last_zxid %q: %v", resp.Header.Get("last_zxid"), err)
	}

	// The stream is a snapshot storage reads, with every node and the zxid appended.
	nodes, lastZxid := 0, int64(-1)
	err = storage.ReadSnapshot(bytes.NewReader(snap), storage.SnapshotHandler{
		Node:              func(storage.SnapNode) error { nodes++; return nil },
		LastProcessedZxid: func(z int64) error { lastZxid = z; return nil },
	})
	if err != nil {
		t.Fatalf("reading the streamed snapshot: %v", err)
	}
	if lastZxid != int64(zxid) || nodes != len(want)+3 { // + /zookeeper, its quota and config
		t.Errorf("streamed snapshot: %d nodes, lastProcessedZxid %#x; want %d nodes, %#x", nodes, lastZxid, len(want)+3, zxid)
	}
	// The snapshot was also taken in the data directory, as ZooKeeper's takeSnapshot does.
	lsnp := adminJSON(t, baseA, "last_snapshot")
	if lsnp["zxid"] != strconv.FormatUint(zxid, 16) {
		t.Errorf("last_snapshot after the snapshot command: %v, want zxid %x", lsnp, zxid)
	}

	// The rate limit (one per 5 minutes by default) refuses the next one.
	resp, body = adminDo(t, http.MethodGet, baseA+"/snapshot?streaming=false", authz, nil)
	wantAdminError(t, "second snapshot", resp, body, http.StatusTooManyRequests, "snapshot", nil)

	// Restore into a server holding other data.
	b, baseB := adminSnapServer(t, server.AdminSnapConfig{RestoreEnabled: true})
	cb := connectZK(t, b.Addr())
	for _, p := range []string{"/other", "/app0"} {
		if _, err := cb.Create(ctx, p, []byte("b"), zk.OpenACL(), zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	resp, body = adminDo(t, http.MethodGet, baseB+"/restore", authz, nil)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET restore: %d %s, want 405", resp.StatusCode, body)
	}
	resp, body = adminDo(t, http.MethodPost, baseB+"/restore", "", bytes.NewReader(snap))
	wantAdminError(t, "restore without credentials", resp, body, http.StatusUnauthorized, "restore", "Auth info is missing for the command")
	resp, body = adminDo(t, http.MethodPost, baseB+"/rest", authz, bytes.NewReader(snap))
	var restored map[string]any
	if err := json.Unmarshal(body, &restored); err != nil || resp.StatusCode != http.StatusOK || restored["error"] != nil {
		t.Fatalf("restore: %d %s", resp.StatusCode, body)
	}
	if z, _ := restored["last_zxid"].(float64); int64(z) < int64(zxid) {
		t.Errorf("restore's last_zxid %v is below the snapshot's %#x", restored["last_zxid"], zxid)
	}
	resp, body = adminDo(t, http.MethodPost, baseB+"/restore", authz, bytes.NewReader(snap))
	wantAdminError(t, "second restore", resp, body, http.StatusTooManyRequests, "restore", nil)
	// The restored tree is snapshotted at once (not only at a clean shutdown), at the zxid
	// the restore answered.
	z, _ := restored["last_zxid"].(float64)
	snapName := storage.SnapName(int64(z))
	for deadline := time.Now().Add(time.Minute); ; {
		files, err := storage.FindSnapshots(storage.OSFS{}, filepath.Join(b.DataDir(), "version-2"))
		if err == nil && len(files) > 0 && files[0].Name == snapName {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after the restore: newest snapshots %v (%v)", snapName, files, err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The old connection was dropped; a new session sees the restored tree.
	check := func(what string) {
		t.Helper()
		got := map[string]string{}
		treeOf(t, connectZK(t, b.Addr()), "/", got)
		if len(got) != len(want) {
			t.Errorf("%s: %d nodes, want %d", what, len(got), len(want))
		}
		for p, d := range want {
			if got[p] != d {
				t.Errorf("%s: %s = %q, want %q", what, p, got[p], d)
			}
		}
	}
	check("after restore")
	// Writes go on after the restored zxid.
	if _, err := connectZK(t, b.Addr()).Create(ctx, "/after", nil, zk.OpenACL(), zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	want["/after"] = ""
	b.Restart()
	check("after restart")

	// The server the snapshot was taken from recovers from it (its temporary directory in
	// version-2 is no snapshot or log).
	a.Restart()
	gotA := map[string]string{}
	treeOf(t, connectZK(t, a.Addr()), "/", gotA)
	if len(gotA) != len(want)-1 {
		t.Errorf("the snapshotted server after a restart: %d nodes, want %d", len(gotA), len(want)-1)
	}
}

// TestAdminSnapshotAuthorization: the caller needs every permission on "/"; a disabled
// command answers 503 after authentication.
func TestAdminSnapshotAuthorization(t *testing.T) {
	srv, base := adminSnapServer(t, server.AdminSnapConfig{SnapshotDisabled: true, RestoreEnabled: true, RateLimitMs: -1})
	c := connectZK(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.AddAuth(ctx, "digest", []byte("root:pw")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetACL(ctx, "/", zk.DigestACL(zk.PermAll, "root", "pw"), -1); err != nil {
		t.Fatal(err)
	}
	resp, body := adminDo(t, http.MethodGet, base+"/snapshot", "digest other:pw", nil)
	wantAdminError(t, "snapshot by another user", resp, body, http.StatusForbidden, "snapshot", "Not authorized")
	resp, body = adminDo(t, http.MethodGet, base+"/snapshot", "ip", nil)
	wantAdminError(t, "snapshot by ip", resp, body, http.StatusForbidden, "snapshot", "Not authorized")
	resp, body = adminDo(t, http.MethodGet, base+"/snapshot", "digest root:pw", nil)
	wantAdminError(t, "disabled snapshot", resp, body, http.StatusServiceUnavailable, "snapshot", nil)
	resp, body = adminDo(t, http.MethodPost, base+"/restore", "digest other:pw", strings.NewReader("junk"))
	wantAdminError(t, "restore by another user", resp, body, http.StatusForbidden, "restore", "Not authorized")
	// An unreadable snapshot changes nothing.
	resp, body = adminDo(t, http.MethodPost, base+"/restore", "digest root:pw", strings.NewReader("junk"))
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("restore of junk: %d %s", resp.StatusCode, body)
	}
	if _, _, err := c.Get(ctx, "/"); err != nil {
		t.Errorf("the session after a failed restore: %v", err)
	}
}
