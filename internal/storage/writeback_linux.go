package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing out [off, off+n) of f without waiting
// for it (sync_file_range with SYNC_FILE_RANGE_WRITE). It is advice: an error changes
// nothing, the final fsync still makes the file durable.
func startWriteback(f File, off, n int64) {
	of, ok := f.(*os.File)
	if !ok {
		return
	}
	if rc, err := of.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE) })
	}
}
