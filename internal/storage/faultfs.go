package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Failpoints are named places where the storage edge can be made to fail, as pebble's
// errorfs and etcd's gofail do: FaultFS wraps an FS and fails the operation a failpoint
// names, by file kind and operation:
//
//	log.create  log.write  log.sync      txn log files (log.<zxid>)
//	snap.create snap.write snap.sync snap.rename   snapshots (tmp.snapshot.*, snapshot.*)
//	epoch.write epoch.sync epoch.rename  currentEpoch, acceptedEpoch (and their .tmp)
//	dir.sync                             a directory's fsync (SyncDir)
//
// A spec is "point=error[@n]" items separated by commas: error is eio, enospc or torn (a
// write that puts down half its bytes, then fails with EIO); n is the hit that fails (1, the
// first, when left out); that hit and every later one fail, as a disk that has gone bad
// does. The server stops on the first (its storage failure rule), and what it acknowledged
// must survive its restart on a healthy disk.
var Failpoints = []string{
	"log.create", "log.write", "log.sync",
	"snap.create", "snap.write", "snap.sync", "snap.rename",
	"epoch.write", "epoch.sync", "epoch.rename",
	"dir.sync",
}

// ErrInjected marks an error a failpoint made.
var ErrInjected = errors.New("storage: injected fault")

type failpoint struct {
	err  string // eio, enospc, torn
	at   int    // the hit that first fails
	hits int
}

// FaultFS is an FS whose failpoints fail as its spec says. It is safe for concurrent use.
type FaultFS struct {
	FS
	mu     sync.Mutex
	points map[string]*failpoint
}

// NewFaultFS wraps fsys with the failpoints of spec (see Failpoints).
func NewFaultFS(fsys FS, spec string) (*FaultFS, error) {
	f := &FaultFS{FS: fsys, points: map[string]*failpoint{}}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, rest, ok := strings.Cut(item, "=")
		if !ok || !isFailpoint(name) {
			return nil, fmt.Errorf("storage: failpoint %q: want one of %s, as point=eio|enospc|torn[@n]", item, strings.Join(Failpoints, ", "))
		}
		kind, n, hasN := strings.Cut(rest, "@")
		fp := &failpoint{err: kind, at: 1}
		if kind != "eio" && kind != "enospc" && kind != "torn" {
			return nil, fmt.Errorf("storage: failpoint %q: error %q is not eio, enospc or torn", item, kind)
		}
		if hasN {
			v, err := strconv.Atoi(n)
			if err != nil || v < 1 {
				return nil, fmt.Errorf("storage: failpoint %q: %q is not a hit number (1 or more)", item, n)
			}
			fp.at = v
		}
		f.points[name] = fp
	}
	return f, nil
}

// Unwrap is the FS underneath (for LockDir).
func (f *FaultFS) Unwrap() FS { return f.FS }

func isFailpoint(name string) bool {
	for _, p := range Failpoints {
		if p == name {
			return true
		}
	}
	return false
}

// kindOf is the file kind a failpoint names for path: log, snap, epoch, or "".
func kindOf(path string) string {
	base := filepath.Base(path)
	switch {
	case strings.HasPrefix(base, logPrefix):
		return "log"
	case strings.HasPrefix(base, snapPrefix), strings.HasPrefix(base, tempPrefix+snapPrefix):
		return "snap"
	case strings.HasPrefix(base, "currentEpoch"), strings.HasPrefix(base, "acceptedEpoch"):
		return "epoch"
	}
	return ""
}

// hit counts a pass through point and returns the error kind to inject, or "".
func (f *FaultFS) hit(point string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	fp := f.points[point]
	if fp == nil {
		return ""
	}
	fp.hits++
	if fp.hits < fp.at {
		return ""
	}
	return fp.err
}

func injected(point, kind, path string) error {
	errno := syscall.EIO
	if kind == "enospc" {
		errno = syscall.ENOSPC
	}
	return fmt.Errorf("%w at %s (%s) on %s: %w", ErrInjected, point, kind, path, errno)
}

func (f *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	kind := kindOf(name)
	if kind != "" && flag&os.O_CREATE != 0 {
		if e := f.hit(kind + ".create"); e != "" {
			return nil, injected(kind+".create", e, name)
		}
	}
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || kind == "" {
		return file, err
	}
	return &faultFile{File: file, fs: f, kind: kind, name: name}, nil
}

func (f *FaultFS) Rename(oldname, newname string) error {
	if kind := kindOf(newname); kind != "" {
		if e := f.hit(kind + ".rename"); e != "" {
			return injected(kind+".rename", e, newname)
		}
	}
	return f.FS.Rename(oldname, newname)
}

func (f *FaultFS) SyncDir(dir string) error {
	if e := f.hit("dir.sync"); e != "" {
		return injected("dir.sync", e, dir)
	}
	return f.FS.SyncDir(dir)
}

type faultFile struct {
	File
	fs   *FaultFS
	kind string
	name string
}

func (w *faultFile) write(b []byte, do func([]byte) (int, error)) (int, error) {
	point := w.kind + ".write"
	e := w.fs.hit(point)
	switch e {
	case "":
		return do(b)
	case "torn":
		n, _ := do(b[:len(b)/2])
		return n, injected(point, e, w.name)
	}
	return 0, injected(point, e, w.name)
}

func (w *faultFile) Write(b []byte) (int, error) { return w.write(b, w.File.Write) }

// Unwrap is the file underneath (for the hole skipping of the search after damage).
func (w *faultFile) Unwrap() File { return w.File }

func (w *faultFile) WriteAt(b []byte, off int64) (int, error) {
	return w.write(b, func(p []byte) (int, error) { return w.File.WriteAt(p, off) })
}

func (w *faultFile) Sync() error {
	if e := w.fs.hit(w.kind + ".sync"); e != "" {
		return injected(w.kind+".sync", e, w.name)
	}
	return w.File.Sync()
}
