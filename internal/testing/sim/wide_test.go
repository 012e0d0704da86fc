package sim

import (
	"testing"

	"github.com/zkd-io/zkd/internal/zab"
)

// runWide runs one schedule and returns its stats and committed sequence.
func runWide(t *testing.T, opt Options) (Stats, []int64) {
	t.Helper()
	if *trace {
		opt.Trace = func(s string) { t.Log(s) }
	}
	s := New(opt)
	if err := s.Run(); err != nil {
		t.Fatalf("seed %d: %v\nreplay: go test ./internal/testing/sim -run %s -sim.seed %d -sim.trace -v", opt.Seed, err, t.Name(), opt.Seed)
	}
	return s.Stats(), s.Committed()
}

// checkRolled: zxids strictly increase, and each epoch after the first is entered through
// its predecessor's bump (counter 0xffffffff) when it rolled over in place.
func checkRolled(t *testing.T, seed uint64, global []int64) (bumps int) {
	t.Helper()
	var prev int64
	for _, z := range global {
		if z <= prev {
			t.Fatalf("seed %d: committed %s after %s", seed, zab.Hex(z), zab.Hex(prev))
		}
		if zab.Counter(z) == zab.BumpCounter {
			bumps++
		}
		prev = z
	}
	return bumps
}

// TestSimulatedWideRollover drives ensembles whose every member runs with wide and whose
// zxid counters start 14 short of the end, with no faults, and checks after every step,
// besides every check of the simulation (one leader per epoch, no acknowledged write lost,
// every tree a prefix of the committed sequence): a leader whose members are all synced
// never steps down at the counter's end (Sim.propose), a leader that rolls over takes an
// epoch nobody led. Over the seeds, the first leader stays leader through every end of the
// counter (one establishment, each later epoch a rollover in place, moving by one) in all
// but a few: those where the simulation's scheduler let a follower fall behind past
// syncLimit, which drops it as it would without wide.
func TestSimulatedWideRollover(t *testing.T) {
	n := min(*seeds, 200)
	var rolled, oneLeader int
	for _, sd := range seedList()[:min(n, len(seedList()))] {
		st, global := runWide(t, Options{Seed: sd, Servers: 3, Steps: *steps, Wide: true, ZxidCounterStart: 0xfffffff0, ProposeWeight: 2})
		if st.Epochs != st.Established+st.Rollovers {
			t.Fatalf("seed %d: %d epochs for %d establishments and %d rollovers", sd, st.Epochs, st.Established, st.Rollovers)
		}
		bumps := checkRolled(t, sd, global)
		if st.Established == 1 {
			oneLeader++
			if bumps < st.Rollovers-1 || bumps > st.Rollovers {
				// The last bump may be committed at the leader and not yet everywhere.
				t.Fatalf("seed %d: %d bumps committed for %d rollovers", sd, bumps, st.Rollovers)
			}
		}
		rolled += st.Rollovers
	}
	if *seed == 0 && (rolled < n*3 || oneLeader < n*9/10) {
		t.Fatalf("%d rollovers over %d seeds, %d with one leader throughout", rolled, n, oneLeader)
	}
	t.Logf("%d seeds: %d rollovers in place; %d seeds kept their first leader throughout", n, rolled, oneLeader)
}

// TestSimulatedWideRolloverWithFaults is TestSimulatedWideRollover under crashes,
// restarts, partitions and lost messages (counters 4 short of the end, so that some ends
// fall in a quiet moment): elections happen, rollovers in place happen between them, and
// no check of the simulation may fail (one leader per epoch, whether made by an election
// or a rollover; no acknowledged write lost; no step-down with every member synced).
func TestSimulatedWideRolloverWithFaults(t *testing.T) {
	n := min(*seeds, 200)
	var rolled, established int
	for _, sd := range seedList()[:min(n, len(seedList()))] {
		for _, servers := range []int{3, 5} {
			st, global := runWide(t, Options{Seed: sd, Servers: servers, Steps: *steps, Faults: true, Wide: true, ZxidCounterStart: 0xfffffffb, ProposeWeight: 8})
			checkRolled(t, sd, global)
			rolled += st.Rollovers
			established += st.Established
		}
	}
	if *seed == 0 && (rolled < n/10 || established < n*2) {
		t.Fatalf("%d rollovers and %d establishments over %d seeds: the schedules did too little", rolled, established, n)
	}
	t.Logf("%d seeds x {3, 5} servers: %d rollovers in place, %d leaders established", n, rolled, established)
}

// TestSimulatedWideRolloverNeedsEveryMember: with one member without wide, every end of
// the counter is a step-down and an election, as in ZooKeeper.
func TestSimulatedWideRolloverNeedsEveryMember(t *testing.T) {
	n := min(*seeds, 100)
	var established int
	for _, sd := range seedList()[:min(n, len(seedList()))] {
		st, _ := runWide(t, Options{Seed: sd, Servers: 3, Steps: *steps, Wide: true, NarrowSid: 3, ZxidCounterStart: 0xfffffff0})
		if st.Rollovers != 0 {
			t.Fatalf("seed %d: %d rollovers in place with member 3 lacking wide", sd, st.Rollovers)
		}
		established += st.Established
	}
	if *seed == 0 && established < n*2 {
		t.Fatalf("%d leaders established over %d seeds: the counter's ends did not force elections", established, n)
	}
}
