// Package proc owns the child processes tests start (zkd, the reference ZooKeeper's JVM):
// each in a process group of its own, killed by the kernel if the test binary dies without
// running its cleanups, signalled by its PID, and never signalled once reaped (its PID could
// then belong to another process).
package proc

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Proc is a started child process.
type Proc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	reaped bool
	done   chan struct{}
}

// Start starts cmd (its output, directory and environment set by the caller).
func Start(cmd *exec.Cmd) (*Proc, error) {
	cmd.SysProcAttr = sysProcAttr()
	p := &Proc{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal belongs to the thread that forked: keep this goroutine
		// on it until the process is gone.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		p.mu.Lock()
		p.reaped = true
		p.mu.Unlock()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("proc: start %s: %w", cmd.Path, err)
	}
	return p, nil
}

// PID is the process id, also its process group's.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitCode is the process's exit code once it exited (-1 when a signal ended it).
func (p *Proc) ExitCode() int {
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

// ErrExited is returned for a signal to a process that has already exited.
var ErrExited = errors.New("proc: the process has exited")

// Signal sends sig to the process's group.
func (p *Proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return ErrExited
	}
	if err := signalGroup(p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("proc: kill -%d %d: %w", sig, p.cmd.Process.Pid, err)
	}
	return nil
}

// Kill ends the process with SIGKILL and waits up to timeout for it to be reaped.
func (p *Proc) Kill(timeout time.Duration) error {
	if err := p.Signal(syscall.SIGKILL); errors.Is(err, ErrExited) {
		return nil
	} else if err != nil {
		return err
	}
	return p.Wait(timeout)
}

// Wait waits up to timeout for the process to exit.
func (p *Proc) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("proc: pid %d still running after %v", p.cmd.Process.Pid, timeout)
	}
}
