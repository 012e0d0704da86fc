package datatool

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/zkd-io/zkd/jute"
)

// This file reproduces the Java library behaviour ZooKeeper's tools print through:
// date formats, Formatter's %#016x, new String(bytes, UTF_8), jute's ToStringOutputArchive
// and java.util.HashSet's iteration order.

// javaHex16 is String.format("%#016x", v): "0x" counts toward the width of 16.
func javaHex16(v int64) string {
	h := strconv.FormatUint(uint64(v), 16)
	if len(h) < 14 {
		h = strings.Repeat("0", 14-len(h)) + h
	}
	return "0x" + h
}

// javaDateString is java.util.Date.toString(): "EEE MMM dd HH:mm:ss zzz yyyy".
func javaDateString(ms int64, loc *time.Location) string {
	return time.UnixMilli(ms).In(loc).Format("Mon Jan 02 15:04:05 MST 2006")
}

// javaShortLongDate is DateFormat.getDateTimeInstance(SHORT, LONG) in the en_US locale of
// Java 9 to 19 (CLDR data): "M/d/yy, h:mm:ss a z". Java 20+ puts U+202F before the AM/PM
// marker; ZooKeeper 3.8 on Debian runs Java 17.
func javaShortLongDate(ms int64, loc *time.Location) string {
	return time.UnixMilli(ms).In(loc).Format("1/2/06, 3:04:05 PM MST")
}

// javaUTF8 is new String(b, UTF_8): each maximal ill-formed subsequence becomes one U+FFFD
// (Go's conversion would replace every bad byte separately).
func javaUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			sb.WriteString(string(b[i : i+size]))
			i += size
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += illFormedLen(b[i:])
	}
	return sb.String()
}

// illFormedLen is the length of the maximal subpart of an ill-formed sequence at b[0]: a
// valid lead byte followed by some, but not all, of its continuation bytes counts as one.
func illFormedLen(b []byte) int {
	c := b[0]
	var n int
	lo, hi := byte(0x80), byte(0xbf)
	switch {
	case c >= 0xc2 && c <= 0xdf:
		n = 2
	case c >= 0xe0 && c <= 0xef:
		n = 3
		if c == 0xe0 {
			lo = 0xa0
		} else if c == 0xed {
			hi = 0x9f
		}
	case c >= 0xf0 && c <= 0xf4:
		n = 4
		if c == 0xf0 {
			lo = 0x90
		} else if c == 0xf4 {
			hi = 0x8f
		}
	default:
		return 1
	}
	i := 1
	for ; i < n && i < len(b); i++ {
		if b[i] < lo || b[i] > hi {
			break
		}
		lo, hi = 0x80, 0xbf
	}
	return i
}

// toStringArchive is jute's ToStringOutputArchive, which Record.toString uses.
type toStringArchive struct {
	sb    strings.Builder
	first bool
}

func newToString() *toStringArchive { return &toStringArchive{first: true} }

func (a *toStringArchive) comma() {
	if !a.first {
		a.sb.WriteByte(',')
	}
	a.first = false
}

func (a *toStringArchive) long(v int64) { a.comma(); a.sb.WriteString(strconv.FormatInt(v, 10)) }

func (a *toStringArchive) boolean(v bool) {
	a.comma()
	if v {
		a.sb.WriteByte('T')
	} else {
		a.sb.WriteByte('F')
	}
}

func (a *toStringArchive) str(s string) {
	a.comma()
	a.sb.WriteByte('\'')
	for _, c := range s {
		switch c {
		case 0:
			a.sb.WriteString("%00")
		case '\n':
			a.sb.WriteString("%0A")
		case '\r':
			a.sb.WriteString("%0D")
		case ',':
			a.sb.WriteString("%2C")
		case '}':
			a.sb.WriteString("%7D")
		case '%':
			a.sb.WriteString("%25")
		default:
			a.sb.WriteRune(c)
		}
	}
}

// buffer is escapeBuffer: '#' then Integer.toHexString of each signed byte, unpadded (so
// 0x05 is "5" and 0x80 is "ffffff80"); nothing for an empty or null buffer.
func (a *toStringArchive) buffer(b []byte) {
	a.comma()
	if len(b) == 0 {
		return
	}
	a.sb.WriteByte('#')
	for _, c := range b {
		a.sb.WriteString(strconv.FormatUint(uint64(uint32(int32(int8(c)))), 16))
	}
}

// startRecord/endRecord: a nested record (non-empty tag) is "s{...}", a top-level one ends
// with a newline.
func (a *toStringArchive) startRecord(nested bool) {
	if nested {
		a.comma()
		a.sb.WriteString("s{")
		a.first = true
	}
}

func (a *toStringArchive) endRecord(nested bool) {
	if nested {
		a.sb.WriteByte('}')
		a.first = false
	} else {
		a.sb.WriteByte('\n')
		a.first = true
	}
}

func (a *toStringArchive) startVector() { a.comma(); a.sb.WriteString("v{"); a.first = true }
func (a *toStringArchive) endVector()   { a.sb.WriteByte('}'); a.first = false }

func (a *toStringArchive) acl(x jute.ACL, nested bool) {
	a.startRecord(nested)
	a.long(int64(x.Perms))
	a.startRecord(true)
	a.str(x.ID.Scheme)
	a.str(x.ID.ID)
	a.endRecord(true)
	a.endRecord(nested)
}

func (a *toStringArchive) acls(l []jute.ACL) {
	a.startVector()
	for _, x := range l {
		a.acl(x, true)
	}
	a.endVector()
}

// aclListString is java.util.List<ACL>.toString(): "[" + each ACL's toString (which ends
// in a newline) joined by ", " + "]".
func aclListString(l []jute.ACL) string {
	parts := make([]string, len(l))
	for i, x := range l {
		a := newToString()
		a.acl(x, false)
		parts[i] = a.sb.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// javaStringHash is String.hashCode over the UTF-16 code units of s as Java decoded it.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// javaHashSetOrder returns keys (given in insertion order, distinct) in the order a Java
// HashMap/HashSet created with initialCapacity iterates them: by bucket of the final
// table, and within a bucket in insertion order. The table doubles when its size passes
// 3/4 of the capacity, and also when a bucket grows past 8 entries while the table is
// smaller than 64 (treeifyBin's resize). Buckets that Java turns into trees (8+ colliding
// entries in a table of 64 or more) can iterate differently; ZooKeeper's names rarely
// collide that much.
func javaHashSetOrder[K any](keys []K, hash func(K) int32, initialCapacity int) []K {
	if len(keys) == 0 {
		return nil
	}
	capacity := 1
	for capacity < initialCapacity {
		capacity <<= 1
	}
	spread := func(h int32) uint32 { u := uint32(h); return u ^ u>>16 }
	hashes := make([]uint32, len(keys))
	for i, k := range keys {
		hashes[i] = spread(hash(k))
	}
	counts := map[uint32]int{}
	recount := func(n int) {
		clear(counts)
		for j := 0; j < n; j++ {
			counts[hashes[j]&uint32(capacity-1)]++
		}
	}
	for i := range keys {
		b := hashes[i] & uint32(capacity-1)
		counts[b]++
		if counts[b] > 8 && capacity < 64 {
			capacity <<= 1
			recount(i + 1)
		}
		if i+1 > capacity*3/4 {
			capacity <<= 1
			recount(i + 1)
		}
	}
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	mask := uint32(capacity - 1)
	// A stable sort by bucket keeps insertion order within a bucket.
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(hashes[a]&mask, hashes[b]&mask) })
	out := make([]K, len(keys))
	for i, j := range idx {
		out[i] = keys[j]
	}
	return out
}
