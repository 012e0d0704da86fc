package sim

import (
	"flag"
	"fmt"
	"testing"
)

var (
	seeds = flag.Int("sim.seeds", 1500, "number of seeded schedules per configuration (3 and 5 servers)")
	steps = flag.Int("sim.steps", 3000, "steps per schedule")
	seed  = flag.Uint64("sim.seed", 0, "replay only this seed (with -v, -sim.trace prints every step)")
	trace = flag.Bool("sim.trace", false, "print every step of a replayed seed")
)

func runSeed(t *testing.T, opt Options) (Stats, error) {
	t.Helper()
	if *trace {
		opt.Trace = func(s string) { t.Log(s) }
	}
	s := New(opt)
	err := s.Run()
	return s.Stats(), err
}

func seedList() []uint64 {
	if *seed != 0 {
		return []uint64{*seed}
	}
	out := make([]uint64, *seeds)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// TestSimulatedEnsembles runs thousands of seeded schedules with faults through the real
// election and Zab state machines, and the zab.Applier with disk steps that finish later,
// and checks, after every step: at most one leader per epoch, every leader's history
// extends the committed one (no acknowledged write lost), every serving server's tree is a
// prefix of the committed sequence, and every tree is the replay of its log.
func TestSimulatedEnsembles(t *testing.T) {
	for _, n := range []int{3, 5} {
		var committed, epochs int
		var disk DiskStats
		for _, sd := range seedList() {
			st, err := runSeed(t, Options{Seed: sd, Servers: n, Steps: *steps, Faults: true})
			if err != nil {
				t.Fatalf("%d servers, seed %d: %v\nreplay: go test ./internal/sim -run TestSimulatedEnsembles -sim.seed %d -sim.trace -v", n, sd, err, sd)
			}
			committed += st.Committed
			epochs += st.Epochs
			disk.Later += st.Disk.Later
			disk.Stale += st.Disk.Stale
			disk.Lost += st.Disk.Lost
		}
		// The schedules must do real work, or the checks prove nothing.
		minCommits := *seeds * 20
		if n == 5 {
			minCommits = *seeds * 5 // a 5-server quorum is harder to keep under the same faults
		}
		if *seed == 0 && (committed < minCommits || epochs < *seeds*2) {
			t.Fatalf("%d servers: only %d txns committed and %d epochs over %d seeds", n, committed, epochs, *seeds)
		}
		// Nor if the disk never made the Appliers wait, or never raced a role change or a crash.
		if *seed == 0 && (disk.Later < *seeds || disk.Stale == 0 || disk.Lost == 0) {
			t.Fatalf("%d servers: disk steps finished later %d times, after their role %d, cut by a crash %d, over %d seeds",
				n, disk.Later, disk.Stale, disk.Lost, *seeds)
		}
		t.Logf("%d servers: %d seeds, %d txns committed, %d epochs established; disk steps finished later %d, after their role %d, cut by a crash %d",
			n, len(seedList()), committed, epochs, disk.Later, disk.Stale, disk.Lost)
	}
}

// TestSimulationCatchesEarlyCommit: a leader that commits before a quorum acked loses
// acknowledged writes when it crashes; the simulation must notice within the CI budget.
func TestSimulationCatchesEarlyCommit(t *testing.T) {
	caught := 0
	for sd := uint64(1); sd <= 300 && caught == 0; sd++ {
		if _, err := runSeed(t, Options{Seed: sd, Servers: 3, Steps: *steps, Faults: true, BrokenCommit: true}); err != nil {
			caught++
			t.Logf("caught at seed %d: %v", sd, firstLine(err.Error()))
		}
	}
	if caught == 0 {
		t.Fatal("committing on one ack went unnoticed in 300 seeds")
	}
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}

func TestSimulationIsDeterministic(t *testing.T) {
	var lines [2][]string
	for i := range lines {
		opt := Options{Seed: 42, Servers: 3, Steps: 2000, Faults: true, Trace: func(s string) { lines[i] = append(lines[i], s) }}
		if err := New(opt).Run(); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(lines[0]) != fmt.Sprint(lines[1]) || len(lines[0]) == 0 {
		t.Fatalf("two runs of one seed differ (%d vs %d trace lines)", len(lines[0]), len(lines[1]))
	}
}

// TestSimulatedEnsemblesFastElection runs the schedules again with zkd.fastElection and
// down reports, many of them wrong (a peer that is up reported down), and checks the same
// invariants: the fast decision may elect sooner, never a second leader of an epoch or one
// missing a committed write.
func TestSimulatedEnsemblesFastElection(t *testing.T) {
	// A third of the seeds: the schedules above cover the rest of the machinery, and CI
	// time is shared.
	list := seedList()
	if *seed == 0 {
		list = list[:max(1, len(list)/3)]
	}
	for _, n := range []int{3, 5} {
		var committed, epochs, fast int
		for _, sd := range list {
			st, err := runSeed(t, Options{Seed: sd, Servers: n, Steps: *steps, Faults: true, FastElection: true, DownReports: true})
			if err != nil {
				t.Fatalf("%d servers, seed %d: %v\nreplay: go test ./internal/sim -run TestSimulatedEnsemblesFastElection -sim.seed %d -sim.trace -v", n, sd, err, sd)
			}
			committed += st.Committed
			epochs += st.Epochs
			fast += st.FastDecisions
		}
		// The fast path must have decided elections, or the run proves nothing about it.
		if k := len(list); *seed == 0 && (fast < k*5 || epochs < k || committed < k*3) {
			t.Fatalf("%d servers: only %d fast decisions, %d epochs, %d txns committed over %d seeds", n, fast, epochs, committed, k)
		}
		t.Logf("%d servers: %d seeds, %d fast decisions, %d epochs established, %d txns committed", n, len(list), fast, epochs, committed)
	}
}

// TestSimulationCatchesFastDecisionOnNonQuorum: an election that decides on a non-quorum
// (here fast, once the others are reported down) must be noticed. Zab's epoch
// establishment refuses most leaders such a round makes, so it is the election check
// (checkTally) that sees it.
func TestSimulationCatchesFastDecisionOnNonQuorum(t *testing.T) {
	caught := 0
	for sd := uint64(1); sd <= 300 && caught == 0; sd++ {
		opt := Options{Seed: sd, Servers: 3, Steps: *steps, Faults: true, FastElection: true, DownReports: true, BrokenElectionQuorum: true}
		if _, err := runSeed(t, opt); err != nil {
			caught++
			t.Logf("caught at seed %d: %v", sd, firstLine(err.Error()))
		}
	}
	if caught == 0 {
		t.Fatal("deciding on a non-quorum went unnoticed in 300 seeds")
	}
}
