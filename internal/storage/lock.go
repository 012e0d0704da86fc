package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// LockName is the file in a data directory whose lock says a zkd process uses it; it holds
// that process's pid.
const LockName = "zkd.lock"

// ErrDirLocked reports a data directory another process holds (LockDir).
var ErrDirLocked = errors.New("storage: data directory in use")

// LockDir takes the exclusive lock on dir that makes a zkd process its only user, as etcd
// and pebble lock theirs (ZooKeeper takes none, and a second server on a live directory
// writes snapshots into it). The lock is an flock on dir/zkd.lock, which the kernel drops
// when the process dies, so a crash never leaves a stale lock. Another holder, in this
// process or another, gets ErrDirLocked naming its pid. fsys other than OSFS (MemFS) has
// no processes to keep apart: the lock is a no-op there.
func LockDir(fsys FS, dir string) (io.Closer, error) {
	if _, ok := fsys.(OSFS); !ok {
		return nopCloser{}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: lock %s: %w", dir, err)
	}
	path := join(dir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("storage: lock %s: %w", dir, err)
	}
	if err := flock(f); err != nil {
		b, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		holder := strings.TrimSpace(string(b))
		if _, perr := strconv.Atoi(holder); perr != nil {
			holder = "unknown"
		}
		return nil, fmt.Errorf("%w: %s is locked by process %s (%v): one zkd process per data directory", ErrDirLocked, dir, holder, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
