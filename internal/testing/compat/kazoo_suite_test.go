package compat

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/needs"
)

// kazooSuiteTests are the tests of kazoo's own suite run against zkd: the reconfig tests, and
// the read-only test, which the plugin marks as an expected failure (testdata/kazoo_zkd.py).
var kazooSuiteTests = []string{
	"test_client.py::TestReconfig",
	"test_connection.py::TestReadOnlyMode",
}

// junitSuites is what pytest --junitxml writes (the parts read here).
type junitSuites struct {
	Suites []struct {
		Cases []struct {
			Class   string `xml:"classname,attr"`
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Skipped *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestKazooSuite runs kazoo's own, unmodified tests (Debian python3-kazoo's kazoo/tests)
// against an ensemble of zkd processes built from this tree. kazoo's harness writes each
// server's zoo.cfg and starts the servers itself; testdata/kazoo_zkd.py, a pytest plugin,
// makes it start zkd where it would start ZooKeeper's JVM.
func TestKazooSuite(t *testing.T) {
	python := needs.Kazoo(t)
	for _, mod := range []struct{ name, pkg string }{{"pytest", "python3-pytest"}, {"mock", "python3-mock"}} {
		if out, err := exec.Command(python, "-c", "import "+mod.name).CombinedOutput(); err != nil {
			needs.Missing(t, "python module "+mod.name, mod.pkg, strings.TrimSpace(string(out)))
		}
	}
	out, err := exec.Command(python, "-c", "import kazoo.tests, os; print(os.path.dirname(kazoo.tests.__file__))").Output()
	if err != nil {
		needs.Missing(t, "kazoo's test suite (kazoo.tests)", "python3-kazoo", err.Error())
	}
	testsDir := strings.TrimSpace(string(out))
	// The rootdir makes pytest's node ids kazoo/tests/..., which the plugin matches.
	rootDir := filepath.Dir(filepath.Dir(testsDir))
	plugin, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}

	bin := buildZkd(t)
	// kazoo's ZookeeperCluster: server i (from 0) listens for clients on offset+10i, for
	// elections on +1, for the leader on +2 and for the AdminServer on +3.
	var offsets []int
	for i := range 3 {
		offsets = append(offsets, 10*i, 10*i+1, 10*i+2, 10*i+3)
	}
	base := reservePortLayout(t, offsets...)

	work := t.TempDir()
	tmp, logs := filepath.Join(work, "tmp"), filepath.Join(work, "logs")
	for _, d := range []string{tmp, logs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pids, junit, ini := filepath.Join(work, "pids"), filepath.Join(work, "junit.xml"), filepath.Join(work, "pytest.ini")
	writeFile(t, ini, "[pytest]\n")
	// Whatever happens to pytest, stop the servers it started (each also has
	// PR_SET_PDEATHSIG): by PID, and only if the PID is still a process of our binary.
	t.Cleanup(func() { killListed(t, pids, bin) })

	args := []string{"-m", "pytest", "-p", "kazoo_zkd", "-p", "no:cacheprovider", "-c", ini,
		"--rootdir", rootDir, "-rA", "--junitxml", junit}
	for _, name := range kazooSuiteTests {
		args = append(args, filepath.Join(testsDir, name))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(),
		"PYTHONPATH="+plugin,
		"PYTHONDONTWRITEBYTECODE=1",
		"ZKD_BIN="+bin,
		"ZKD_PIDS="+pids,
		"ZKD_LOGDIR="+logs,
		"ZOOKEEPER_PORT_OFFSET="+strconv.Itoa(base),
		"ZOOKEEPER_CLUSTER_SIZE=3",
		"TMPDIR="+tmp,
	)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	runErr := cmd.Run()
	serverLogs := readLogs(t, logs)
	if t.Failed() || runErr != nil {
		defer func() { t.Logf("zkd logs:\n%s", serverLogs) }()
	}
	if runErr != nil {
		t.Fatalf("pytest %s: %v\n%s", strings.Join(kazooSuiteTests, " "), runErr, output.String())
	}
	if strings.Contains(serverLogs, "WARNING: DATA RACE") {
		t.Errorf("the race detector reported a race in zkd:\n%s", serverLogs)
	}

	// pytest passed; check that it ran what it was meant to, and not a skip.
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var res junitSuites
	if err := xml.Unmarshal(b, &res); err != nil {
		t.Fatalf("pytest's junit xml: %v", err)
	}
	got := map[string]string{}
	for _, s := range res.Suites {
		for _, c := range s.Cases {
			outcome := "passed"
			switch {
			case c.Failure != nil:
				outcome = "failed: " + c.Failure.Message
			case c.Error != nil:
				outcome = "error: " + c.Error.Message
			case c.Skipped != nil && c.Skipped.Type == "pytest.xfail":
				outcome = "xfail"
			case c.Skipped != nil:
				outcome = "skipped: " + c.Skipped.Message
			}
			got[c.Class+"."+c.Name] = outcome
		}
	}
	want := map[string]string{
		"kazoo.tests.test_client.TestReconfig.test_no_super_auth":       "passed",
		"kazoo.tests.test_client.TestReconfig.test_add_remove_observer": "passed",
		"kazoo.tests.test_client.TestReconfig.test_bad_input":           "passed",
		"kazoo.tests.test_connection.TestReadOnlyMode.test_read_only":   "xfail",
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %q, want %q", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("pytest ran %d tests, want %d: %v", len(got), len(want), got)
	}
	// The read-only test is expected to fail for one reason only: the client's session,
	// made while the quorum was up, is refused by the member left read-only.
	if !strings.Contains(serverLogs, "refusing global session reconnection in read-only mode") {
		t.Errorf("TestReadOnlyMode failed, but no zkd refused a global session's reconnection in read-only mode")
	}
	if t.Failed() {
		t.Logf("pytest output:\n%s", output.String())
	}
}

// readLogs returns the zkd logs the plugin wrote into dir, each under its name.
func readLogs(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Errorf("zkd logs: %v", err)
		return ""
	}
	var b strings.Builder
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Errorf("zkd log: %v", err)
			continue
		}
		fmt.Fprintf(&b, "== %s\n%s\n", e.Name(), data)
	}
	return b.String()
}

// killListed kills each process listed in pidFile (one PID a line) that is still running
// bin, and waits for it to go.
func killListed(t *testing.T, pidFile, bin string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return // no server was started
	}
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Errorf("pid file %s: %v", pidFile, err)
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || exe != bin {
			continue // gone, or the PID now belongs to another process
		}
		t.Logf("zkd %d outlived pytest; killing it", pid)
		syscall.Kill(pid, syscall.SIGKILL)
		for range 300 {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
