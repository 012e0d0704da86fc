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
