package sim

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/zab"
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
				t.Fatalf("%d servers, seed %d: %v\nreplay: go test ./internal/testing/sim -run TestSimulatedEnsembles -sim.seed %d -sim.trace -v", n, sd, err, sd)
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

var reconfigSeeds = flag.Int("sim.reconfig-seeds", 100, "number of seeded schedules with reconfigs per configuration (3 and 5 servers, 2 spares)")

// TestSimulatedReconfig runs seeded schedules in which leaders propose reconfigs (add a
// server, remove one, participant <-> observer, remove the leader, replace the voters)
// among the writes, under loss, reordering, crashes and partitions, with every check of
// TestSimulatedEnsembles plus: configuration versions only increase, one membership per
// version, and every quorum a leader used (to commit a txn, or to be established) is a
// quorum of each configuration it had to be, and intersects the others in a member counted
// in both (reconfig.go). A long run:
//
//	go test ./internal/testing/sim -run TestSimulatedReconfig -sim.reconfig-seeds 20000 -timeout 2h
func TestSimulatedReconfig(t *testing.T) {
	list := seedList()
	if *seed == 0 {
		list = list[:0]
		for i := 1; i <= *reconfigSeeds; i++ {
			list = append(list, uint64(i))
		}
	}
	for _, servers := range []int{3, 5} {
		var committed, epochs, reconfigs, handovers int
		for _, sd := range list {
			st, err := runSeed(t, Options{Seed: sd, Servers: servers, Steps: *steps, Faults: true, Reconfig: true})
			if err != nil {
				t.Fatalf("%d servers, seed %d: %v\nreplay: go test ./internal/testing/sim -run TestSimulatedReconfig -sim.seed %d -sim.trace -v", servers, sd, err, sd)
			}
			committed += st.Committed
			epochs += st.Epochs
			reconfigs += st.ReconfigsCommitted
			handovers += st.Handovers
		}
		t.Logf("%d servers: %d seeds, %d txns committed, %d epochs established, %d reconfigs committed, %d roles taken as a reconfig named them",
			servers, len(list), committed, epochs, reconfigs, handovers)
		// The schedules must reconfigure for real, or the checks prove nothing.
		min := len(list) * 2
		if servers == 5 {
			min = len(list) / 2
		}
		if *seed == 0 && (committed < len(list)*3 || reconfigs < min || handovers == 0) {
			t.Fatalf("%d servers: only %d txns and %d reconfigs committed, %d handovers, over %d seeds", servers, committed, reconfigs, handovers, len(list))
		}
	}
}

// TestSimulationCatchesNewQuorumOnlyReconfig: leaders that commit a reconfig, and what
// follows it, with a quorum of the new configuration alone act on sets that are not
// quorums of the old one; the checks must notice within the CI budget.
func TestSimulationCatchesNewQuorumOnlyReconfig(t *testing.T) {
	for sd := uint64(1); sd <= 300; sd++ {
		if _, err := runSeed(t, Options{Seed: sd, Servers: 3, Steps: *steps, Faults: true, Reconfig: true, BrokenReconfig: true}); err != nil {
			t.Logf("caught at seed %d: %v", sd, err)
			return
		}
	}
	t.Fatal("committing reconfigs with a quorum of the new configuration alone went unnoticed in 300 seeds")
}

// TestSimulationCatchesDisjointQuorums: the same wrong rule, with only the intersection
// check: when a reconfig replaces most voters, the new configuration's quorum can miss
// every member of an old configuration's quorum. Without faults, so that the new voters
// are up to be counted.
func TestSimulationCatchesDisjointQuorums(t *testing.T) {
	for sd := uint64(1); sd <= 400; sd++ {
		for _, n := range []int{3, 5} {
			if _, err := runSeed(t, Options{Seed: sd, Servers: n, Steps: *steps, Reconfig: true, BrokenReconfig: true, intersectionOnly: true}); err != nil {
				if !strings.Contains(err.Error(), "two disjoint quorums") && !strings.Contains(err.Error(), "older configuration") {
					t.Fatalf("seed %d, %d servers: caught by another check: %v", sd, n, err)
				}
				t.Logf("caught at seed %d, %d servers: %v", sd, n, err)
				return
			}
		}
	}
	t.Fatal("committing reconfigs with a quorum of the new configuration alone made no disjoint quorums in 400 seeds")
}

// TestQuorumIntersectionCheck: quorums of one configuration must share a member; a chain
// through a reconfig whose commit had quorums of both is fine even where the ends do not
// meet; a quorum of an older configuration after a newer one's is not.
func TestQuorumIntersectionCheck(t *testing.T) {
	c1 := simConfig{version: 0, voters: []int64{1, 2, 3}}
	c2 := simConfig{version: zab.MakeZxid(1, 5), voters: []int64{3, 4, 5}}
	set := func(sids ...int64) map[int64]bool {
		m := map[int64]bool{}
		for _, s := range sids {
			m[s] = true
		}
		return m
	}
	write := quorumRecord{what: "write", key: zab.MakeZxid(1, 2), claims: []simConfig{c1}, acks: set(1, 2)}
	reconfig := quorumRecord{what: "reconfig", key: zab.MakeZxid(1, 5), claims: []simConfig{c1, c2}, acks: set(2, 3, 4)}
	later := quorumRecord{what: "leader", key: zab.MakeZxid(2, 0), claims: []simConfig{c2}, acks: set(4, 5)}
	ok := func(a, b quorumRecord) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = r.(Violation)
			}
		}()
		checkPair(a, b)
		return nil
	}
	for _, p := range [][2]quorumRecord{{write, reconfig}, {reconfig, later}, {write, later}} {
		if err := ok(p[0], p[1]); err != nil {
			t.Fatalf("%v / %v: %v", p[0], p[1], err)
		}
	}
	badReconfig := reconfig
	badReconfig.acks = set(3, 4) // only 3 of the old voters: misses the write's {1, 2}
	if err := ok(write, badReconfig); err == nil || !strings.Contains(err.Error(), "two disjoint quorums") {
		t.Fatalf("disjoint quorums of %v passed: %v", c1.voters, err)
	}
	stale := quorumRecord{what: "stale leader", key: zab.MakeZxid(3, 0), claims: []simConfig{c1}, acks: set(1, 2)}
	if err := ok(later, stale); err == nil || !strings.Contains(err.Error(), "older configuration") {
		t.Fatalf("a leader of the old configuration after the new one's passed: %v", err)
	}
}

// TestConfigVersionCheck: a configuration committed after another must have a higher
// version, and one version has one membership.
func TestConfigVersionCheck(t *testing.T) {
	try := func(acts ...activation) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = r.(Violation)
			}
		}()
		s := New(Options{Seed: 1})
		for _, a := range acts {
			s.recordActivation(a.key, a.cfg)
		}
		return nil
	}
	c := func(v int64, voters ...int64) simConfig { return simConfig{version: v, voters: voters} }
	at := func(key int64, cfg simConfig) activation { return activation{key: key, version: cfg.version, cfg: cfg} }
	if err := try(at(10, c(10, 1, 2, 3)), at(20, c(20, 1, 2)), at(30, c(20, 1, 2))); err != nil {
		t.Fatalf("increasing versions refused: %v", err)
	}
	if err := try(at(10, c(10, 1, 2, 3)), at(20, c(5, 1, 2))); err == nil {
		t.Fatal("a version going back passed")
	}
	if err := try(at(10, c(10, 1, 2, 3)), at(20, c(10, 1, 2))); err == nil {
		t.Fatal("two memberships of one version passed")
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
				t.Fatalf("%d servers, seed %d: %v\nreplay: go test ./internal/testing/sim -run TestSimulatedEnsemblesFastElection -sim.seed %d -sim.trace -v", n, sd, err, sd)
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

// TestSimulatedDamage: with logs damaged at random (one member at a time), a damaged member
// votes with no zxid until a leader refills it, and every check holds: no leader's history
// lacks a committed txn. Then the faults end, and every run must settle with every server
// serving and no member damaged: a damaged member costs no availability once a quorum of
// healthy members exists. The runs must damage logs and refill members, or they prove
// nothing.
func TestSimulatedDamage(t *testing.T) {
	for _, n := range []int{3, 5} {
		var total Stats
		runs := max(len(seedList())/5, 1)
		for _, sd := range seedList()[:runs] {
			s := New(Options{Seed: sd, Servers: n, Steps: *steps, Faults: true, Damage: true})
			if *trace {
				s.opt.Trace = func(l string) { t.Log(l) }
			}
			err := s.Run()
			if err == nil {
				var ok bool
				if ok, err = s.Settle(20 * *steps); err == nil && !ok {
					err = fmt.Errorf("no settling within %d steps after the faults ended", 20**steps)
				}
			}
			if err != nil {
				t.Fatalf("%d servers, seed %d: %v\nreplay: go test ./internal/testing/sim -run TestSimulatedDamage -sim.seed %d -sim.trace -v", n, sd, err, sd)
			}
			st := s.Stats()
			total.Committed += st.Committed
			total.Damaged += st.Damaged
			total.Refilled += st.Refilled
		}
		if *seed == 0 && (total.Damaged < runs || total.Refilled < runs/2 || total.Committed < runs*5) {
			t.Fatalf("%d servers: %d logs damaged, %d members refilled, %d txns committed over %d seeds", n, total.Damaged, total.Refilled, total.Committed, runs)
		}
		t.Logf("%d servers: %d seeds, %d logs damaged, %d members refilled, %d txns committed, all settled", n, runs, total.Damaged, total.Refilled, total.Committed)
	}
}

// TestSimulatedDamageTwo: two members damaged at a time. Nothing committed may be lost
// either way; five servers keep a healthy quorum and must settle, three do not (the one
// healthy member cannot elect alone, and the damaged ones wait to be refilled) and must
// stay safe.
func TestSimulatedDamageTwo(t *testing.T) {
	for _, n := range []int{3, 5} {
		runs, settled, damaged := max(len(seedList())/15, 1), 0, 0
		for _, sd := range seedList()[:runs] {
			s := New(Options{Seed: sd, Servers: n, Steps: *steps, Faults: true, Damage: true, MaxDamaged: 2})
			err := s.Run()
			ok := false
			if err == nil {
				ok, err = s.Settle(20 * *steps)
			}
			if err != nil {
				t.Fatalf("%d servers, seed %d: %v", n, sd, err)
			}
			if n == 5 && !ok {
				t.Fatalf("5 servers, seed %d: no settling with a healthy quorum", sd)
			}
			if ok {
				settled++
			}
			damaged += s.Stats().Damaged
		}
		if *seed == 0 && damaged < runs {
			t.Fatalf("%d servers: only %d logs damaged over %d seeds", n, damaged, runs)
		}
		t.Logf("%d servers, two damaged at a time: %d seeds, %d logs damaged, %d settled", n, runs, damaged, settled)
	}
}

// TestSimulationCatchesDamagedVote: a damaged member that votes with its cut log can elect
// a leader that lacks committed txns; the checks must notice.
func TestSimulationCatchesDamagedVote(t *testing.T) {
	caught := 0
	for sd := uint64(1); sd <= 500 && caught == 0; sd++ {
		if _, err := runSeed(t, Options{Seed: sd, Servers: 3, Steps: *steps, Faults: true, Damage: true, BrokenDamagedVote: true}); err != nil {
			caught++
			t.Logf("caught at seed %d: %v", sd, firstLine(err.Error()))
		}
	}
	if caught == 0 {
		t.Fatal("a damaged member voting with its cut log went unnoticed in 500 seeds")
	}
}
