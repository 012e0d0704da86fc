// Package portlock hands out loopback ports for child processes tests start (Apache
// ZooKeeper's JVM, a Kerberos KDC): free, below the kernel's ephemeral range, and locked
// machine-wide so that test processes running side by side never pick the same one.
package portlock

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Reserve picks a free loopback port below the kernel's ephemeral range, so that neither
// listeners on port 0 (zkd servers in tests) nor outgoing connections can take it before the
// child process binds it, and locks it so that other test processes using this package skip
// it. The lock is released when the returned Closer is closed, or when the process dies.
func Reserve() (int, io.Closer, error) {
	lo, hi := 10000, EphemeralStart()-1
	for range 100 {
		port := lo + rand.IntN(hi-lo+1)
		lock, ok := Lock(port)
		if !ok {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			lock.Close()
			continue
		}
		l.Close()
		return port, lock, nil
	}
	return 0, nil, errors.New("no free port found")
}

// EphemeralStart is the first port the kernel hands out on its own.
func EphemeralStart() int {
	const fallback = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallback
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return fallback
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n < 12000 {
		return fallback
	}
	return n
}

// Lock takes an exclusive flock on a per-port file shared by all processes on the machine.
// When the lock directory cannot be used the port is taken unlocked.
func Lock(port int) (io.Closer, bool) {
	dir := filepath.Join(os.TempDir(), "zkd-refzk-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return io.NopCloser(nil), true
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return io.NopCloser(nil), true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}
