package storage

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"

	"github.com/zkd-io/zkd/jute"
)

// DefaultPreAllocSize is zookeeper.preAllocSize's default (64 MiB).
const DefaultPreAllocSize = 64 << 20

const (
	fileHeaderSize = 16
	entryOverhead  = 8 + 4 + 1 // checksum, length, 0x42
	eorMarker      = 'B'
	// padSlack is how close to the preallocated end a write may come before the file is
	// extended again (FilePadding).
	padSlack = 4096
	// flushThreshold bounds the append buffer: a caller that appends without syncing still
	// gets its data written out in chunks of this size.
	flushThreshold = 1 << 20
	// maxRetainedBuf is the largest append buffer kept between syncs.
	maxRetainedBuf = 4 << 20
)

var (
	// ErrCorruptLog reports a log entry whose checksum does not match, a bad file header, or
	// a malformed entry in the middle of the log.
	ErrCorruptLog = errors.New("storage: corrupt txn log")
	// ErrZxidOrder reports an Append whose zxid does not follow the last one.
	ErrZxidOrder = errors.New("storage: zxid not greater than the last logged zxid")
	// ErrBadTxn reports txn bytes that do not start with a TxnHeader for the given zxid.
	ErrBadTxn = errors.New("storage: txn bytes do not match zxid")
	// ErrLogClosed is returned by a closed Log.
	ErrLogClosed = errors.New("storage: txn log closed")
)

// LogOptions configure a Log.
type LogOptions struct {
	// PreAllocSize is the preallocation step in bytes; 0 means DefaultPreAllocSize and a
	// negative value disables preallocation.
	PreAllocSize int64
	// ForceSync makes Sync call fsync (zoo.cfg forceSync=yes). Without it, Sync only
	// hands the data to the OS.
	ForceSync bool
	// Logger receives recovery warnings; nil means slog.Default().
	Logger *slog.Logger
	// FromZxid is the zxid of the snapshot replay starts from: recovery reads the files
	// from the one holding FromZxid+1 on, and leaves older ones alone.
	FromZxid int64
}

// Log appends to ZooKeeper's version-2/log.<zxid> files. It is safe for concurrent use;
// methods run one at a time.
//
// Durability contract: an entry is durable once a Sync that followed its Append has
// returned nil (with ForceSync). After a failed write or fsync the Log refuses all further
// writes, since the file's state is unknown; reopen it to recover.
type Log struct {
	mu   sync.Mutex
	fs   FS
	dir  string
	pre  int64
	sync bool
	log  *slog.Logger

	f        File // current file; nil means the next Append starts a new one
	name     string
	filePos  int64  // bytes of f written so far
	allocEnd int64  // preallocated size of f
	buf      []byte // pending bytes, to be written at filePos
	unsynced bool   // f has writes not yet fsynced
	dirDirty bool   // f's directory entry not yet fsynced
	lastZxid int64
	err      error // sticky write failure
	closed   bool
}

// OpenLog opens the txn log in dir (a version-2 directory, created if missing), recovering
// it first: the log files replay needs are scanned.
//
//   - A torn tail (a bad or short entry with nothing valid after it) ends its file: the file
//     is truncated there and reading goes on with the next file, as ZooKeeper does.
//   - Damage (a bad entry, a bad header or zeros with valid entries after them, or a hole in
//     the zxids between files) is returned as a *DamageError and nothing is changed: what
//     to cut is for an operator (CutAtDamage) or the ensemble to decide.
//   - Files left without any valid entry are removed.
//
// The next Append always starts a new file, named by its zxid, as ZooKeeper does after a
// restart.
func OpenLog(fsys FS, dir string, opts LogOptions) (*Log, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	pre := opts.PreAllocSize
	if pre == 0 {
		pre = DefaultPreAllocSize
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: create log dir: %w", err)
	}
	last, err := recoverLog(fsys, dir, opts.FromZxid, logger)
	if err != nil {
		return nil, err
	}
	return &Log{fs: fsys, dir: dir, pre: pre, sync: opts.ForceSync, log: logger, lastZxid: last}, nil
}

// LastZxid returns the zxid of the last appended entry, or of the last valid entry found by
// recovery or left by TruncateAfter; 0 for an empty log.
func (l *Log) LastZxid() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastZxid
}

// CurrentSize returns the size of the current log file's contents, including unwritten
// appends (not the preallocated padding); 0 when no file is open.
func (l *Log) CurrentSize() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0
	}
	return l.filePos + int64(len(l.buf))
}

// Append buffers one entry. txn is the serialized TxnHeader, record and optional digest; its
// header must carry zxid, and zxid must exceed every zxid logged before. The entry reaches the
// file at the next Sync (or earlier if the buffer grows large) and is durable after Sync.
func (l *Log) Append(zxid int64, txn []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if zxid <= l.lastZxid {
		return fmt.Errorf("%w: %#x after %#x", ErrZxidOrder, zxid, l.lastZxid)
	}
	if len(txn) < jute.TxnHeaderSize || len(txn) > 1<<31-1 {
		return fmt.Errorf("%w: txn of %d bytes", ErrBadTxn, len(txn))
	}
	if got := int64(binary.BigEndian.Uint64(txn[12:20])); got != zxid {
		return fmt.Errorf("%w: header has %#x, want %#x", ErrBadTxn, got, zxid)
	}
	if l.f == nil {
		if err := l.create(zxid); err != nil {
			return err
		}
	}
	l.buf = binary.BigEndian.AppendUint64(l.buf, uint64(adler32.Checksum(txn)))
	l.buf = binary.BigEndian.AppendUint32(l.buf, uint32(len(txn)))
	l.buf = append(l.buf, txn...)
	l.buf = append(l.buf, eorMarker)
	l.lastZxid = zxid
	if len(l.buf) >= flushThreshold {
		return l.flush()
	}
	return nil
}

// Sync writes buffered entries to the file and, with ForceSync, fsyncs it (and, for a new
// file, its directory). It is the group-commit point: append many, sync once.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	return l.syncLocked()
}

// Roll syncs the current file and closes it, so the next Append starts a new file. It is
// called after a snapshot is taken.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if err := l.syncLocked(); err != nil {
		return err
	}
	return l.closeFile()
}

// Close syncs and closes the log.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrLogClosed
	}
	var err error
	if l.err == nil {
		err = l.syncLocked()
	}
	if cerr := l.closeFile(); err == nil {
		err = cerr
	}
	l.closed = true
	return err
}

// TruncateAfter removes every entry with a zxid above zxid (the ensemble's TRUNC). Buffered
// entries are written first, so the result is the same whether or not they were synced.
// The next Append starts a new file.
func (l *Log) TruncateAfter(zxid int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if err := l.syncLocked(); err != nil {
		return err
	}
	if err := l.closeFile(); err != nil {
		return l.fail(err)
	}
	files, err := listLogs(l.fs, l.dir)
	if err != nil {
		return l.fail(err)
	}
	keep := 0
	for keep < len(files) && files[keep].zxid <= zxid {
		keep++
	}
	for _, lf := range files[keep:] {
		if err := l.fs.Remove(join(l.dir, lf.name)); err != nil {
			return l.fail(fmt.Errorf("storage: truncate log: %w", err))
		}
	}
	if keep < len(files) {
		// Removed files must not reappear after a crash: they hold the history the
		// leader told us to forget.
		if err := l.fs.SyncDir(l.dir); err != nil {
			return l.fail(err)
		}
	}
	l.log.Info("truncating txn log", "after_zxid", fmt.Sprintf("%#x", zxid), "removed_files", len(files)-keep)
	l.lastZxid = 0
	if keep == 0 {
		return nil
	}
	lf := files[keep-1]
	var last int64
	cut := int64(-1)
	res, err := scanLog(l.fs, join(l.dir, lf.name), func(z int64, _ []byte, off int64) error {
		if z > zxid {
			cut = off
			return errStopScan
		}
		last = z
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return l.fail(err)
	}
	if cut < 0 {
		cut = res.validEnd
	}
	if err := truncateFile(l.fs, join(l.dir, lf.name), cut); err != nil {
		return l.fail(err)
	}
	// Recovery leaves no file without entries, so an older file only matters if this one
	// was damaged after OpenLog.
	for i := keep - 2; last == 0 && i >= 0; i-- {
		res, err := scanLog(l.fs, join(l.dir, files[i].name), nil)
		if err != nil {
			return l.fail(err)
		}
		last = res.lastZxid
	}
	l.lastZxid = last
	return nil
}

var errStopScan = errors.New("stop scan")

// whyChecksum is why a scan stops at a whole entry whose checksum does not match.
const whyChecksum = "checksum mismatch"

// maxFramingSearch bounds framingDamage's search for the true end of an entry whose length
// broke: jute.maxbuffer's default and then some.
const maxFramingSearch = 2 << 20

// framingDamage says whether a stop at broken framing, with nothing valid after it, is
// damage rather than a torn write. A torn write leaves the preallocated zeros (or the end of
// the file) where its bytes did not land, so: an impossible length is damage; a marker that
// is neither 0x42 nor 0 is damage; and a length running past the end (or one whose marker
// is 0) is damage when the entry is there whole all the same, a 0x42 closing a txn whose Adler-32 is the checksum
// stored (its length was changed, not cut short).
func framingDamage(fsys FS, path string, res scanResult) (bool, string, error) {
	switch res.framing {
	case framingImpossible:
		return true, res.why + ": no write leaves that", nil
	case framingMarker:
		if res.stopMarker != 0 {
			return true, fmt.Sprintf("%s (%#x where a write cut short leaves 0): damage, not a torn write", res.why, res.stopMarker), nil
		}
		// A 0 there: cut short, or a length made shorter landing on a 0 of the txn.
	case framingPastEnd:
	default:
		return false, "", nil
	}
	if res.stopSum>>32 != 0 {
		return true, res.why + ", and its checksum long is not one", nil
	}
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return false, "", fmt.Errorf("storage: read log: %w", err)
	}
	defer f.Close()
	start := res.stopOff + 12
	b := make([]byte, min(res.size-start, maxFramingSearch))
	if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
		return false, "", fmt.Errorf("storage: read log: %w", err)
	}
	h := adler32.New()
	for i, c := range b {
		if c == eorMarker && i >= jute.TxnHeaderSize && uint64(h.Sum32()) == res.stopSum {
			return true, fmt.Sprintf("%s, yet a whole entry of %d bytes is there with its checksum: its length changed", res.why, i), nil
		}
		h.Write(b[i : i+1])
	}
	return false, "", nil
}

// sectorSize is the unit a disk writes whole: a crash may lose some sectors of a write and
// keep later ones, but never half a sector.
const sectorSize = 512

// tornEvidence says whether the whole entry at off (its length fits and its 0x42 is there)
// whose checksum fails may be a torn write: only if a sector before the one holding its
// marker holds none of the entry's bytes but zeros (the preallocated zeros a lost sector
// leaves). Otherwise the bytes were all written and then changed: damage. zxid is what the
// entry's header says, for the message.
func tornEvidence(fsys FS, path string, off int64) (torn bool, zxid int64, err error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return false, 0, fmt.Errorf("storage: read log: %w", err)
	}
	defer f.Close()
	var h [12]byte
	if _, err := f.ReadAt(h[:], off); err != nil {
		return false, 0, fmt.Errorf("storage: read log: %w", err)
	}
	n := int64(binary.BigEndian.Uint32(h[8:]))
	e := make([]byte, 12+n+1)
	if _, err := f.ReadAt(e, off); err != nil {
		return false, 0, fmt.Errorf("storage: read log: %w", err)
	}
	if n >= jute.TxnHeaderSize {
		zxid = int64(binary.BigEndian.Uint64(e[12+12:]))
	}
	marker := off + 12 + n
	for sec := off - off%sectorSize; sec < marker-marker%sectorSize; sec += sectorSize {
		lo, hi := max(sec, off)-off, min(sec+sectorSize, marker)-off
		if isZero(e[lo:hi]) {
			return true, zxid, nil
		}
	}
	return false, zxid, nil
}

func (l *Log) usable() error {
	if l.closed {
		return ErrLogClosed
	}
	return l.err
}

func (l *Log) fail(err error) error {
	if l.err == nil {
		l.err = fmt.Errorf("storage: txn log unusable after failure: %w", err)
	}
	return err
}

func (l *Log) create(zxid int64) error {
	name := LogName(zxid)
	f, err := l.fs.OpenFile(join(l.dir, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("storage: create log file: %w", err)
	}
	l.f, l.name = f, name
	l.filePos, l.allocEnd = 0, fileHeaderSize
	l.dirDirty, l.unsynced = true, false
	l.buf = binary.BigEndian.AppendUint32(l.buf[:0], uint32(jute.LogMagic))
	l.buf = binary.BigEndian.AppendUint32(l.buf, 2) // version
	l.buf = binary.BigEndian.AppendUint64(l.buf, 0) // dbid
	return nil
}

// padTo is FilePadding.calculateFileSizeWithPadding: the file size after preallocation
// when the next write starts at pos.
func padTo(pos, size, pre int64) int64 {
	if pre > 0 && pos+padSlack >= size {
		if pos > size {
			size = pos + pre
			size -= size % pre
		} else {
			size += pre
		}
	}
	return size
}

// flush writes the buffer in one WriteAt (plus one byte when the file must grow).
func (l *Log) flush() error {
	if len(l.buf) == 0 {
		return nil
	}
	if l.pre > 0 {
		if size := padTo(l.filePos, l.allocEnd, l.pre); size != l.allocEnd {
			// Written before the data so that, with a tiny preAllocSize, the data
			// overwrites it rather than the reverse.
			if _, err := l.f.WriteAt([]byte{0}, size-1); err != nil {
				return l.fail(err)
			}
			l.allocEnd = size
		}
	}
	if _, err := l.f.WriteAt(l.buf, l.filePos); err != nil {
		return l.fail(err)
	}
	l.filePos += int64(len(l.buf))
	l.unsynced = true
	if cap(l.buf) > maxRetainedBuf {
		l.buf = nil
	} else {
		l.buf = l.buf[:0]
	}
	return nil
}

func (l *Log) syncLocked() error {
	if l.f == nil {
		return nil
	}
	if err := l.flush(); err != nil {
		return err
	}
	if !l.sync {
		return nil
	}
	if l.unsynced {
		if err := l.f.Sync(); err != nil {
			return l.fail(err)
		}
		l.unsynced = false
	}
	if l.dirDirty {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return l.fail(err)
		}
		l.dirDirty = false
	}
	return nil
}

func (l *Log) closeFile() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f, l.name, l.buf = nil, "", l.buf[:0]
	return err
}

// ReadLog calls fn for every valid entry with a zxid above fromZxid, in zxid order. It starts
// with the newest log file whose first zxid is ≤ fromZxid and reads every later file. A torn
// entry ends its file; corruption stops the read with an error wrapping ErrCorruptLog. txn is
// only valid during the call. An error from fn stops the read and is returned.
//
// lastZxid is the highest zxid seen (including entries ≤ fromZxid in the first file read),
// or fromZxid if that is higher.
func ReadLog(fsys FS, dir string, fromZxid int64, fn func(zxid int64, txn []byte) error) (lastZxid int64, err error) {
	files, err := listLogs(fsys, dir)
	if err != nil {
		return fromZxid, err
	}
	start := 0
	for i, lf := range files {
		if lf.zxid <= fromZxid {
			start = i
		}
	}
	last := fromZxid
	for _, lf := range files[start:] {
		res, err := scanLog(fsys, join(dir, lf.name), func(z int64, txn []byte, _ int64) error {
			last = max(last, z)
			if z <= fromZxid {
				return nil
			}
			return fn(z, txn)
		})
		if err != nil {
			return last, err
		}
		if res.stop == stopCorrupt {
			return last, res.corruptErr(lf.name)
		}
	}
	return last, nil
}

type logFile struct {
	name string
	zxid int64
}

// listLogs returns the log files in dir in zxid order; a missing dir has none.
func listLogs(fsys FS, dir string) ([]logFile, error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		if isNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("storage: list logs: %w", err)
	}
	var files []logFile
	for _, n := range names {
		if z, ok := ParseLogName(n); ok {
			files = append(files, logFile{n, z})
		}
	}
	slices.SortFunc(files, func(a, b logFile) int { return cmpInt64(a.zxid, b.zxid) })
	return files, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

type stopReason int

const (
	stopEnd     stopReason = iota // EOF at an entry boundary, or a zero length (padding)
	stopTorn                      // an entry runs past the data or lacks its marker
	stopCorrupt                   // bad header, checksum, or impossible entry
)

type scanResult struct {
	validEnd  int64 // offset just past the last valid entry, or 0 if the header is bad
	count     int
	firstZxid int64
	lastZxid  int64
	size      int64
	stop      stopReason
	stopOff   int64
	why       string
	// tolerateCRC makes a checksum mismatch no reason to stop (ScanLogFile's repair mode);
	// crcOK says whether the entry being passed to fn had a good checksum.
	tolerateCRC bool
	crcOK       bool
	badCRCs     int
	// framing says what broke at the stop, when its framing did (recoverLog's evidence);
	// stopSum and stopMarker are the stopped entry's checksum long and marker byte.
	framing    framingKind
	stopSum    uint64
	stopMarker byte
}

type framingKind int

const (
	framingNone       framingKind = iota
	framingImpossible             // a negative length, or a txn shorter than its header
	framingPastEnd                // a length running past the end of the file
	framingMarker                 // the byte after the txn is not 0x42
)

func (r scanResult) corruptErr(name string) error {
	return fmt.Errorf("%w: %s at offset %d: %s", ErrCorruptLog, name, r.stopOff, r.why)
}

// scanLog reads one log file's entries, calling fn (if not nil) with each valid one and its
// offset. The returned error is an I/O error or fn's error; format problems are reported in
// scanResult.
func scanLog(fsys FS, name string, fn func(zxid int64, txn []byte, off int64) error) (scanResult, error) {
	var res scanResult
	size, err := fsys.Stat(name)
	if err != nil {
		return res, fmt.Errorf("storage: read log: %w", err)
	}
	res.size = size
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return res, fmt.Errorf("storage: read log: %w", err)
	}
	defer f.Close()
	err = scanFile(f, size, &res, fn)
	return res, err
}

// scanFile scans the first size bytes of f.
func scanFile(f File, size int64, res *scanResult, fn func(zxid int64, txn []byte, off int64) error) error {
	br := bufio.NewReaderSize(io.LimitReader(f, size), int(max(min(size, 64<<10), 16)))
	return scanEntries(br, size, res, fn)
}

// scanEntries is scanLog's body, separated so fuzzing can drive it from memory.
func scanEntries(br *bufio.Reader, size int64, res *scanResult, fn func(zxid int64, txn []byte, off int64) error) error {
	stop := func(r stopReason, off int64, why string) error {
		res.stop, res.stopOff, res.why = r, off, why
		return nil
	}
	var hdr [fileHeaderSize]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return stop(stopTorn, 0, "short file header")
		}
		return err
	}
	if hdr == [fileHeaderSize]byte{} {
		// Created but the header never reached the disk.
		return stop(stopTorn, 0, "empty file header")
	}
	if magic := int32(binary.BigEndian.Uint32(hdr[:4])); magic != jute.LogMagic {
		return stop(stopCorrupt, 0, fmt.Sprintf("bad magic %#x", uint32(magic)))
	}
	off := int64(fileHeaderSize)
	res.validEnd = off
	var body []byte
	var eh [12]byte
	for {
		if _, err := io.ReadFull(br, eh[:]); err != nil {
			switch err {
			case io.EOF:
				return stop(stopEnd, off, "end of file")
			case io.ErrUnexpectedEOF:
				return stop(stopTorn, off, "short entry header")
			}
			return err
		}
		sum := binary.BigEndian.Uint64(eh[:8])
		n := int64(int32(binary.BigEndian.Uint32(eh[8:])))
		switch {
		case n == 0:
			// Preallocated zeros: ZooKeeper's end-of-log marker.
			return stop(stopEnd, off, "zero length")
		case n < 0:
			res.framing = framingImpossible
			return stop(stopCorrupt, off, fmt.Sprintf("negative length %d", n))
		case n+1 > size-off-12:
			res.framing, res.stopSum = framingPastEnd, sum
			return stop(stopTorn, off, fmt.Sprintf("entry of %d bytes runs past the end of the file", n))
		}
		if int64(cap(body)) < n+1 {
			body = make([]byte, n+1)
		}
		body = body[:n+1]
		if _, err := io.ReadFull(br, body); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return stop(stopTorn, off, "file shrank while reading")
			}
			return err
		}
		txn := body[:n]
		if body[n] != eorMarker {
			res.framing, res.stopMarker = framingMarker, body[n]
			return stop(stopTorn, off, "missing end-of-record marker")
		}
		res.crcOK = sum>>32 == 0 && uint32(sum) == adler32.Checksum(txn)
		if !res.crcOK && !res.tolerateCRC {
			return stop(stopCorrupt, off, whyChecksum)
		}
		if n < jute.TxnHeaderSize {
			res.framing = framingImpossible
			return stop(stopCorrupt, off, fmt.Sprintf("txn of %d bytes is shorter than a TxnHeader", n))
		}
		if !res.crcOK {
			res.badCRCs++
		}
		zxid := int64(binary.BigEndian.Uint64(txn[12:20]))
		if fn != nil {
			if err := fn(zxid, txn, off); err != nil {
				res.stopOff = off
				return err
			}
		}
		if res.count == 0 {
			res.firstZxid = zxid
		}
		res.count++
		res.lastZxid = zxid
		off += 12 + n + 1
		res.validEnd = off
	}
}

// recoverLog cuts a torn tail back to the last valid entry (see OpenLog) and returns the
// last zxid, or returns a *DamageError, changing nothing, when the log is damaged: a bad
// entry, a zeroed stretch or a bad file header with valid entries after it in that file or
// later ones, or files whose zxids leave a hole within an epoch. Only the files replay needs
// (from the newest whose first zxid is at most from) are read: older ones hold what the
// snapshot already has.
//
// A crash tears only the last write, so a bad entry with nothing valid after it (and the
// next file, if any, carrying on from the entry before it) is a torn write, never a txn
// that was acknowledged: it is cut. A file left without a valid entry is removed.
func recoverLog(fsys FS, dir string, from int64, logger *slog.Logger) (int64, error) {
	files, err := listLogs(fsys, dir)
	if err != nil {
		return 0, err
	}
	start := 0
	for i, lf := range files {
		if lf.zxid <= from {
			start = i
		}
	}
	type cut struct {
		path  string
		size  int64
		attrs []any
	}
	var removes []string
	var cuts []cut
	var last int64
	// torn is the last torn tail seen, until a file with entries follows it.
	type tornTail struct {
		i   int
		res scanResult
	}
	var torn *tornTail
	damage := func(i int, res scanResult, off int64, why string, resume int64) error {
		d := &DamageError{File: join(dir, files[i].name), Offset: off, Why: why, LastGood: max(last, from),
			validEnd: res.validEnd, cutRemovesAllFile: res.count == 0}
		if err := damageAfter(fsys, dir, files, i, resume, d); err != nil {
			return err
		}
		return d
	}
	for i := start; i < len(files); i++ {
		lf := files[i]
		path := join(dir, lf.name)
		res, err := scanLog(fsys, path, nil)
		if err != nil {
			return 0, err
		}
		// With no snapshot (from 0) the first file may start anywhere: ZooKeeper's data
		// directories begin at an epoch's first zxid.
		if res.count > 0 && (i > start || from > 0) && sameEpochHole(max(last, from), res.firstZxid) {
			why := fmt.Sprintf("the next file, %s, starts at zxid %#x: the txns between are missing", lf.name, res.firstZxid)
			if torn != nil {
				// The torn tail before is where the missing txns were.
				return 0, damage(torn.i, torn.res, torn.res.validEnd, torn.res.why+"; "+why, torn.res.stopOff+1)
			}
			return 0, damage(i, scanResult{validEnd: fileHeaderSize}, fileHeaderSize,
				fmt.Sprintf("the file starts at zxid %#x, but the log before it ends at %#x: the txns between are missing",
					res.firstZxid, max(last, from)), 0)
		}
		if res.count > 0 {
			torn, last = nil, res.lastZxid
		}
		attrs := []any{"file", path, "offset", res.stopOff, "error", res.why}
		if res.stop != stopEnd || res.stopOff < res.size {
			// A torn write ends the log; anything valid after the stop says otherwise.
			resume := res.stopOff + 1
			if res.stop == stopEnd {
				resume = res.stopOff // a zero length: the zeros may hide entries after them
			}
			after, err := salvageScan(fsys, path, resume, last)
			if err != nil {
				return 0, err
			}
			if after.count > 0 {
				why := res.why
				if res.stop == stopEnd {
					why = "zeros in the middle of the log"
				}
				return 0, damage(i, res, res.validEnd, why, resume)
			}
			if damaged, why, err := framingDamage(fsys, path, res); err != nil {
				return 0, err
			} else if damaged {
				return 0, damage(i, res, res.validEnd, why, resume)
			}
			if res.stop == stopCorrupt && res.why == whyChecksum {
				torn, zxid, err := tornEvidence(fsys, path, res.stopOff)
				if err != nil {
					return 0, err
				}
				if !torn {
					// Whole, with its end marker, yet wrong: not a write cut short. Cutting
					// it would lose what may be an acknowledged txn (ZooKeeper refuses it too).
					return 0, damage(i, res, res.validEnd,
						fmt.Sprintf("%s in a whole entry (its header says zxid %#x): damage, not a torn write", res.why, zxid), resume)
				}
			}
		}
		switch {
		case res.count == 0:
			if res.stop != stopEnd {
				logger.Warn("txn log file has no valid entry; removing it", attrs...)
			}
			removes = append(removes, lf.name)
		case res.stop != stopEnd:
			cuts = append(cuts, cut{path, res.validEnd, append(attrs, "last_zxid", fmt.Sprintf("%#x", res.lastZxid))})
		}
		if res.stop != stopEnd {
			torn = &tornTail{i, res}
		}
	}
	for _, name := range removes {
		if err := fsys.Remove(join(dir, name)); err != nil {
			return 0, fmt.Errorf("storage: recover log: %w", err)
		}
	}
	if len(removes) > 0 {
		if err := fsys.SyncDir(dir); err != nil {
			return 0, fmt.Errorf("storage: recover log: %w", err)
		}
	}
	for _, c := range cuts {
		logger.Warn("torn txn log entry; truncating", c.attrs...)
		if err := truncateFile(fsys, c.path, c.size); err != nil {
			return 0, err
		}
	}
	return last, nil
}

// truncateFile cuts name to size and fsyncs it.
func truncateFile(fsys FS, name string, size int64) error {
	cur, err := fsys.Stat(name)
	if err != nil {
		return fmt.Errorf("storage: truncate log: %w", err)
	}
	if cur <= size {
		return nil
	}
	f, err := fsys.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("storage: truncate log: %w", err)
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("storage: truncate log: %w", err)
	}
	return nil
}
