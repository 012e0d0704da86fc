package nemesis

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/refzk"
)

var (
	flagDuration     = flag.Duration("nemesis.duration", 45*time.Second, "how long each run loads the ensemble while injecting faults")
	flagSeed         = flag.Int64("nemesis.seed", 0, "seed of the first run (0: random, printed); run i uses seed+i")
	flagRuns         = flag.Int("nemesis.runs", 1, "consecutive runs, each on a fresh ensemble")
	flagFaults       = flag.String("nemesis.faults", "kill,pause,partition,torn-log,damage,disk-error", "fault kinds to inject, comma-separated, or none")
	flagCheck        = flag.Duration("nemesis.check-timeout", time.Minute, "how long porcupine may take per key (a timeout is reported, not a violation)")
	flagKeys         = flag.Int("nemesis.keys", 0, "registers the clients share (0: the default, 32; fewer keys put more concurrent operations on each, and porcupine may time out)")
	flagDiskDuration = flag.Duration("nemesis.disk-duration", 30*time.Second, "TestDiskFaultNemesis: load per run")
	flagDiskRuns     = flag.Int("nemesis.disk-runs", 1, "TestDiskFaultNemesis: runs, seeds 4242, 4243, ... (the long profile: -nemesis.disk-runs 20 -nemesis.disk-duration 60s)")
	flagTarget       = flag.String("nemesis.target", TargetZkd, "zkd, or zookeeper for Apache ZooKeeper 3.8 (for comparison: violations are printed, not failures)")
)

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// TestMain removes the zkd binary built for these tests.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func zkdBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "zkd-nemesis-bin")
		if buildErr == nil {
			binPath, buildErr = BuildZkd(binDir, raceEnabled)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// TestNemesis is the fault-injection suite: by default one run of the short CI profile
// against zkd (every fault kind, 45 s of load), failing on any violation.
func TestNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	target := *flagTarget
	var bin string
	switch target {
	case TargetZkd:
		bin = zkdBinary(t)
	case TargetZooKeeper:
		refzk.Require(t)
	default:
		t.Fatalf("-nemesis.target %q: want %s or %s", target, TargetZkd, TargetZooKeeper)
	}
	kinds, err := ParseKinds(*flagFaults)
	if err != nil {
		t.Fatal(err)
	}
	seed := *flagSeed
	if seed == 0 {
		seed = time.Now().UnixNano() % 1_000_000_000
	}
	var summaries []string
	for run := range *flagRuns {
		s := seed + int64(run)
		t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) {
			t.Logf("replay: go test ./internal/testing/nemesis -run 'TestNemesis$' -v -nemesis.target %s -nemesis.seed %d -nemesis.duration %v -nemesis.faults %s", target, s, *flagDuration, *flagFaults)
			res, err := Run(t, Config{
				Target: target, ZkdBinary: bin, Seed: s, Duration: *flagDuration, Keys: *flagKeys, Kinds: kinds, CheckTimeout: *flagCheck,
				DumpDir: filepath.Join(os.TempDir(), fmt.Sprintf("zkd-nemesis-%s-seed%d", target, s)),
				Logf:    t.Logf,
			})
			if res != nil {
				summaries = append(summaries, fmt.Sprintf("run %d/%d %s", run+1, *flagRuns, res.Summary()))
				t.Logf("SUMMARY %s", res.Summary())
				for _, f := range res.Final {
					t.Logf("final %s = %q v%d", f.Key, f.Value, f.Version)
				}
			}
			if err != nil {
				t.Fatalf("seed %d: %v", s, err)
			}
			report := t.Errorf
			if target == TargetZooKeeper {
				report = t.Logf
			}
			for i, v := range res.Violations {
				if i == 20 {
					report("... %d violations in all", len(res.Violations))
					break
				}
				report("seed %d: %v", s, v)
			}
		})
	}
	for _, s := range summaries {
		t.Log(s)
	}
}

// TestDiskFaultNemesis is the disk-fault profile: damage anywhere in a member's data, disk
// errors at every storage failpoint and torn log tails, from fixed seeds (4242 on), one
// damaged member at a time. CI runs one 30 s run; -nemesis.disk-runs and
// -nemesis.disk-duration make the long profile. It fails on any violation (a lost write
// among them) and on a run that could not heal (the service stayed unavailable), and
// prints the counts: faults by class, acknowledged writes, lost, runs available.
func TestDiskFaultNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := zkdBinary(t)
	kinds := []Kind{Damaged, DiskError, TornLog}
	var total Result
	var available, lost int
	for run := range *flagDiskRuns {
		s := int64(4242 + run)
		res, err := Run(t, Config{Target: TargetZkd, ZkdBinary: bin, Seed: s, Duration: *flagDiskDuration, Kinds: kinds,
			CheckTimeout: *flagCheck, DumpDir: filepath.Join(os.TempDir(), fmt.Sprintf("zkd-disk-nemesis-seed%d", s)), Logf: t.Logf})
		if res != nil {
			t.Logf("SUMMARY %s", res.Summary())
			for k := range numKinds {
				total.Injected[k] += res.Injected[k]
			}
			for c := range numDamageClasses {
				total.Damaged[c] += res.Damaged[c]
			}
			total.DiskErrorsFired += res.DiskErrorsFired
			total.Stats.Acked += res.Stats.Acked
			for _, v := range res.Violations {
				if v.Check == "lost-write" {
					lost++
				}
				t.Errorf("seed %d: %v", s, v)
			}
		}
		if err != nil {
			t.Errorf("seed %d: the ensemble did not heal: %v", s, err)
			continue
		}
		available++
	}
	var dmg []string
	for c := range numDamageClasses {
		dmg = append(dmg, fmt.Sprintf("%s=%d", c, total.Damaged[c]))
	}
	t.Logf("disk-fault nemesis: %d runs of %v; faults: damage=%d (%s), disk-error=%d (%d fired), torn-log=%d; %d writes acknowledged, %d lost; %d of %d runs healed every fault",
		*flagDiskRuns, *flagDiskDuration, total.Injected[Damaged], strings.Join(dmg, " "), total.Injected[DiskError], total.DiskErrorsFired,
		total.Injected[TornLog], total.Stats.Acked, lost, available, *flagDiskRuns)
	if total.Injected[Damaged]+total.Injected[DiskError] == 0 || total.Stats.Acked == 0 {
		t.Fatal("the profile injected no disk fault or acknowledged no write: it proves nothing")
	}
}
