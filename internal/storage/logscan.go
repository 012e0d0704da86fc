package storage

import (
	"fmt"
	"os"
)

// LogStatus says how a txn log file ends.
type LogStatus int

const (
	// LogClean: the file ends at EOF or at preallocated zeros after a whole entry.
	LogClean LogStatus = iota
	// LogTorn: the last entry was cut short (a crash mid-write); recovery drops it.
	LogTorn
	// LogCorrupt: a bad header, an impossible length or (unless tolerated) a checksum
	// mismatch; recovery cuts the file there and removes every later file.
	LogCorrupt
)

func (s LogStatus) String() string {
	switch s {
	case LogClean:
		return "clean"
	case LogTorn:
		return "torn"
	case LogCorrupt:
		return "corrupt"
	}
	return fmt.Sprintf("LogStatus(%d)", int(s))
}

// LogEntry is one entry of a txn log file: its txn bytes (TxnHeader, record and optional
// TxnDigest), valid only during the callback.
type LogEntry struct {
	Offset     int64 // of the entry's checksum field
	Zxid       int64
	Txn        []byte
	ChecksumOK bool
}

// LogScan is what ScanLogFile found.
type LogScan struct {
	Entries   int
	BadCRCs   int   // entries passed with ChecksumOK false (only with tolerateCRC)
	LastZxid  int64 // of the last entry passed
	ValidEnd  int64 // just past the last entry passed; 0 if the header is bad
	Size      int64
	Status    LogStatus
	StopAt    int64  // offset where reading stopped
	StopCause string // why, as recovery would log it
}

// ScanLogFile reads one log file (a path, not a directory) with the same rules recovery
// uses, calling fn with each entry. With tolerateCRC an entry whose checksum does not match
// is still passed (ChecksumOK false) and reading goes on, as ZooKeeper's TxnLogToolkit does;
// without it the scan stops there with LogCorrupt. The error is an I/O error or fn's.
func ScanLogFile(fsys FS, name string, tolerateCRC bool, fn func(LogEntry) error) (LogScan, error) {
	var cb func(zxid int64, txn []byte, off int64) error
	res := scanResult{tolerateCRC: tolerateCRC}
	size, err := fsys.Stat(name)
	if err != nil {
		return LogScan{}, fmt.Errorf("storage: read log: %w", err)
	}
	res.size = size
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return LogScan{}, fmt.Errorf("storage: read log: %w", err)
	}
	defer f.Close()
	if fn != nil {
		cb = func(zxid int64, txn []byte, off int64) error {
			return fn(LogEntry{Offset: off, Zxid: zxid, Txn: txn, ChecksumOK: res.crcOK})
		}
	}
	err = scanFile(f, size, &res, cb)
	out := LogScan{
		Entries: res.count, BadCRCs: res.badCRCs, LastZxid: res.lastZxid, ValidEnd: res.validEnd,
		Size: res.size, StopAt: res.stopOff, StopCause: res.why,
	}
	switch res.stop {
	case stopTorn:
		out.Status = LogTorn
	case stopCorrupt:
		out.Status = LogCorrupt
	}
	return out, err
}
