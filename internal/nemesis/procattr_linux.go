package nemesis

import "syscall"

// sysProcAttr has the kernel kill a zkd member if the test binary dies without running its
// cleanups (a panic, or go test's -timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
