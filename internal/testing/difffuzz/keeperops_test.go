package difffuzz

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

var flagKeeperPrograms = flag.Int("difffuzz.keeper-programs", 20, "programs with the keeper-ops extension's ops TestKeeperOpsZkdOnly runs")

// startKeeperZkd starts a zkd with startPair's settings and the keeper-ops extension.
func startKeeperZkd(t *testing.T) Target {
	z := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.TickTime = 2000
		c.ExtendedTypes = true
		c.SuperDigest = SuperDigest
		c.ContainerCheckInterval = time.Hour
		c.EnforceQuota = true
		c.Extensions = ext.Of(ext.KeeperOps, ext.PagedList, ext.WatchResume, ext.LargeReplies)
	}))
	return Target{Name: "zkd", Addr: z.Addr(), SuperAuth: "super:" + SuperPassword}
}

// TestKeeperOpsZkdOnly plays programs mixing the keeper-ops extension's ops (which
// ZooKeeper does not have) on zkd alone: each transcript must keep the ops' invariants
// (KeeperInvariants), and two fresh servers must answer a program identically (the ops
// decide nothing from map order or timing).
//
//	go test ./internal/testing/difffuzz -run KeeperOpsZkdOnly -difffuzz.keeper-programs 500 -difffuzz.seed 1000 -v
func TestKeeperOpsZkdOnly(t *testing.T) {
	a, b := startKeeperZkd(t), startKeeperZkd(t)
	ctx := context.Background()
	ops, resumes := 0, 0
	for i := 0; i < *flagKeeperPrograms; i++ {
		seed := *flagSeed + int64(i)
		p := Generate(seed, GenOptions{Ops: *flagOps, KeeperOps: true})
		for _, st := range p.Steps {
			if r := jute.LookupOp(st.Op); st.Kind == Request && r != nil && r.Ext != "" {
				ops++
			}
		}
		ta, err := Run(ctx, a, p)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		tb, err := Run(ctx, b, p)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for i := range p.Steps {
			if req, ok := watchSince(p, i); ok && req.SinceZxid == ResumeSince && replied(ta, i, jute.OK) {
				resumes++
			}
		}
		if bad := KeeperInvariants(p, ta); len(bad) > 0 {
			file := writeProgram(t, p, fmt.Sprintf("keeperops-seed%d.zkf", seed))
			t.Errorf("seed %d breaks the keeper-ops invariants (program: %s):\n%s", seed, file, strings.Join(bad, "\n"))
		}
		if v := Compare(p, ta, tb); v.Divergence != nil {
			t.Errorf("seed %d: two zkd servers answer differently:\n%s", seed, v.Divergence.Report(p))
		}
	}
	if *flagKeeperPrograms > 0 && ops == 0 {
		t.Fatal("the programs hold no keeper-ops op")
	}
	t.Logf("%d programs, %d keeper-ops requests, %d watches resumed after a disconnect", *flagKeeperPrograms, ops, resumes)
}

// TestKeeperInvariantsCatch: the invariants fail a transcript where a removal that
// succeeded left its node, or a refused one changed the subtree.
func TestKeeperInvariantsCatch(t *testing.T) {
	p := &Program{Sessions: []string{"a"}}
	add := func(op jute.OpCode, rec jute.Record) {
		p.Steps = append(p.Steps, Step{Sess: "a", Kind: Request, Op: op, Body: jute.Marshal(rec)})
	}
	add(jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: "/fz/a"})
	add(jute.OpRemoveRecursive, &jute.RemoveRecursiveRequest{Path: "/fz/a", Limit: 9})
	add(jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: "/fz/a"})
	add(jute.OpExists, &jute.PathWatchRequest{Path: "/fz/a"})
	reply := func(err jute.Code, line string) Outcome {
		return Outcome{Replied: true, Err: err, Lines: []string{"a: reply " + line}}
	}
	ok := &Transcript{Outcomes: []Outcome{reply(0, "err=0 zxid=z+1 n=3"), reply(0, "err=0 zxid=z+2"), reply(jute.ErrNoNode, "err=-101 zxid=z+2"), reply(jute.ErrNoNode, "err=-101 zxid=z+2")}}
	if bad := KeeperInvariants(p, ok); len(bad) != 0 {
		t.Fatalf("a good transcript: %v", bad)
	}
	left := &Transcript{Outcomes: []Outcome{reply(0, "err=0 zxid=z+1 n=3"), reply(0, "err=0 zxid=z+2"), reply(0, "err=0 zxid=z+2 n=3"), reply(0, "err=0 zxid=z+2")}}
	if bad := KeeperInvariants(p, left); len(bad) != 1 {
		t.Errorf("a removal that left its node: %v", bad)
	}
	partial := &Transcript{Outcomes: []Outcome{reply(0, "err=0 zxid=z+1 n=3"), reply(jute.ErrNotEmpty, "err=-111 zxid=z+2"), reply(0, "err=0 zxid=z+2 n=2"), reply(0, "err=0 zxid=z+2")}}
	if bad := KeeperInvariants(p, partial); len(bad) != 1 {
		t.Errorf("a refused removal that deleted: %v", bad)
	}
}

// TestListPageInvariantCatches: a listPage at the zxid of the getChildren before it that
// lists other children breaks the invariant; one after a write (another zxid) does not.
func TestListPageInvariantCatches(t *testing.T) {
	p := &Program{Sessions: []string{"a"}}
	add := func(op jute.OpCode, rec jute.Record) {
		p.Steps = append(p.Steps, Step{Sess: "a", Kind: Request, Op: op, Body: jute.Marshal(rec)})
	}
	add(jute.OpGetChildren, &jute.PathWatchRequest{Path: "/fz"})
	add(jute.OpListPage, &jute.ListPageRequest{Path: "/fz", Limit: 10000})
	reply := func(line string) Outcome { return Outcome{Replied: true, Lines: []string{"a: reply " + line}} }
	good := &Transcript{Outcomes: []Outcome{reply(`err=0 zxid=z+3 list=["a" "b"]`), reply(`err=0 zxid=z+3 names=["a" "b"] stats=0 total=2 truncated=false`)}}
	if bad := KeeperInvariants(p, good); len(bad) != 0 {
		t.Fatalf("a good transcript: %v", bad)
	}
	short := &Transcript{Outcomes: []Outcome{reply(`err=0 zxid=z+3 list=["a" "b"]`), reply(`err=0 zxid=z+3 names=["a"] stats=0 total=1 truncated=false`)}}
	if bad := KeeperInvariants(p, short); len(bad) != 1 {
		t.Errorf("a listing short of getChildren at the same zxid: %v", bad)
	}
	moved := &Transcript{Outcomes: []Outcome{reply(`err=0 zxid=z+3 list=["a" "b"]`), reply(`err=0 zxid=z+4 names=["a"] stats=0 total=1 truncated=false`)}}
	if bad := KeeperInvariants(p, moved); len(bad) != 0 {
		t.Errorf("a listing after a write: %v", bad)
	}
}
