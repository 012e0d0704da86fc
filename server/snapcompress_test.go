package server_test

import (
	"strings"
	"testing"

	"github.com/zkd-io/zkd/server"
)

// TestUnknownSnapshotCompression: a format the storage cannot write is refused at start,
// not first noticed by a background snapshot that can only log it.
func TestUnknownSnapshotCompression(t *testing.T) {
	s, err := server.New(server.Config{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(), SnapshotCompression: "zstd"})
	if err == nil {
		s.Close()
		t.Fatal("server.New accepted snapshot compression zstd")
	}
	if !strings.Contains(err.Error(), "zstd") {
		t.Errorf("error does not name the format: %v", err)
	}
}
