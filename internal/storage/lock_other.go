//go:build !unix

package storage

import "os"

// flock is a no-op where there is no flock: such systems run zkd unlocked, as ZooKeeper runs.
func flock(*os.File) error { return nil }
