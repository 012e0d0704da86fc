package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// auditCapture keeps the records logged with logger=audit, as "LEVEL message".
type auditCapture struct {
	mu    *sync.Mutex
	lines *[]string
	audit bool // this handler's logger has logger=audit
}

func newAuditCapture() *auditCapture {
	return &auditCapture{mu: &sync.Mutex{}, lines: new([]string)}
}

func (h *auditCapture) Enabled(context.Context, slog.Level) bool { return true }
func (h *auditCapture) WithGroup(string) slog.Handler            { return h }

func (h *auditCapture) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	for _, a := range as {
		if a.Key == "logger" && a.Value.String() == "audit" {
			c.audit = true
		}
	}
	return &c
}

func (h *auditCapture) Handle(_ context.Context, r slog.Record) error {
	if h.audit {
		h.mu.Lock()
		*h.lines = append(*h.lines, r.Level.String()+" "+r.Message)
		h.mu.Unlock()
	}
	return nil
}

func (h *auditCapture) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := *h.lines
	*h.lines = nil
	return out
}

func auditProcessUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

// TestAuditLog: with Audit on (zookeeper.audit.enable=true), the server logs ZooKeeper's
// audit lines (AuditEvent's format: tab-separated, empty fields left out) for serverStart,
// each write its client made (with the session, the connection's users: its ip and digest
// user, its ip, the znode, a create's mode, a setAcl's ACL and the result), a multi's ops
// one by one, a failed multi as one multiOperation, the ephemeral a closed session leaves,
// and serverStop. Reads are not logged.
func TestAuditLog(t *testing.T) {
	logs := newAuditCapture()
	sc := fromZooCfg(t, 0, "audit.enable=true")
	srv := startStock(t, zktest.WithConfig(func(c *server.Config) {
		c.Audit = sc.Audit
		c.Logger = slog.New(logs)
	}))
	me := auditProcessUser()
	if got, want := logs.take(), []string{"INFO user=" + me + "\toperation=serverStart\tresult=success"}; !slices.Equal(got, want) {
		t.Fatalf("start: %q, want %q", got, want)
	}
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	if err := c.AddAuth("digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	acl := zk.DigestACL(zk.PermAll, "alice", "secret")
	if _, err := c.Create("/a", []byte("x"), 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/a", []byte("x"), 0, acl); err != zk.ErrNodeExists {
		t.Fatalf("second create: %v", err)
	}
	if _, err := c.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/a", []byte("y"), -1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get("/a"); err != nil {
		t.Fatal(err)
	}
	open := append(zk.WorldACL(zk.PermRead), acl...)
	if _, err := c.SetACL("/a", open, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Multi(
		&zk.CreateRequest{Path: "/m", Data: []byte("1"), Acl: zk.WorldACL(zk.PermAll)},
		&zk.SetDataRequest{Path: "/m", Data: []byte("2"), Version: -1},
		&zk.CheckVersionRequest{Path: "/m", Version: 1},
		&zk.DeleteRequest{Path: "/m", Version: -1},
	); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Multi(
		&zk.CreateRequest{Path: "/n", Acl: zk.WorldACL(zk.PermAll)},
		&zk.DeleteRequest{Path: "/missing", Version: -1},
	); err == nil {
		t.Fatal("failing multi succeeded")
	}
	if err := c.Delete("/a", -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("/a", -1); err != zk.ErrNoNode {
		t.Fatalf("second delete: %v", err)
	}
	pre := fmt.Sprintf("session=0x%x\tuser=127.0.0.1,alice\tip=127.0.0.1\t", c.SessionID())
	digestID := acl[0].ID
	want := []string{
		"INFO " + pre + "operation=create\tznode=/a\tznode_type=persistent\tresult=success",
		"ERROR " + pre + "operation=create\tznode=/a\tznode_type=persistent\tresult=failure",
		"INFO " + pre + "operation=create\tznode=/e\tznode_type=ephemeral\tresult=success",
		"INFO " + pre + "operation=setData\tznode=/a\tresult=success",
		"INFO " + pre + "operation=setAcl\tznode=/a\tacl=world:anyone:rdigest:" + digestID + ":cdrwa\tresult=success",
		"INFO " + pre + "operation=create\tznode=/m\tznode_type=persistent\tresult=success",
		"INFO " + pre + "operation=setData\tznode=/m\tresult=success",
		"INFO " + pre + "operation=delete\tznode=/m\tresult=success",
		"ERROR " + pre + "operation=multiOperation\tresult=failure",
		"INFO " + pre + "operation=delete\tznode=/a\tresult=success",
		"ERROR " + pre + "operation=delete\tznode=/a\tresult=failure",
	}
	if got := logs.take(); !slices.Equal(got, want) {
		t.Errorf("audit log:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The ephemeral /e goes with its session, logged as the server's own deletion.
	c.Close()
	eph := fmt.Sprintf("INFO session=0x%x\tuser=%s\toperation=ephemeralZNodeDeletionOnSessionCloseOrExpire\tznode=/e\tresult=success", c.SessionID(), me)
	var got []string
	for deadline := time.Now().Add(10 * time.Second); !slices.Contains(got, eph) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		got = append(got, logs.take()...)
	}
	if !slices.Equal(got, []string{eph}) {
		t.Errorf("session close: %q, want %q", got, eph)
	}
	srv.Stop()
	got = logs.take()
	if i := slices.Index(got, "INFO user="+me+"\toperation=serverStop\tresult=invoked"); i < 0 {
		t.Errorf("stop: %q, want serverStop invoked", got)
	}
}

// TestAuditLogOff: without Audit nothing is logged with logger=audit.
func TestAuditLogOff(t *testing.T) {
	logs := newAuditCapture()
	sc := fromZooCfg(t, 0, "audit.enable=false")
	srv := startStock(t, zktest.WithConfig(func(c *server.Config) {
		c.Audit = sc.Audit
		c.Logger = slog.New(logs)
	}))
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	if _, err := c.Create("/a", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if got := logs.take(); len(got) != 0 {
		t.Errorf("audit off: %q", got)
	}
}

// TestAuditLogEnsemble: a write is logged by the server its client is connected to (a
// follower here), not by the others; the ephemeral a closed session leaves is logged by
// every member, as each applies the closeSession txn.
func TestAuditLogEnsemble(t *testing.T) {
	caps := []*auditCapture{newAuditCapture(), newAuditCapture(), newAuditCapture()}
	e := startEnsembleConfig(t, 3, func(c *server.Config) {
		c.Audit = true
		c.Logger = slog.New(caps[c.ServerID-1])
	})
	e.waitServing()
	follower := -1
	for i, mode := range e.modes() {
		if mode == "follower" {
			follower = i
			break
		}
	}
	me := auditProcessUser()
	for i, h := range caps {
		if got := h.take(); !slices.Equal(got, []string{"INFO user=" + me + "\toperation=serverStart\tresult=success"}) {
			t.Errorf("member %d start: %q", i+1, got)
		}
	}
	c := connectTo(t, e.members[follower].cfg.ListenAddr)
	if _, err := c.Create("/f", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sess := fmt.Sprintf("session=0x%x", c.SessionID())
	created := "INFO " + sess + "\tuser=127.0.0.1\tip=127.0.0.1\toperation=create\tznode=/f\tznode_type=ephemeral\tresult=success"
	c.Close()
	eph := "INFO " + sess + "\tuser=" + me + "\toperation=ephemeralZNodeDeletionOnSessionCloseOrExpire\tznode=/f\tresult=success"
	for i, h := range caps {
		want := []string{eph}
		if i == follower {
			want = []string{created, eph}
		}
		var got []string
		for deadline := time.Now().Add(10 * time.Second); !slices.Contains(got, eph) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			got = append(got, h.take()...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("member %d:\n%s\nwant\n%s", i+1, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
