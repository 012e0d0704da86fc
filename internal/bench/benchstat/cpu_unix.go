//go:build unix

package benchstat

import (
	"syscall"
	"time"
)

// SelfCPU is this process's own user+system CPU time: what the benchmark client took to
// measure, to tell when the client, not the server, was the limit.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
