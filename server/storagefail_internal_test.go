package server

import (
	"errors"
	"io"
	"log/slog"
	"testing"
)

// TestStorageStopsAfterFailedOperation: once a storage operation failed and stopped the
// server, nothing queued after it reaches the disk. A SNAP sync's snapshot that failed to
// write is followed by the NEWLEADER log sync and then currentEpoch: written anyway, the
// new epoch would be durable over a disk without the SNAP's tree (ZOOKEEPER-4643's state).
func TestStorageStopsAfterFailedOperation(t *testing.T) {
	s, err := New(Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.startPersist()
	s.storageOp(func() func() {
		s.failStop(errors.New("disk full"))
		return nil
	})
	ran := false
	s.storageOp(func() func() {
		ran = true
		return nil
	})
	close(s.logCh)
	<-s.logDone
	s.txlog.Close()
	if ran {
		t.Fatal("an operation queued after a failed one ran")
	}
}
