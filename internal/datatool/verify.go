package datatool

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zkd-io/zkd/internal/storage"
)

// ErrProblems reports that Verify found files a server's recovery would cut or refuse.
var ErrProblems = errors.New("problems found")

// versionDir returns dir/version-2 when dir is a data directory, else dir.
func versionDir(dir string) string {
	v := filepath.Join(dir, "version-2")
	if st, err := os.Stat(v); err == nil && st.IsDir() {
		return v
	}
	return dir
}

// Verify checks every txn log (each entry's checksum, a torn or corrupt tail, that a file's
// first zxid is the one in its name) and every snapshot (decoding and seals) in dir, a data
// directory or its version-2. It prints one line per file and returns an error wrapping
// ErrProblems if any file is not clean.
func Verify(w io.Writer, dir string) error {
	dir = versionDir(dir)
	names, err := storage.OSFS{}.ReadDir(dir)
	if err != nil {
		return err
	}
	problems := 0
	type logName struct {
		name string
		zxid int64
	}
	var logs []logName
	for _, n := range names {
		if z, ok := storage.ParseLogName(n); ok {
			logs = append(logs, logName{n, z})
		}
	}
	// ReadDir sorts by name; logs go by zxid.
	slices.SortFunc(logs, func(a, b logName) int { return cmp.Compare(a.zxid, b.zxid) })
	corruptBefore := ""
	for _, lf := range logs {
		path := filepath.Join(dir, lf.name)
		first := int64(-1)
		scan, err := storage.ScanLogFile(storage.OSFS{}, path, true, func(e storage.LogEntry) error {
			if first < 0 {
				first = e.Zxid
			}
			return nil
		})
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s: %d txns", lf.name, scan.Entries)
		if scan.Entries > 0 {
			line += fmt.Sprintf(", zxid %s..%s", hexZxid(first), hexZxid(scan.LastZxid))
		}
		bad := false
		if scan.BadCRCs > 0 {
			line += fmt.Sprintf(", %d checksum mismatches", scan.BadCRCs)
			bad = true
		}
		if scan.Entries > 0 && first != lf.zxid {
			line += fmt.Sprintf(", first zxid %s is not the name's", hexZxid(first))
			bad = true
		}
		switch scan.Status {
		case storage.LogClean:
		case storage.LogTorn:
			line += fmt.Sprintf(", torn tail at offset %d (%s): recovery cuts it", scan.StopAt, scan.StopCause)
			bad = true
		case storage.LogCorrupt:
			line += fmt.Sprintf(", corrupt at offset %d (%s): with valid txns after it, a standalone server refuses to start (`zkd tool repair DIR` cuts it there) and an ensemble member refills from its leader", scan.StopAt, scan.StopCause)
			bad = true
		}
		if corruptBefore != "" {
			line += fmt.Sprintf(", follows corrupt %s", corruptBefore)
			bad = true
		}
		if scan.Status == storage.LogCorrupt || scan.BadCRCs > 0 {
			corruptBefore = lf.name
		}
		if bad {
			problems++
			line = "BAD " + line
		} else {
			line = "ok  " + line
		}
		fmt.Fprintln(w, line)
	}
	for _, n := range names {
		if _, _, ok := storage.ParseSnapName(n); !ok {
			continue
		}
		t, err := LoadSnapshot(filepath.Join(dir, n))
		if err != nil {
			problems++
			fmt.Fprintf(w, "BAD %s: %v\n", n, err)
			continue
		}
		fmt.Fprintf(w, "ok  %s: %d nodes, %d sessions\n", n, len(t.Nodes), len(t.Sessions))
	}
	if problems > 0 {
		return fmt.Errorf("%w: %d of the files in %s", ErrProblems, problems, dir)
	}
	return nil
}

// RepairOptions choose what Repair may change.
type RepairOptions struct {
	// FixCRC recomputes the checksum of entries that are whole (length, end marker and
	// header all fine) but whose checksum does not match, as TxnLogToolkit -r -y does,
	// instead of cutting the log at the first of them.
	FixCRC bool
}

// Repair cuts a txn log file's torn or corrupt tail after its last valid entry (and with
// FixCRC rewrites mismatched checksums), first copying the file to path+".bak". A file that
// needs nothing is left alone. The repaired file is what a server's recovery would keep.
func Repair(w io.Writer, path string, opts RepairOptions) error {
	fsys := storage.OSFS{}
	var badOffsets []int64
	var badSums []uint32
	scan, err := storage.ScanLogFile(fsys, path, opts.FixCRC, func(e storage.LogEntry) error {
		if !e.ChecksumOK {
			badOffsets = append(badOffsets, e.Offset)
			badSums = append(badSums, adler32.Checksum(e.Txn))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if scan.ValidEnd == 0 {
		return fmt.Errorf("%w: %s: %s; not repairing a file with no valid header", ErrDamaged, path, scan.StopCause)
	}
	if scan.Status == storage.LogClean && len(badOffsets) == 0 {
		fmt.Fprintf(w, "%s: clean, %d txns; nothing to repair\n", path, scan.Entries)
		return nil
	}
	backup := path + ".bak"
	if err := copyFile(path, backup); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	for i, off := range badOffsets {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(badSums[i]))
		if _, err := f.WriteAt(b[:], off); err != nil {
			f.Close()
			return fmt.Errorf("fix checksum at offset %d: %w", off, err)
		}
	}
	if scan.Status != storage.LogClean {
		if err := f.Truncate(scan.ValidEnd); err != nil {
			f.Close()
			return fmt.Errorf("truncate: %w", err)
		}
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if len(badOffsets) > 0 {
		fmt.Fprintf(w, "%s: fixed %d checksums\n", path, len(badOffsets))
	}
	if scan.Status != storage.LogClean {
		fmt.Fprintf(w, "%s: cut %d bytes after the last valid txn (%s at offset %d: %s)\n",
			path, scan.Size-scan.ValidEnd, scan.Status, scan.StopAt, scan.StopCause)
	}
	after, err := storage.ScanLogFile(fsys, path, false, nil)
	if err != nil {
		return err
	}
	if after.Status != storage.LogClean {
		return fmt.Errorf("%w: %s still %s after repair at offset %d", ErrDamaged, path, after.Status, after.StopAt)
	}
	fmt.Fprintf(w, "%s: %d txns, last zxid %s; original kept as %s\n", path, after.Entries, hexZxid(after.LastZxid), backup)
	return nil
}

// copyFile copies src to a new file dst (refusing to overwrite one) and fsyncs it.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// RepairDir repairs the txn log of a data directory (dir or its version-2) as a server's
// recovery would if told to accept the loss: a torn tail is cut, and at damage (what makes a
// server refuse to start) the log is cut back to the last valid entry before it, every file
// changed being kept first as damaged.<tag>.<name>. It prints what it cut and the txns lost.
// The files replay needs are those after the newest snapshot that passes the quick check,
// as for the server.
func RepairDir(w io.Writer, dir string, tag string) error {
	fsys := storage.OSFS{}
	vdir := versionDir(dir)
	// Never under a running server: it holds this lock while it runs.
	lock, err := storage.LockDir(fsys, filepath.Dir(vdir))
	if err != nil {
		return err
	}
	defer lock.Close()
	var from int64
	snaps, err := storage.FindSnapshots(fsys, vdir)
	if err != nil {
		return err
	}
	for _, sf := range snaps {
		if ok, err := storage.ValidSnapshot(fsys, vdir, sf); err == nil && ok {
			from = sf.Zxid
			break
		}
	}
	for {
		l, err := storage.OpenLog(fsys, vdir, storage.LogOptions{PreAllocSize: -1, FromZxid: from,
			Logger: slog.New(slog.NewTextHandler(w, nil))})
		var d *storage.DamageError
		if errors.As(err, &d) {
			fmt.Fprintf(w, "%v\n", d)
			kept, err := storage.CutAtDamage(fsys, vdir, d, tag)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "cut %s at offset %d; lost %d txns; originals kept as %s\n", d.File, d.Offset, d.After, strings.Join(kept, ", "))
			continue
		}
		if err != nil {
			return err
		}
		last := l.LastZxid()
		if err := l.Close(); err != nil && !errors.Is(err, storage.ErrLogClosed) {
			return err
		}
		fmt.Fprintf(w, "%s: the log is clean up to zxid %s\n", vdir, hexZxid(last))
		return nil
	}
}
