package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAdminServerFromZooCfg: the admin.* keys of a zoo.cfg start the AdminServer, and
// initial_configuration answers the file as written.
func TestAdminServerFromZooCfg(t *testing.T) {
	dir := t.TempDir()
	port, adminPort := freePort(t), freePort(t)
	cfg := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
		"admin.enableServer=true\nzookeeper.admin.serverPort=%d\nadmin.commandURL=/admin\n",
		filepath.Join(dir, "data"), port, adminPort)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := spawn(t, fmt.Sprintf("127.0.0.1:%d", port), []string{"--config", cfgPath, "--log-level", "warn"})
	p.waitMode(t, func(m string) bool { return m == "standalone" })

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
