package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/storage"
)

// TestSnapshotCompressionKey: the zoo.cfg key (bare or with ZooKeeper's "zookeeper." prefix,
// any case) makes zkd write every snapshot compressed; `zkd tool snapshot` and `zkd tool
// verify` read them, and zkd restarts from them.
func TestSnapshotCompressionKey(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, tc := range []struct{ line, suffix string }{
		{"snapshot.compression.method=GZ", ".gz"},
		{"zookeeper.snapshot.compression.method=snappy", ".snappy"},
	} {
		t.Run(strings.TrimPrefix(tc.suffix, "."), func(t *testing.T) {
			dir := t.TempDir()
			dataDir := filepath.Join(dir, "data")
			port := freePort(t)
			cfg := filepath.Join(dir, "zoo.cfg")
			text := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nsnapCount=20\n%s\n",
				dataDir, port, tc.line)
			if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			start := func() *proc {
				p := spawn(t, addr, []string{"--config", cfg, "--log-level", "warn"})
				p.waitMode(t, func(m string) bool { return m == "standalone" })
				return p
			}
			p := start()
			c := connectZK(t, addr)
			const n = 80
			for i := 0; i < n; i++ {
				if _, err := c.Create(fmt.Sprintf("/c%02d", i), []byte(fmt.Sprint("v", i)), 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatal(err)
				}
			}
			// With snapCount=20 a background snapshot follows every 10 to 20 txns; wait for
			// two besides the start-up one.
			v2 := filepath.Join(dataDir, "version-2")
			var snaps []storage.SnapshotFile
			for deadline := time.Now().Add(time.Minute); ; {
				snaps, _ = storage.FindSnapshots(storage.OSFS{}, v2)
				if len(snaps) >= 3 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("snapshots after %d creates: %v\n%s", n, snaps, p.logText())
				}
				time.Sleep(20 * time.Millisecond)
			}
			c.Close()
			p.stop(t)
			snaps, _ = storage.FindSnapshots(storage.OSFS{}, v2)
			for _, sf := range snaps {
				if !strings.HasSuffix(sf.Name, tc.suffix) {
					t.Errorf("%s: want every snapshot to end in %s", sf.Name, tc.suffix)
				}
			}

			var out, errb bytes.Buffer
			if err := runTool([]string{"snapshot", filepath.Join(v2, snaps[0].Name)}, &out, &errb); err != nil {
				t.Fatalf("tool snapshot %s: %v\n%s", snaps[0].Name, err, errb.String())
			}
			if !strings.Contains(out.String(), "\n/c00\n") {
				t.Errorf("tool snapshot %s lacks /c00:\n%s", snaps[0].Name, out.String())
			}
			out.Reset()
			if err := runTool([]string{"verify", v2}, &out, &errb); err != nil {
				t.Errorf("tool verify: %v\n%s%s", err, out.String(), errb.String())
			}

			p = start()
			c = connectZK(t, addr)
			defer c.Close()
			for i := 0; i < n; i++ {
				got, _, err := c.Get(fmt.Sprintf("/c%02d", i))
				if err != nil || string(got) != fmt.Sprint("v", i) {
					t.Fatalf("/c%02d after restart: %q %v", i, got, err)
				}
			}
			p.stop(t)
		})
	}
}
