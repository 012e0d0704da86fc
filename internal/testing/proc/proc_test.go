package proc

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestSignalsReachTheProcessAndNotAReapedOne(t *testing.T) {
	p, err := Start(exec.Command("sleep", "60"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Exited() {
		t.Fatal("exited at once")
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if code := p.ExitCode(); code != -1 {
		t.Fatalf("exit code %d after SIGTERM, want -1 (a signal)", code)
	}
	if err := p.Signal(syscall.SIGKILL); !errors.Is(err, ErrExited) {
		t.Fatalf("signal to a reaped process: %v, want ErrExited", err)
	}
	if err := p.Kill(time.Second); err != nil {
		t.Fatalf("kill of a reaped process: %v", err)
	}
}
