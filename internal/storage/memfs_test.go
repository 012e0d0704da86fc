package storage

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"
)

func writeFile(t *testing.T, m *MemFS, name string, data []byte, sync bool) File {
	t.Helper()
	f, err := m.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func TestMemFSCrash(t *testing.T) {
	m := NewMemFS()
	m.MkdirAll("/d", 0o755)
	f := writeFile(t, m, "/d/a", []byte("hello"), true)
	// Not durable: the directory entry was never synced.
	if m.Crash(); len(mustReadDir(t, m, "/d")) != 0 {
		t.Fatal("file survived without SyncDir")
	}
	if _, err := f.Write([]byte("x")); !errors.Is(err, ErrCrashed) {
		t.Fatalf("stale handle: %v", err)
	}

	f = writeFile(t, m, "/d/a", []byte("hello"), true)
	m.SyncDir("/d")
	f.Write([]byte(" world"))
	f.WriteAt([]byte("J"), 0)
	m.Crash()
	if b, _ := m.ReadFile("/d/a"); string(b) != "hello" {
		t.Fatalf("after crash %q", b)
	}

	// Rename and remove need SyncDir too.
	m.Rename("/d/a", "/d/b")
	m.Crash()
	if names := mustReadDir(t, m, "/d"); len(names) != 1 || names[0] != "a" {
		t.Fatalf("unsynced rename survived: %v", names)
	}
	m.Rename("/d/a", "/d/b")
	m.SyncDir("/d")
	m.Remove("/d/b")
	m.Crash()
	if names := mustReadDir(t, m, "/d"); len(names) != 1 || names[0] != "b" {
		t.Fatalf("unsynced remove survived: %v", names)
	}

	// Truncation without sync is undone.
	f, _ = m.OpenFile("/d/b", os.O_RDWR, 0)
	f.Truncate(2)
	m.Crash()
	if b, _ := m.ReadFile("/d/b"); string(b) != "hello" {
		t.Fatalf("after unsynced truncate %q", b)
	}
}

func TestMemFSTorn(t *testing.T) {
	base := []byte("0123456789")
	extra := []byte("abcdefghij")
	seen := map[int]bool{}
	for seed := uint64(0); seed < 100; seed++ {
		m := NewMemFS()
		m.MkdirAll("/d", 0o755)
		f := writeFile(t, m, "/d/a", base, true)
		m.SyncDir("/d")
		f.Write(extra)
		m.CrashTorn(rand.New(rand.NewPCG(seed, 1)))
		b, _ := m.ReadFile("/d/a")
		if len(b) < len(base) || !bytes.Equal(b, append(append([]byte(nil), base...), extra...)[:len(b)]) {
			t.Fatalf("seed %d: torn contents %q", seed, b)
		}
		seen[len(b)] = true
	}
	if len(seen) < 5 {
		t.Fatalf("torn crashes cut at only %d places", len(seen))
	}
}

func TestMemFSFaults(t *testing.T) {
	m := NewMemFS()
	m.MkdirAll("/d", 0o755)
	f := writeFile(t, m, "/d/a", []byte("abc"), false)
	boom := errors.New("boom")
	m.FailNextWrite(boom)
	if _, err := f.Write([]byte("x")); !errors.Is(err, boom) {
		t.Fatalf("write: %v", err)
	}
	if _, err := f.Write([]byte("d")); err != nil {
		t.Fatalf("second write: %v", err)
	}
	m.FailNextSync(boom)
	if err := f.Sync(); !errors.Is(err, boom) {
		t.Fatalf("sync: %v", err)
	}
	if err := m.Corrupt("/d/a", 1); err != nil {
		t.Fatal(err)
	}
	if b, _ := m.ReadFile("/d/a"); string(b) != "a\x9dcd" {
		t.Fatalf("corrupt: %q", b)
	}
	if err := m.Corrupt("/d/a", 10); err == nil {
		t.Fatal("corrupt out of range succeeded")
	}
	if _, err := m.OpenFile("/d/a", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0); !errors.Is(err, os.ErrExist) {
		t.Fatalf("O_EXCL: %v", err)
	}
	if _, err := m.OpenFile("/nope/a", os.O_RDWR|os.O_CREATE, 0); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing dir: %v", err)
	}
	r, _ := m.OpenFile("/d/a", os.O_RDONLY, 0)
	if _, err := r.Write([]byte("x")); err == nil {
		t.Fatal("write on read-only handle")
	}
	all, _ := io.ReadAll(r)
	if len(all) != 4 {
		t.Fatalf("read %q", all)
	}
	r.Close()
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	// Sparse write fills with zeros.
	f.WriteAt([]byte{9}, 10)
	if b, _ := m.ReadFile("/d/a"); len(b) != 11 || b[5] != 0 || b[10] != 9 {
		t.Fatalf("sparse: %v", b)
	}
}

func mustReadDir(t *testing.T, m *MemFS, dir string) []string {
	t.Helper()
	names, err := m.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}
