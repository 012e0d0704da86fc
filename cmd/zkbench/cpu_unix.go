//go:build unix

package main

import (
	"syscall"
	"time"
)

// selfCPU is zkbench's own user+system CPU time, to tell when the client, not the server,
// was the limit.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
