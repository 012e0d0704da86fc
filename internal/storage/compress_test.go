package storage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestParseSnapCompression(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  SnapCompression
		known bool
	}{
		{"", SnapUncompressed, true},
		{"gz", SnapGzip, true},
		{"GZ", SnapGzip, true},
		{"snappy", SnapSnappy, true},
		{"SnApPy", SnapSnappy, true},
		// StreamMode.fromString falls back to CHECKED for anything else.
		{"gzip", SnapUncompressed, false},
		{"zstd", SnapUncompressed, false},
		{" gz", SnapUncompressed, false},
	} {
		got, known := ParseSnapCompression(tc.in)
		if got != tc.want || known != tc.known {
			t.Errorf("ParseSnapCompression(%q) = %q, %v; want %q, %v", tc.in, got, known, tc.want, tc.known)
		}
	}
	for c, want := range map[SnapCompression]string{
		SnapUncompressed: "snapshot.100000000", SnapGzip: "snapshot.100000000.gz", SnapSnappy: "snapshot.100000000.snappy",
	} {
		if got := SnapFileName(0x100000000, c); got != want {
			t.Errorf("SnapFileName(%q) = %q, want %q", c, got, want)
		}
		if z, suffix, ok := ParseSnapName(want); !ok || z != 0x100000000 || suffix != c.Suffix() {
			t.Errorf("ParseSnapName(%q) = %#x, %q, %v", want, z, suffix, ok)
		}
	}
	if _, err := NewCompressedSnapshotWriter(NewMemFS(), vdir, 1, "zstd"); err == nil {
		t.Error("a writer for an unknown compression was made")
	}
}

// bigTree is testTree with enough data to span several 32 KiB snappy blocks.
func bigTree(tag string) *snapContents {
	c := testTree(tag)
	for i := 0; i < 50; i++ {
		c.nodes = append(c.nodes, SnapNode{
			Path: fmt.Sprintf("/big/n%02d", i), Data: bytes.Repeat([]byte(fmt.Sprint(tag, i)), 700), ACLKey: -1,
		})
	}
	return c
}

// writeCompressed writes c as a snapshot at zxid in format comp.
func writeCompressed(t *testing.T, fsys FS, zxid int64, c *snapContents, comp SnapCompression) {
	t.Helper()
	w, err := NewCompressedSnapshotWriter(fsys, vdir, zxid, comp)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(c.nodes); i += 7 {
		if err := w.WriteNodes(c.nodes[i:min(i+7, len(c.nodes))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(c.sessions, c.acls, c.digest.Zxid, c.digest.Digest); err != nil {
		t.Fatal(err)
	}
}

// TestCompressedSnapshotWriter checks that a compressed snapshot decompresses to exactly the
// uncompressed file (seals over the uncompressed bytes), under the right name, and reads
// back through the same paths recovery uses.
func TestCompressedSnapshotWriter(t *testing.T) {
	c := bigTree("z")
	m := NewMemFS()
	writeCompressed(t, m, 0x42, c, SnapUncompressed)
	plain, err := m.ReadFile(vdir + "/snapshot.42")
	if err != nil {
		t.Fatal(err)
	}
	if len(plain) < 3*xerialBlockSize {
		t.Fatalf("test tree too small: %d bytes", len(plain))
	}
	for _, comp := range []SnapCompression{SnapGzip, SnapSnappy} {
		t.Run(string(comp), func(t *testing.T) {
			m := NewMemFS()
			writeCompressed(t, m, 0x42, c, comp)
			names, _ := m.ReadDir(vdir)
			want := "snapshot.42" + comp.Suffix()
			if fmt.Sprint(names) != "["+want+"]" {
				t.Fatalf("directory holds %v, want [%s]", names, want)
			}
			raw, _ := m.ReadFile(vdir + "/" + want)
			if len(raw) >= len(plain) {
				t.Errorf("%s snapshot is %d bytes, uncompressed %d", comp, len(raw), len(plain))
			}
			var dec io.Reader
			if comp == SnapGzip {
				zr, err := gzip.NewReader(bytes.NewReader(raw))
				if err != nil {
					t.Fatal(err)
				}
				zr.Multistream(false)
				dec = zr
			} else {
				checkXerialFraming(t, raw)
				if dec, err = NewSnappyReader(bytes.NewReader(raw)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := io.ReadAll(dec)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, plain) {
				t.Fatalf("decompressed %d bytes differ from the uncompressed snapshot (%d bytes) at %d",
					len(got), len(plain), firstDiff(got, plain))
			}

			sf, read, attempts, err := loadNewest(m)
			if err != nil || sf.Name != want || attempts != 1 {
				t.Fatalf("LoadNewest: %v %d attempts %v", sf, attempts, err)
			}
			if !reflect.DeepEqual(read.nodes, c.nodes) || !reflect.DeepEqual(read.sessions, c.sessions) ||
				!reflect.DeepEqual(read.acls, c.acls) || *read.digest != *c.digest {
				t.Errorf("read back differs")
			}
		})
	}
}

// checkXerialFraming walks SnappyOutputStream's framing: the header, then chunks each
// holding one block of at most 32 KiB, all full but the last.
func checkXerialFraming(t *testing.T, raw []byte) {
	t.Helper()
	want := append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
	if !bytes.HasPrefix(raw, want) {
		t.Fatalf("header % x, want % x", raw[:min(len(raw), 16)], want)
	}
	rest := raw[xerialHeaderSize:]
	var sizes []int
	for len(rest) > 0 {
		if len(rest) < 4 {
			t.Fatalf("%d bytes after the last chunk", len(rest))
		}
		n := int(binary.BigEndian.Uint32(rest))
		if n > len(rest)-4 {
			t.Fatalf("chunk of %d bytes, %d left", n, len(rest)-4)
		}
		sr, err := newSnappyReader(bytes.NewReader(append(append([]byte(nil), raw[:xerialHeaderSize]...), rest[:4+n]...)))
		if err != nil {
			t.Fatal(err)
		}
		block, err := io.ReadAll(sr)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(block))
		rest = rest[4+n:]
	}
	for i, s := range sizes {
		if s > xerialBlockSize || (i < len(sizes)-1 && s != xerialBlockSize) || s == 0 {
			t.Fatalf("block sizes %v: want full 32 KiB blocks then a non-empty last one", sizes)
		}
	}
}

func loadNewest(fsys FS) (SnapshotFile, *snapContents, int, error) {
	var c *snapContents
	attempts := 0
	sf, err := LoadNewest(fsys, vdir, quiet, func(SnapshotFile) SnapshotHandler {
		attempts++
		c = &snapContents{}
		return c.handler()
	})
	return sf, c, attempts, err
}

// TestMixedSuffixes: the newest snapshot is chosen by zxid whatever its format, a damaged
// compressed one falls back to the next, and autopurge counts and removes all formats.
func TestMixedSuffixes(t *testing.T) {
	m := NewMemFS()
	formats := []SnapCompression{SnapSnappy, SnapUncompressed, SnapGzip, SnapSnappy, SnapGzip, SnapUncompressed}
	for i, comp := range formats {
		writeCompressed(t, m, int64(0x10*(i+1)), testTree(fmt.Sprint("t", i)), comp)
	}
	sf, c, _, err := loadNewest(m)
	if err != nil || sf.Name != "snapshot.60" || string(c.nodes[1].Data) != "t5" {
		t.Fatalf("newest: %v %v", sf, err)
	}
	m.Remove(vdir + "/snapshot.60")
	sf, c, _, err = loadNewest(m)
	if err != nil || sf.Name != "snapshot.50.gz" || string(c.nodes[1].Data) != "t4" {
		t.Fatalf("newest gz: %v %v", sf, err)
	}
	// Damage inside the gzip stream: the older snappy one is read instead.
	size, _ := m.Stat(vdir + "/snapshot.50.gz")
	m.Corrupt(vdir+"/snapshot.50.gz", size/2)
	sf, c, attempts, err := loadNewest(m)
	if err != nil || sf.Name != "snapshot.40.snappy" || string(c.nodes[1].Data) != "t3" || attempts != 2 {
		t.Fatalf("fallback: %v %d attempts %v", sf, attempts, err)
	}
	// A compressed file without its magic fails the quick check and is not tried.
	m.WriteFile(vdir+"/snapshot.70.snappy", []byte("not snappy at all"))
	m.WriteFile(vdir+"/snapshot.80.gz", []byte{})
	if sf, _, _, err := loadNewest(m); err != nil || sf.Name != "snapshot.40.snappy" {
		t.Fatalf("with invalid newer files: %v %v", sf, err)
	}

	l := openLog(t, m, -1)
	for _, start := range []int64{1, 0x15, 0x25, 0x35, 0x45} {
		appendAll(t, l, mkEntries(start, start+3, 0))
		l.Roll()
	}
	l.Close()
	// The newest three valid snapshots are 0x50.gz (its magic is intact), 0x40.snappy and
	// 0x30.gz; invalid newer ones are kept and not counted.
	if err := Purge(m, vdir, vdir, 3); err != nil {
		t.Fatal(err)
	}
	names, _ := m.ReadDir(vdir)
	want := "[log.25 log.35 log.45 snapshot.30.gz snapshot.40.snappy snapshot.50.gz snapshot.70.snappy snapshot.80.gz]"
	if fmt.Sprint(names) != want {
		t.Fatalf("after purge:\n got %v\nwant %s", names, want)
	}
}

// TestCompressedSnapshotCrash: a crash while a compressed snapshot is written leaves only
// temporary files, which are not snapshots and which CleanTemp removes; a failed fsync
// leaves nothing.
func TestCompressedSnapshotCrash(t *testing.T) {
	for _, comp := range []SnapCompression{SnapGzip, SnapSnappy} {
		t.Run(string(comp), func(t *testing.T) {
			m := NewMemFS()
			c := bigTree("c")
			w, err := NewCompressedSnapshotWriter(m, vdir, 0x60, comp)
			if err != nil {
				t.Fatal(err)
			}
			w.WriteNodes(c.nodes)
			m.SyncDir(vdir)
			m.Crash()
			if files, _ := FindSnapshots(m, vdir); len(files) != 0 {
				t.Fatalf("snapshot after crash mid-write: %v", files)
			}
			if err := CleanTemp(m, vdir); err != nil {
				t.Fatal(err)
			}
			if names, _ := m.ReadDir(vdir); len(names) != 0 {
				t.Fatalf("CleanTemp left %v", names)
			}

			w, _ = NewCompressedSnapshotWriter(m, vdir, 0x80, comp)
			w.WriteNodes(c.nodes)
			m.FailNextSync(errors.New("disk gone"))
			if err := w.Finish(c.sessions, c.acls, 0, 0); err == nil {
				t.Fatal("Finish succeeded despite fsync failure")
			}
			if names, _ := m.ReadDir(vdir); len(names) != 0 {
				t.Fatalf("failed Finish left %v", names)
			}

			writeCompressed(t, m, 0x90, c, comp)
			m.Crash()
			if _, got, _, err := loadNewest(m); err != nil || len(got.nodes) != len(c.nodes) {
				t.Fatalf("after a crash following Finish: %v", err)
			}
			for _, n := range func() []string { n, _ := m.ReadDir(vdir); return n }() {
				if strings.HasPrefix(n, tempPrefix) {
					t.Errorf("temporary file %s left", n)
				}
			}
		})
	}
}
