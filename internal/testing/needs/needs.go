// Package needs decides what a test does when an external tool it needs is missing: Apache
// ZooKeeper's jars and java (see internal/refzk), python3 with kazoo, zkCli.sh, cli_mt, chromium,
// podman. By default the test is skipped, so that `go test ./...` works on a bare machine. With the
// environment variable ZKD_REQUIRE_TOOLS set (CI sets it) the test fails instead, naming the
// tool and the Debian package that provides it: a broken install must not turn a run green
// by skipping what it was meant to check.
//
// Every "tool missing" skip in the repository goes through Missing; skips for other reasons
// (testing.Short, an opt-in environment variable) do not.
package needs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Env is the switch: set to anything but "" or "0", a missing tool fails the test.
const Env = "ZKD_REQUIRE_TOOLS"

// Paths of the Debian packages' tools (zookeeper, zookeeper-bin, python3-kazoo).
const (
	ZkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"
	CliMTPath = "/usr/lib/zookeeper/bin/cli_mt"
	// Python is the interpreter python3-kazoo installs kazoo for; a python3 found first in
	// PATH (a virtualenv, say) may not have it.
	Python = "/usr/bin/python3"
)

// Required reports whether a missing tool fails the test rather than skipping it.
func Required() bool {
	v := os.Getenv(Env)
	return v != "" && v != "0"
}

// Missing ends the test because tool is not usable here: it is skipped, or failed when
// Required. pkg is the Debian package to install, why what was found wrong.
func Missing(t testing.TB, tool, pkg, why string) {
	t.Helper()
	msg := fmt.Sprintf("%s is missing (apt-get install %s): %s", tool, pkg, why)
	if Required() {
		t.Fatalf("%s; %s is set, so tests may not skip for a missing tool", msg, Env)
	}
	t.Skip(msg + "; skipped (set " + Env + "=1 to fail instead)")
}

// Command returns the path of the executable name (looked up in PATH unless it holds a
// slash), or ends the test through Missing when there is none.
func Command(t testing.TB, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name, pkg, err.Error())
	}
	return path
}

// ZkCli returns the path of ZooKeeper's Java shell, zkCli.sh (it also needs java).
func ZkCli(t testing.TB) string {
	t.Helper()
	Command(t, "java", "default-jre-headless")
	return Command(t, ZkCliPath, "zookeeper")
}

// CliMT returns the path of ZooKeeper's C client shell, cli_mt.
func CliMT(t testing.TB) string {
	t.Helper()
	return Command(t, CliMTPath, "zookeeper-bin")
}

// Kazoo returns the Python interpreter that can import kazoo, the Python client.
func Kazoo(t testing.TB) string {
	t.Helper()
	py := Command(t, Python, "python3")
	if out, err := exec.Command(py, "-c", "import kazoo").CombinedOutput(); err != nil {
		// The last line of Python's complaint says what went wrong (ModuleNotFoundError, ...).
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		Missing(t, "kazoo for "+py, "python3-kazoo", fmt.Sprintf("import kazoo: %v: %s", err, lines[len(lines)-1]))
	}
	return py
}

// PureSASLPath is the directory holding the vendored pure-sasl package (puresasl, which
// kazoo needs for SASL and Debian does not package): put it on PYTHONPATH. It is found
// from this source file, so it is right wherever the repository is checked out.
func PureSASLPath() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return filepath.Join("third_party", "pure-sasl")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "third_party", "pure-sasl")
}

// KazooSASL returns the Python interpreter that can import kazoo, and the PYTHONPATH
// under which it also imports the vendored puresasl (kazoo's SASL). Run the interpreter
// with "PYTHONPATH="+pythonPath in its environment.
func KazooSASL(t testing.TB) (python, pythonPath string) {
	t.Helper()
	py := Kazoo(t)
	pythonPath = PureSASLPath()
	if old := os.Getenv("PYTHONPATH"); old != "" {
		pythonPath += string(os.PathListSeparator) + old
	}
	cmd := exec.Command(py, "-c", "import puresasl.client")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		// The vendored copy is part of the repository: its absence is a broken checkout,
		// not a missing tool, so it fails rather than skips.
		t.Fatalf("import puresasl with PYTHONPATH=%s: %v: %s", pythonPath, err, out)
	}
	return py, pythonPath
}

// Chromium returns the path of a headless-capable Chromium (Debian's chromium package), for
// the web console's browser tests.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	Missing(t, "chromium", "chromium", "none of chromium, chromium-browser, google-chrome is in PATH")
	return ""
}

// Podman returns the path of podman and of an OCI runtime for it (runc, or crun), for the
// container image's tests (packaging). Debian's podman runs images with either.
func Podman(t testing.TB) (podman, runtime string) {
	t.Helper()
	podman = Command(t, "podman", "podman")
	for _, name := range []string{"/usr/sbin/runc", "runc", "crun"} {
		if path, err := exec.LookPath(name); err == nil {
			return podman, path
		}
	}
	Missing(t, "runc", "runc", "podman needs an OCI runtime and neither runc nor crun is in PATH")
	return "", ""
}
