package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd-io/zkd/internal/config"
)

// TestZooEnvStandalone starts zkd as the official image starts ZooKeeper: configuration
// from ZOO_* variables, the client port from the only server line.
func TestZooEnvStandalone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	ports := []int{freePort(t), freePort(t), freePort(t)}
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	env := []string{
		"ZOO_CONF_DIR=" + filepath.Join(dir, "conf"),
		"ZOO_DATA_DIR=" + filepath.Join(dir, "data"),
		"ZOO_DATA_LOG_DIR=" + filepath.Join(dir, "datalog"),
		fmt.Sprintf("ZOO_SERVERS=server.1=127.0.0.1:%d:%d;%s", ports[1], ports[2], addr),
		"ZOO_4LW_COMMANDS_WHITELIST=srvr,ruok",
		"ZOO_MY_ID=1",
		// The image's AdminServer listens on all interfaces; a test keeps to loopback.
		fmt.Sprintf("ZOO_CFG_EXTRA=admin.serverAddress=127.0.0.1 admin.serverPort=%d", freePort(t)),
	}
	p := spawnEnv(t, addr, []string{"--zoo-env"}, env)
	deadline := time.Now().Add(60 * time.Second)
	for p.mode() != "standalone" {
		if time.Now().After(deadline) {
			t.Fatalf("zkd did not serve at %s:\n%s", addr, p.logText())
		}
		select {
		case <-p.Done():
			t.Fatalf("zkd exited:\n%s", p.logText())
		case <-time.After(100 * time.Millisecond):
		}
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "conf", "zoo.cfg"))
	if err != nil || !strings.Contains(string(cfg), "dataLogDir="+filepath.Join(dir, "datalog")) {
		t.Fatalf("zoo.cfg: %v\n%s", err, cfg)
	}
	if id, err := os.ReadFile(filepath.Join(dir, "data", "myid")); err != nil || strings.TrimSpace(string(id)) != "1" {
		t.Fatalf("myid: %q %v", id, err)
	}
	c := connectAll(t, []string{addr})
	if _, err := c.Create("/x", []byte("y"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if logs, _ := filepath.Glob(filepath.Join(dir, "datalog", "version-2", "log.*")); len(logs) == 0 {
		t.Fatalf("no txn log in ZOO_DATA_LOG_DIR")
	}
}

func TestPrepareZooEnvKeepsExistingFiles(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"ZOO_CONF_DIR": dir, "ZOO_DATA_DIR": dir, "ZOO_MY_ID": "3"}
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte("tickTime=1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "myid"), []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path, err := prepareZooEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "tickTime=1000\n" {
		t.Fatalf("zoo.cfg rewritten: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "myid")); string(b) != "2\n" {
		t.Fatalf("myid rewritten: %q", b)
	}
}

func TestClientPortFromServers(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "myid"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(strings.NewReader("dataDir=" + dir + "\ninitLimit=5\nsyncLimit=2\n" +
		"server.1=h1:2888:3888;2181\nserver.2=h2:2888:3888;10.0.0.2:2182\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := clientPortFromServers(cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.ClientPort != 2182 || cfg.ClientPortAddress != "10.0.0.2" {
		t.Fatalf("client port %d address %q, want this server's 2182 on 10.0.0.2", cfg.ClientPort, cfg.ClientPortAddress)
	}
}

// TestPprofLoopbackOnly: --pprof refuses an address that is not loopback, so the
// unauthenticated profiler cannot be opened on every interface by mistake.
func TestPprofLoopbackOnly(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:6060": true, "[::1]:6060": true, "localhost:6060": true,
		":6060": false, "0.0.0.0:6060": false, "10.1.2.3:6060": false, "example.com:6060": false, "6060": false,
	} {
		if got := loopbackHostPort(addr); got != want {
			t.Errorf("loopbackHostPort(%q) = %v, want %v", addr, got, want)
		}
	}
}
