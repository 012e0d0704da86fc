package compat

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/portlock"
)

// buildZkd builds cmd/zkd (with the race detector, so the clients' suites also look for
// races in the server) into a temporary directory of t and returns its path.
func buildZkd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "zkd")
	out, err := exec.Command("go", "build", "-race", "-o", bin, "github.com/zkd-io/zkd/cmd/zkd").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/zkd: %v\n%s", err, out)
	}
	return bin
}

// reservePortLayout finds a base port such that base+off is free for every off in offsets,
// locks those ports machine-wide (internal/portlock) until the test ends and returns base.
// The clients' harnesses lay their ports out from one base (kazoo: base+10i+{0,1,2,3},
// go-zookeeper: base+3i+{0,1,2}), so the ports are reserved as a layout.
func reservePortLayout(t *testing.T, offsets ...int) int {
	t.Helper()
	span := 0
	for _, off := range offsets {
		span = max(span, off)
	}
	lo, hi := 10000, portlock.EphemeralStart()-1-span
	for range 200 {
		base := lo + rand.IntN(hi-lo+1)
		var locks []interface{ Close() error }
		ok := true
		for _, off := range offsets {
			port := base + off
			lock, locked := portlock.Lock(port)
			if !locked {
				ok = false
				break
			}
			locks = append(locks, lock)
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			t.Cleanup(func() {
				for _, l := range locks {
					l.Close()
				}
			})
			return base
		}
		for _, l := range locks {
			l.Close()
		}
	}
	t.Fatalf("no free port layout %v found", offsets)
	return 0
}

// stopPID ends a process this test started: SIGTERM (zkd shuts down cleanly), and SIGKILL
// if it is still there after a generous grace period. done is closed when it has exited.
func stopPID(t *testing.T, pid int, done <-chan struct{}) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill -TERM %d: %v", pid, err)
	}
	select {
	case <-done:
		return
	case <-time.After(30 * time.Second):
	}
	t.Errorf("process %d ignored SIGTERM for 30s; killing it", pid)
	syscall.Kill(pid, syscall.SIGKILL)
	<-done
}

// zkdProc is a zkd process started on a zoo.cfg.
type zkdProc struct {
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

// startZkdProcess starts bin --config cfg; the process is stopped by its PID when the test
// ends, and its output is logged if the test failed (or ZKD_COMPAT_VERBOSE is set).
func startZkdProcess(t *testing.T, bin, cfg string) *zkdProc {
	t.Helper()
	p := &zkdProc{cmd: exec.Command(bin, "--config", cfg), log: new(bytes.Buffer), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start zkd --config %s: %v", cfg, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		stopPID(t, p.cmd.Process.Pid, p.done)
		out := p.log.String()
		if bytes.Contains(p.log.Bytes(), []byte("WARNING: DATA RACE")) {
			t.Errorf("zkd --config %s: the race detector reported a race:\n%s", cfg, out)
		} else if t.Failed() || os.Getenv("ZKD_COMPAT_VERBOSE") != "" {
			t.Logf("zkd --config %s output:\n%s", cfg, out)
		}
	})
	return p
}

// writeFile writes text to path or fails the test.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
