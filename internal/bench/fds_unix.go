//go:build unix

package bench

import (
	"fmt"
	"syscall"
)

// fdMargin is the descriptors zkbench needs besides one per session.
const fdMargin = 64

// checkFDs reports whether this process may hold n sessions open. The Go runtime has
// already raised the soft RLIMIT_NOFILE to the hard limit at start (since Go 1.19), so
// what is left is to say so clearly instead of failing on the n-th connect.
func checkFDs(n int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("RLIMIT_NOFILE: %w", err)
	}
	if uint64(n)+fdMargin > lim.Cur {
		return fmt.Errorf("%d sessions need %d file descriptors, the limit is %d (hard %d): use fewer --sessions", n, n+fdMargin, lim.Cur, lim.Max)
	}
	return nil
}
