package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/console"
	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

// The admin port's guards (internal/admin/httpadmin): the attacks of issue 26 sent as they were
// seen, and each supported way to authorise snapshot and restore.

// aliceSecret is the data of a node only alice may read: no refused answer may carry it.
const aliceSecret = "alice's secret: the launch codes"

// adminReq is adminSend with the body as bytes (nil for none).
func adminReq(t *testing.T, method, url, host string, hdr map[string]string, body []byte) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	return adminSend(t, method, url, host, hdr, rd)
}

// secServer is a server with the AdminServer on loopback, restore enabled (so that what
// refuses the attacks is the identity check, not the enable key), no rate limit, a super
// user, and /secret that only alice may touch.
type secServer struct {
	srv   *zktest.Server
	base  string // http://host:port/commands
	port  string
	super *zk.Conn // a session authenticated as the super user
}

func startSecServer(t *testing.T, mod func(*server.Config)) *secServer {
	t.Helper()
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.AdminAddr = "127.0.0.1:0"
		c.AdminSnap = server.AdminSnapConfig{RestoreEnabled: true, RateLimitMs: -1}
		c.SuperDigest = auth.DigestID("super", adminSuperPw)
		if mod != nil {
			mod(c)
		}
	}))
	_, port, err := net.SplitHostPort(srv.AdminAddr())
	if err != nil {
		t.Fatal(err)
	}
	s := &secServer{srv: srv, base: "http://" + srv.AdminAddr() + "/commands", port: port, super: connectZK(t, srv.Addr())}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.super.AddAuth(ctx, "digest", []byte("super:"+adminSuperPw)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.super.Create(ctx, "/secret", []byte(aliceSecret), zk.DigestACL(zk.PermAll, "alice", "wonder"), zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	// The client port refuses a stranger, as the admin port must.
	if _, _, err := connectZK(t, srv.Addr()).Get(ctx, "/secret"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("an unauthenticated client reads /secret: %v", err)
	}
	return s
}

// setRootACL sets / 's ACL as the super user.
func (s *secServer) setRootACL(t *testing.T, acl []zk.ACL) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.super.SetACL(ctx, "/", acl, -1); err != nil {
		t.Fatal(err)
	}
}

// intact checks that the tree still holds /secret with alice's data, and not /wiped.
func (s *secServer) intact(t *testing.T, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := connectZK(t, s.srv.Addr()) // a restore drops every connection: a fresh session
	if err := c.AddAuth(ctx, "digest", []byte("super:"+adminSuperPw)); err != nil {
		t.Fatal(err)
	}
	if data, _, err := c.Get(ctx, "/secret"); err != nil || string(data) != aliceSecret {
		t.Errorf("%s: /secret = %q, %v; want it untouched", what, data, err)
	}
	if ok, _, err := c.Exists(ctx, "/wiped"); err != nil || ok {
		t.Errorf("%s: /wiped exists (%v, %v): a restore went through", what, ok, err)
	}
}

// wipingSnapshot is a snapshot (taken legitimately, by the super user, from a server of
// its own) whose tree is only /wiped: restoring it would replace alice's node.
func wipingSnapshot(t *testing.T) []byte {
	t.Helper()
	srv, base := adminSnapServer(t, server.AdminSnapConfig{RateLimitMs: -1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := connectZK(t, srv.Addr()).Create(ctx, "/wiped", []byte("gone"), zk.OpenACL(), zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	resp, snap := adminDo(t, http.MethodGet, base+"/snapshot?streaming=true", "digest super:"+adminSuperPw, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the super user's snapshot: %d %s", resp.StatusCode, snap)
	}
	return snap
}

// TestAdminAttacksRefused sends issue 26's attacks, exactly, against / at its default ACL
// and at configured ones, and checks that nothing is read or changed.
func TestAdminAttacksRefused(t *testing.T) {
	wipe := wipingSnapshot(t)
	for _, tc := range []struct {
		name string
		root []zk.ACL // nil: ZooKeeper's default, world:anyone:cdrwa
	}{
		{"default root ACL", nil},
		// ZooKeeper's check passes for anybody here (world:anyone holds every bit); the
		// named admin vouches for nobody else.
		{"root ACL naming an admin, world:anyone:cdrwa kept", append(zk.WorldACL(zk.PermAll), zk.DigestACL(zk.PermAll, "admin", "pw")...)},
		{"root ACL of an admin, world read-only", append(zk.DigestACL(zk.PermAll, "admin", "pw"), zk.WorldACL(zk.PermRead)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSecServer(t, nil)
			if tc.root != nil {
				s.setRootACL(t, tc.root)
			}

			// 1. A snapshot with made-up digest credentials.
			resp, body := adminReq(t, http.MethodGet, s.base+"/snapshot?streaming=true", "",
				map[string]string{"Authorization": "digest nobody:anything"}, nil)
			if resp.StatusCode != http.StatusForbidden || bytes.Contains(body, []byte(aliceSecret)) {
				t.Errorf("snapshot as nobody: %d, %d bytes (%.200q); want 403 and no data", resp.StatusCode, len(body), body)
			}
			if tc.root == nil {
				// With / at its default ACL the answer says how to enable the command.
				var m map[string]any
				if err := json.Unmarshal(body, &m); err != nil {
					t.Fatalf("snapshot refusal: %v in %s", err, body)
				}
				msg, _ := m["error"].(string)
				for _, want := range []string{"superDigest", "x509", "ADMIN"} {
					if !strings.Contains(msg, want) {
						t.Errorf("snapshot refusal %q does not mention %s", msg, want)
					}
				}
			}
			// ip is an address, not an identity.
			resp, body = adminReq(t, http.MethodGet, s.base+"/snapshot?streaming=true", "",
				map[string]string{"Authorization": "ip"}, nil)
			if resp.StatusCode != http.StatusForbidden || bytes.Contains(body, []byte(aliceSecret)) {
				t.Errorf("snapshot by ip: %d %.200q, want 403", resp.StatusCode, body)
			}

			// 2. A restore with made-up digest credentials.
			resp, body = adminReq(t, http.MethodPost, s.base+"/restore", "",
				map[string]string{"Authorization": "digest mallory:made-up"}, wipe)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("restore as mallory: %d %s, want 403", resp.StatusCode, body)
			}
			s.intact(t, "after a restore with made-up credentials")

			// 3. DNS rebinding: Host and a matching Origin of the attacker's name, to the
			// console (its page, a read, a write) and to restore and snapshot. Even the
			// right credentials must not help such a page.
			evil := map[string]string{"Origin": "http://evil.example:" + s.port}
			host := "evil.example:" + s.port
			consoleURL := "http://" + s.srv.AdminAddr() + server.ConsoleURL
			for _, r := range []struct {
				method, url string
				hdr         map[string]string
				body        []byte
			}{
				{http.MethodGet, consoleURL + "/", nil, nil},
				{http.MethodGet, consoleURL + "/api/node?path=/secret", map[string]string{"Authorization": "digest alice:wonder"}, nil},
				{http.MethodPost, consoleURL + "/api/set", map[string]string{console.CSRFHeader: "1", "Authorization": "digest super:" + adminSuperPw},
					[]byte(`{"path":"/secret","data":"owned","encoding":"text","version":-1}`)},
				{http.MethodPost, s.base + "/restore", map[string]string{"Authorization": "digest super:" + adminSuperPw}, wipe},
				{http.MethodGet, s.base + "/snapshot?streaming=true", map[string]string{"Authorization": "digest super:" + adminSuperPw}, nil},
				{http.MethodGet, s.base + "/ruok", nil, nil},
			} {
				hdr := map[string]string{}
				for k, v := range evil {
					hdr[k] = v
				}
				for k, v := range r.hdr {
					hdr[k] = v
				}
				resp, body := adminReq(t, r.method, r.url, host, hdr, r.body)
				if resp.StatusCode != http.StatusForbidden || bytes.Contains(body, []byte(aliceSecret)) {
					t.Errorf("%s %s with Host %s: %d %.200q, want 403", r.method, r.url, host, resp.StatusCode, body)
				}
			}
			s.intact(t, "after the rebinding requests")
		})
	}
}

// TestAdminHostCheck: on a loopback-bound AdminServer every command and the console answer
// loopback names and addresses (with or without a port) and listed names, and refuse any
// other Host, or an Origin elsewhere.
func TestAdminHostCheck(t *testing.T) {
	s := startSecServer(t, func(c *server.Config) { c.AdminAllowedHosts = []string{"ZK.example.com"} })
	addr := s.srv.AdminAddr()
	p := s.port
	for _, host := range []string{"127.0.0.1:" + p, "localhost:" + p, "LocalHost", "localhost.:" + p, "127.4.5.6:" + p,
		"[::1]:" + p, "::1", "[::ffff:127.0.0.1]:" + p, "zk.example.com:" + p, "zk.example.com"} {
		if resp, body := adminReq(t, http.MethodGet, "http://"+addr+"/commands/ruok", host, nil, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("ruok with Host %s: %d %s, want 200", host, resp.StatusCode, body)
		}
	}
	refused := []string{"evil.example:" + p, "evil.example", "localhost.evil.example:" + p, "127.0.0.1.evil.example",
		"10.0.0.5:" + p, "zk.example.com.evil.example", "[::2]:" + p}
	for _, host := range refused {
		if resp, body := adminReq(t, http.MethodGet, "http://"+addr+"/commands/ruok", host, nil, nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("ruok with Host %s: %d %s, want 403", host, resp.StatusCode, body)
		}
	}
	// Every command, read or write, and every console path.
	resp, list := adminReq(t, http.MethodGet, "http://"+addr+"/commands", "", nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("command list: %d", resp.StatusCode)
	}
	paths := []string{"/commands", "/console", "/console/", "/console/static/app.js", "/console/api/children?path=/",
		"/console/api/sessions", "/console/api/metrics", "/nowhere"}
	for _, name := range strings.Split(string(list), "href=\"")[1:] {
		paths = append(paths, name[:strings.IndexByte(name, '"')])
	}
	if len(paths) < 30 {
		t.Fatalf("only %d paths from the command list %s", len(paths), list)
	}
	for _, path := range paths {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			resp, body := adminReq(t, method, "http://"+addr+path, "evil.example:"+p, nil, nil)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s %s with Host evil.example: %d %.200s, want 403", method, path, resp.StatusCode, body)
			}
		}
	}
	// A good Host with an Origin elsewhere: a cross-origin request, refused too.
	for _, origin := range []string{"http://evil.example:" + p, "null", "http://127.0.0.1.evil.example"} {
		resp, body := adminReq(t, http.MethodGet, "http://"+addr+"/commands/ruok", "", map[string]string{"Origin": origin}, nil)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("ruok with Origin %s: %d %s, want 403", origin, resp.StatusCode, body)
		}
	}
	if resp, body := adminReq(t, http.MethodGet, "http://"+addr+"/commands/ruok", "", map[string]string{"Origin": "http://localhost:" + p}, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("ruok with Origin localhost: %d %s, want 200", resp.StatusCode, body)
	}
}

// TestAdminSnapshotRestoreIdentities: each supported way to authorise snapshot and restore
// works, and the near misses are refused: the super user (superDigest), a digest identity
// / 's ACL names with ADMIN (the other bits may come from other entries, as in ZooKeeper),
// and (TestAdminSnapshotRestoreX509) an x509 client certificate.
func TestAdminSnapshotRestoreIdentities(t *testing.T) {
	wipe := wipingSnapshot(t)
	admin := "digest admin:pw"
	for _, tc := range []struct {
		name  string
		root  []zk.ACL
		authz string
		ok    bool
	}{
		{"super user, default root ACL", nil, "digest super:" + adminSuperPw, true},
		{"super user, root ACL without it", zk.DigestACL(zk.PermAll, "alice", "wonder"), "digest super:" + adminSuperPw, true},
		{"digest named with ALL", append(zk.WorldACL(zk.PermRead), zk.DigestACL(zk.PermAll, "admin", "pw")...), admin, true},
		{"digest named with ADMIN, the rest through world", append(zk.WorldACL(zk.PermAll&^zk.PermAdmin), zk.DigestACL(zk.PermAdmin, "admin", "pw")...), admin, true},
		{"digest named without ADMIN", append(zk.WorldACL(zk.PermAll), zk.DigestACL(zk.PermAll&^zk.PermAdmin, "admin", "pw")...), admin, false},
		{"digest named with ADMIN only, no other bit", zk.DigestACL(zk.PermAdmin, "admin", "pw"), admin, false},
		{"digest not named", nil, admin, false},
		{"wrong password of a named user", append(zk.WorldACL(zk.PermAll), zk.DigestACL(zk.PermAll, "admin", "pw")...), "digest admin:guess", false},
		{"ip named with ALL", append(zk.WorldACL(zk.PermRead), zk.IPACL(zk.PermAll, "127.0.0.1")...), "ip", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSecServer(t, nil)
			if tc.root != nil {
				s.setRootACL(t, tc.root)
			}
			hdr := map[string]string{"Authorization": tc.authz}
			resp, snap := adminReq(t, http.MethodGet, s.base+"/snapshot?streaming=true", "", hdr, nil)
			if got := resp.StatusCode == http.StatusOK && bytes.Contains(snap, []byte(aliceSecret)); got != tc.ok {
				t.Errorf("snapshot as %s: %d, %d bytes; want allowed %v", tc.authz, resp.StatusCode, len(snap), tc.ok)
			}
			resp, body := adminReq(t, http.MethodPost, s.base+"/restore", "", hdr, wipe)
			if (resp.StatusCode == http.StatusOK) != tc.ok {
				t.Errorf("restore as %s: %d %s; want allowed %v", tc.authz, resp.StatusCode, body, tc.ok)
			}
			if !tc.ok {
				if resp.StatusCode != http.StatusForbidden {
					t.Errorf("restore as %s: %d, want 403", tc.authz, resp.StatusCode)
				}
				s.intact(t, "after a refused restore")
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if ok, _, err := connectZK(t, s.srv.Addr()).Exists(ctx, "/wiped"); err != nil || !ok {
				t.Errorf("after the restore: /wiped %v %v, want it there", ok, err)
			}
		})
	}
}

// TestAdminSnapshotRestoreX509: an x509 client certificate the truststore accepts
// authorises snapshot and restore over HTTPS, with / at its default ACL.
func TestAdminSnapshotRestoreX509(t *testing.T) {
	wipe := wipingSnapshot(t)
	pki := tlstest.New(t, t.TempDir())
	e := startAdminTLS(t, pki, server.AdminTLSOptions{ForceHTTPS: true, NeedClientAuth: true, Client: clientTrust(t, pki.TrustPKCS12)},
		auth.Providers{X509: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := connectZK(t, e.srv.Addr()).Create(ctx, "/secret", []byte(aliceSecret), zk.DigestACL(zk.PermAll, "alice", "wonder"), zk.ModePersistent); err != nil {
		t.Fatal(err)
	}
	c := e.client(&pki.Client.TLS)
	resp, snap, err := get(c, "https://"+e.host+"/commands/snapshot?streaming=true", "x509")
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(snap, []byte(aliceSecret)) {
		t.Fatalf("x509 snapshot: %v %v, %d bytes", err, resp, len(snap))
	}
	// The same request without a certificate's identity is a made-up digest: refused.
	resp, body, err := get(c, "https://"+e.host+"/commands/snapshot?streaming=true", "digest nobody:anything")
	if err != nil || resp.StatusCode != http.StatusForbidden || bytes.Contains(body, []byte(aliceSecret)) {
		t.Fatalf("digest snapshot over HTTPS: %v %v %.200q, want 403", err, resp, body)
	}
	req, err := http.NewRequest(http.MethodPost, "https://"+e.host+"/commands/restore", bytes.NewReader(wipe))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "x509")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("x509 restore: %d %s", resp.StatusCode, body)
	}
	if ok, _, err := connectZK(t, e.srv.Addr()).Exists(ctx, "/wiped"); err != nil || !ok {
		t.Errorf("after the x509 restore: /wiped %v %v, want it there", ok, err)
	}
}

// TestAdminRestoreBodyCap: a body over zkd.admin.restoreMaxBytes is refused with 413,
// whether its length is announced or not, and changes nothing; one at the cap restores.
func TestAdminRestoreBodyCap(t *testing.T) {
	wipe := wipingSnapshot(t)
	limit := int64(len(wipe))
	s := startSecServer(t, func(c *server.Config) { c.AdminSnap.RestoreMaxBytes = limit })
	super := "digest super:" + adminSuperPw
	over := append(bytes.Clone(wipe), 0)
	resp, body := adminDo(t, http.MethodPost, s.base+"/restore", super, bytes.NewReader(over))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "zkd.admin.restoreMaxBytes") {
		t.Errorf("restore of %d bytes (Content-Length) over a cap of %d: %d %s, want 413", len(over), limit, resp.StatusCode, body)
	}
	s.intact(t, "after a restore over the cap")
	// Chunked: no length announced, so the cap is found while reading.
	resp, body = adminDo(t, http.MethodPost, s.base+"/restore", super, io.MultiReader(bytes.NewReader(over)))
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "zkd.admin.restoreMaxBytes") {
		t.Errorf("chunked restore of %d bytes over a cap of %d: %d %s, want 413", len(over), limit, resp.StatusCode, body)
	}
	s.intact(t, "after a chunked restore over the cap")
	resp, body = adminDo(t, http.MethodPost, s.base+"/restore", super, io.MultiReader(bytes.NewReader(wipe)))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("restore of exactly the cap: %d %s", resp.StatusCode, body)
	}
}

// TestAdminRestoreReadDeadline: an authenticated restore whose body stalls is answered
// 408 and its connection closed once zkd.admin.restoreReadTimeoutMs passes without a
// byte, instead of holding the connection; the tree is unchanged and the server serves on.
func TestAdminRestoreReadDeadline(t *testing.T) {
	s := startSecServer(t, func(c *server.Config) { c.AdminSnap.RestoreReadTimeout = 200 * time.Millisecond })
	conn, err := net.Dial("tcp", s.srv.AdminAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /commands/restore HTTP/1.1\r\nHost: %s\r\nAuthorization: digest super:%s\r\n"+
		"Content-Length: 1000000\r\n\r\n", s.srv.AdminAddr(), adminSuperPw)
	conn.Write([]byte("ZKSN")) // a few bytes, then nothing
	// The condition waited for is the server's answer and close; the deadline is only
	// how long to wait for them on a loaded machine.
	conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled restore: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "zkd.admin.restoreReadTimeoutMs") {
		t.Errorf("stalled restore: %d %s, want 408", resp.StatusCode, body)
	}
	var one [1]byte
	if n, err := conn.Read(one[:]); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("after the 408 the connection gave %d bytes, %v; want it closed (EOF)", n, err)
	}
	s.intact(t, "after a stalled restore")
	if resp, body := adminDo(t, http.MethodGet, s.base+"/ruok", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("ruok after a stalled restore: %d %s", resp.StatusCode, body)
	}
}

// TestAdminHeaderCap: request headers over Jetty's 8 KiB are answered 431, as ZooKeeper's
// AdminServer answers them; headers under it are served.
func TestAdminHeaderCap(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.AdminAddr = "127.0.0.1:0" }))
	url := "http://" + srv.AdminAddr() + "/commands/ruok"
	for _, tc := range []struct {
		size int
		want int
	}{
		{6 << 10, http.StatusOK},
		{server.AdminMaxHeaderBytes + 1, http.StatusRequestHeaderFieldsTooLarge},
		{64 << 10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		resp, body := adminReq(t, http.MethodGet, url, "", map[string]string{"X-Filler": strings.Repeat("a", tc.size)}, nil)
		if resp.StatusCode != tc.want {
			t.Errorf("a %d-byte header: %d %.100s, want %d", tc.size, resp.StatusCode, body, tc.want)
		}
	}
}

// TestAdminCommandTableDocumented: the security guide's table of who may call each admin
// command (docs/security.md, "The admin port") lists every command the AdminServer serves, so
// that a new command cannot arrive unlisted.
func TestAdminCommandTableDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## The admin port\n")
	if !ok {
		t.Fatal(`docs/security.md has no "## The admin port" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var rows []string
	for _, line := range strings.Split(sec, "\n") {
		if strings.HasPrefix(line, "| ") {
			rows = append(rows, line)
		}
	}
	for _, name := range admin.HTTPPrimaryNames() {
		listed := false
		for _, r := range rows {
			if strings.Contains(r, "`"+name+"`") {
				listed = true
			}
		}
		if !listed {
			t.Errorf("docs/security.md's admin port table does not list %s", name)
		}
	}
}
