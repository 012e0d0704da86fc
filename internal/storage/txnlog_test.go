package storage

import (
	"bytes"
	"errors"
	"fmt"
	"hash/adler32"
	"log/slog"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

const vdir = "/data/version-2"

var quiet = slog.New(slog.DiscardHandler)

// mkTxn builds txn bytes: a TxnHeader for zxid and n payload bytes derived from zxid and
// salt, so entries from different histories differ.
func mkTxn(zxid int64, n int, salt byte) []byte {
	h := jute.TxnHeader{ClientID: 0x100, Cxid: int32(zxid), Zxid: zxid, Time: 1700000000000 + zxid, Type: jute.OpSetData}
	b := jute.Marshal(&h)
	for i := 0; i < n; i++ {
		b = append(b, byte(zxid*31+int64(i))^salt)
	}
	return b
}

type entry struct {
	zxid int64
	txn  []byte
}

func readAll(t *testing.T, fsys FS, dir string, from int64) ([]entry, int64, error) {
	t.Helper()
	var out []entry
	last, err := ReadLog(fsys, dir, from, func(z int64, txn []byte) error {
		out = append(out, entry{z, append([]byte(nil), txn...)})
		return nil
	})
	return out, last, err
}

func openLog(t *testing.T, fsys FS, pre int64) *Log {
	t.Helper()
	l, err := OpenLog(fsys, vdir, LogOptions{PreAllocSize: pre, ForceSync: true, Logger: quiet})
	if err != nil {
		t.Fatalf("OpenLog: %v", err)
	}
	return l
}

func appendAll(t *testing.T, l *Log, es []entry) {
	t.Helper()
	for _, e := range es {
		if err := l.Append(e.zxid, e.txn); err != nil {
			t.Fatalf("Append(%#x): %v", e.zxid, err)
		}
	}
}

func mkEntries(from, to int64, salt byte) []entry {
	var es []entry
	for z := from; z <= to; z++ {
		es = append(es, entry{z, mkTxn(z, int(z%7)*9, salt)})
	}
	return es
}

func sameEntries(t *testing.T, got, want []entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].zxid != want[i].zxid || !bytes.Equal(got[i].txn, want[i].txn) {
			t.Fatalf("entry %d: got zxid %#x (%d bytes), want %#x (%d bytes)", i,
				got[i].zxid, len(got[i].txn), want[i].zxid, len(want[i].txn))
		}
	}
}

func logNames(t *testing.T, fsys FS) []string {
	t.Helper()
	files, err := listLogs(fsys, vdir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.name)
	}
	return names
}

func TestNames(t *testing.T) {
	if got := LogName(0x3c); got != "log.3c" {
		t.Errorf("LogName = %q", got)
	}
	if got := SnapName(0x100000000); got != "snapshot.100000000" {
		t.Errorf("SnapName = %q", got)
	}
	for _, tc := range []struct {
		name string
		zxid int64
		ok   bool
	}{
		{"log.1", 1, true}, {"log.3C", 0x3c, true}, {"log.", 0, false}, {"log.0x1", 0, false},
		{"log.-1", 0, false}, {"log.1.tmp", 0, false}, {"snapshot.1", 0, false},
		{"log.ffffffffffffffff", 0, false}, {"log.7fffffffffffffff", 1<<63 - 1, true},
	} {
		z, ok := ParseLogName(tc.name)
		if z != tc.zxid || ok != tc.ok {
			t.Errorf("ParseLogName(%q) = %#x, %v", tc.name, z, ok)
		}
	}
	for _, tc := range []struct {
		name, suffix string
		zxid         int64
		ok           bool
	}{
		{"snapshot.3c", "", 0x3c, true}, {"snapshot.3c.gz", ".gz", 0x3c, true},
		{"snapshot.3c.snappy", ".snappy", 0x3c, true}, {"snapshot.3c.tmp", "", 0, false},
		{"tmp.snapshot.3c", "", 0, false}, {"snapshot.", "", 0, false},
	} {
		z, suf, ok := ParseSnapName(tc.name)
		if z != tc.zxid || ok != tc.ok || suf != tc.suffix {
			t.Errorf("ParseSnapName(%q) = %#x, %q, %v", tc.name, z, suf, ok)
		}
	}
}

func TestLogRoundTripAcrossRolls(t *testing.T) {
	m := NewMemFS()
	l := openLog(t, m, 256)
	all := mkEntries(1, 100, 0)
	for i, e := range all {
		appendAll(t, l, []entry{e})
		if i%7 == 6 {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if e.zxid == 30 || e.zxid == 61 {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(logNames(t, m)), "[log.1 log.1f log.3e]"; got != want {
		t.Fatalf("files %s, want %s", got, want)
	}
	got, last, err := readAll(t, m, vdir, 0)
	if err != nil || last != 100 {
		t.Fatalf("ReadLog: last %#x, %v", last, err)
	}
	sameEntries(t, got, all)

	// Starting points: inside a file, at a file boundary, at the end.
	for _, from := range []int64{0, 1, 29, 30, 31, 45, 61, 62, 99, 100, 500} {
		got, last, err := readAll(t, m, vdir, from)
		if err != nil {
			t.Fatal(err)
		}
		want := all[min(from, 100):]
		sameEntries(t, got, want)
		if last != max(from, 100) {
			t.Errorf("from %d: last %d", from, last)
		}
	}

	// Reopen and continue: the next append starts a new file, as ZooKeeper does.
	l = openLog(t, m, 256)
	if l.LastZxid() != 100 {
		t.Fatalf("LastZxid after reopen = %#x", l.LastZxid())
	}
	more := mkEntries(101, 110, 0)
	appendAll(t, l, more)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, _, err = readAll(t, m, vdir, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, got, append(all, more...))
	if n := len(logNames(t, m)); n != 4 {
		t.Errorf("%d files after reopen, want 4", n)
	}
}

func TestLogAppendChecks(t *testing.T) {
	l := openLog(t, NewMemFS(), 4096)
	defer l.Close()
	if err := l.Append(5, mkTxn(5, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(5, mkTxn(5, 0, 0)); !errors.Is(err, ErrZxidOrder) {
		t.Errorf("repeated zxid: %v", err)
	}
	if err := l.Append(7, mkTxn(6, 0, 0)); !errors.Is(err, ErrBadTxn) {
		t.Errorf("mismatched header: %v", err)
	}
	if err := l.Append(7, []byte{1, 2, 3}); !errors.Is(err, ErrBadTxn) {
		t.Errorf("short txn: %v", err)
	}
}

// The golden log is decoded entry by entry, and writing the same txns reproduces its bytes
// and its preallocated size.
func TestGoldenLog(t *testing.T) {
	head, err := os.ReadFile("testdata/log.1.head")
	if err != nil {
		t.Fatal(err)
	}
	ann, err := os.ReadFile("testdata/06-txnlog.txt")
	if err != nil {
		t.Fatal(err)
	}
	type want struct{ off, zxid int64 }
	var wants []want
	re := regexp.MustCompile(`(?m)^### entry \d+ at file offset 0x([0-9a-f]+): zxid=0x([0-9a-f]+)`)
	for _, mm := range re.FindAllSubmatch(ann, -1) {
		off, _ := strconv.ParseInt(string(mm[1]), 16, 64)
		z, _ := strconv.ParseInt(string(mm[2]), 16, 64)
		wants = append(wants, want{off, z})
	}
	if len(wants) != 60 {
		t.Fatalf("annotation lists %d entries, want 60", len(wants))
	}

	m := NewMemFS()
	m.MkdirAll(vdir, 0o755)
	m.WriteFile(vdir+"/log.1", head)
	var got []want
	var txns []entry
	res, err := scanLog(m, vdir+"/log.1", func(z int64, txn []byte, off int64) error {
		got = append(got, want{off, z})
		txns = append(txns, entry{z, append([]byte(nil), txn...)})
		return nil
	})
	if err != nil || res.stop != stopEnd || res.why != "zero length" {
		t.Fatalf("scan: %+v %v", res, err)
	}
	if fmt.Sprint(got) != fmt.Sprint(wants) {
		t.Fatalf("entries\n got %v\nwant %v", got, wants)
	}
	entries, last, err := readAll(t, m, vdir, 0)
	if err != nil || last != 0x3c || len(entries) != 60 {
		t.Fatalf("ReadLog: %d entries, last %#x, %v", len(entries), last, err)
	}
	var hdr jute.TxnHeader
	if _, err := jute.UnmarshalPrefix(entries[0].txn, &hdr); err != nil || hdr.Type != jute.OpCreateSession || hdr.ClientID != 0x100000a4ed70000 {
		t.Errorf("first txn header %+v, %v", hdr, err)
	}

	// Re-encode on a real file system, where 64 MiB of preallocation is a sparse file.
	dir := t.TempDir()
	l, err := OpenLog(OSFS{}, dir, LogOptions{ForceSync: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, txns)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(dir + "/log.1")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 67108880 {
		t.Errorf("file size %d, want 67108880 (16 + 64 MiB)", len(out))
	}
	if !bytes.Equal(out[:len(head)], head) {
		t.Errorf("re-encoded log differs from golden head")
	}
}

func TestPreallocation(t *testing.T) {
	m := NewMemFS()
	l := openLog(t, m, 1024)
	size := func() int64 {
		s, err := m.Stat(vdir + "/log.1")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	appendAll(t, l, []entry{{1, mkTxn(1, 10, 0)}})
	l.Sync()
	if s := size(); s != 16+1024 {
		t.Errorf("first size %d, want %d", s, 16+1024)
	}
	// Data far from the end: no growth. Within 4 KiB of it: one more step.
	l.Close()
	m = NewMemFS()
	l = openLog(t, m, 8192)
	z := int64(1)
	for ; l.CurrentSize() < 8192+16-padSlack; z++ {
		if z > 1 {
			if s := size(); s != 16+8192 {
				t.Fatalf("zxid %d at %d: size %d, want %d", z, l.CurrentSize(), s, 16+8192)
			}
		}
		appendAll(t, l, []entry{{z, mkTxn(z, 100, 0)}})
		l.Sync()
	}
	appendAll(t, l, []entry{{z, mkTxn(z, 100, 0)}})
	l.Sync()
	if s := size(); s != 16+2*8192 {
		t.Fatalf("after crossing the slack: size %d, want %d", s, 16+2*8192)
	}
	for z++; z < 200; z++ {
		appendAll(t, l, []entry{{z, mkTxn(z, 100, 0)}})
		l.Sync()
		if s := size(); s < l.CurrentSize() {
			t.Fatalf("zxid %d: size %d below data %d", z, s, l.CurrentSize())
		}
	}
	l.Close()
	got, _, err := readAll(t, m, vdir, 0)
	if err != nil || len(got) != 199 {
		t.Fatalf("%d entries, %v", len(got), err)
	}
	if got, want := padTo(16, 16, 64<<20), int64(16+64<<20); got != want {
		t.Errorf("padTo fresh file = %d, want %d", got, want)
	}
	if got, want := padTo(5000, 1040, 1024), int64(5120); got != want {
		t.Errorf("padTo past end = %d, want %d", got, want)
	}
}

func TestGroupCommitOneFsync(t *testing.T) {
	m := NewMemFS()
	l := openLog(t, m, 4096)
	defer l.Close()
	appendAll(t, l, mkEntries(1, 5, 0))
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	before := m.Syncs()
	appendAll(t, l, mkEntries(6, 500, 0))
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := m.Syncs() - before; n != 1 {
		t.Errorf("%d fsyncs for one group commit, want 1", n)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := m.Syncs() - before; n != 1 {
		t.Errorf("Sync with nothing new fsynced again")
	}
}

func TestAppendDoesNotAllocate(t *testing.T) {
	l := openLog(t, NewMemFS(), 4096)
	defer l.Close()
	txn := mkTxn(1, 200, 0)
	z := int64(1)
	next := func() {
		// Reuse one buffer: only the zxid in the header changes.
		for i := 0; i < 8; i++ {
			txn[12+i] = byte(z >> (56 - 8*i))
		}
		if err := l.Append(z, txn); err != nil {
			t.Fatal(err)
		}
		z++
	}
	for i := 0; i < 6000; i++ { // grow the buffer past the flush threshold once
		next()
	}
	if a := testing.AllocsPerRun(1000, next); a != 0 {
		t.Errorf("Append allocates %.2f times per entry", a)
	}
}

// crashCase appends synced and unsynced entries, crashes, reopens and checks that what
// survives is a prefix of what was appended, no shorter than what was synced, then that
// appends continue after it.
func TestCrashKeepsSyncedPrefix(t *testing.T) {
	for seed := uint64(0); seed < 120; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			m := NewMemFS()
			var all []entry
			synced := 0
			z := int64(0)
			for gen := 0; gen < 3; gen++ {
				l := openLog(t, m, 512)
				if l.LastZxid() != z {
					t.Fatalf("gen %d: LastZxid %#x, want %#x", gen, l.LastZxid(), z)
				}
				for b := rng.IntN(6); b >= 0; b-- {
					n := 1 + rng.IntN(10)
					batch := mkEntries(z+1, z+int64(n), byte(gen))
					appendAll(t, l, batch)
					all = append(all, batch...)
					z += int64(n)
					if rng.IntN(4) == 0 {
						if err := l.Roll(); err != nil {
							t.Fatal(err)
						}
					} else if err := l.Sync(); err != nil {
						t.Fatal(err)
					}
					synced = len(all)
				}
				// Unsynced tail: some written to the file, some only buffered.
				batch := mkEntries(z+1, z+int64(1+rng.IntN(10)), byte(gen))
				appendAll(t, l, batch[:len(batch)/2])
				l.mu.Lock()
				l.flush()
				l.mu.Unlock()
				appendAll(t, l, batch[len(batch)/2:])
				all = append(all, batch...)
				if rng.IntN(2) == 0 {
					m.CrashTorn(rng)
				} else {
					m.Crash()
				}
				got, last, err := readAll(t, m, vdir, 0)
				if err != nil {
					// Torn garbage before recovery may look like corruption.
					if !errors.Is(err, ErrCorruptLog) {
						t.Fatal(err)
					}
				}
				l2 := openLog(t, m, 512)
				got, last, err = readAll(t, m, vdir, 0)
				if err != nil {
					t.Fatalf("gen %d: after recovery: %v", gen, err)
				}
				if len(got) < synced || len(got) > len(all) {
					t.Fatalf("gen %d: %d entries survive, synced %d, appended %d", gen, len(got), synced, len(all))
				}
				sameEntries(t, got, all[:len(got)])
				if last != l2.LastZxid() || (len(got) > 0 && last != got[len(got)-1].zxid) {
					t.Fatalf("gen %d: ReadLog last %#x, LastZxid %#x", gen, last, l2.LastZxid())
				}
				all = all[:len(got)]
				synced = len(all)
				z = l2.LastZxid()
				l2.Close()
			}
		})
	}
}

// A torn last entry, cut at every byte, recovers to the entry before it, with or without
// preallocated zeros after the cut, and appends continue readably.
func TestTornTailEveryOffset(t *testing.T) {
	m := NewMemFS()
	l := openLog(t, m, -1)
	es := mkEntries(1, 5, 0)
	appendAll(t, l, es)
	l.Close()
	full, _ := m.ReadFile(vdir + "/log.1")
	lastOff := int64(len(full)) - int64(entryOverhead+len(es[4].txn))
	for cut := lastOff; cut < int64(len(full)); cut++ {
		for _, pad := range []int{0, 300} {
			m := NewMemFS()
			m.MkdirAll(vdir, 0o755)
			content := append(append([]byte(nil), full[:cut]...), make([]byte, pad)...)
			m.WriteFile(vdir+"/log.1", content)
			l := openLog(t, m, -1)
			if l.LastZxid() != 4 {
				t.Fatalf("cut %d pad %d: LastZxid %d", cut, pad, l.LastZxid())
			}
			next := entry{5, mkTxn(5, 3, 0x55)}
			appendAll(t, l, []entry{next})
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, _, err := readAll(t, m, vdir, 0)
			if err != nil {
				t.Fatalf("cut %d pad %d: %v", cut, pad, err)
			}
			sameEntries(t, got, append(append([]entry(nil), es[:4]...), next))
		}
	}
}

// snapshotFiles returns every file under vdir and its bytes.
func snapshotFiles(t *testing.T, m *MemFS) map[string]string {
	t.Helper()
	names, err := m.ReadDir(vdir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range names {
		b, err := m.ReadFile(vdir + "/" + n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(b)
	}
	return out
}

// openDamaged opens the log expecting damage, and checks that nothing changed on disk.
func openDamaged(t *testing.T, m *MemFS, pre int64) *DamageError {
	t.Helper()
	before := snapshotFiles(t, m)
	l, err := OpenLog(m, vdir, LogOptions{PreAllocSize: pre, ForceSync: true, Logger: quiet})
	if err == nil {
		l.Close()
		t.Fatal("OpenLog found no damage")
	}
	var d *DamageError
	if !errors.As(err, &d) || !errors.Is(err, ErrCorruptLog) {
		t.Fatalf("OpenLog: %v, want a DamageError", err)
	}
	if after := snapshotFiles(t, m); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("OpenLog changed the files of a damaged log")
	}
	return d
}

func buildThreeFiles(t *testing.T) (*MemFS, []entry) {
	m := NewMemFS()
	l := openLog(t, m, 128)
	es := mkEntries(1, 30, 0)
	appendAll(t, l, es[:10])
	l.Roll()
	appendAll(t, l, es[10:20])
	l.Roll()
	appendAll(t, l, es[20:])
	l.Close()
	return m, es
}

// A flipped byte anywhere in an entry with valid entries after it is damage: OpenLog names
// the file, the offset and the zxids at stake, and changes nothing. CutAtDamage then cuts
// the log back to the entry before it, keeping every file it changes, and appends continue
// after the cut.
func TestFlippedByteIsDamage(t *testing.T) {
	_, es := buildThreeFiles(t)
	// Offsets of entries 11..20 in log.b.
	off := int64(fileHeaderSize)
	var offs []int64
	for _, e := range es[10:20] {
		offs = append(offs, off)
		off += int64(entryOverhead + len(e.txn))
	}
	for k := 3; k < 10; k += 3 { // entry zxid 11+k is damaged
		e := es[10+k]
		for pos := int64(0); pos < int64(entryOverhead+len(e.txn)); pos++ {
			m, es := buildThreeFiles(t)
			if err := m.Corrupt(vdir+"/log.b", offs[k]+pos); err != nil {
				t.Fatal(err)
			}
			d := openDamaged(t, m, 128)
			if d.File != vdir+"/log.b" || d.Offset != offs[k] || d.LastGood != e.zxid-1 || d.Highest != 30 {
				t.Fatalf("k %d pos %d: %v", k, pos, d)
			}
			// The damaged entry's own zxid may survive in the search (a flipped checksum
			// byte leaves the rest of it for a later match): at least every later one does.
			if d.After < int(30-e.zxid) || d.FirstAfter > e.zxid+1 || d.FirstAfter < e.zxid {
				t.Fatalf("k %d pos %d: after %d from %#x", k, pos, d.After, d.FirstAfter)
			}
			if got := fmt.Sprint(d.Files); got != fmt.Sprint([]string{vdir + "/log.b", vdir + "/log.15"}) {
				t.Fatalf("files at stake %s", got)
			}
			orig := snapshotFiles(t, m)
			kept, err := CutAtDamage(m, vdir, d, "t1")
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range kept {
				name := k[len(vdir)+1+len("damaged.t1."):]
				if b, _ := m.ReadFile(k); string(b) != orig[name] {
					t.Fatalf("%s does not keep %s", k, name)
				}
			}
			l := openLog(t, m, 128)
			wantLast := e.zxid - 1
			if l.LastZxid() != wantLast {
				t.Fatalf("k %d pos %d: LastZxid %d, want %d", k, pos, l.LastZxid(), wantLast)
			}
			if names := fmt.Sprint(logNames(t, m)); names != "[log.1 log.b]" {
				t.Fatalf("files after the cut: %s", names)
			}
			next := mkEntries(wantLast+1, wantLast+3, 0x77)
			appendAll(t, l, next)
			l.Close()
			got, _, err := readAll(t, m, vdir, 0)
			if err != nil {
				t.Fatal(err)
			}
			sameEntries(t, got, append(append([]entry(nil), es[:wantLast]...), next...))
		}
	}
}

// A cut interrupted between keeping the later files and cutting the damaged one never
// leaves the later files spliced onto a shorter log: what a crash leaves is a prefix.
func TestCutAtDamageInterrupted(t *testing.T) {
	m, es := buildThreeFiles(t)
	// Damage the body of zxid 15 in log.b.
	off := int64(fileHeaderSize)
	for _, e := range es[10:14] {
		off += int64(entryOverhead + len(e.txn))
	}
	m.Corrupt(vdir+"/log.b", off+12+5)
	d := openDamaged(t, m, 128)
	m.FailNextSyncDir(errors.New("power is failing"))
	if _, err := CutAtDamage(m, vdir, d, "t1"); err == nil {
		t.Fatal("CutAtDamage succeeded despite the failed directory sync")
	}
	m.Crash()
	l, err := OpenLog(m, vdir, LogOptions{PreAllocSize: 128, Logger: quiet})
	if err != nil {
		// The crash undid the renames: still the same damage, still nothing lost.
		var d2 *DamageError
		if !errors.As(err, &d2) || d2.Offset != d.Offset || d2.Highest != 30 {
			t.Fatalf("after the crash: %v", err)
		}
		return
	}
	defer l.Close()
	got, _, err := readAll(t, m, vdir, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, got, es[:len(got)])
	if len(got) > 14 {
		t.Fatalf("%d entries read past the damage", len(got))
	}
}

// Damage to an entry in the only file is damage at every byte, with entries after it or
// last: a flipped checksum, body, length or marker byte leaves a whole entry that no torn
// write leaves (a write cut short leaves zeros where its bytes did not land).
func TestFlippedFramingSingleFile(t *testing.T) {
	m0 := NewMemFS()
	l := openLog(t, m0, -1)
	es := mkEntries(1, 6, 0)
	appendAll(t, l, es)
	l.Close()
	full, _ := m0.ReadFile(vdir + "/log.1")
	start := int64(fileHeaderSize)
	for _, e := range es[:3] {
		start += int64(entryOverhead + len(e.txn))
	}
	n := int64(entryOverhead + len(es[3].txn))
	for pos := start; pos < start+n; pos++ {
		for _, tail := range []bool{false, true} {
			m := NewMemFS()
			m.MkdirAll(vdir, 0o755)
			content := full
			if tail {
				content = full[:start+n]
			}
			m.WriteFile(vdir+"/log.1", content)
			m.Corrupt(vdir+"/log.1", pos)
			if !tail {
				if d := openDamaged(t, m, -1); d.LastGood != 3 || d.Highest != 6 || d.Offset != start {
					t.Fatalf("flip at %d: %v", pos, d)
				}
				continue
			}
			// Its checksum, body, length or marker: written whole, then changed. No torn
			// write looks like that (see TestTornTailEveryOffset for those).
			if d := openDamaged(t, m, -1); d.LastGood != 3 || d.After != 0 || d.Offset != start {
				t.Fatalf("flip at %d of the last entry: %v", pos, d)
			}
		}
	}
	// A damaged header with valid entries after it is damage too.
	m := NewMemFS()
	m.MkdirAll(vdir, 0o755)
	m.WriteFile(vdir+"/log.1", full)
	m.Corrupt(vdir+"/log.1", 1)
	if d := openDamaged(t, m, -1); d.Offset != 0 || d.After != 6 || d.LastGood != 0 {
		t.Fatalf("bad header: %v", d)
	}
}

// A length field set to 0x7fffffff in the middle of a preallocated file (the case)
// reads as an entry running past the end, and zeros in the middle of a file read as its
// end; with entries after them both are damage.
func TestImpossibleLengthAndZerosAreDamage(t *testing.T) {
	build := func() (*MemFS, int64, int64) {
		m := NewMemFS()
		l := openLog(t, m, 4096)
		es := mkEntries(1, 40, 0)
		appendAll(t, l, es)
		l.Close()
		off := int64(fileHeaderSize)
		for _, e := range es[:20] {
			off += int64(entryOverhead + len(e.txn))
		}
		return m, off, int64(entryOverhead + len(es[20].txn))
	}
	m, off, _ := build()
	f, _ := m.OpenFile(vdir+"/log.1", os.O_RDWR, 0)
	f.WriteAt([]byte{0x7f, 0xff, 0xff, 0xff}, off+8)
	f.Close()
	if d := openDamaged(t, m, 4096); d.LastGood != 20 || d.After != 19 || d.FirstAfter != 22 || d.Highest != 40 {
		t.Fatalf("length 0x7fffffff: %v (after %d from %#x)", d, d.After, d.FirstAfter)
	}
	m, off, n := build()
	f, _ = m.OpenFile(vdir+"/log.1", os.O_RDWR, 0)
	f.WriteAt(make([]byte, n), off)
	f.Close()
	if d := openDamaged(t, m, 4096); d.LastGood != 20 || d.FirstAfter != 22 || d.Highest != 40 || d.Why != "zeros in the middle of the log" {
		t.Fatalf("zeroed entry: %v", d)
	}
}

// A log file that starts past the next zxid of the epoch leaves a hole: damage. One that
// starts in a later epoch, or carries on after a torn tail, does not.
func TestHoleBetweenFiles(t *testing.T) {
	m, _ := buildThreeFiles(t)
	m.Remove(vdir + "/log.b")
	d := openDamaged(t, m, 128)
	if d.File != vdir+"/log.15" || d.LastGood != 10 || d.FirstAfter != 21 || d.Highest != 30 {
		t.Fatalf("missing log.b: %v", d)
	}
	// Covered by the snapshot: replay starts at log.15.
	l, err := OpenLog(m, vdir, LogOptions{PreAllocSize: 128, Logger: quiet, FromZxid: 20})
	if err != nil {
		t.Fatalf("hole behind the snapshot: %v", err)
	}
	l.Close()

	m = NewMemFS()
	l = openLog(t, m, 128)
	appendAll(t, l, mkEntries(1, 10, 0))
	l.Close()
	l = openLog(t, m, 128)
	appendAll(t, l, mkEntries(1<<32+1, 1<<32+5, 0))
	l.Close()
	l = openLog(t, m, 128)
	if l.LastZxid() != 1<<32+5 {
		t.Fatalf("a new epoch: LastZxid %#x", l.LastZxid())
	}
	l.Close()
}

func TestTruncateAfter(t *testing.T) {
	m := NewMemFS()
	l := openLog(t, m, 128)
	es := mkEntries(1, 30, 0)
	appendAll(t, l, es[:10])
	l.Roll()
	appendAll(t, l, es[10:20])
	l.Roll()
	appendAll(t, l, es[20:27])
	l.Sync()
	appendAll(t, l, es[27:]) // buffered only
	if err := l.TruncateAfter(15); err != nil {
		t.Fatal(err)
	}
	if l.LastZxid() != 15 {
		t.Fatalf("LastZxid %d", l.LastZxid())
	}
	if names := fmt.Sprint(logNames(t, m)); names != "[log.1 log.b]" {
		t.Fatalf("files %s", names)
	}
	next := mkEntries(16, 18, 0x99)
	appendAll(t, l, next)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	want := append(append([]entry(nil), es[:15]...), next...)
	got, _, err := readAll(t, m, vdir, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, got, want)

	// The truncation is durable: the forgotten history does not come back.
	m.Crash()
	l2 := openLog(t, m, 128)
	got, _, err = readAll(t, m, vdir, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, got, want)

	if err := l2.TruncateAfter(0); err != nil {
		t.Fatal(err)
	}
	if l2.LastZxid() != 0 || len(logNames(t, m)) != 0 {
		t.Fatalf("TruncateAfter(0): LastZxid %d, files %v", l2.LastZxid(), logNames(t, m))
	}
	if err := l2.TruncateAfter(0); err != nil {
		t.Fatal(err)
	}
	l2.Close()
}

func TestLogFailuresAreSticky(t *testing.T) {
	boom := errors.New("boom")
	for _, which := range []string{"write", "sync"} {
		m := NewMemFS()
		l := openLog(t, m, 4096)
		appendAll(t, l, mkEntries(1, 3, 0))
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		appendAll(t, l, mkEntries(4, 5, 0))
		if which == "write" {
			m.FailNextWrite(boom)
		} else {
			m.FailNextSync(boom)
		}
		if err := l.Sync(); !errors.Is(err, boom) {
			t.Fatalf("%s: Sync = %v", which, err)
		}
		if err := l.Append(6, mkTxn(6, 0, 0)); err == nil {
			t.Fatalf("%s: Append after failure succeeded", which)
		}
		if err := l.Sync(); err == nil {
			t.Fatalf("%s: Sync after failure succeeded", which)
		}
		l.Close()
		m.Crash()
		l = openLog(t, m, 4096)
		got, _, err := readAll(t, m, vdir, 0)
		if err != nil || len(got) != 3 {
			t.Fatalf("%s: after crash %d entries, %v", which, len(got), err)
		}
		l.Close()
	}
}

func TestReadLogCallbackError(t *testing.T) {
	m := NewMemFS()
	l := openLog(t, m, 4096)
	appendAll(t, l, mkEntries(1, 10, 0))
	l.Close()
	stop := errors.New("stop")
	n := 0
	_, err := ReadLog(m, vdir, 0, func(z int64, _ []byte) error {
		n++
		if z == 4 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 4 {
		t.Fatalf("err %v after %d entries", err, n)
	}
	if _, err := ReadLog(m, "/nope", 0, nil); err != nil {
		t.Fatalf("missing dir: %v", err)
	}
}

func TestOSFSLogCrashFree(t *testing.T) {
	dir := t.TempDir() + "/version-2"
	l, err := OpenLog(OSFS{}, dir, LogOptions{PreAllocSize: 4096, ForceSync: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	es := mkEntries(1, 50, 0)
	appendAll(t, l, es[:25])
	l.Roll()
	appendAll(t, l, es[25:])
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, _, err := readAll(t, OSFS{}, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, got, es)
	// Tear the tail on disk.
	raw, err := os.ReadFile(dir + "/log.1a")
	if err != nil {
		t.Fatal(err)
	}
	end := bytes.LastIndexByte(raw, eorMarker) // the last entry's marker, before the padding
	if err := os.Truncate(dir+"/log.1a", int64(end-3)); err != nil {
		t.Fatal(err)
	}
	l, err = OpenLog(OSFS{}, dir, LogOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if l.LastZxid() != 49 {
		t.Fatalf("LastZxid %d", l.LastZxid())
	}
	l.Close()
}

func BenchmarkLogAppend(b *testing.B) {
	l, err := OpenLog(OSFS{}, b.TempDir(), LogOptions{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	txn := mkTxn(1, 100, 0)
	b.SetBytes(int64(len(txn)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		z := int64(i + 1)
		for k := 0; k < 8; k++ {
			txn[12+k] = byte(z >> (56 - 8*k))
		}
		if err := l.Append(z, txn); err != nil {
			b.Fatal(err)
		}
		if i%100 == 99 {
			if err := l.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkReadLog(b *testing.B) {
	dir := b.TempDir()
	l, _ := OpenLog(OSFS{}, dir, LogOptions{Logger: quiet})
	es := mkEntries(1, 10000, 0)
	for _, e := range es {
		l.Append(e.zxid, e.txn)
	}
	l.Close()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		n := 0
		if _, err := ReadLog(OSFS{}, dir, 0, func(int64, []byte) error { n++; return nil }); err != nil || n != len(es) {
			b.Fatal(n, err)
		}
	}
}

// TestReadLogAhead checks the pipelined reader against ReadLog: the same entries in the same
// order, across batches and files, and errors from either side stop it.
func TestReadLogAhead(t *testing.T) {
	m := NewMemFS()
	l := openLog(t, m, 0)
	want := mkEntries(1, 1000, 0)
	appendAll(t, l, want[:400])
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, want[400:])
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	copyEntry := func(z int64, txn []byte) (entry, error) { return entry{z, bytes.Clone(txn)}, nil }
	var got []entry
	last, err := ReadLogAhead(m, vdir, 100, copyEntry, func(e entry) error { got = append(got, e); return nil })
	if err != nil || last != 1000 {
		t.Fatalf("last %#x, err %v", last, err)
	}
	sameEntries(t, got, want[100:])

	stop := errors.New("stop")
	n := 0
	_, err = ReadLogAhead(m, vdir, 0, copyEntry, func(entry) error {
		if n++; n == 700 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 700 {
		t.Fatalf("apply error: %v after %d", err, n)
	}
	bad := errors.New("bad txn")
	n = 0
	_, err = ReadLogAhead(m, vdir, 0, func(z int64, txn []byte) (entry, error) {
		if z == 555 {
			return entry{}, bad
		}
		return copyEntry(z, txn)
	}, func(e entry) error { n++; return nil })
	if !errors.Is(err, bad) || n != 554 {
		t.Fatalf("decode error: %v after %d applied", err, n)
	}
}

// A whole last entry with a bad checksum is a torn write only when a sector of it before
// its marker's holds nothing but zeros (a lost sector); a small entry within one sector
// never is.
func TestTornEvidence(t *testing.T) {
	m := NewMemFS()
	l := openLog(t, m, -1)
	big := entry{1, mkTxn(1, 1500, 0)}
	appendAll(t, l, []entry{big})
	l.Close()
	full, _ := m.ReadFile(vdir + "/log.1")
	// Zero the entry's second sector, between its header's and its marker's (a lost sector).
	lost := append([]byte(nil), full...)
	for i := sectorSize; i < 2*sectorSize; i++ {
		lost[i] = 0
	}
	m.WriteFile(vdir+"/log.1", lost)
	if torn, _, err := tornEvidence(m, vdir+"/log.1", fileHeaderSize); err != nil || !torn {
		t.Fatalf("a lost first sector: torn %v, %v", torn, err)
	}
	flipped := append([]byte(nil), full...)
	flipped[900] ^= 1
	m.WriteFile(vdir+"/log.1", flipped)
	if torn, zxid, err := tornEvidence(m, vdir+"/log.1", fileHeaderSize); err != nil || torn || zxid != 1 {
		t.Fatalf("a flipped bit: torn %v zxid %d, %v", torn, zxid, err)
	}
}

// The search for valid entries after damage skips a preallocated hole without reading it,
// and still finds an entry written after the hole.
func TestSalvageAcrossHole(t *testing.T) {
	dir := t.TempDir()
	l, err := OpenLog(OSFS{}, dir, LogOptions{PreAllocSize: -1, ForceSync: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, mkEntries(1, 3, 0))
	l.Close()
	path := dir + "/log.1"
	b, _ := os.ReadFile(path)
	// An entry for zxid 9, 4 MiB on, after a hole, then a hole to the end.
	var e []byte
	txn := mkTxn(9, 20, 0)
	e = binaryEntry(e, txn)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(e, 4<<20)
	f.Truncate(64 << 20)
	f.Close()
	s, err := salvageScan(OSFS{}, path, int64(len(b)), 3)
	if err != nil || s.count != 1 || s.first != 9 {
		t.Fatalf("salvage across a hole: %+v %v", s, err)
	}
	if _, err := OpenLog(OSFS{}, dir, LogOptions{Logger: quiet}); !errors.As(err, new(*DamageError)) {
		t.Fatalf("zeros then an entry: %v, want damage", err)
	}
}

func binaryEntry(b, txn []byte) []byte {
	b = append(b, 0, 0, 0, 0)
	sum := adler32.Checksum(txn)
	b = append(b, byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum))
	n := len(txn)
	b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	b = append(b, txn...)
	return append(b, 'B')
}
