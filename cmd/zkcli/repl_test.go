package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

// deadline bounds every wait for the shell: generous, the machine is shared.
const deadline = 60 * time.Second

// buildZkcli builds this command into the test's temporary directory.
func buildZkcli(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "zkcli")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// terminal is zkcli running in a pseudo-terminal, with everything it has printed.
type terminal struct {
	t       *testing.T
	pty     *os.File
	cmd     *exec.Cmd
	exit    chan error    // Wait's result, once
	stopped chan struct{} // closed when the process has been reaped

	mu      sync.Mutex
	out     bytes.Buffer
	seen    int           // how far expect has consumed out
	changed chan struct{} // signalled when out grows
}

func startTerminal(t *testing.T, bin, home string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"HOME=" + home, "TERM=xterm", "PATH=" + os.Getenv("PATH")}
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatalf("start zkcli in a pty: %v", err)
	}
	term := &terminal{t: t, pty: f, cmd: cmd, exit: make(chan error, 1), stopped: make(chan struct{}),
		changed: make(chan struct{}, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			select {
			case term.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return // EIO once the shell has gone and the pty is closed
			}
		}
	}()
	go func() {
		term.exit <- cmd.Wait()
		close(term.stopped)
	}()
	t.Cleanup(func() {
		select {
		case <-term.stopped:
		default:
			cmd.Process.Kill() // by its PID; the goroutine above reaps it
			select {
			case <-term.stopped:
			case <-time.After(deadline):
				t.Errorf("zkcli (pid %d) did not die", cmd.Process.Pid)
			}
		}
		f.Close()
	})
	return term
}

// expect waits until the output after what earlier expects consumed contains want, and
// consumes it.
func (term *terminal) expect(want string) {
	term.t.Helper()
	timeout := time.After(deadline)
	for {
		term.mu.Lock()
		rest := term.out.String()[term.seen:]
		if i := strings.Index(rest, want); i >= 0 {
			term.seen += i + len(want)
			term.mu.Unlock()
			return
		}
		term.mu.Unlock()
		select {
		case <-term.changed:
		case <-timeout:
			term.t.Fatalf("the terminal never showed %q; after the last match it shows %q", want, rest)
		}
	}
}

func (term *terminal) send(keys string) {
	term.t.Helper()
	if _, err := term.pty.WriteString(keys); err != nil {
		term.t.Fatalf("typing %q: %v", keys, err)
	}
}

// wait waits for the shell to exit and returns its exit code.
func (term *terminal) wait() int {
	term.t.Helper()
	select {
	case err := <-term.exit:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			term.t.Fatalf("zkcli: %v", err)
		}
		return 0
	case <-time.After(deadline):
		term.mu.Lock()
		rest := term.out.String()[term.seen:]
		term.mu.Unlock()
		term.t.Fatalf("zkcli did not exit; it shows %q", rest)
		return -1
	}
}

const (
	up    = "\x1b[A"
	tab   = "\t"
	enter = "\r"
	ctrlC = "\x03"
	ctrlD = "\x04"
)

// TestInteractiveShell drives zkcli's interactive shell in a pseudo-terminal: the prompt,
// commands, history (recalled with the up arrow, and kept across runs), completion of
// commands and paths, a watch event printed while a line is being edited, Ctrl-C and
// Ctrl-D.
func TestInteractiveShell(t *testing.T) {
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	c, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{"/foo", "/foo/bar"} {
		if _, err := c.Create(ctx, p, []byte("v1"), zk.OpenACL(), zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	bin := buildZkcli(t)
	home := t.TempDir()
	prompt := func(n int) string { return "[zk: " + srv.Addr() + "(CONNECTED) " + string(rune('0'+n)) + "] " }

	term := startTerminal(t, bin, home, "-server", srv.Addr())
	term.expect("JLine support is enabled")
	term.expect(prompt(0))
	term.send("ls /" + enter)
	term.expect("[foo, zookeeper]")
	term.expect(prompt(1))
	// The up arrow brings back "ls /".
	term.send(up + enter)
	term.expect("[foo, zookeeper]")
	term.expect(prompt(2))
	// A command name, then a path: without completion "getAl" and "/fo" name nothing.
	term.send("getAl" + tab)
	term.expect("getAllChildrenNumber")
	term.send("/fo" + tab)
	term.expect("/foo")
	term.send(enter)
	term.expect("1\r\n")
	term.expect(prompt(3))
	term.send("ls /fo" + tab + enter)
	term.expect("[bar]")
	term.expect(prompt(4))
	// A watch event while a line is being edited: printed above the prompt, which comes
	// back with the line.
	term.send("get -w /foo" + enter)
	term.expect("v1")
	term.expect(prompt(5))
	term.send("stat /fo")
	term.expect("stat /fo")
	if _, err := c.Set(ctx, "/foo", []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}
	term.expect("WATCHER::")
	term.expect("WatchedEvent state:SyncConnected type:NodeDataChanged path:/foo")
	term.expect(prompt(5) + "stat /fo")
	// Ctrl-C drops the line; Ctrl-D on an empty line ends the shell.
	term.send(ctrlC)
	term.expect(prompt(5))
	term.send(ctrlD)
	if code := term.wait(); code != 0 {
		t.Fatalf("exit code %d after Ctrl-D, want 0", code)
	}

	histPath := filepath.Join(home, ".zkcli_history")
	hist, err := os.ReadFile(histPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(histPath); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %v, want 0600", fi.Mode())
	}
	if !strings.Contains(string(hist), "ls /foo\n") || strings.Contains(string(hist), "stat /fo") {
		t.Errorf("history file holds %q", hist)
	}

	// A new shell recalls the last session's last line.
	term = startTerminal(t, bin, home, "-server", srv.Addr())
	term.expect(prompt(0))
	term.send(up + enter)
	term.expect("v2")
	term.expect(prompt(1))
	term.send("quit" + enter)
	if code := term.wait(); code != 0 {
		t.Fatalf("exit code %d after quit, want 0", code)
	}
}
