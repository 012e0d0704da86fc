//go:build !linux

package storage

// startWriteback does nothing where there is no sync_file_range: the final fsync writes
// everything out.
func startWriteback(File, int64, int64) {}
