//go:build unix && !linux

package refzk

import "syscall"

// sysProcAttr puts the JVM in its own process group, so that one signal reaches it and anything
// it starts.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
