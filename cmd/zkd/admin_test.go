package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/auth"
)

// TestAdminServerFromZooCfg: the admin.* keys of a zoo.cfg start the AdminServer, and
// initial_configuration answers the file as written.
func TestAdminServerFromZooCfg(t *testing.T) {
	dir := t.TempDir()
	adminPort := freePort(t)
	p, cfg := startFromZooCfg(t, dir, fmt.Sprintf(
		"admin.enableServer=true\nzookeeper.admin.serverPort=%d\nadmin.commandURL=/admin\n", adminPort))

	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/admin/icfg", adminPort))
	if err != nil {
		t.Fatalf("%v\n%s", err, p.logText())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	if got["command"] != "initial_configuration" || got["initial_configuration"] != cfg || got["error"] != nil {
		t.Errorf("initial_configuration = %s", body)
	}
}

// TestAdminSnapshotFromZooCfg: the admin.* snapshot keys of a zoo.cfg reach the server (no
// rate limit with admin.rateLimiterIntervalInMS=0), and a streamed snapshot reads with
// `zkd tool snapshot`.
func TestAdminSnapshotFromZooCfg(t *testing.T) {
	dir := t.TempDir()
	adminPort := freePort(t)
	// snapshot needs an identity the server vouches for: the super user.
	p, _ := startFromZooCfg(t, dir, fmt.Sprintf("admin.enableServer=true\nadmin.serverPort=%d\n"+
		"admin.rateLimiterIntervalInMS=0\nzookeeper.admin.restore.enabled=false\n"+
		"zookeeper.DigestAuthenticationProvider.superDigest=%s\n", adminPort, auth.DigestID("super", "pw")))

	get := func(method, cmd string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d/commands/%s", adminPort, cmd), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "digest super:pw")
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			t.Fatalf("%v\n%s", err, p.logText())
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	var snap []byte
	for i := range 2 { // the second is not rate limited
		resp, body := get(http.MethodGet, "snapshot")
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Fatalf("snapshot %d: %d %s", i, resp.StatusCode, body)
		}
		snap = body
	}
	if resp, body := get(http.MethodPost, "restore"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("restore with admin.restore.enabled=false: %d %s", resp.StatusCode, body)
	}
	file := filepath.Join(dir, "snapshot.0")
	if err := os.WriteFile(file, snap, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := runTool([]string{"snapshot", file}, &out, &errb); err != nil || !strings.Contains(out.String(), "/zookeeper/config") {
		t.Errorf("zkd tool snapshot of the streamed snapshot: %v %s\n%s", err, errb.String(), out.String())
	}

	// zkd tool save does the same download, checks it and renames it into place.
	saved := filepath.Join(dir, "saved.snap")
	base := fmt.Sprintf("http://127.0.0.1:%d/commands", adminPort)
	out.Reset()
	if err := runTool([]string{"save", base, saved, "--auth", "digest super:pw"}, &out, &errb); err != nil {
		t.Fatalf("zkd tool save: %v %s", err, errb.String())
	}
	if !strings.Contains(out.String(), "saved "+saved) {
		t.Errorf("zkd tool save printed %q", out.String())
	}
	out.Reset()
	if err := runTool([]string{"snapshot", saved}, &out, &errb); err != nil || !strings.Contains(out.String(), "/zookeeper/config") {
		t.Errorf("zkd tool snapshot of the saved snapshot: %v %s\n%s", err, errb.String(), out.String())
	}
	// A refused download leaves no file.
	refused := filepath.Join(dir, "refused.snap")
	if err := runTool([]string{"save", base, refused}, &out, &errb); err == nil {
		t.Error("zkd tool save without credentials succeeded")
	}
	if _, err := os.Stat(refused); !os.IsNotExist(err) {
		t.Errorf("a refused save left %s: %v", refused, err)
	}
}

// TestAdminGuardsFromZooCfg: zkd's zkd.admin.* keys and admin.restore.enabled reach the
// AdminServer: a listed name passes the Host check and another is refused, restore is off
// without admin.restore.enabled=true, and zkd.admin.restoreMaxBytes caps its body.
func TestAdminGuardsFromZooCfg(t *testing.T) {
	do := func(t *testing.T, p *proc, method, url, host, authz string, body []byte) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			t.Fatalf("%v\n%s", err, p.logText())
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	super := "zookeeper.DigestAuthenticationProvider.superDigest=" + auth.DigestID("super", "pw") + "\n"

	t.Run("restore off by default", func(t *testing.T) {
		adminPort := freePort(t)
		p, _ := startFromZooCfg(t, t.TempDir(), fmt.Sprintf("admin.enableServer=true\nadmin.serverPort=%d\n%s", adminPort, super))
		url := fmt.Sprintf("http://127.0.0.1:%d/commands/restore", adminPort)
		if resp, body := do(t, p, http.MethodPost, url, "", "digest super:pw", []byte("junk")); resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("restore without admin.restore.enabled: %d %s, want 503", resp.StatusCode, body)
		}
	})

	t.Run("keys", func(t *testing.T) {
		adminPort := freePort(t)
		p, _ := startFromZooCfg(t, t.TempDir(), fmt.Sprintf("admin.enableServer=true\nadmin.serverPort=%d\n%s"+
			"admin.restore.enabled=true\nzkd.admin.allowedHosts=zk.example.com\nzkd.admin.restoreMaxBytes=100\n",
			adminPort, super))
		base := fmt.Sprintf("http://127.0.0.1:%d/commands", adminPort)
		port := fmt.Sprint(adminPort)
		if resp, body := do(t, p, http.MethodGet, base+"/ruok", "zk.example.com:"+port, "", nil); resp.StatusCode != http.StatusOK {
			t.Errorf("ruok with a listed Host: %d %s", resp.StatusCode, body)
		}
		if resp, body := do(t, p, http.MethodGet, base+"/ruok", "evil.example:"+port, "", nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("ruok with Host evil.example: %d %s, want 403", resp.StatusCode, body)
		}
		resp, body := do(t, p, http.MethodPost, base+"/restore", "", "digest super:pw", bytes.Repeat([]byte{0}, 1000))
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "zkd.admin.restoreMaxBytes") {
			t.Errorf("restore of 1000 bytes over zkd.admin.restoreMaxBytes=100: %d %s, want 413", resp.StatusCode, body)
		}
	})
}
