package server_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// stallFS holds every write to a snapshot file until released: a snapshot writer stuck on
// a slow disk.
type stallFS struct {
	storage.FS
	armed   atomic.Bool // snapshots written at start-up are not held
	once    sync.Once
	stalled chan struct{} // closed when the first snapshot write is held
	release chan struct{}
}

func (f *stallFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !f.armed.Load() || !strings.Contains(name, "snapshot.") {
		return file, err
	}
	return stallFile{file, f}, nil
}

type stallFile struct {
	storage.File
	fs *stallFS
}

func (s stallFile) Write(p []byte) (int, error) {
	s.fs.once.Do(func() { close(s.fs.stalled) })
	<-s.fs.release
	return s.File.Write(p)
}

// TestSnapshotWriterStallDoesNotStallCore: a background snapshot whose writer is stuck on
// the disk holds nothing of the core: writes (logged and acknowledged) and reads go on
// while it is stuck, and it completes, with the tree as it was captured, once released.
func TestSnapshotWriterStallDoesNotStallCore(t *testing.T) {
	dir := t.TempDir()
	fsys := &stallFS{FS: storage.OSFS{}, stalled: make(chan struct{}), release: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(fsys.release) }) }
	t.Cleanup(release)
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.DataDir = dir
		c.FS = fsys
		c.SnapCount = 200 // a background snapshot every 100-200 txns
	}))
	fsys.armed.Store(true)
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	// Fill until a snapshot starts and its writer is held.
	i := 0
	for stalled := false; !stalled; i++ {
		if i > 2000 {
			t.Fatal("no snapshot started after 2000 creates")
		}
		if _, err := c.Create(fmt.Sprintf("/n%d", i), []byte("x"), 0, open); err != nil {
			t.Fatal(err)
		}
		select {
		case <-fsys.stalled:
			stalled = true
		default:
		}
	}
	// The core serves many times what started the snapshot while the writer is stuck.
	for j := 0; j < 1000; j++ {
		p := fmt.Sprintf("/during%d", j)
		if _, err := c.Create(p, []byte("y"), 0, open); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Get(p); err != nil {
			t.Fatal(err)
		}
	}
	files, err := storage.FindSnapshots(storage.OSFS{}, dir+"/version-2")
	if err != nil {
		t.Fatal(err)
	}
	before := len(files)
	release()
	waitFor(t, "the held snapshot written", func() bool {
		files, _ := storage.FindSnapshots(storage.OSFS{}, dir+"/version-2")
		return len(files) > before
	})
}
