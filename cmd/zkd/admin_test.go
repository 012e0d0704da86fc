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
	p, _ := startFromZooCfg(t, dir, fmt.Sprintf("admin.enableServer=true\nadmin.serverPort=%d\n"+
		"admin.rateLimiterIntervalInMS=0\nzookeeper.admin.restore.enabled=false\n", adminPort))

	get := func(method, cmd string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d/commands/%s", adminPort, cmd), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "digest someone:pw")
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
	if err := runTool([]string{"save", base, saved, "--auth", "digest someone:pw"}, &out, &errb); err != nil {
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
