//go:build unix

package main

import (
	"syscall"
	"time"
)

// selfCPU is etcdbench's own user+system CPU time: what the client took to measure.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
