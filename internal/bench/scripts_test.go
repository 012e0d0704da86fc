package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/testing/needs"
)

// No benchmark runs in CI, but the scripts that drive zkbench must at least parse, show
// their usage, and fill every blank of RESULTS.md's method template; this package's build
// is zkbench's.
func TestBenchScripts(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := filepath.Join("..", "..", "bench")
	scripts, err := filepath.Glob(filepath.Join(dir, "*.sh"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts in %s: %v", dir, err)
	}
	for _, s := range scripts {
		if out, err := exec.Command(bash, "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
	}
	for _, s := range []string{"compare.sh", "curves.sh", "crosscheck.sh"} {
		out, err := exec.Command(bash, filepath.Join(dir, s), "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--zk-tuning") {
			t.Errorf("%s --help: %v\n%s", s, err, out)
		}
		if out, err := exec.Command(bash, filepath.Join(dir, s), "--no-such-flag").CombinedOutput(); err == nil {
			t.Errorf("%s accepted an unknown flag:\n%s", s, out)
		}
	}

	// compare.sh --render-from wants a work directory a run kept: refused before it builds.
	if out, err := exec.Command(bash, filepath.Join(dir, "compare.sh"), "--render-from", t.TempDir()).CombinedOutput(); err == nil || !strings.Contains(string(out), "no render.env") {
		t.Errorf("compare.sh --render-from an empty directory: %v, want the error \"no render.env\":\n%s", err, out)
	}

	// profile.sh: its usage, and flags checked before it builds or starts anything.
	profile := filepath.Join(dir, "profile.sh")
	if out, err := exec.Command(bash, profile, "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "--watchers") {
		t.Errorf("profile.sh --help: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "unknown argument"},
		{[]string{"--watchers", "0"}, "want a positive number"},
		{[]string{"--watchers", "x"}, "want a positive number"},
	} {
		cmd := exec.Command(bash, append([]string{profile}, c.args...)...)
		// Should the check go, the script's go build fails at once instead of profiling.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=no-such-mode")
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("profile.sh %q: %v, want the error %q:\n%s", c.args, err, c.want, out)
		}
	}

	// The template's blanks are exactly the values compare.sh passes.
	tmpl, err := os.ReadFile(filepath.Join(dir, "RESULTS.method.md"))
	if err != nil {
		t.Fatal(err)
	}
	compare, err := os.ReadFile(filepath.Join(dir, "compare.sh"))
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`(?s)render_template "\$repo/bench/RESULTS.method.md"(.*?)\n  echo`).FindSubmatch(compare)
	if call == nil {
		t.Fatal("compare.sh does not render bench/RESULTS.method.md")
	}
	passed := map[string]bool{}
	var args []string
	for _, m := range regexp.MustCompile(`"([a-z_]+)=`).FindAllSubmatch(call[1], -1) {
		passed[string(m[1])] = true
		args = append(args, string(m[1])+"=<"+string(m[1])+">")
	}
	blanks := map[string]bool{}
	for _, m := range regexp.MustCompile(`\{\{([A-Za-z_]+)\}\}`).FindAllSubmatch(tmpl, -1) {
		blanks[string(m[1])] = true
		if !passed[string(m[1])] {
			t.Errorf("RESULTS.method.md has {{%s}}, which compare.sh does not pass", m[1])
		}
	}
	for k := range passed {
		if !blanks[k] {
			t.Errorf("compare.sh passes %s, which RESULTS.method.md does not use", k)
		}
	}

	// render_template itself, as compare.sh sources it (values with & and / stay literal).
	script := `work=$(mktemp -d "$WORKDIR/w.XXXXXX"); keep=0; . "$1"; shift; render_template "$@"`
	cmd := exec.Command(bash, append([]string{"-c", script, "bash", filepath.Join(dir, "lib-bench.sh"), filepath.Join(dir, "RESULTS.method.md"), "cpu=A & B/C"}, args...)...)
	cmd.Env = append(os.Environ(), "WORKDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("render_template: %v\n%s", err, out)
	}
	for _, want := range []string{"CPU: <nproc> × A & B/C", "**zkbench's own cost.**", "`--zk-tuning g1`"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("rendered method text lacks %q", want)
		}
	}
	if strings.Contains(string(out), "{{") {
		t.Errorf("rendered method text has a blank left:\n%s", out)
	}
	cmd = exec.Command(bash, "-c", script, "bash", filepath.Join(dir, "lib-bench.sh"), filepath.Join(dir, "RESULTS.method.md"), "cpu=x")
	cmd.Env = append(os.Environ(), "WORKDIR="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("render_template with blanks left did not fail:\n%s", out)
	}
}

// TestTreesizeReport: bench/treesize.py turns treesize.sh's JSON lines (testdata: a
// --smoke run) into issue 28's goals, each judged from both servers' figures, with the
// notes file's text in the why column, and a table per tree size.
func TestTreesizeReport(t *testing.T) {
	python := needs.Command(t, "python3", "python3")
	notes := filepath.Join(t.TempDir(), "notes")
	if err := os.WriteFile(notes, []byte("# a comment\nset-30k: the snapshots of the bigger tree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, filepath.Join("..", "..", "bench", "treesize.py"), filepath.Join("testdata", "treesize.jsonl"), notes).CombinedOutput()
	if err != nil {
		t.Fatalf("treesize.py: %v\n%s", err, out)
	}
	for _, want := range []string{
		"| set throughput at 10k znodes (zkbench, ops/s) | ≥ 2x | 66548 | 24153 | 2.76x | yes |  |",
		"| set throughput at 30k znodes (zkbench, ops/s) | ≥ 2x | 33940 | 21635 | 1.57x | no | the snapshots of the bigger tree |",
		"| get of 1 MiB values (ops/s) | ≥ 1.5x | 2680 | 1791 | 1.50x | no |",
		"| restart after kill -9 at 30k znodes (s) | ≤ 0.1x | 0.235 | 1.26 | 0.19x | no |",
		"### 30k znodes",
		"| set (zkbench): p99.9 / max during snapshots (ms) | 898 / 898 | — |  |",
		"| RSS per znode (bytes) | 3902 | 19053 | 0.20x |",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the report has no line with %q:\n%s", want, out)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script := filepath.Join("..", "..", "bench", "treesize.sh")
	if out, err := exec.Command(bash, script, "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "--snapshot-dir") {
		t.Errorf("treesize.sh --help: %v\n%s", err, out)
	}
	if out, err := exec.Command(bash, script, "--no-such-flag").CombinedOutput(); err == nil || !strings.Contains(string(out), "unknown argument") {
		t.Errorf("treesize.sh --no-such-flag: %v, want the error \"unknown argument\":\n%s", err, out)
	}
}
