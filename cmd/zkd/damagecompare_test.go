package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/testing/refzk"
)

// damageOutcome is what a server does on a damaged data directory.
type damageOutcome struct {
	refuses  bool
	children int // of /g, when it serves
}

func (o damageOutcome) String() string {
	if o.refuses {
		return "refuses to start"
	}
	return fmt.Sprintf("serves, /g has %d of 100", o.children)
}

// copyDir copies a data directory (files and version-2), leaving out zkd.lock.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if info.Name() == "zkd.lock" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// outcome waits until a server started on a damaged directory either exits or serves, and
// then counts /g's children.
func outcome(t *testing.T, addr string, exited func() bool, logs func() string) damageOutcome {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if exited() {
			return damageOutcome{refuses: true}
		}
		if strings.Contains(fourLetter(addr, "srvr"), "Mode: ") {
			c := connectZK(t, addr)
			kids, _, err := c.Children("/g")
			c.Close()
			if errors.Is(err, zk.ErrNoNode) {
				return damageOutcome{}
			}
			if err != nil {
				t.Fatalf("%s serves but /g: %v", addr, err)
			}
			return damageOutcome{children: len(kids)}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s neither serves nor exits within 90s:\n%s", addr, logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDamageComparedWithZooKeeper damages copies of one data directory (100 creates under
// /g acknowledged, then kill -9) in each way below and starts Apache ZooKeeper 3.8 and zkd
// on them. The table is docs/operations.md's ("Damaged data directories"); zkd must never serve with
// less than ZooKeeper keeps, and refuses wherever serving would lose an acknowledged write.
func TestDamageComparedWithZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	refzk.Require(t)
	pristine := filepath.Join(t.TempDir(), "data")
	port := freePort(t)
	p := startZkd(t, pristine, port)
	createChildren(t, connectZK(t, p.addr), 100)
	p.kill()
	log1 := func(d string) string { return filepath.Join(d, "version-2", "log.1") }
	entryAt := func(t *testing.T, d string, i int) logEntry {
		es := logEntries(t, d)
		if i < 0 {
			i += len(es)
		}
		return es[i]
	}
	cases := []struct {
		name      string
		damage    func(t *testing.T, d string)
		zooKeeper damageOutcome
		zkd       damageOutcome
	}{
		{"one bit flipped in the body of entry 21 of 102", func(t *testing.T, d string) {
			e := entryAt(t, d, 20)
			flipBit(t, e.file, e.off+12+int64(e.size)/2)
		}, damageOutcome{refuses: true}, damageOutcome{refuses: true}},
		{"the length of entry 21 set to 0x7fffffff", func(t *testing.T, d string) {
			patchFile(t, entryAt(t, d, 20).file, entryAt(t, d, 20).off+8, []byte{0x7f, 0xff, 0xff, 0xff})
		}, damageOutcome{refuses: true}, damageOutcome{refuses: true}},
		{"entry 21 zeroed", func(t *testing.T, d string) {
			e := entryAt(t, d, 20)
			patchFile(t, e.file, e.off, make([]byte, 13+e.size))
		}, damageOutcome{children: 18}, damageOutcome{refuses: true}},
		{"one bit flipped in the body of the last entry", func(t *testing.T, d string) {
			e := entryAt(t, d, -1)
			flipBit(t, e.file, e.off+12+int64(e.size)/2)
		}, damageOutcome{refuses: true}, damageOutcome{refuses: true}},
		{"the last entry torn (its second half zeros)", func(t *testing.T, d string) {
			e := entryAt(t, d, -1)
			half := int64(e.size) / 2
			patchFile(t, e.file, e.off+12+half, make([]byte, int64(e.size)-half+1))
		}, damageOutcome{children: 99}, damageOutcome{children: 99}},
		{"the only snapshot (snapshot.0) with one bit flipped", func(t *testing.T, d string) {
			path := filepath.Join(d, "version-2", "snapshot.0")
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			flipBit(t, path, st.Size()/2)
		}, damageOutcome{refuses: true}, damageOutcome{refuses: true}},
		{"the length of the last entry set to 0x7fffffff", func(t *testing.T, d string) {
			e := entryAt(t, d, -1)
			patchFile(t, e.file, e.off+8, []byte{0x7f, 0xff, 0xff, 0xff})
		}, damageOutcome{refuses: true}, damageOutcome{refuses: true}},
		{"the only snapshot cut to half its size", func(t *testing.T, d string) {
			path := filepath.Join(d, "version-2", "snapshot.0")
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, damageOutcome{refuses: true}, damageOutcome{refuses: true}},
		{"log.1 removed", func(t *testing.T, d string) {
			if err := os.Remove(log1(d)); err != nil {
				t.Fatal(err)
			}
		}, damageOutcome{children: 0}, damageOutcome{children: 0}},
	}
	var table []string
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			zkDir, zkdDir := filepath.Join(t.TempDir(), "data"), filepath.Join(t.TempDir(), "data")
			copyDir(t, pristine, zkDir)
			copyDir(t, pristine, zkdDir)
			tc.damage(t, zkDir)
			tc.damage(t, zkdDir)

			ref := refzk.StartStandalone(t, refzk.Options{DataDir: zkDir, NoWait: true})
			gotZK := outcome(t, ref.Addr(), ref.Exited, func() string { b, _ := os.ReadFile(ref.LogPath()); return string(b) })
			ref.Kill()

			zport := freePort(t)
			addr := fmt.Sprintf("127.0.0.1:%d", zport)
			z := spawn(t, addr, []string{"--addr", addr, "--data-dir", zkdDir, "--log-level", "warn"})
			got := outcome(t, addr, z.Exited, z.logText)
			z.kill()

			table = append(table, fmt.Sprintf("| %s | %s | %s |", tc.name, gotZK, got))
			if gotZK != tc.zooKeeper {
				t.Errorf("ZooKeeper 3.8: %s, the table says %s", gotZK, tc.zooKeeper)
			}
			if got != tc.zkd {
				t.Errorf("zkd: %s, want %s:\n%s", got, tc.zkd, z.logText())
			}
			if !got.refuses && (gotZK.refuses || got.children < gotZK.children) {
				t.Errorf("zkd serves with less than ZooKeeper keeps: %s against %s", got, gotZK)
			}
		})
	}
	t.Logf("| damage | Apache ZooKeeper 3.8 | zkd |\n| --- | --- | --- |\n%s", strings.Join(table, "\n"))
}
