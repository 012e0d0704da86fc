package storage

import (
	"errors"
	"fmt"
	"testing"
)

func TestPurge(t *testing.T) {
	m := NewMemFS()
	for _, z := range []int64{0x10, 0x20, 0x30, 0x40, 0x50} {
		writeSnap(t, m, vdir, z, testTree("p"), 10)
	}
	// Newer but invalid (fails the quick check): neither counted nor removed.
	m.WriteFile(vdir+"/snapshot.60", []byte("garbage"))
	l := openLog(t, m, -1)
	for _, start := range []int64{1, 0x15, 0x25, 0x35, 0x45, 0x55} {
		appendAll(t, l, mkEntries(start, start+3, 0))
		l.Roll()
	}
	l.Close()
	m.WriteFile(vdir+"/unrelated", []byte("x"))

	if err := Purge(m, vdir, vdir, 2); !errors.Is(err, ErrPurgeRetain) {
		t.Fatalf("retain 2: %v", err)
	}
	if err := Purge(m, vdir, vdir, 3); err != nil {
		t.Fatal(err)
	}
	names, _ := m.ReadDir(vdir)
	want := "[log.25 log.35 log.45 log.55 snapshot.30 snapshot.40 snapshot.50 snapshot.60 unrelated]"
	if fmt.Sprint(names) != want {
		t.Fatalf("after purge:\n got %v\nwant %s", names, want)
	}
	// Replay from the oldest kept snapshot still works.
	got, _, err := readAll(t, m, vdir, 0x30)
	if err != nil || len(got) != 12 || got[0].zxid != 0x35 {
		t.Fatalf("replay from 0x30: %d entries, %v", len(got), err)
	}
	// Idempotent.
	if err := Purge(m, vdir, vdir, 3); err != nil {
		t.Fatal(err)
	}
	if names, _ := m.ReadDir(vdir); fmt.Sprint(names) != want {
		t.Fatalf("second purge: %v", names)
	}
}

func TestPurgeLogStartsAtSnapshot(t *testing.T) {
	m := NewMemFS()
	for _, z := range []int64{0x10, 0x20, 0x30} {
		writeSnap(t, m, vdir, z, testTree("p"), 10)
	}
	m.WriteFile(vdir+"/log.1", nil)
	m.WriteFile(vdir+"/log.10", nil)
	m.WriteFile(vdir+"/log.11", nil)
	if err := Purge(m, vdir, vdir, 3); err != nil {
		t.Fatal(err)
	}
	names, _ := m.ReadDir(vdir)
	if fmt.Sprint(names) != "[log.10 log.11 snapshot.10 snapshot.20 snapshot.30]" {
		t.Fatalf("got %v", names)
	}
	// No valid snapshot: nothing is removed.
	m2 := NewMemFS()
	m2.MkdirAll(vdir, 0o755)
	m2.WriteFile(vdir+"/log.1", nil)
	if err := Purge(m2, vdir, vdir, 3); err != nil {
		t.Fatal(err)
	}
	if names, _ := m2.ReadDir(vdir); len(names) != 1 {
		t.Fatalf("got %v", names)
	}
}
