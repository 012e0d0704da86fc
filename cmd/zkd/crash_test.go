package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	child "github.com/zkd-io/zkd/internal/testing/proc"
)

// buildZkd compiles this command once per test binary.
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// TestMain removes the binary built for these tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

func zkdBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "zkd-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "zkd")
		out, err := exec.Command("go", "build", "-race", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startFromZooCfg writes dir/zoo.cfg for a standalone zkd on a free loopback port with its
// data in dir/data, then extra (zoo.cfg lines), starts zkd on it and waits until it serves.
// It returns the process and the file's text.
func startFromZooCfg(t *testing.T, dir, extra string) (*proc, string) {
	t.Helper()
	port := freePort(t)
	text := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n%s",
		filepath.Join(dir, "data"), port, extra)
	path := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p := spawn(t, fmt.Sprintf("127.0.0.1:%d", port), []string{"--config", path, "--log-level", "warn"})
	p.waitMode(t, func(m string) bool { return m == "standalone" })
	return p, text
}

type proc struct {
	*child.Proc
	addr string
	mu   sync.Mutex
	logs strings.Builder
}

func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// startZkd starts the zkd binary on dataDir and waits until it serves standalone.
func startZkd(t *testing.T, dataDir string, port int, extra ...string) *proc {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := append([]string{"--addr", addr, "--data-dir", dataDir, "--log-level", "warn"}, extra...)
	p := spawn(t, addr, args)
	p.waitMode(t, func(m string) bool { return m == "standalone" })
	return p
}

// spawn starts zkd with args; addr is its client address.
func spawn(t *testing.T, addr string, args []string) *proc {
	t.Helper()
	return spawnEnv(t, addr, args, nil)
}

// spawnEnv is spawn with variables added to the environment.
func spawnEnv(t *testing.T, addr string, args, env []string) *proc {
	t.Helper()
	cmd := exec.Command(zkdBinary(t), args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	p := &proc{addr: addr}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	cmd.Stdout = pw
	go func() {
		s := bufio.NewScanner(pr)
		for s.Scan() {
			p.mu.Lock()
			p.logs.WriteString(s.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	var err error
	if p.Proc, err = child.Start(cmd); err != nil {
		t.Fatal(err)
	}
	go func() { <-p.Done(); pw.Close() }()
	t.Cleanup(func() { p.kill() })
	return p
}

// mode is what srvr reports as Mode, or "" when the server does not serve.
func (p *proc) mode() string {
	for _, l := range strings.Split(fourLetter(p.addr, "srvr"), "\n") {
		if strings.HasPrefix(l, "Mode: ") {
			return strings.TrimPrefix(l, "Mode: ")
		}
	}
	return ""
}

func (p *proc) waitMode(t *testing.T, ok func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok(p.mode()) {
		select {
		case <-p.Done():
			t.Fatalf("zkd exited:\n%s", p.logText())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("zkd %s not ready within 60s (mode %q):\n%s", p.addr, p.mode(), p.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) kill() { p.Kill(time.Minute) }

func (p *proc) stop(t *testing.T) {
	p.Signal(syscall.SIGTERM)
	if err := p.Wait(60 * time.Second); err != nil {
		t.Fatalf("zkd did not stop on SIGTERM: %v", err)
	}
	if code := p.ExitCode(); code != 0 {
		t.Fatalf("zkd exited with %d after SIGTERM:\n%s", code, p.logText())
	}
}

func fourLetter(addr, cmd string) string {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte(cmd))
	b, _ := io.ReadAll(c)
	return string(b)
}

func connectZK(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	return connectAll(t, []string{addr})
}

// TestCrashKeepsAcknowledgedWrites kills zkd with SIGKILL in the middle of a write load and
// checks that after a restart every acknowledged write is there and nothing else is.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	port := freePort(t)
	p := startZkd(t, dir, port)
	const writers = 4
	var mu sync.Mutex
	acked := map[string]string{}
	attempted := map[string]string{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		c := connectZK(t, p.addr)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				path := fmt.Sprintf("/w%d-%d", w, i)
				data := fmt.Sprintf("v%d", i)
				mu.Lock()
				attempted[path] = data
				mu.Unlock()
				if _, err := c.Create(path, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
					return
				}
				mu.Lock()
				acked[path] = data
				mu.Unlock()
			}
		}(w)
	}
	waitFor := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 400 || time.Now().After(waitFor) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.kill()
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged before the kill")
	}

	p2 := startZkd(t, dir, port)
	c := connectZK(t, p2.addr)
	for path, data := range acked {
		got, _, err := c.Get(path)
		if err != nil || string(got) != data {
			t.Fatalf("acknowledged %s=%q lost after crash: %q %v", path, data, got, err)
		}
	}
	kids, _, err := c.Children("/")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if k == "zookeeper" {
			continue
		}
		if _, ok := attempted["/"+k]; !ok {
			t.Fatalf("node /%s appeared that no client wrote", k)
		}
	}
	t.Logf("%d acknowledged writes survived; %d nodes present", len(acked), len(kids)-1)
	p2.stop(t)
}
