package server_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// coreIOFS fails the test that owns it if any file operation runs on a server's core
// goroutine: the core must never wait on a disk (the storage goroutine, snapshot writers
// and connection goroutines do the I/O).
type coreIOFS struct {
	storage.FS
	core atomic.Int64 // the core goroutine of the server using it, 0 while none runs
	mu   sync.Mutex
	bad  []string
}

func newCoreIOFS(t *testing.T, base storage.FS) *coreIOFS {
	if base == nil {
		base = storage.OSFS{}
	}
	f := &coreIOFS{FS: base}
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.bad) > 0 {
			t.Errorf("%d file operations ran on the core goroutine, first: %v", len(f.bad), f.bad[:min(5, len(f.bad))])
		}
	})
	return f
}

// watch records the core goroutine of the server that uses this file system.
func (f *coreIOFS) watch(s *server.Server) { f.core.Store(server.CoreGoroutine(s)) }

func (f *coreIOFS) check(op, name string) {
	if id := f.core.Load(); id != 0 && server.GoroutineID() == id {
		f.mu.Lock()
		f.bad = append(f.bad, fmt.Sprintf("%s %s", op, name))
		f.mu.Unlock()
	}
}

func (f *coreIOFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	f.check("open", name)
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return coreIOFile{file, f, name}, nil
}

func (f *coreIOFS) Rename(o, n string) error           { f.check("rename", o); return f.FS.Rename(o, n) }
func (f *coreIOFS) Remove(name string) error           { f.check("remove", name); return f.FS.Remove(name) }
func (f *coreIOFS) ReadDir(d string) ([]string, error) { f.check("readdir", d); return f.FS.ReadDir(d) }
func (f *coreIOFS) MkdirAll(d string, p os.FileMode) error {
	f.check("mkdir", d)
	return f.FS.MkdirAll(d, p)
}
func (f *coreIOFS) Stat(name string) (int64, error) { f.check("stat", name); return f.FS.Stat(name) }
func (f *coreIOFS) SyncDir(d string) error          { f.check("syncdir", d); return f.FS.SyncDir(d) }

type coreIOFile struct {
	storage.File
	fs   *coreIOFS
	name string
}

func (c coreIOFile) Read(p []byte) (int, error)  { c.fs.check("read", c.name); return c.File.Read(p) }
func (c coreIOFile) Write(p []byte) (int, error) { c.fs.check("write", c.name); return c.File.Write(p) }
func (c coreIOFile) ReadAt(p []byte, off int64) (int, error) {
	c.fs.check("readat", c.name)
	return c.File.ReadAt(p, off)
}
func (c coreIOFile) WriteAt(p []byte, off int64) (int, error) {
	c.fs.check("writeat", c.name)
	return c.File.WriteAt(p, off)
}
func (c coreIOFile) Seek(off int64, whence int) (int64, error) {
	c.fs.check("seek", c.name)
	return c.File.Seek(off, whence)
}
func (c coreIOFile) Sync() error { c.fs.check("sync", c.name); return c.File.Sync() }
func (c coreIOFile) Truncate(n int64) error {
	c.fs.check("truncate", c.name)
	return c.File.Truncate(n)
}
func (c coreIOFile) Close() error { c.fs.check("close", c.name); return c.File.Close() }

// TestStandaloneCoreDoesNoFileIO runs writes through background snapshots, session expiry
// and container removal on a standalone server whose file system reports any operation on
// the core goroutine.
func TestStandaloneCoreDoesNoFileIO(t *testing.T) {
	fsys := newCoreIOFS(t, nil)
	srv := startStock(t, zktest.WithConfig(func(c *server.Config) {
		c.FS = fsys
		c.SnapCount = 40 // background snapshots every 20-40 txns
		c.ContainerCheckInterval = 50 * time.Millisecond
	}))
	fsys.watch(srv.Server)
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	if _, err := c.CreateContainer("/box", nil, zk.FlagContainer, open); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if _, err := c.Create(fmt.Sprintf("/box/n%d", i), []byte("x"), 0, open); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 200; i++ {
		if err := c.Delete(fmt.Sprintf("/box/n%d", i), -1); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "empty container removal", func() bool {
		ok, _, err := c.Exists("/box")
		return err == nil && !ok
	})
	short, _ := connect(t, srv.Addr(), 400*time.Millisecond)
	if _, err := short.Create("/eph", nil, zk.FlagEphemeral, open); err != nil {
		t.Fatal(err)
	}
	short.Close() // closeSession
	waitFor(t, "ephemeral removal", func() bool {
		ok, _, err := c.Exists("/eph")
		return err == nil && !ok
	})
	if got := fourLetter(t, srv.Addr(), "srvr"); !strings.Contains(got, "Mode: standalone") {
		t.Fatalf("srvr: %q", got)
	}
}
