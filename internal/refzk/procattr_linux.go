package refzk

import "syscall"

// sysProcAttr puts the JVM in its own process group, so that one signal reaches it and anything
// it starts, and has the kernel kill it if the test binary dies without running its cleanups
// (a panic, or go test's -timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
