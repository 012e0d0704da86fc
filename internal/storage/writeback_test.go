package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWritebackRequests: a snapshot's bytes are handed to the kernel for writeback in
// consecutive ranges of at least writebackEvery, each once, and the file is unchanged.
func TestWritebackRequests(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "snap"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type rng struct{ off, n int64 }
	var got []rng
	w := &writeback{f: f, start: func(_ File, off, n int64) {
		got = append(got, rng{off, n})
		startWriteback(f, off, n) // the real call must not fail the write either
	}}
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB, as the snapshot's buffer writes
	const total = 20<<20 + 100
	var want bytes.Buffer
	for written := 0; written < total; {
		p := chunk[:min(len(chunk), total-written)]
		if _, err := w.Write(p); err != nil {
			t.Fatal(err)
		}
		want.Write(p)
		written += len(p)
	}
	if len(got) != 2 {
		t.Fatalf("%d writeback requests %v for %d bytes, want 2", len(got), got, total)
	}
	var next int64
	for _, r := range got {
		if r.off != next || r.n < writebackEvery {
			t.Fatalf("requests %v: not consecutive ranges of at least %d", got, writebackEvery)
		}
		next = r.off + r.n
	}
	b, err := os.ReadFile(f.Name())
	if err != nil || !bytes.Equal(b, want.Bytes()) {
		t.Fatalf("file differs from what was written (%v)", err)
	}
}
