package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// TestRunAgainstZkd drives every workload through zkbench's command line, briefly, against an
// in-process zkd, and checks that work was done without errors. It asserts nothing about
// speed: each workload runs a count of operations (--ops), not a duration, so that a slow,
// loaded machine finishes the same work later instead of measuring none.
func TestRunAgainstZkd(t *testing.T) {
	// Snapshots every 20-40 txns and mntr allowed: the znodes workload reports them.
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.SnapCount = 40
		c.FourLetterWhitelist = []string{"mntr"}
	}))
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "out.jsonl")
	plotPath := filepath.Join(dir, "out.svg")
	ctx := context.Background()
	common := []string{"--servers", srv.Addr(), "--label", "zkd", "--json", jsonPath, "--progress", "0",
		"--ops", "40", "--warmup", "100ms", "--clients", "4", "--outstanding", "8", "--keys", "200",
		"--data-size", "64", "--large-size", "20000", "--multi-size", "5", "--znodes", "3000",
		// The server runs in this process, so this process is the one sampled in /proc.
		"--server-pid", strconv.Itoa(os.Getpid())}
	all := []string{"create", "set", "get", "exists", "mixed", "createdelete", "multi", "large", "watch", "connect", "ephemeral", "znodes"}
	var stdout, stderr bytes.Buffer
	args := append(append([]string{"run"}, common...), "--plot", plotPath, "-w", strings.Join(all, ","))
	if err := cli(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	results, err := readResultsFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(all) {
		t.Fatalf("%d results, want %d:\n%s", len(results), len(all), stdout.String())
	}
	for i, r := range results {
		if r.Workload != all[i] || r.Label != "zkd" {
			t.Errorf("result %d is %q (%q), want %q", i, r.Workload, r.Label, all[i])
		}
		if r.Ops <= 0 || r.Errors != 0 {
			t.Errorf("%s: ops %d errors %d %v", r.Workload, r.Ops, r.Errors, r.ErrorKinds)
		}
		if r.Latency.P50 <= 0 || r.Latency.Max < r.Latency.P99 {
			t.Errorf("%s: latency %+v", r.Workload, r.Latency)
		}
		if r.ServerRSSEnd <= 0 {
			t.Errorf("%s: no server RSS sampled", r.Workload)
		}
		if r.ClientCPUPerOpUS <= 0 {
			t.Errorf("%s: no client CPU per op", r.Workload)
		}
		if !strings.Contains(stdout.String(), "\n"+r.Workload+" ") {
			t.Errorf("table has no row for %s", r.Workload)
		}
	}
	byName := map[string]*Result{}
	for _, r := range results {
		byName[r.Workload] = r
	}
	if w := byName["watch"]; w.NotificationsPerSec <= 0 {
		t.Errorf("watch: %v notifications/s", w.NotificationsPerSec)
	}
	if !strings.Contains(stdout.String(), "notifications/s delivered") {
		t.Errorf("table has no notifications/s:\n%s", stdout.String())
	}
	znodes := results[len(results)-1]
	// --ops counts the znodes workload's multis too: 40 of 5.
	if znodes.Ops != 40 || znodes.Batch != 5 {
		t.Errorf("znodes: %d multis of %d, want 40 of 5", znodes.Ops, znodes.Batch)
	}
	// The count, not the time: a snapshot of a few thousand znodes can take under the
	// millisecond mntr counts in.
	if znodes.SnapshotCount < 1 {
		t.Errorf("znodes: %d snapshots: want the server's (mntr) after its writes", znodes.SnapshotCount)
	}
	if svg, err := os.ReadFile(plotPath); err != nil || !bytes.Contains(svg, []byte("<polyline")) {
		t.Errorf("plot: %v", err)
	}

	// The create workload cleaned up after itself; the memory workload's znodes are there.
	stdout.Reset()
	if err := cli(ctx, []string{"wait", "--servers", srv.Addr(), "--path", znodePath(199), "--name", "recovery-clean", "--json", jsonPath}, &stdout, io.Discard); err != nil {
		t.Fatalf("wait: %v", err)
	}
	if err := cli(ctx, []string{"wait", "--servers", srv.Addr(), "--op", "write", "--timeout", "1m", "--json", "-"}, io.Discard, io.Discard); err != nil {
		t.Fatalf("wait --op write: %v", err)
	}
	if err := cli(ctx, []string{"wait", "--servers", srv.Addr(), "--path", znodePath(200), "--timeout", "300ms"}, io.Discard, io.Discard); err == nil {
		t.Error("wait for a znode that does not exist succeeded")
	}
	if err := cli(ctx, []string{"wait", "--servers", srv.Addr(), "--path", "/zkbench/createdelete", "--timeout", "300ms"}, io.Discard, io.Discard); err == nil {
		t.Error("createdelete left its parent behind")
	}

	var md bytes.Buffer
	if err := cli(ctx, []string{"compare", "--a", jsonPath, "--b", jsonPath}, &md, io.Discard); err != nil {
		t.Fatalf("compare: %v", err)
	}
	for _, want := range []string{"| throughput, set 64 × 32 (ops/s) | ≥ 3x |", "### ephemeral", "### createdelete", "| recovery-clean |", "| 1.00x |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("comparison lacks %q", want)
		}
	}
}

func TestRunFlags(t *testing.T) {
	for _, args := range [][]string{
		{"run"},
		{"run", "nosuch"},
		{"run", "--clients", "0", "get"},
		{"run", "--read-ratio", "2", "mixed"},
		{"run", "--root", "zk", "get"},
		{"run", "--duration", "0s", "get"},
		{"frobnicate"},
	} {
		if err := cli(context.Background(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	o, err := parseRun([]string{"--servers", "a:1, b:2", "-w", "set,get", "watch"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.cfg.servers, " ") != "a:1 b:2" || strings.Join(o.workloads, " ") != "set get watch" {
		t.Errorf("servers %q workloads %q", o.cfg.servers, o.workloads)
	}
}

func TestFsync(t *testing.T) {
	var out bytes.Buffer
	if err := cli(context.Background(), []string{"fsync", "--dir", t.TempDir(), "--count", "5", "--json", "-"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	rs, err := readResults(&out)
	if err != nil || len(rs) != 1 || rs[0].Ops != 5 || rs[0].Kind != kindFsync {
		t.Fatalf("fsync result %+v, %v", rs, err)
	}
}

func TestRunBest(t *testing.T) {
	ctx := context.Background()
	seq := func(others ...float64) func(int) (*Result, error) {
		return func(attempt int) (*Result, error) {
			return &Result{Ops: int64(attempt), OtherCPUPct: others[attempt]}, nil
		}
	}
	var retried []float64
	again := func(r *Result) { retried = append(retried, r.OtherCPUPct) }

	// Contended twice, then clean: the clean run is kept.
	r, err := runBest(ctx, 5, 10, seq(40, 30, 5, 99), again)
	if err != nil || r.Ops != 2 || r.Attempts != 3 || len(retried) != 2 {
		t.Errorf("got run %d of %d attempts, %v retried; want run 2 of 3", r.Ops, r.Attempts, retried)
	}
	// Out of retries: the least contended is kept.
	retried = nil
	r, _ = runBest(ctx, 2, 10, seq(40, 20, 30, 1), again)
	if r.Ops != 1 || r.Attempts != 3 {
		t.Errorf("got run %d of %d attempts, want run 1 of 3", r.Ops, r.Attempts)
	}
	// No retries allowed.
	r, _ = runBest(ctx, 0, 10, seq(40, 1), again)
	if r.Ops != 0 || r.Attempts != 1 {
		t.Errorf("got run %d of %d attempts, want run 0 of 1", r.Ops, r.Attempts)
	}
	// An error ends it, with the error.
	boom := errors.New("boom")
	_, err = runBest(ctx, 3, 10, func(int) (*Result, error) { return &Result{OtherCPUPct: 50}, boom }, again)
	if !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
}

// TestScaleWorkloads runs the children and bigread workloads small against an in-process
// zkd: the ops counted, the fan-out and value size the results report (setup checks one
// reply of each whole), and the setup's refusals.
func TestScaleWorkloads(t *testing.T) {
	srv := zktest.Start(t)
	jsonPath := filepath.Join(t.TempDir(), "out.jsonl")
	run := runner(t, srv.Addr(), jsonPath)
	ctx := context.Background()
	if err := run("--clients", "2", "--outstanding", "2", "--ops", "20", "--children", "2000", "--multi-size", "50", "children"); err != nil {
		t.Fatal(err)
	}
	if err := run("--clients", "50", "--outstanding", "1", "--ops", "100", "--large-size", "65536", "bigread"); err != nil {
		t.Fatal(err)
	}
	results, err := readResultsFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 {
		t.Fatalf("%d results, want 2", len(results))
	}
	ch, br := results[0], results[1]
	if ch.Workload != "children" || ch.Ops != 20 || ch.Errors != 0 || ch.Keys != 2000 || ch.DataSize != 0 ||
		!strings.Contains(ch.Note, fmt.Sprintf("replies of %d bytes", childrenReplySize(2000))) || ch.ServerCPUPerOpUS <= 0 {
		t.Errorf("children: %+v", ch)
	}
	if br.Workload != "bigread" || br.Ops != 100 || br.Errors != 0 || br.DataSize != 65536 || br.Clients != 50 ||
		!strings.Contains(br.Note, "MB/s of data read") || bigreadMBps(br) <= 0 {
		t.Errorf("bigread: %+v", br)
	}
	// --cleanup (the default) removed the children and their parent.
	if err := cli(ctx, []string{"wait", "--servers", srv.Addr(), "--path", "/zkbench/children", "--timeout", "300ms"}, io.Discard, io.Discard); err == nil {
		t.Error("children left its parent behind")
	}

	// Kept children are reused by a run that wants as many, and refused by one that wants
	// another number.
	if err := run("--clients", "1", "--ops", "5", "--children", "300", "--cleanup=false", "children"); err != nil {
		t.Fatal(err)
	}
	if err := run("--clients", "1", "--ops", "5", "--children", "300", "--cleanup=false", "children"); err != nil {
		t.Errorf("children again, same fan-out: %v", err)
	}
	if err := run("--clients", "1", "--ops", "5", "--children", "200", "children"); err == nil || !strings.Contains(err.Error(), "has 300 children") {
		t.Errorf("children with another fan-out: %v, want a refusal", err)
	}

	// The largest value the server accepts under the default root (defaultBigreadSize's
	// comment), and one byte more under a root of the same length.
	if err := run("--clients", "1", "--ops", "2", "--large-size", "1048503", "bigread"); err != nil {
		t.Errorf("bigread of 1048503 bytes: %v", err)
	}
	if err := run("--clients", "1", "--ops", "2", "--large-size", "1048504", "--root", "/zkbenck", "bigread"); err == nil {
		t.Error("bigread of 1048504 bytes: the server took a frame above jute.maxbuffer")
	}
}

func TestScaleFlags(t *testing.T) {
	o, err := parseRun([]string{"bigread"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.scale.bigreadSize != defaultBigreadSize || o.cfg.largeSize != 100*1024 || o.scale.children != defaultChildren {
		t.Errorf("defaults: bigread %d, large %d, children %d", o.scale.bigreadSize, o.cfg.largeSize, o.scale.children)
	}
	if o, err = parseRun([]string{"--large-size", "5000", "--children", "7", "bigread"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if o.scale.bigreadSize != 5000 || o.scale.children != 7 {
		t.Errorf("given: bigread %d, children %d", o.scale.bigreadSize, o.scale.children)
	}
	for _, n := range []string{"0", "100000001"} {
		if _, err := parseRun([]string{"--children", n, "children"}, io.Discard); err == nil {
			t.Errorf("--children %s: no error", n)
		}
	}
}

// TestGoZKDriver: --driver go-zookeeper runs the key-space workloads through
// github.com/go-zookeeper/zk: the ops counted (--ops), no errors, the writes visible to
// zkbench's own client afterwards, and the workloads it cannot run refused.
func TestGoZKDriver(t *testing.T) {
	srv := zktest.Start(t)
	jsonPath := filepath.Join(t.TempDir(), "out.jsonl")
	run := runner(t, srv.Addr(), jsonPath, "--driver", "go-zookeeper", "--clients", "3", "--outstanding", "4",
		"--keys", "50", "--data-size", "100", "--root", "/gozk")
	if err := run("--ops", "300", "set", "get", "mixed"); err != nil {
		t.Fatal(err)
	}
	results, err := readResultsFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 {
		t.Fatalf("%d results, want 3", len(results))
	}
	for _, r := range results {
		if r.Ops != 300 || r.Errors != 0 || r.OpsPerSec <= 0 || r.Latency.P50 <= 0 || !strings.Contains(r.Note, "go-zookeeper") {
			t.Errorf("%s: %d ops, %d errors (%v), %v ops/s, p50 %v, note %q", r.Workload, r.Ops, r.Errors, r.ErrorKinds, r.OpsPerSec, r.Latency.P50, r.Note)
		}
	}
	// The sets went to the server: the keys' versions moved.
	c, _, err := zk.Connect([]string{srv.Addr()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var versions int32
	for i := range 50 {
		_, st, err := c.Get(keyPath("/gozk/keys", i))
		if err != nil {
			t.Fatal(err)
		}
		versions += st.Version
	}
	if versions < 300 {
		t.Errorf("the keys' versions add up to %d after at least 300 sets", versions)
	}
	if err := run("--ops", "10", "multi"); err == nil || !strings.Contains(err.Error(), "set, get, exists and mixed only") {
		t.Errorf("multi through go-zookeeper: %v, want a refusal", err)
	}
}

// runner returns a function running `zkbench run` against addr with the given flags and
// then its arguments, results appended to jsonPath, output logged when it fails.
func runner(t *testing.T, addr, jsonPath string, flags ...string) func(args ...string) error {
	return func(args ...string) error {
		var out bytes.Buffer
		all := append([]string{"run", "--servers", addr, "--json", jsonPath, "--progress", "0", "--warmup", "100ms",
			"--server-pid", strconv.Itoa(os.Getpid())}, flags...)
		err := cli(context.Background(), append(all, args...), &out, &out)
		if err != nil {
			t.Logf("%q: %v\n%s", args, err, out.String())
		}
		return err
	}
}
