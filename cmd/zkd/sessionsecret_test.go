package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/session"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
)

// TestSessionSecretFromZooCfg: zkd.sessionSecretFile in zoo.cfg reaches the server (a
// password computed from a session id is refused), and a missing file stops start-up.
func TestSessionSecretFromZooCfg(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	secret := filepath.Join(dir, "session.secret")
	if err := os.WriteFile(secret, []byte("5f2a0c8e9d7b6a5f4e3d2c1b0a9f8e7d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, _ := startFromZooCfg(t, dir, "zkd.sessionSecretFile="+secret+"\n")
	c := connectZK(t, p.addr)
	if _, err := c.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	id := c.SessionID()
	pw := session.Password(id)
	thief := rawzk.Dial(t, p.addr)
	resp, err := thief.Handshake(&jute.ConnectRequest{TimeOut: 30000, SessionID: id, Passwd: pw[:], HasReadOnly: true})
	if err != nil || resp.SessionID != 0 {
		t.Fatalf("ZooKeeper's password for %#x: %+v %v, want refused", id, resp, err)
	}
	if _, _, err := c.Exists("/eph"); err != nil {
		t.Fatalf("owner after the attempt: %v", err)
	}
	c.Close()
	p.stop(t)

	// A missing file stops start-up with an error that names the key's file.
	missing := filepath.Join(dir, "missing.secret")
	cfg := filepath.Join(dir, "bad.cfg")
	text := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nzkd.sessionSecretFile=%s\n",
		filepath.Join(dir, "data2"), freePort(t), missing)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, zkdBinary(t), "--config", cfg).CombinedOutput()
	if err == nil || ctx.Err() != nil || !strings.Contains(string(out), "session secret") || !strings.Contains(string(out), "missing.secret") {
		t.Fatalf("zkd with a missing secret file: %v\n%s", err, out)
	}
}
