package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkd-io/zkd/zktest"
)

func TestIsSnapshotTemp(t *testing.T) {
	for name, want := range map[string]bool{
		"tmp.snapshot.1a2b":       true,  // zkd, being written
		"snapshot.1a2b.tmp":       true,  // ZooKeeper 3.8's AtomicFileOutputStream
		"tmp.snapshot.1a2b.gz":    true,  // zkd, compressed
		"snapshot.1a2b":           false, // complete
		"snapshot.1a2b.snappy":    false,
		"log.100000001":           false,
		"tmp.log.1":               false,
		"acceptedEpoch.tmp":       false,
		"snapshot.1a2b.tmp.extra": false,
	} {
		if got := isSnapshotTemp(name); got != want {
			t.Errorf("isSnapshotTemp(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestSnapshotWindowsClassify: a request that completes while a snapshot runs, or that was
// in flight when one was last seen, is in the snapshot's window; one that started after
// is not.
func TestSnapshotWindowsClassify(t *testing.T) {
	s := &snapWatch{}
	if s.during(time.Second) {
		t.Error("no snapshot seen yet, but a request is counted as during one")
	}
	s.lastSeen.Store(time.Now().Add(-100 * time.Millisecond).UnixNano())
	if !s.during(time.Second) {
		t.Error("a 1 s request that started before the snapshot was last seen is not counted as during it")
	}
	if s.during(time.Millisecond) {
		t.Error("a 1 ms request that started after the snapshot was last seen is counted as during it")
	}
	s.running.Store(true)
	if !s.during(time.Millisecond) {
		t.Error("a request completing while a snapshot runs is not counted as during it")
	}
}

// TestSnapshotWindows: zkbench run --snapshot-dir splits the measured requests by the
// snapshots it sees being written in the directory, in either server's naming, and counts
// them; a directory holding only complete snapshots puts every request outside.
func TestSnapshotWindows(t *testing.T) {
	srv := zktest.Start(t)
	work := t.TempDir()
	jsonPath := filepath.Join(work, "out.jsonl")
	for i, tc := range []struct {
		files []string
		seen  int
	}{
		{[]string{"snapshot.10", "log.1"}, 0},
		{[]string{"snapshot.10", "tmp.snapshot.20"}, 1},
		{[]string{"snapshot.30.tmp", "tmp.snapshot.40"}, 2},
	} {
		dir := filepath.Join(work, "d", string(rune('a'+i)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range tc.files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run := runner(t, srv.Addr(), jsonPath, "--clients", "2", "--outstanding", "4", "--keys", "20",
			"--data-size", "10", "--snapshot-dir", dir)
		if err := run("--ops", "400", "set"); err != nil {
			t.Fatal(err)
		}
		results, err := readResultsFile(jsonPath)
		if err != nil {
			t.Fatal(err)
		}
		r := results[len(results)-1]
		if r.DuringSnapshot == nil || r.OutsideSnapshot == nil {
			t.Fatalf("case %d: no snapshot windows in the result", i)
		}
		if r.DuringSnapshot.Ops+r.OutsideSnapshot.Ops != r.Ops {
			t.Errorf("case %d: %d ops during and %d outside snapshots, of %d", i, r.DuringSnapshot.Ops, r.OutsideSnapshot.Ops, r.Ops)
		}
		if r.SnapshotsSeen != tc.seen {
			t.Errorf("case %d: %d snapshots seen, want %d", i, r.SnapshotsSeen, tc.seen)
		}
		if tc.seen == 0 {
			if r.DuringSnapshot.Ops != 0 || r.SnapshotRunningS != 0 {
				t.Errorf("case %d: %d ops and %v s during a snapshot, with none written", i, r.DuringSnapshot.Ops, r.SnapshotRunningS)
			}
			if r.OutsideSnapshot.Latency.Max <= 0 {
				t.Errorf("case %d: no latency outside snapshots: %+v", i, r.OutsideSnapshot)
			}
		} else {
			if r.OutsideSnapshot.Ops != 0 || r.DuringSnapshot.Latency.Max <= 0 {
				t.Errorf("case %d: a snapshot ran throughout, yet %d ops outside it, latency during %+v", i, r.OutsideSnapshot.Ops, r.DuringSnapshot.Latency)
			}
		}
	}
}
