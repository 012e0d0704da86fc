package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/needs"
)

// etcdbenchDir is bench/etcdbench, a module of its own (etcd's client is not zkd's
// dependency), which `go test ./...` and `go vet ./...` from the root do not reach: this
// test is its build in CI.
var etcdbenchDir = filepath.Join("..", "..", "bench", "etcdbench")

// TestEtcdbench vets, unit-tests and builds bench/etcdbench and, when etcd is installed,
// runs it for a second against a real etcd on loopback: its JSON line must be one zkbench
// reads as a Result (bench/etcd.sh renders zkd against etcd with `zkbench compare`), with
// work done.
func TestEtcdbench(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "etcdbench")
	for _, args := range [][]string{{"vet", "."}, {"test", "."}, {"build", "-o", bin, "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = etcdbenchDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v in %s: %v\n%s", args, etcdbenchDir, err, out)
		}
	}
	if out, err := exec.Command(bin, "--no-such-flag").CombinedOutput(); err == nil {
		t.Errorf("etcdbench accepted an unknown flag:\n%s", out)
	}

	etcd := needs.Command(t, "etcd", "etcd-server")
	endpoint, pid := startEtcd(t, etcd)

	jsonPath := filepath.Join(t.TempDir(), "etcd.jsonl")
	cmd := exec.Command(bin, "--endpoints", endpoint, "--clients", "2", "--outstanding", "4",
		"--data-size", "1024", "--keys", "100", "--duration", "1s", "--warmup", "200ms",
		"--server-pid", strconv.Itoa(pid), "--label", "etcd", "--json", jsonPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("etcdbench: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(raw, []byte("\n")); n != 1 {
		t.Fatalf("etcdbench wrote %d lines, want 1:\n%s", n, raw)
	}
	// Every field etcdbench writes is one of Result's: a renamed field would be dropped by
	// zkbench compare without a word.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var strict Result
	if err := dec.Decode(&strict); err != nil {
		t.Fatalf("etcdbench's line is not a zkbench Result: %v\n%s", err, raw)
	}
	rs, err := readResultsFile(jsonPath)
	if err != nil || len(rs) != 1 {
		t.Fatalf("readResultsFile: %d results, %v", len(rs), err)
	}
	r := rs[0]
	if r.Kind != "" || r.Workload != "set" || r.Label != "etcd" || r.Clients != 2 || r.Outstanding != 4 ||
		r.DataSize != 1024 || r.Keys != 100 {
		t.Errorf("run described as %+v", r)
	}
	if r.Ops <= 0 || r.Errors != 0 || r.Seconds <= 0 || r.OpsPerSec <= 0 {
		t.Errorf("ops %d errors %d (%v) in %g s", r.Ops, r.Errors, r.ErrorKinds, r.Seconds)
	}
	if r.Latency.P50 <= 0 || r.Latency.Max < r.Latency.P99 || len(r.Latency.Spectrum) == 0 {
		t.Errorf("latency %+v", r.Latency)
	}
	if r.ServerRSSEnd <= 0 {
		t.Errorf("no server RSS sampled from pid %d", pid)
	}
	var out bytes.Buffer
	if err := cli(t.Context(), []string{"compare", "--a", jsonPath, "--b", jsonPath, "--a-name", "zkd", "--b-name", "etcd"}, &out, &out); err != nil {
		t.Fatalf("compare: %v\n%s", err, out.String())
	}
	if !bytes.Contains(out.Bytes(), []byte("| throughput (ops/s) |")) {
		t.Errorf("compare rendered no set table:\n%s", out.String())
	}
}

// startEtcd starts a single-member etcd on loopback ports with its data in a temporary
// directory, waits until it reports itself healthy, and stops it (by its pid) at the end of
// the test. It returns the client endpoint and the pid. The ports are free when chosen but
// may be taken before etcd binds them, so a start whose process exits is retried.
func startEtcd(t *testing.T, etcd string) (string, int) {
	t.Helper()
	for try := 1; ; try++ {
		client, peer := freePort(t), freePort(t)
		dir := t.TempDir()
		var log bytes.Buffer
		cmd := exec.Command(etcd, "--name", "test", "--data-dir", filepath.Join(dir, "data"),
			"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
			"--listen-peer-urls", "http://"+peer, "--initial-advertise-peer-urls", "http://"+peer,
			"--initial-cluster", "test=http://"+peer, "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn")
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", etcd, err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		err := waitEtcdHealthy(client, exited)
		if err == nil {
			t.Cleanup(stop)
			return client, cmd.Process.Pid
		}
		stop()
		if try == 3 {
			t.Fatalf("etcd did not start: %v\n%s", err, log.String())
		}
		t.Logf("etcd did not start (try %d): %v", try, err)
	}
}

// waitEtcdHealthy polls etcd's /health until it answers healthy, the process exits, or a
// minute (a loaded machine) has passed.
func waitEtcdHealthy(client string, exited <-chan struct{}) error {
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("etcd exited")
		default:
		}
		if resp, err := hc.Get("http://" + client + "/health"); err == nil {
			var h struct {
				Health string `json:"health"`
			}
			err := json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if err == nil && h.Health == "true" {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("etcd exited")
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("not healthy on %s within a minute", client)
}

// freePort is a loopback address nothing listens on when it is chosen.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestEtcdScript: bench/etcd.sh shows its usage and refuses an unknown flag, before it
// builds or starts anything.
func TestEtcdScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script := filepath.Join("..", "..", "bench", "etcd.sh")
	out, err := exec.Command(bash, script, "--help").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--quick")) {
		t.Errorf("etcd.sh --help: %v\n%s", err, out)
	}
	if out, err := exec.Command(bash, script, "--no-such-flag").CombinedOutput(); err == nil {
		t.Errorf("etcd.sh accepted an unknown flag:\n%s", out)
	}
}
