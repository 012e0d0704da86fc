package compat

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// snapshotsIn lists the snapshot files of a data directory, newest first.
func snapshotsIn(t *testing.T, dataDir string) []storage.SnapshotFile {
	t.Helper()
	files, err := storage.FindSnapshots(storage.OSFS{}, filepath.Join(dataDir, "version-2"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// waitSnapshot waits until dataDir holds a snapshot at zxid or later (a background snapshot
// is written after the restart that asks for it).
func waitSnapshot(t *testing.T, dataDir string, zxid int64) storage.SnapshotFile {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if files := snapshotsIn(t, dataDir); len(files) > 0 && files[0].Zxid >= zxid {
			return files[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot at %#x or later within a minute: %s", zxid, listDir(dataDir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDataDirCompressedSnapshots: zkd set to write gzip or snappy snapshots
// (zookeeper.snapshot.compression.method) names them snapshot.<zxid>.gz or .snappy, reads
// them back itself, and Apache ZooKeeper loads them: the tree, Stats and sessions as zkd had
// them. ZooKeeper, with the same setting, then writes its own compressed snapshot, which zkd
// reads in turn.
func TestDataDirCompressedSnapshots(t *testing.T) {
	refzk.Require(t)
	for _, comp := range []storage.SnapCompression{storage.SnapGzip, storage.SnapSnappy} {
		t.Run(string(comp), func(t *testing.T) {
			z := zktest.Start(t, zkdConfig("", func(c *server.Config) { c.SnapshotCompression = comp }))
			owner := populate(t, z.Addr(), "zkd")
			want := dump(t, z.Addr())
			var st jute.ExistsResponse
			owner.must(t, jute.OpExists, &jute.ExistsRequest{Path: "/dd"}, &st)
			// The restart loads snapshot.0 and replays the log, then snapshots everything in
			// the background: that snapshot is the one ZooKeeper must read.
			z.Restart()
			snap := waitSnapshot(t, z.DataDir(), owner.lastZxid)
			compareDumps(t, "zkd", "zkd after restart", want, dump(t, z.Addr()))
			z.Stop()
			for _, sf := range snapshotsIn(t, z.DataDir()) {
				if !strings.HasSuffix(sf.Name, comp.Suffix()) {
					t.Errorf("zkd wrote %s with compression %q", sf.Name, comp)
				}
			}
			// Restarting from the compressed snapshot alone (no log) gives the same tree.
			only := copyDir(t, z.DataDir())
			v2 := filepath.Join(only, "version-2")
			ents, _ := os.ReadDir(v2)
			for _, e := range ents {
				if e.Name() != snap.Name {
					os.Remove(filepath.Join(v2, e.Name()))
				}
			}
			zs := zktest.Start(t, zkdConfig(only, func(c *server.Config) { c.SnapshotCompression = comp }))
			compareDumps(t, "zkd", "zkd from "+snap.Name+" alone", want, dump(t, zs.Addr()))
			zs.Stop()

			dir := copyDir(t, z.DataDir())
			t.Logf("zkd wrote: %s", listDir(dir))
			ref := refzk.StartStandalone(t, refOptions(dir, "zookeeper.snapshot.compression.method="+string(comp)))
			got := dump(t, ref.Addr())
			compareDumps(t, "zkd", "zookeeper", want, got)
			checkRefDigests(t, ref)
			log, _ := os.ReadFile(ref.LogPath())
			if !strings.Contains(string(log), "Reading snapshot "+filepath.Join(dir, "version-2", snap.Name)) {
				t.Errorf("ZooKeeper did not read %s:\n%s", snap.Name, grepLines(string(log), "snapshot"))
			}
			moved := resume(t, ref.Addr(), owner)
			mkNode(t, moved, "/pp", []byte("from zookeeper"), open, persistent)
			moved.must(t, jute.OpCloseSession, nil, nil)
			want = dump(t, ref.Addr())
			ref.Stop()

			// ZooKeeper's own snapshots carry the suffix too; zkd reads them.
			dir2 := copyDir(t, ref.DataDir())
			t.Logf("zookeeper wrote: %s", listDir(dir2))
			var theirs int
			for _, sf := range snapshotsIn(t, dir2) {
				if sf.Zxid > snap.Zxid {
					theirs++
					if !strings.HasSuffix(sf.Name, comp.Suffix()) {
						t.Errorf("ZooKeeper wrote %s with compression %q", sf.Name, comp)
					}
				}
			}
			if theirs == 0 {
				t.Errorf("ZooKeeper wrote no snapshot after zkd's %s: %s", snap.Name, listDir(dir2))
			}
			z2 := zktest.Start(t, zkdConfig(dir2, nil))
			compareDumps(t, "zookeeper", "zkd", want, dump(t, z2.Addr()))
		})
	}
}

// grepLines returns the lines of s that contain sub, for failure messages.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(strings.ToLower(l), sub) {
			out = append(out, l)
		}
	}
	return fmt.Sprint(len(out), " lines:\n", strings.Join(out, "\n"))
}
