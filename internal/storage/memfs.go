package storage

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"math/rand/v2"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
)

// ErrCrashed is returned by a MemFS file handle opened before the last Crash.
var ErrCrashed = errors.New("storage: file handle invalidated by crash")

// MemFS is an in-memory FS that models durability the way POSIX promises it, so tests can
// check crash safety:
//
//   - file contents are durable only up to the last File.Sync of that file;
//   - creations, renames and removals are durable only after SyncDir of the parent;
//   - directories (MkdirAll) are durable at once, to keep the model small.
//
// Crash throws away everything not durable; CrashTorn keeps a random prefix of each file's
// unsynced writes, as a power cut in the middle of write-back would. Fault hooks make the
// next Sync, SyncDir or Write fail and flip bytes on "disk".
//
// All methods are safe for concurrent use.
type MemFS struct {
	mu      sync.Mutex
	gen     int                  // bumped by Crash; stale handles fail
	files   map[string]*memInode // current namespace
	durable map[string]*memInode // namespace as of the last SyncDir of each directory
	dirs    map[string]bool

	failSync    error
	failSyncDir error
	failWrite   error
	syncs       int
}

type memInode struct {
	data    []byte // what reads see
	synced  []byte // what survives a crash; never aliases data
	dirtyLo int    // data[:dirtyLo] == synced[:dirtyLo]
}

var _ FS = (*MemFS)(nil)

// NewMemFS returns an empty MemFS with only the root directory.
func NewMemFS() *MemFS {
	return &MemFS{
		files:   map[string]*memInode{},
		durable: map[string]*memInode{},
		dirs:    map[string]bool{"/": true, ".": true},
	}
}

func clean(name string) string { return path.Clean(name) }

func pathErr(op, name string, err error) error {
	return &iofs.PathError{Op: op, Path: name, Err: err}
}

func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[path.Dir(name)] {
		return nil, pathErr("open", name, iofs.ErrNotExist)
	}
	if m.dirs[name] {
		return nil, pathErr("open", name, errors.New("is a directory"))
	}
	ino, ok := m.files[name]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, iofs.ErrExist)
	case !ok && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, iofs.ErrNotExist)
	case !ok:
		ino = &memInode{}
		m.files[name] = ino
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	h := &memFile{fs: m, ino: ino, name: name, gen: m.gen,
		read:   acc == os.O_RDONLY || acc == os.O_RDWR,
		write:  acc == os.O_WRONLY || acc == os.O_RDWR,
		append: flag&os.O_APPEND != 0}
	if flag&os.O_TRUNC != 0 && h.write {
		ino.truncate(0)
	}
	return h, nil
}

func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = clean(oldname), clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	ino, ok := m.files[oldname]
	if !ok {
		return pathErr("rename", oldname, iofs.ErrNotExist)
	}
	if !m.dirs[path.Dir(newname)] {
		return pathErr("rename", newname, iofs.ErrNotExist)
	}
	delete(m.files, oldname)
	m.files[newname] = ino
	return nil
}

func (m *MemFS) Remove(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; !ok {
		return pathErr("remove", name, iofs.ErrNotExist)
	}
	delete(m.files, name)
	return nil
}

func (m *MemFS) ReadDir(dir string) ([]string, error) {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return nil, pathErr("readdir", dir, iofs.ErrNotExist)
	}
	var names []string
	for n := range m.files {
		if path.Dir(n) == dir {
			names = append(names, path.Base(n))
		}
	}
	for d := range m.dirs {
		if d != dir && path.Dir(d) == dir {
			names = append(names, path.Base(d))
		}
	}
	sort.Strings(names)
	return names, nil
}

func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := dir; !m.dirs[d]; d = path.Dir(d) {
		if _, ok := m.files[d]; ok {
			return pathErr("mkdir", d, errors.New("not a directory"))
		}
		m.dirs[d] = true
	}
	return nil
}

func (m *MemFS) Stat(name string) (int64, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	ino, ok := m.files[name]
	if !ok {
		return 0, pathErr("stat", name, iofs.ErrNotExist)
	}
	return int64(len(ino.data)), nil
}

func (m *MemFS) SyncDir(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return pathErr("syncdir", dir, iofs.ErrNotExist)
	}
	if err := m.failSyncDir; err != nil {
		m.failSyncDir = nil
		return pathErr("syncdir", dir, err)
	}
	for n := range m.durable {
		if path.Dir(n) == dir {
			delete(m.durable, n)
		}
	}
	for n, ino := range m.files {
		if path.Dir(n) == dir {
			m.durable[n] = ino
		}
	}
	return nil
}

// Crash simulates a power cut: every file loses the writes made since its last Sync, and
// the namespace reverts to what SyncDir made durable. Open handles stop working.
func (m *MemFS) Crash() { m.crash(nil) }

// CrashTorn is Crash, except that each file keeps a prefix of its unsynced contents, cut
// at an offset chosen by rng: the writes that happened to reach the disk.
func (m *MemFS) CrashTorn(rng *rand.Rand) { m.crash(rng) }

func (m *MemFS) crash(rng *rand.Rand) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.files = make(map[string]*memInode, len(m.durable))
	// Iterate in name order so a seeded rng gives the same result every run.
	names := make([]string, 0, len(m.durable))
	for n := range m.durable {
		names = append(names, n)
	}
	sort.Strings(names)
	seen := map[*memInode]bool{}
	for _, n := range names {
		ino := m.durable[n]
		m.files[n] = ino
		if seen[ino] {
			continue
		}
		seen[ino] = true
		content := ino.synced
		if rng != nil && ino.dirtyLo < len(ino.data) {
			cut := ino.dirtyLo + rng.IntN(len(ino.data)-ino.dirtyLo+1)
			torn := append([]byte(nil), ino.data[:cut]...)
			if cut < len(ino.synced) {
				torn = append(torn, ino.synced[cut:]...)
			}
			content = torn
		}
		ino.data = append([]byte(nil), content...)
		ino.synced = append([]byte(nil), content...)
		ino.dirtyLo = len(content)
	}
}

// FailNextSync makes the next File.Sync return err without making anything durable.
func (m *MemFS) FailNextSync(err error) {
	m.mu.Lock()
	m.failSync = err
	m.mu.Unlock()
}

// FailNextSyncDir makes the next SyncDir return err without making anything durable.
func (m *MemFS) FailNextSyncDir(err error) {
	m.mu.Lock()
	m.failSyncDir = err
	m.mu.Unlock()
}

// FailNextWrite makes the next Write or WriteAt return err without writing anything.
func (m *MemFS) FailNextWrite(err error) {
	m.mu.Lock()
	m.failWrite = err
	m.mu.Unlock()
}

// Corrupt flips every bit of the byte at off in name, in both the live and durable
// contents: bit rot on the platter.
func (m *MemFS) Corrupt(name string, off int64) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	ino, ok := m.files[name]
	if !ok {
		return pathErr("corrupt", name, iofs.ErrNotExist)
	}
	if off < 0 || off >= int64(len(ino.data)) {
		return fmt.Errorf("storage: corrupt %s: offset %d out of range (size %d)", name, off, len(ino.data))
	}
	ino.data[off] ^= 0xff
	if off < int64(len(ino.synced)) {
		ino.synced[off] ^= 0xff
	}
	return nil
}

// Syncs reports how many File.Sync calls have succeeded.
func (m *MemFS) Syncs() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.syncs
}

// ReadFile returns a copy of a file's current contents.
func (m *MemFS) ReadFile(name string) ([]byte, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	ino, ok := m.files[name]
	if !ok {
		return nil, pathErr("read", name, iofs.ErrNotExist)
	}
	return append([]byte(nil), ino.data...), nil
}

// WriteFile creates or replaces name with data, durably (file and directory entry).
func (m *MemFS) WriteFile(name string, data []byte) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[path.Dir(name)] {
		return pathErr("write", name, iofs.ErrNotExist)
	}
	ino := &memInode{data: append([]byte(nil), data...), synced: append([]byte(nil), data...), dirtyLo: len(data)}
	m.files[name] = ino
	m.durable[name] = ino
	return nil
}

func (ino *memInode) truncate(n int) {
	if n < len(ino.data) {
		ino.data = ino.data[:n]
	} else {
		ino.data = append(ino.data, make([]byte, n-len(ino.data))...)
	}
	ino.dirtyLo = min(ino.dirtyLo, n)
}

func (ino *memInode) writeAt(p []byte, off int) {
	if end := off + len(p); end > len(ino.data) {
		if end <= cap(ino.data) {
			old := len(ino.data)
			ino.data = ino.data[:end]
			clear(ino.data[old:])
		} else {
			ino.data = append(ino.data, make([]byte, end-len(ino.data))...)
		}
	}
	copy(ino.data[off:], p)
	ino.dirtyLo = min(ino.dirtyLo, off)
}

func (ino *memInode) sync() {
	k := min(ino.dirtyLo, len(ino.synced), len(ino.data))
	ino.synced = append(ino.synced[:k], ino.data[k:]...)
	ino.dirtyLo = len(ino.data)
}

type memFile struct {
	fs     *MemFS
	ino    *memInode
	name   string
	gen    int
	pos    int64
	read   bool
	write  bool
	append bool
	closed bool
}

// check must be called with fs.mu held.
func (f *memFile) check(op string) error {
	if f.closed {
		return pathErr(op, f.name, os.ErrClosed)
	}
	if f.gen != f.fs.gen {
		return pathErr(op, f.name, ErrCrashed)
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	n, err := f.readAt(p, f.pos)
	f.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.readAt(p, off)
}

func (f *memFile) readAt(p []byte, off int64) (int, error) {
	if err := f.check("read"); err != nil {
		return 0, err
	}
	if !f.read {
		return 0, pathErr("read", f.name, errors.New("bad file descriptor"))
	}
	if off < 0 {
		return 0, pathErr("read", f.name, errors.New("negative offset"))
	}
	if off >= int64(len(f.ino.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.ino.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	off := f.pos
	if f.append {
		off = int64(len(f.ino.data))
	}
	n, err := f.writeAt(p, off)
	f.pos = off + int64(n)
	return n, err
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.writeAt(p, off)
}

func (f *memFile) writeAt(p []byte, off int64) (int, error) {
	if err := f.check("write"); err != nil {
		return 0, err
	}
	if !f.write {
		return 0, pathErr("write", f.name, errors.New("bad file descriptor"))
	}
	if off < 0 {
		return 0, pathErr("write", f.name, errors.New("negative offset"))
	}
	if err := f.fs.failWrite; err != nil {
		f.fs.failWrite = nil
		return 0, pathErr("write", f.name, err)
	}
	f.ino.writeAt(p, int(off))
	return len(p), nil
}

func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("seek"); err != nil {
		return 0, err
	}
	var base int64
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = f.pos
	case io.SeekEnd:
		base = int64(len(f.ino.data))
	default:
		return 0, pathErr("seek", f.name, errors.New("bad whence"))
	}
	if base+offset < 0 {
		return 0, pathErr("seek", f.name, errors.New("negative position"))
	}
	f.pos = base + offset
	return f.pos, nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("sync"); err != nil {
		return err
	}
	if err := f.fs.failSync; err != nil {
		f.fs.failSync = nil
		return pathErr("sync", f.name, err)
	}
	f.ino.sync()
	f.fs.syncs++
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("truncate"); err != nil {
		return err
	}
	if !f.write {
		return pathErr("truncate", f.name, errors.New("bad file descriptor"))
	}
	if size < 0 {
		return pathErr("truncate", f.name, errors.New("negative size"))
	}
	f.ino.truncate(int(size))
	return nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, os.ErrClosed)
	}
	f.closed = true
	return nil
}

// String helps test failure messages.
func (m *MemFS) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	names := make([]string, 0, len(m.files))
	for n := range m.files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s (%d bytes, %d synced)\n", n, len(m.files[n].data), len(m.files[n].synced))
	}
	return b.String()
}
