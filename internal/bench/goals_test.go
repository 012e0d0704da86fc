package bench

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func findGoal(t *testing.T, key string) goal {
	t.Helper()
	for _, g := range goals {
		if g.key == key {
			return g
		}
	}
	t.Fatalf("no goal %q", key)
	return goal{}
}

func TestGoalVerdict(t *testing.T) {
	throughput := findGoal(t, "throughput-set") // ≥ 3x
	cpu := findGoal(t, "cpu-get")               // ≤ 0.2x
	failover := findGoal(t, "failover")         // ≤ 0.25x and ≤ 0.105 s
	for _, c := range []struct {
		name   string
		g      goal
		va, vb float64
		want   string
	}{
		{"at least, met", throughput, 300, 100, goalMet},
		{"at least, met exactly", throughput, 300, 100, goalMet},
		{"at least, unmet", throughput, 299, 100, goalUnmet},
		{"at most, met", cpu, 2, 10, goalMet},
		{"at most, unmet", cpu, 2.1, 10, goalUnmet},
		{"missing a", cpu, 0, 10, goalNotMeasured},
		{"missing b", cpu, 2, 0, goalNotMeasured},
		{"both missing", cpu, 0, 0, goalNotMeasured},
		{"ratio and bound met", failover, 0.1, 1, goalMet},
		{"ratio met, bound not", failover, 0.2, 1, goalUnmet},
		{"bound met, ratio not", failover, 0.1, 0.2, goalUnmet},
		{"bound broken, no reference", failover, 0.2, 0, goalUnmet},
		{"bound met, no reference", failover, 0.05, 0, goalNotMeasured},
	} {
		if got := c.g.verdict(c.va, c.vb); got != c.want {
			t.Errorf("%s: verdict(%v, %v) = %q, want %q", c.name, c.va, c.vb, got, c.want)
		}
	}
	if got := failover.targetCell(); got != "≤ 0.25x and ≤ 0.105 s" {
		t.Errorf("failover target %q", got)
	}
}

// goalsSection returns the rows of the goals table of a comparison.
func goalsSection(t *testing.T, md string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(md, "### Goals\n\n")
	if !ok {
		t.Fatalf("no goals section:\n%s", md)
	}
	table, _, _ := strings.Cut(rest, "\n\n")
	return strings.Split(table, "\n")
}

func TestGoalsTable(t *testing.T) {
	zkd := []*Result{
		sampleResult("zkd", "set", 90000, 1000),
		{Workload: "watch-1000", Of: "watch", NotificationsPerSec: 30000},
		{Workload: "idle", BytesPerSession: 2000},
		{Workload: "storm", OpsPerSec: 5000},
		{Kind: kindWait, Workload: "failover", ElapsedSeconds: 0.2},
	}
	zk := []*Result{
		sampleResult("zookeeper", "set", 20000, 4000),
		{Workload: "watch-1000", Of: "watch", NotificationsPerSec: 20000},
		{Workload: "idle", BytesPerSession: 10000},
		{Kind: kindWait, Workload: "failover", ElapsedSeconds: 2},
	}
	notes := map[string]string{"failover": "[#99](https://example.org/99)", "storm": "ZooKeeper was not run"}
	var b bytes.Buffer
	writeComparison(&b, newSide("zkd", zkd), newSide("ZooKeeper", zk), true, notes)
	rows := goalsSection(t, b.String())
	if len(rows) != len(goals)+2 {
		t.Fatalf("%d rows in the goals table, want a header, a rule and %d goals:\n%s", len(rows), len(goals), strings.Join(rows, "\n"))
	}
	if rows[0] != "| goal | target (zkd / ZooKeeper) | zkd | ZooKeeper | ratio | met | why |" {
		t.Errorf("header %q", rows[0])
	}
	for i, g := range goals {
		if !strings.HasPrefix(rows[i+2], "| "+g.what+" |") {
			t.Errorf("row %d is %q, want goal %q", i, rows[i+2], g.what)
		}
		if strings.Count(rows[i+2], "|") != 8 {
			t.Errorf("row %q has not 7 cells", rows[i+2])
		}
	}
	for _, want := range []string{
		"| throughput, set 64 × 32 (ops/s) | ≥ 3x | 90000 | 20000 | 4.50x | yes |  |",
		"| watch fan-out, 1000 watchers (notifications/s) | ≥ 3x | 30000 | 20000 | 1.50x | no |  |",
		"| memory per idle session, ~20,000 sessions (bytes of RSS) | ≤ 0.25x | 2000 | 10000 | 0.20x | yes |  |",
		"| connect storm, 2000 sessions opened and closed (sessions/s) | ≥ 3x | 5000 | — | — | not measured | ZooKeeper was not run |",
		"| leader kill -9 until a write succeeds, 3 servers, empty (s) | ≤ 0.25x and ≤ 0.105 s | 0.200 | 2.00 | 0.10x | no | [#99](https://example.org/99) |",
		"| 3-server ensemble get throughput (ops/s) | ≥ 3x | — | — | — | not measured |  |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("goals lack %q", want)
		}
	}
	// The per-workload tables show the new figures, and describe the renamed watch run.
	for _, want := range []string{
		"### watch-1000\n\n1 writer, ",
		"| watch notifications delivered (/s) | 30000 | 20000 | 1.50x |",
		"| server RSS per session (bytes) | 2000 | 10000 | 0.20x |",
		"### storm\n\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("comparison lacks %q", want)
		}
	}
}

func TestReadNotes(t *testing.T) {
	notes, err := readNotes(strings.NewReader("# why goals are not met\n\ncpu-get: see [profile](profile.md)\nstorm:a | b\nstorm: and more\n"))
	if err != nil {
		t.Fatal(err)
	}
	if notes["cpu-get"] != "see [profile](profile.md)" || notes["storm"] != `a \| b and more` || len(notes) != 2 {
		t.Errorf("notes %q", notes)
	}
	for _, bad := range []string{"no-such-goal: text\n", "cpu-get\n", "cpu-get:   \n"} {
		if _, err := readNotes(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func TestCompareNotes(t *testing.T) {
	dir := t.TempDir()
	a, b, notes := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "notes")
	var buf bytes.Buffer
	writeJSON(&buf, sampleResult("zkd", "get", 1000, 100))
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(notes, []byte("throughput-get: [slow](x.md)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := cli(context.Background(), []string{"compare", "--a", a, "--b", b, "--notes", notes}, &md, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| throughput, get 64 × 32 (ops/s) | ≥ 3x | 1000 | 1000 | 1.00x | no | [slow](x.md) |") {
		t.Errorf("no note in:\n%s", md.String())
	}
	if err := os.WriteFile(notes, []byte("throughput: misspelt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cli(context.Background(), []string{"compare", "--a", a, "--b", b, "--notes", notes}, io.Discard, io.Discard); err == nil {
		t.Error("a note for no goal was accepted")
	}
	// Against a server the goals are not about (etcd): the workload tables without them.
	md.Reset()
	if err := cli(context.Background(), []string{"compare", "--a", a, "--b", b, "--goals=false"}, &md, io.Discard); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "### Goals") || !strings.Contains(md.String(), "### get") {
		t.Errorf("--goals=false: want the get table and no goals table, got:\n%s", md.String())
	}
}

func TestRunAsFlag(t *testing.T) {
	o, err := parseRun([]string{"--as", "get-1", "--clients", "1", "--outstanding", "1", "get"}, io.Discard)
	if err != nil || o.as != "get-1" {
		t.Fatalf("parseRun: %+v, %v", o, err)
	}
	for _, args := range [][]string{
		{"--as", "x", "get", "set"},
		{"--as", "x", "-w", "get,set"},
		{"--as", " x", "get"},
		{"--sessions", "-1", "idle"},
	} {
		if _, err := parseRun(args, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
