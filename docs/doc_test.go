package docs

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/doctest"
	"github.com/zkd-io/zkd/internal/testing/needs"
	"github.com/zkd-io/zkd/internal/testing/portlock"
	"github.com/zkd-io/zkd/internal/testing/proc"
)

// pages are the files whose runnable blocks run: the manual, and the README that links it.
func pages(t *testing.T) []string {
	t.Helper()
	ps, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ps)
	return append(ps, filepath.Join("..", "README.md"))
}

// debianPackage names the package that installs a tool a block needs, for needs' message.
var debianPackage = map[string]string{
	"curl": "curl",
	"nc":   "netcat-openbsd",
}

// superPassword is the super user's password the test server knows; the pages' examples
// use super:secret.
const superPassword = "secret"

func TestRunnableBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds zkd and starts it")
	}
	var blocks []doctest.Block
	for _, p := range pages(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := doctest.Extract(p, string(b))
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	if len(blocks) == 0 {
		t.Fatal(doctest.ErrNoBlocks)
	}

	work := t.TempDir()
	bin := filepath.Join(work, "bin")
	// zkd, zkcli and zkbench, built once and without -race even under go test -race: the
	// blocks check what the commands do for a reader, and the race detector's slower build
	// would cost more of the test's time than it finds there.
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/zkd", "./cmd/zkcli", "./cmd/zkbench")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	client, admin, metrics, second := reserve(t), reserve(t), reserve(t), reserve(t)
	dir := filepath.Join(work, "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum([]byte("super:" + superPassword))
	cfg := fmt.Sprintf(`clientPort=%d
clientPortAddress=127.0.0.1
dataDir=%s
4lw.commands.whitelist=*
admin.enableServer=true
admin.serverAddress=127.0.0.1
admin.serverPort=%d
admin.rateLimiterIntervalInMS=0
zookeeper.DigestAuthenticationProvider.superDigest=super:%s
metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider
metricsProvider.httpHost=127.0.0.1
metricsProvider.httpPort=%d
`, client, filepath.Join(dir, "zkd-data"), admin, base64.StdEncoding.EncodeToString(sum[:]), metrics)
	cfgPath := filepath.Join(work, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(work, "zkd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(bin, "zkd"), "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	srv, err := proc.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// By PID: SIGTERM first, so the server stops as the pages say it does.
		if err := srv.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, proc.ErrExited) {
			t.Error(err)
		}
		if srv.Wait(25*time.Second) != nil {
			_ = srv.Kill(5 * time.Second)
			t.Error("zkd did not stop within 25 s of SIGTERM")
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("zkd's log:\n%s", b)
		}
	})
	clientAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(client))
	adminAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(admin))
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(metrics))
	for _, a := range []string{clientAddr, adminAddr, metricsAddr} {
		waitListening(t, srv, a)
	}

	env := doctest.Env{
		Dir:  dir,
		Path: []string{bin},
		Replace: map[string]string{
			"127.0.0.1:2181": clientAddr, "127.0.0.1:8080": adminAddr, "127.0.0.1:7000": metricsAddr,
			// A page's second server, which its block starts and stops itself.
			"--port 2182": "--port " + strconv.Itoa(second), "127.0.0.1:2182": net.JoinHostPort("127.0.0.1", strconv.Itoa(second)),
		},
		Timeout: 30 * time.Second,
	}
	start := time.Now()
	for _, b := range blocks {
		t.Run(b.Name(), func(t *testing.T) {
			for _, tool := range b.Needs {
				pkg := debianPackage[tool]
				if pkg == "" {
					pkg = tool
				}
				needs.Command(t, tool, pkg)
			}
			if out, err := doctest.Run(b, env); err != nil {
				t.Errorf("%v\nthe block, as run:\n%s\nit printed:\n%s", err, env.Script(b), out)
			}
		})
	}
	t.Logf("%d runnable blocks in %v", len(blocks), time.Since(start).Round(time.Millisecond))
}

// reserve takes a free loopback port, locked until the test ends.
func reserve(t *testing.T) int {
	t.Helper()
	port, lock, err := portlock.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	return port
}

// waitListening waits until addr accepts connections, failing early if zkd exits.
func waitListening(t *testing.T, srv *proc.Proc, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if srv.Exited() {
			t.Fatalf("zkd exited (status %d) before listening on %s", srv.ExitCode(), addr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s after 30 s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
