package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/zkd-io/zkd/jute"
)

// seekData is lseek's SEEK_DATA (Linux, and the BSDs' and macOS's value too).
const seekData = 3

// DamageError is damage in the txn log that recovery does not cut on its own: a bad entry
// (checksum, length, marker, header, a zeroed stretch) with valid entries after it, or log
// files whose zxids leave a hole. A crash tears only the last write, so valid entries after
// the damage mean acknowledged txns would go with a cut. Nothing was changed on disk.
type DamageError struct {
	File   string // path of the log file where the damage starts
	Offset int64  // where it starts: just past the last valid entry
	Why    string
	// LastGood is the zxid of the last valid entry before the damage (the snapshot's zxid
	// when there is none after it).
	LastGood int64
	// After counts the valid entries found after the damage, in File and later files, and
	// FirstAfter and Highest are the lowest and highest of their zxids: what a cut loses.
	After             int
	FirstAfter        int64
	Highest           int64
	Files             []string // File and every later log file: what a cut changes
	validEnd          int64    // File's length once cut
	cutRemovesAllFile bool     // File has no valid entry before the damage
}

func (e *DamageError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "storage: txn log damaged: %s at offset %d: %s; last valid zxid before it %#x", e.File, e.Offset, e.Why, e.LastGood)
	if e.After > 0 {
		fmt.Fprintf(&b, "; %d valid txns after it (zxid %#x..%#x) would be lost by cutting", e.After, e.FirstAfter, e.Highest)
	}
	return b.String()
}

// Unwrap makes a DamageError an ErrCorruptLog.
func (e *DamageError) Unwrap() error { return ErrCorruptLog }

// salvage is what salvageScan found: valid entries, each with a zxid above the one before.
type salvage struct {
	count       int
	first, last int64
}

func (s *salvage) add(o salvage) {
	if o.count == 0 {
		return
	}
	if s.count == 0 {
		s.first = o.first
	}
	s.count += o.count
	s.last = max(s.last, o.last)
}

// salvageScan looks for valid entries in name from offset from on, past any damage: at each
// offset an entry must have a checksum long with zero upper half, a length that fits, its
// 0x42 marker, a matching Adler-32 and a zxid above the last one found (above minZxid for
// the first). After a valid entry it goes on at the next one; elsewhere it moves a byte at
// a time, skipping zeros a block at a time (preallocation), so a zeroed stretch costs no
// more than reading it.
func salvageScan(fsys FS, name string, from, minZxid int64) (salvage, error) {
	var res salvage
	size, err := fsys.Stat(name)
	if err != nil {
		return res, fmt.Errorf("storage: read log: %w", err)
	}
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return res, fmt.Errorf("storage: read log: %w", err)
	}
	defer f.Close()
	const window = 1 << 20
	var (
		win   []byte // bytes [base, base+len(win)) of the file
		base  int64
		body  []byte
		floor = minZxid
	)
	// fill makes win hold [off, off+n) if the file has them.
	fill := func(off int64, n int) (bool, error) {
		if off >= base && off+int64(n) <= base+int64(len(win)) {
			return true, nil
		}
		if off+int64(n) > size {
			return false, nil
		}
		m := int(min(int64(max(n, window)), size-off))
		if cap(win) < m {
			win = make([]byte, m)
		}
		win = win[:m]
		if _, err := f.ReadAt(win, off); err != nil && !(errors.Is(err, io.EOF) && m > 0) {
			return false, fmt.Errorf("storage: read log: %w", err)
		}
		base = off
		return true, nil
	}
	off := max(from, 0)
	for off+12 < size {
		ok, err := fill(off, 12)
		if err != nil || !ok {
			return res, err
		}
		h := win[off-base:]
		if isZero(h[:12]) {
			// Skip the zero run: an entry's 12-byte header is never all zeros (its length is
			// not 0), so none starts more than 11 bytes before the run's end.
			i := off - base
			for i+8 <= int64(len(win)) && binary.LittleEndian.Uint64(win[i:]) == 0 {
				i += 8
			}
			next := base + i - 11
			if next <= off {
				next = off + 1
			}
			if next-off >= 1<<16 {
				// A long run: preallocation leaves a hole, which the file system can skip
				// without reading (a first read of 64 MiB of hole costs ~150 ms).
				d, ok := nextData(f, next)
				if !ok {
					return res, nil
				}
				next = max(next, d-11)
			}
			off = next
			continue
		}
		sum := binary.BigEndian.Uint64(h[:8])
		n := int64(int32(binary.BigEndian.Uint32(h[8:12])))
		if sum>>32 != 0 || n < jute.TxnHeaderSize || n+13 > size-off {
			off++
			continue
		}
		var mark [1]byte
		if _, err := f.ReadAt(mark[:], off+12+n); err != nil || mark[0] != eorMarker {
			off++
			continue
		}
		if int64(cap(body)) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := f.ReadAt(body, off+12); err != nil {
			return res, fmt.Errorf("storage: read log: %w", err)
		}
		zxid := int64(binary.BigEndian.Uint64(body[12:20]))
		if uint32(sum) != adler32.Checksum(body) || zxid <= floor {
			off++
			continue
		}
		res.add(salvage{count: 1, first: zxid, last: zxid})
		floor = zxid
		off += 13 + n
	}
	return res, nil
}

// nextData is where the data after off starts in f, skipping holes (SEEK_DATA); ok is false
// when only a hole follows. A file that cannot tell answers off.
func nextData(f File, off int64) (int64, bool) {
	for {
		u, ok := f.(interface{ Unwrap() File })
		if !ok {
			break
		}
		f = u.Unwrap()
	}
	osf, isOS := f.(*os.File)
	if !isOS {
		return off, true
	}
	d, err := osf.Seek(off, seekData)
	switch {
	case err == nil:
		return max(d, off), true
	case errors.Is(err, syscall.ENXIO):
		return 0, false
	}
	return off, true
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// sameEpochHole: do txns go missing between a log that ends at last and the next valid
// entry, next? Within an epoch zxids count up by one; a new epoch starts its own count, so
// across epochs nothing can be told.
func sameEpochHole(last, next int64) bool {
	return next>>32 == last>>32 && next > last+1
}

// damageAfter completes d with the valid entries after the damage: in files[i] from offset
// from, and in every later file.
func damageAfter(fsys FS, dir string, files []logFile, i int, from int64, d *DamageError) error {
	var after salvage
	for j := i; j < len(files); j++ {
		path := join(dir, files[j].name)
		d.Files = append(d.Files, path)
		start := int64(0)
		if j == i {
			start = from
		}
		s, err := salvageScan(fsys, path, start, max(d.LastGood, after.last))
		if err != nil {
			return err
		}
		after.add(s)
	}
	d.After, d.FirstAfter, d.Highest = after.count, after.first, max(after.last, d.LastGood)
	return nil
}

// CutAtDamage makes the log in dir what recovery keeps of it when d is accepted: the file
// where the damage starts ends at the last valid entry before it, and every later log file
// goes. Every file it changes is kept first, renamed to damaged.<tag>.<name> beside it (no
// reader of log.* or snapshot.* files sees it). It returns the kept names. Removals are
// made durable before the cut, so a crash in between never splices the later files onto a
// shorter log.
func CutAtDamage(fsys FS, dir string, d *DamageError, tag string) ([]string, error) {
	if len(d.Files) == 0 || d.Files[0] != d.File {
		return nil, fmt.Errorf("storage: cut at damage: %s is not the first of %v", d.File, d.Files)
	}
	var kept []string
	keep := func(path string) (string, error) {
		slash := strings.LastIndexByte(path, '/')
		to := path[:slash+1] + "damaged." + tag + "." + path[slash+1:]
		if err := fsys.Rename(path, to); err != nil {
			return "", fmt.Errorf("storage: cut at damage: keep %s: %w", path, err)
		}
		kept = append(kept, to)
		return to, nil
	}
	for _, later := range d.Files[1:] {
		if _, err := keep(later); err != nil {
			return kept, err
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		return kept, fmt.Errorf("storage: cut at damage: %w", err)
	}
	orig, err := keep(d.File)
	if err != nil {
		return kept, err
	}
	if !d.cutRemovesAllFile && d.validEnd > fileHeaderSize {
		if err := copyPrefix(fsys, orig, d.File, d.validEnd); err != nil {
			return kept, err
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		return kept, fmt.Errorf("storage: cut at damage: %w", err)
	}
	return kept, nil
}

// copyPrefix writes the first n bytes of src to a new file dst and fsyncs it.
func copyPrefix(fsys FS, src, dst string, n int64) error {
	in, err := fsys.OpenFile(src, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("storage: cut at damage: %w", err)
	}
	defer in.Close()
	buf := make([]byte, n)
	if _, err := in.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("storage: cut at damage: %w", err)
	}
	out, err := fsys.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("storage: cut at damage: %w", err)
	}
	_, err = out.WriteAt(buf, 0)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("storage: cut at damage: %w", err)
	}
	return nil
}

// DamageMark is the file in a log directory that says this server lost txns to damage and
// must not vote on its log until it has synced with a leader (see server's ensemble
// recovery). It holds the highest zxid the damaged log had reached.
const DamageMark = "zkd.damaged"

// WriteDamageMark records, durably, that the log in dir lost txns up to highest.
func WriteDamageMark(fsys FS, dir string, highest int64) error {
	path := join(dir, DamageMark)
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("storage: damage mark: %w", err)
	}
	_, err = f.WriteAt([]byte(fmt.Sprintf("highestZxid=%#x\n", highest)), 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("storage: damage mark: %w", err)
	}
	return nil
}

// ReadDamageMark returns the highest zxid a damage mark in dir records, and whether there
// is one.
func ReadDamageMark(fsys FS, dir string) (highest int64, ok bool, err error) {
	path := join(dir, DamageMark)
	size, err := fsys.Stat(path)
	if err != nil {
		if isNotExist(err) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("storage: damage mark: %w", err)
	}
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, false, fmt.Errorf("storage: damage mark: %w", err)
	}
	defer f.Close()
	b := make([]byte, min(size, 256))
	n, _ := f.ReadAt(b, 0)
	v, found := strings.CutPrefix(strings.TrimSpace(string(b[:n])), "highestZxid=0x")
	if found {
		if z, err := strconv.ParseInt(v, 16, 64); err == nil {
			return z, true, nil
		}
	}
	// The mark's presence is what counts; a damaged mark still marks.
	return 0, true, nil
}

// ClearDamageMark removes the damage mark in dir, durably.
func ClearDamageMark(fsys FS, dir string) error {
	if err := fsys.Remove(join(dir, DamageMark)); err != nil {
		if isNotExist(err) {
			return nil
		}
		return fmt.Errorf("storage: damage mark: %w", err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("storage: damage mark: %w", err)
	}
	return nil
}
