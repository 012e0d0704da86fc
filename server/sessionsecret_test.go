package server_test

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/zkd-io/zkd/internal/session"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

const (
	testSecretA = "6d1c4c0f1d2b44a3a0f3b1e1a9c2d7e8"
	testSecretB = "c3f0e5d9b8a7f6e5d4c3b2a1f0e9d8c7"
)

var openACL = jute.OpenACLUnsafe

// writeSecret writes a secret file readable by its owner only and returns its path.
func writeSecret(t *testing.T, path, text string) string {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "session.secret")
	}
	// Written aside and renamed, as docs/security.md tells operators to, so that the reloader
	// never sees a half-written file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func withSecret(path string) zktest.Option {
	return zktest.WithConfig(func(c *server.Config) { c.SessionSecretFile = path })
}

// victim opens a session that owns the ephemeral path.
func victim(t *testing.T, addr, path string) *rawzk.Client {
	t.Helper()
	v := rawzk.Connect(t, addr)
	if h := v.Call(jute.OpCreate, &jute.CreateRequest{Path: path, ACL: openACL, Flags: 1}, &jute.CreateResponse{}); h.Err != jute.OK {
		t.Fatalf("create %s: %v", path, h.Err)
	}
	return v
}

// ephemeralOwner reads path's ephemeralOwner from another session, as anyone can.
func ephemeralOwner(t *testing.T, addr, path string) int64 {
	t.Helper()
	c := rawzk.Connect(t, addr)
	var r jute.ExistsResponse
	if h := c.Call(jute.OpExists, &jute.ExistsRequest{Path: path}, &r); h.Err != jute.OK {
		t.Fatalf("exists %s: %v", path, h.Err)
	}
	c.NC.Close()
	if r.Stat.EphemeralOwner == 0 {
		t.Fatalf("%s is not ephemeral", path)
	}
	return r.Stat.EphemeralOwner
}

// takeOver connects with session id and ZooKeeper's password for it, as an attacker who
// read the id can, and returns the connection and the server's answer.
func takeOver(t *testing.T, addr string, id int64) (*rawzk.Client, *jute.ConnectResponse) {
	t.Helper()
	pw := session.Password(id)
	thief := rawzk.Dial(t, addr)
	resp, err := thief.Handshake(&jute.ConnectRequest{TimeOut: 30000, SessionID: id, Passwd: pw[:], HasReadOnly: true})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return thief, resp
}

// assertTakenOver checks that the thief acts as the victim's session: an ephemeral it
// creates is owned by that session.
func assertTakenOver(t *testing.T, thief *rawzk.Client, resp *jute.ConnectResponse, id int64, addr string) {
	t.Helper()
	if resp.SessionID != id || resp.TimeOut <= 0 {
		t.Fatalf("takeover answered %+v, want session %#x attached", resp, id)
	}
	if h := thief.Call(jute.OpCreate, &jute.CreateRequest{Path: "/stolen", ACL: openACL, Flags: 1}, &jute.CreateResponse{}); h.Err != jute.OK {
		t.Fatalf("create as the stolen session: %v", h.Err)
	}
	if got := ephemeralOwner(t, addr, "/stolen"); got != id {
		t.Fatalf("/stolen owned by %#x, want the victim's %#x", got, id)
	}
}

// assertRefused checks ZooKeeper's answer to a wrong password: the expired-session
// ConnectResponse (timeout 0, session 0, a zero password), then the connection closes.
func assertRefused(t *testing.T, thief *rawzk.Client, resp *jute.ConnectResponse) {
	t.Helper()
	if resp.SessionID != 0 || resp.TimeOut != 0 || !bytes.Equal(resp.Passwd, make([]byte, 16)) {
		t.Fatalf("takeover answered %+v, want the expired answer", resp)
	}
	if !thief.Closed() {
		t.Fatal("connection not closed after the refusal")
	}
}

// assertUnharmed checks that the victim's connection still serves its session.
func assertUnharmed(t *testing.T, v *rawzk.Client, path string) {
	t.Helper()
	var r jute.ExistsResponse
	h, err := v.Reply(v.Send(jute.OpExists, &jute.ExistsRequest{Path: path}), &r)
	if err != nil || h.Err != jute.OK || r.Stat.EphemeralOwner != v.Session {
		t.Fatalf("victim after the attempt: %+v %v, owner %#x", h, err, r.Stat.EphemeralOwner)
	}
}

// TestSessionTakeoverWithoutSecret: without a secret zkd derives passwords as ZooKeeper
// does, so anyone who reads a session id from an ephemeral's Stat can take the session over
// (and, as in ZooKeeper, the owner's connection is closed). This is the behaviour mixed
// ensembles need; the secret is what removes it.
func TestSessionTakeoverWithoutSecret(t *testing.T) {
	srv := zktest.Start(t)
	v := victim(t, srv.Addr(), "/eph")
	id := ephemeralOwner(t, srv.Addr(), "/eph")
	thief, resp := takeOver(t, srv.Addr(), id)
	assertTakenOver(t, thief, resp, id, srv.Addr())
	if !v.Closed() {
		t.Fatal("the owner's connection survived the takeover")
	}
}

// TestSessionTakeoverZooKeeper: the same attack on Apache ZooKeeper 3.8 succeeds.
func TestSessionTakeoverZooKeeper(t *testing.T) {
	refzk.Require(t)
	ref := refzk.StartStandalone(t, refzk.Options{})
	v := victim(t, ref.Addr(), "/eph")
	id := ephemeralOwner(t, ref.Addr(), "/eph")
	thief, resp := takeOver(t, ref.Addr(), id)
	assertTakenOver(t, thief, resp, id, ref.Addr())
	if !v.Closed() {
		t.Fatal("the owner's connection survived the takeover")
	}
}

// TestSessionTakeoverWithSecret: with a session secret the attacker's password is refused
// with the expired answer, and the owner's connection and session carry on untouched.
func TestSessionTakeoverWithSecret(t *testing.T) {
	srv := zktest.Start(t, withSecret(writeSecret(t, "", "# test\n"+testSecretA+"\n")))
	v := victim(t, srv.Addr(), "/eph")
	if zkpw := session.Password(v.Session); bytes.Equal(v.Passwd, zkpw[:]) {
		t.Fatal("with a secret the server handed out ZooKeeper's password")
	}
	id := ephemeralOwner(t, srv.Addr(), "/eph")
	for range 3 {
		thief, resp := takeOver(t, srv.Addr(), id)
		assertRefused(t, thief, resp)
	}
	assertUnharmed(t, v, "/eph")
	// The owner's own password still resumes the session on a new connection.
	v2 := rawzk.Dial(t, srv.Addr())
	resp, err := v2.Handshake(&jute.ConnectRequest{TimeOut: 30000, SessionID: id, Passwd: v.Passwd, HasReadOnly: true})
	if err != nil || resp.SessionID != id || !bytes.Equal(resp.Passwd, v.Passwd) {
		t.Fatalf("owner reconnect: %+v %v", resp, err)
	}
	if !v.Closed() {
		t.Fatal("the owner's old connection stayed open after its own reconnect")
	}
	assertUnharmed(t, v2, "/eph")
}

// TestSessionSecretRestartAndRotation: a client's password stays valid across a restart
// (passwords are derived, not stored) and across a rotation while the old secret is
// accepted; a reconnect then hands out the new secret's password, and once the old secret is
// dropped only sessions still holding an old password are refused.
func TestSessionSecretRestartAndRotation(t *testing.T) {
	path := writeSecret(t, "", testSecretA+"\n")
	srv := zktest.Start(t, withSecret(path), zktest.WithConfig(func(c *server.Config) { c.TickTime = 2000 }))
	v := victim(t, srv.Addr(), "/eph")
	id, pwA := v.Session, bytes.Clone(v.Passwd)
	other := victim(t, srv.Addr(), "/eph-other") // reconnects only after the rotation ends
	otherID, otherPwA := other.Session, bytes.Clone(other.Passwd)

	reconnect := func(id int64, pw []byte) *jute.ConnectResponse {
		t.Helper()
		c := rawzk.Dial(t, srv.Addr())
		resp, err := c.Handshake(&jute.ConnectRequest{TimeOut: 30000, SessionID: id, Passwd: pw, HasReadOnly: true})
		if err != nil {
			t.Fatalf("reconnect: %v", err)
		}
		return resp
	}

	srv.Restart()
	if resp := reconnect(id, pwA); resp.SessionID != id || !bytes.Equal(resp.Passwd, pwA) {
		t.Fatalf("after restart: %+v", resp)
	}

	// Rotation step 1 and 2 at once (the new secret first, the old one still accepted),
	// across a restart.
	writeSecret(t, path, testSecretB+"\n"+testSecretA+"\n")
	srv.Restart()
	resp := reconnect(id, pwA)
	if resp.SessionID != id || bytes.Equal(resp.Passwd, pwA) || len(resp.Passwd) != 16 {
		t.Fatalf("old password during the overlap: %+v, want the session with a new password", resp)
	}
	pwB := resp.Passwd
	if resp := reconnect(id, pwB); resp.SessionID != id || !bytes.Equal(resp.Passwd, pwB) {
		t.Fatalf("new password: %+v", resp)
	}

	// Step 3: the old secret dropped.
	writeSecret(t, path, testSecretB+"\n")
	srv.Restart()
	if resp := reconnect(id, pwB); resp.SessionID != id {
		t.Fatalf("new password after the old secret went: %+v", resp)
	}
	if resp := reconnect(otherID, otherPwA); resp.SessionID != 0 || resp.TimeOut != 0 {
		t.Fatalf("old password after the old secret went: %+v, want refused", resp)
	}
}

// TestSessionSecretTurnedOnWithoutExpiring: the zookeeper keyword lets an ensemble switch
// the secret on while clients hold ZooKeeper's passwords.
func TestSessionSecretTurnedOnWithoutExpiring(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.TickTime = 2000 }))
	v := victim(t, srv.Addr(), "/eph")
	path := writeSecret(t, "", testSecretA+"\nzookeeper\n")
	srv.Stop()
	cfg := srv.Config()
	cfg.SessionSecretFile = path
	srv2 := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { *c = cfg }))
	c := rawzk.Dial(t, srv2.Addr())
	resp, err := c.Handshake(&jute.ConnectRequest{TimeOut: 30000, SessionID: v.Session, Passwd: v.Passwd, HasReadOnly: true})
	if err != nil || resp.SessionID != v.Session {
		t.Fatalf("ZooKeeper's password with the keyword: %+v %v", resp, err)
	}
	if zkpw := session.Password(v.Session); bytes.Equal(resp.Passwd, zkpw[:]) {
		t.Fatal("the reconnect kept ZooKeeper's password; want the secret's")
	}
}

// TestSessionSecretStartErrors: a missing, empty or invalid file stops start-up, and the
// error does not show the file's text.
func TestSessionSecretStartErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text, want string
	}{
		{"missing", "", "no such file"},
		{"empty", "\n# nothing\n", "no secret"},
		{"short", "tooshort-secret\n", "at least 16 bytes"},
	} {
		path := filepath.Join(dir, tc.name)
		if tc.name != "missing" {
			writeSecret(t, path, tc.text)
		}
		_, err := server.New(server.Config{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
			SessionSecretFile: path, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "session secret") {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
		} else if strings.Contains(err.Error(), "tooshort") {
			t.Errorf("%s: the error shows the secret: %v", tc.name, err)
		}
	}
}

// TestSessionSecretEnsemble: every member derives the same passwords, so a session made
// through one member resumes through another, and ZooKeeper's password is refused by all.
func TestSessionSecretEnsemble(t *testing.T) {
	path := writeSecret(t, "", testSecretA+"\n")
	e := startEnsembleConfig(t, 3, func(c *server.Config) { c.SessionSecretFile = path })
	e.waitServing()
	addrs := e.addrs()
	v := victim(t, addrs[0], "/eph")
	for i, addr := range addrs {
		thief, resp := takeOver(t, addr, v.Session)
		if resp.SessionID != 0 {
			t.Fatalf("member %d accepted ZooKeeper's password: %+v", i+1, resp)
		}
		thief.NC.Close()
	}
	for i, addr := range append(addrs[1:], addrs[0]) {
		c := rawzk.Dial(t, addr)
		resp, err := c.Handshake(&jute.ConnectRequest{TimeOut: 30000, SessionID: v.Session, Passwd: v.Passwd, HasReadOnly: true})
		if err != nil || resp.SessionID != v.Session || !bytes.Equal(resp.Passwd, v.Passwd) {
			t.Fatalf("resume on member %d: %+v %v", (i+1)%3+1, resp, err)
		}
		assertUnharmed(t, c, "/eph")
		c.NC.Close()
	}
}

// TestSessionSecretReload: a changed file is picked up without a restart; a bad one is
// logged and the secrets in force stay, and its text never reaches the log.
func TestSessionSecretReload(t *testing.T) {
	var logBuf syncBuffer
	path := writeSecret(t, "", testSecretA+"\n")
	srv := zktest.Start(t, withSecret(path), zktest.WithConfig(func(c *server.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}))
	secretPassword := func(secret string, id int64) []byte {
		s, err := session.ParseSecrets([]byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		p := s.Password(id)
		return p[:]
	}
	v := victim(t, srv.Addr(), "/eph")
	if !bytes.Equal(v.Passwd, secretPassword(testSecretA, v.Session)) {
		t.Fatal("first session not under secret A")
	}

	writeSecret(t, path, testSecretB+"\n")
	waitFor(t, "the reload to be logged", func() bool {
		return strings.Contains(logBuf.String(), "session secret reloaded")
	})
	if n := rawzk.Connect(t, srv.Addr()); !bytes.Equal(n.Passwd, secretPassword(testSecretB, n.Session)) {
		t.Fatal("after the reload a new session is not under secret B")
	}
	// A without the overlap: the old session's password is refused now.
	c := rawzk.Dial(t, srv.Addr())
	if resp, err := c.Handshake(&jute.ConnectRequest{TimeOut: 30000, SessionID: v.Session, Passwd: v.Passwd, HasReadOnly: true}); err != nil || resp.SessionID != 0 {
		t.Fatalf("dropped secret's password after reload: %+v %v", resp, err)
	}

	// A bad file keeps secret B in force; its text is not logged.
	writeSecret(t, path, "short-and-bad\n")
	waitFor(t, "the bad reload to be logged", func() bool {
		return strings.Contains(logBuf.String(), "reload failed")
	})
	n := rawzk.Connect(t, srv.Addr())
	if !bytes.Equal(n.Passwd, secretPassword(testSecretB, n.Session)) {
		t.Fatal("a bad reload replaced the secrets in force")
	}
	for _, s := range []string{testSecretA, testSecretB, "short-and-bad"} {
		if strings.Contains(logBuf.String(), s) {
			t.Fatalf("the log shows a secret file's text %q", s)
		}
	}
}

// syncBuffer is a bytes.Buffer the server's goroutines may write while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSessionSecretWorldReadableWarns: as ssh does for keys, a file others may read is
// started with, with a warning.
func TestSessionSecretWorldReadableWarns(t *testing.T) {
	var logBuf syncBuffer
	path := writeSecret(t, "", testSecretA+"\n")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	zktest.Start(t, withSecret(path), zktest.WithConfig(func(c *server.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	}))
	if !strings.Contains(logBuf.String(), "readable by every user") {
		t.Fatalf("no warning for a world-readable secret file; log:\n%s", logBuf.String())
	}
}
