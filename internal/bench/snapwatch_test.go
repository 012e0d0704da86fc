package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/zktest"
)

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

// TestSnapshotWatchPolls: the newest snapshot file growing, or a new one appearing, is a
// snapshot running (ZooKeeper's periodic snapshots, written in place); a temporary file is
// one (zkd's); a snapshot there before the first poll, one that stopped growing and zkd's
// rename of a finished one are not.
func TestSnapshotWatchPolls(t *testing.T) {
	dir := t.TempDir()
	b := &bench{}
	b.phase.Store(phaseMeasure)
	s := newSnapWatch(dir, b)
	write := func(name, data string, flag int) {
		f, err := os.OpenFile(filepath.Join(dir, name), flag|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(data); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	write("snapshot.10", "old", 0)
	step := func(what string, want bool) {
		t.Helper()
		s.poll()
		if got := s.running.Load(); got != want {
			t.Errorf("%s: running %v, want %v", what, got, want)
		}
	}
	step("a snapshot from before the run", false)
	write("snapshot.20", "abc", 0)
	step("a new snapshot file", true)
	write("snapshot.20", "def", os.O_APPEND)
	step("the newest snapshot grew", true)
	step("the newest snapshot stopped growing", false)
	write("tmp.snapshot.30", "x", 0)
	step("zkd's temporary file", true)
	if err := os.Rename(filepath.Join(dir, "tmp.snapshot.30"), filepath.Join(dir, "snapshot.30")); err != nil {
		t.Fatal(err)
	}
	step("zkd's finished snapshot renamed", false)
	write("snapshot.40.tmp", "x", 0)
	step("ZooKeeper's synced snapshot being written", true)
	if s.busy <= 0 {
		t.Error("no time counted with a snapshot running")
	}
	if len(s.seen) != 3 {
		t.Errorf("snapshots seen %v, want snapshot.20, tmp.snapshot.30 and snapshot.40.tmp", s.seen)
	}
}

// TestSnapshotWatchUnreadable: a directory that cannot be read is said in the result's
// note, not taken for one where no snapshot ran.
func TestSnapshotWatchUnreadable(t *testing.T) {
	b := &bench{}
	b.phase.Store(phaseMeasure)
	s := newSnapWatch(filepath.Join(t.TempDir(), "no-such-dir"), b)
	s.poll()
	s.poll()
	res := &Result{}
	s.fill(res, newRecorder().watching(s))
	if !strings.Contains(res.Note, "snapshot directory") {
		t.Errorf("note %q does not say the directory could not be read", res.Note)
	}
}
