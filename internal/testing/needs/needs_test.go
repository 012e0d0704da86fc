package needs

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// helperEnv makes the test binary, run again by TestMissing, call Missing for a made-up tool.
const helperEnv = "ZKD_NEEDS_TEST_HELPER"

func TestMissing(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		Missing(t, "frobnicator", "frob-tools", "not in PATH")
		t.Error("Missing returned")
		return
	}
	for _, tc := range []struct {
		env      string // the value of Env; "-" leaves it unset
		wantFail bool
	}{
		{"-", false},
		{"", false},
		{"0", false},
		{"1", true},
		{"true", true},
	} {
		t.Run("env="+tc.env, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestMissing$", "-test.v", "-test.count=1")
			cmd.Env = []string{helperEnv + "=1"}
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, Env+"=") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			if tc.env != "-" {
				cmd.Env = append(cmd.Env, Env+"="+tc.env)
			}
			out, err := cmd.CombinedOutput()
			got := string(out)
			for _, want := range []string{"frobnicator", "apt-get install frob-tools", "not in PATH"} {
				if !strings.Contains(got, want) {
					t.Errorf("output lacks %q:\n%s", want, got)
				}
			}
			if strings.Contains(got, "Missing returned") {
				t.Errorf("Missing did not end the test:\n%s", got)
			}
			if tc.wantFail {
				if err == nil || !strings.Contains(got, "--- FAIL: TestMissing") {
					t.Errorf("%s=%q: want the test to fail, got err %v:\n%s", Env, tc.env, err, got)
				}
			} else if err != nil || !strings.Contains(got, "--- SKIP: TestMissing") {
				t.Errorf("%s=%q: want the test skipped, got err %v:\n%s", Env, tc.env, err, got)
			}
		})
	}
}

func TestCommandFindsAndMisses(t *testing.T) {
	t.Setenv(Env, "") // a skip here would hide the check below
	if p := Command(t, "sh", "dash"); p == "" {
		t.Fatal("Command(sh) returned an empty path")
	}
	t.Run("missing", func(t *testing.T) {
		Command(t, "/nonexistent/zkd-needs-test-tool", "none")
		t.Error("Command returned for a missing tool")
	})
}

// The Debian tools the repository's tests use: with Env set (CI), this checks the install.
func TestDebianTools(t *testing.T) {
	for name, get := range map[string]func(testing.TB) string{"zkCli.sh": ZkCli, "cli_mt": CliMT, "kazoo": Kazoo} {
		t.Run(name, func(t *testing.T) {
			if p := get(t); p == "" {
				t.Errorf("%s: empty path", name)
			}
		})
	}
}

func TestKazooSASL(t *testing.T) {
	py, path := KazooSASL(t)
	cmd := exec.Command(py, "-c", "from puresasl.client import SASLClient; "+
		"c = SASLClient('zk-sasl-md5', 'zookeeper', mechanism='DIGEST-MD5', username='u', password='p'); print(c.mechanism)")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+path)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "DIGEST-MD5" {
		t.Fatalf("puresasl DIGEST-MD5 client: %v: %s", err, out)
	}
}
