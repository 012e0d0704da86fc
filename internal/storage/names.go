package storage

import (
	"strconv"
	"strings"
)

// File name prefixes, as ZooKeeper's Util and FileSnap spell them.
const (
	logPrefix  = "log."
	snapPrefix = "snapshot."
	// tempPrefix marks files being written. ZooKeeper parses the zxid from the second
	// dot-separated field of any name that starts with "snapshot." or "log.", so a temporary
	// file must not start with either.
	tempPrefix = "tmp."
)

// LogName is the file name of a txn log whose first txn is zxid: "log.<hex>".
func LogName(zxid int64) string { return logPrefix + strconv.FormatUint(uint64(zxid), 16) }

// SnapName is the file name of an uncompressed snapshot taken at zxid: "snapshot.<hex>".
func SnapName(zxid int64) string { return snapPrefix + strconv.FormatUint(uint64(zxid), 16) }

// SnapCompression is the format snapshots are written in, ZooKeeper's
// zookeeper.snapshot.compression.method (SnapStream.StreamMode): its value is the file name
// suffix without the dot.
type SnapCompression string

const (
	SnapUncompressed SnapCompression = ""       // snapshot.<hex>
	SnapGzip         SnapCompression = "gz"     // snapshot.<hex>.gz, gzip
	SnapSnappy       SnapCompression = "snappy" // snapshot.<hex>.snappy, xerial's framing
)

// ParseSnapCompression reads a zookeeper.snapshot.compression.method value as
// StreamMode.fromString does: "gz" or "snappy" in any case. Anything else means
// uncompressed, which ZooKeeper falls back to without complaint; known is false then
// (unless s is empty), so that a caller can warn about a typo.
func ParseSnapCompression(s string) (c SnapCompression, known bool) {
	for _, m := range []SnapCompression{SnapGzip, SnapSnappy} {
		if strings.EqualFold(s, string(m)) {
			return m, true
		}
	}
	return SnapUncompressed, s == ""
}

// Suffix is the file name suffix of a snapshot in this format: "", ".gz" or ".snappy".
func (c SnapCompression) Suffix() string {
	if c == SnapUncompressed {
		return ""
	}
	return "." + string(c)
}

// SnapFileName is the file name of a snapshot taken at zxid in format c, as ZooKeeper's
// Util.makeSnapshotName names it: "snapshot.<hex>" plus c's suffix.
func SnapFileName(zxid int64, c SnapCompression) string { return SnapName(zxid) + c.Suffix() }

// ParseLogName returns the zxid in a "log.<hex>" name.
func ParseLogName(name string) (zxid int64, ok bool) {
	rest, found := strings.CutPrefix(name, logPrefix)
	if !found {
		return 0, false
	}
	return parseHex(rest)
}

// ParseSnapName returns the zxid in a "snapshot.<hex>" name, optionally followed by a
// compression suffix (".gz", ".snappy"), which is returned too.
func ParseSnapName(name string) (zxid int64, suffix string, ok bool) {
	rest, found := strings.CutPrefix(name, snapPrefix)
	if !found {
		return 0, "", false
	}
	if i := strings.IndexByte(rest, '.'); i >= 0 {
		suffix = rest[i:]
		rest = rest[:i]
		if suffix != ".gz" && suffix != ".snappy" {
			return 0, "", false
		}
	}
	zxid, ok = parseHex(rest)
	return zxid, suffix, ok
}

// SnapInProgress reports whether name is a snapshot still being written: zkd's
// tmp.snapshot.<hex>[suffix], renamed once complete and synced, or ZooKeeper's
// snapshot.<hex>.tmp (AtomicFileOutputStream, which 3.8 uses only for the snapshots it
// syncs; its periodic ones are written in place).
func SnapInProgress(name string) bool {
	rest, ok := strings.CutPrefix(name, tempPrefix)
	if !ok {
		rest, ok = strings.CutSuffix(name, ".tmp")
	}
	if !ok {
		return false
	}
	_, _, ok = ParseSnapName(rest)
	return ok
}

// parseHex accepts what Java's Long.parseLong(s, 16) accepts for names ZooKeeper writes:
// hex digits of either case, no sign, no 0x, at most 2^63-1.
func parseHex(s string) (int64, bool) {
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 16, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}
