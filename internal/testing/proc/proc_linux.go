package proc

import "syscall"

// sysProcAttr puts the child in its own process group, so one signal reaches it and
// anything it starts, and has the kernel kill it when the thread that started it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func signalGroup(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }
