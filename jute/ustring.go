package jute

import (
	"encoding/binary"
	"slices"
	"unicode/utf8"
	"unsafe"
)

// ustrings are written and read the way Java's jute does, so that what zkd echoes, stores and
// compares is byte for byte what ZooKeeper would.
//
// Writing: BinaryOutputArchive.stringToByteBuffer encodes each UTF-16 char on its own, so a
// character above U+FFFF (a surrogate pair in Java) goes out as two 3-byte surrogate
// encodings (CESU-8) instead of UTF-8's four bytes. Everything else is plain UTF-8.
//
// Reading: BinaryInputArchive.readString is new String(bytes, UTF_8), which replaces malformed
// input with U+FFFD instead of failing. How many bytes one replacement covers is the JDK's
// own rule (String.decodeUTF8_UTF16 in OpenJDK 17, the reference server's JDK): it is not
// Go's one-replacement-per-bad-byte, and a 3-byte surrogate encoding (CESU-8 input included)
// is one replacement. Valid UTF-8 reads unchanged, 4-byte characters included.

// String writes a non-null ustring as Java's writer would write the same characters.
//
// Bytes of s that are not valid UTF-8 are written as they are: a Go string cannot hold the
// lone surrogates a Java String can, so this lets callers (tests, the raw-frame tools) send
// any byte string, CESU-8 or malformed, as a ustring.
func (e *Encoder) String(s string) {
	n := len(s)
	// src views s's bytes, only to read them: loads from a []byte combine into wider loads,
	// loads from a string do not. (Testing the bytes just appended instead would stall on
	// the copy's stores.)
	src := unsafe.Slice(unsafe.StringData(s), n)
	if n < 8 {
		if mayHaveSupplementary(src) {
			e.stringCESU8(s)
			return
		}
		e.Int(int32(n))
		e.Buf = append(e.Buf, s...)
		return
	}
	buf := slices.Grow(e.Buf, 4+n)
	at := len(buf)
	buf = buf[:at+4+n]
	binary.BigEndian.PutUint32(buf[at:], uint32(n))
	dst := buf[at+4:]
	// Copying a word at a time lets the test ride along with the copy.
	var acc uint64
	for i := 0; i+8 <= n; i += 8 {
		w := binary.LittleEndian.Uint64(src[i : i+8])
		binary.LittleEndian.PutUint64(dst[i:i+8], w)
		acc |= (w&low7 + add) & w
	}
	// The last word overlaps the others unless n is a multiple of 8.
	w := binary.LittleEndian.Uint64(src[n-8:])
	binary.LittleEndian.PutUint64(dst[n-8:], w)
	if (acc|(w&low7+add)&w)&top != 0 {
		e.Buf = buf[:at]
		e.stringCESU8(s)
		return
	}
	e.Buf = buf
}

// A byte is 0xf0 or more, and can start a 4-byte UTF-8 sequence, exactly when its top bit is
// set and its low seven bits plus 0x10 carry into the top bit (which cannot carry further,
// into the next byte): the test String and mayHaveSupplementary apply eight bytes at a time.
const low7, add, top = 0x7f7f7f7f7f7f7f7f, 0x1010101010101010, 0x8080808080808080

// mayHaveSupplementary reports whether b has a byte that can start a 4-byte UTF-8 sequence
// (0xf0 and above).
func mayHaveSupplementary(b []byte) bool {
	switch {
	case len(b) >= 8:
		// The last word overlaps the others unless len(b) is a multiple of 8.
		w := binary.LittleEndian.Uint64(b[len(b)-8:])
		acc := (w&low7 + add) & w
		for ; len(b) >= 8; b = b[8:] {
			w := binary.LittleEndian.Uint64(b)
			acc |= (w&low7 + add) & w
		}
		return acc&top != 0
	case len(b) >= 4:
		w := uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[len(b)-4:]))<<32
		return (w&low7+add)&w&top != 0
	}
	for _, c := range b {
		if c >= 0xf0 {
			return true
		}
	}
	return false
}

// stringCESU8 is String's slow path: each valid 4-byte sequence becomes its UTF-16 surrogate
// pair, each half written as a 3-byte sequence.
func (e *Encoder) stringCESU8(s string) {
	at := len(e.Buf)
	e.Int(0)
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0xf0 {
			e.Buf = append(e.Buf, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if n != 4 {
			e.Buf = append(e.Buf, c)
			i++
			continue
		}
		r -= 0x10000
		e.Buf = appendChar3(e.Buf, 0xd800+(r>>10))
		e.Buf = appendChar3(e.Buf, 0xdc00+(r&0x3ff))
		i += 4
	}
	n := len(e.Buf) - at - 4
	e.Buf[at], e.Buf[at+1], e.Buf[at+2], e.Buf[at+3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
}

// appendChar3 writes a char of U+0800..U+FFFF as stringToByteBuffer does.
func appendChar3(b []byte, c rune) []byte {
	return append(b, byte(0xe0|c>>12), byte(0x80|(c>>6)&0x3f), byte(0x80|c&0x3f))
}

// JavaString returns b as Java's new String(b, UTF_8) reads it, in Go's UTF-8: valid UTF-8
// unchanged, each malformed sequence replaced by U+FFFD as OpenJDK 17 replaces it.
func JavaString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(appendJavaUTF8(make([]byte, 0, len(b)+8), b))
}

const repl = "\uFFFD"

func notCont(b byte) bool { return b&0xc0 != 0x80 }

// appendJavaUTF8 is OpenJDK 17's String.decodeUTF8_UTF16 with doReplace set, each char it
// would store appended as UTF-8 instead. Java keeps b1 as a signed byte; here bytes are
// unsigned, so its (b1 >> 5) == -2 is 0xc0..0xdf, (b1 >> 4) == -2 is 0xe0..0xef and
// (b1 >> 3) == -2 is 0xf0..0xf7.
func appendJavaUTF8(dst, src []byte) []byte {
	sp, sl := 0, len(src)
	for sp < sl {
		b1 := src[sp]
		sp++
		switch {
		case b1 < 0x80:
			dst = append(dst, b1)
		case b1 >= 0xc2 && b1 <= 0xdf: // 0xc0 and 0xc1 fail (b1 & 0x1e) != 0
			if sp < sl {
				b2 := src[sp]
				if notCont(b2) {
					dst = append(dst, repl...)
				} else {
					dst = append(dst, b1, b2)
					sp++
				}
				continue
			}
			dst = append(dst, repl...)
			return dst
		case b1 >= 0xe0 && b1 <= 0xef:
			if sp+1 < sl {
				b2, b3 := src[sp], src[sp+1]
				if malformed3(b1, b2) || notCont(b3) {
					dst = append(dst, repl...)
					if !malformed3(b1, b2) {
						sp++ // malformed3 of the JDK: b1 and b2 are one replacement
					}
					continue
				}
				sp += 2
				if c := rune(b1&0x0f)<<12 | rune(b2&0x3f)<<6 | rune(b3&0x3f); c >= 0xd800 && c <= 0xdfff {
					dst = append(dst, repl...)
				} else {
					dst = append(dst, b1, b2, b3)
				}
				continue
			}
			// isMalformed3_2 leaves a bad b2 to be read again; otherwise the end of input
			// ends the string, a truncated but well-begun b2 included.
			if sp < sl && malformed3(b1, src[sp]) {
				dst = append(dst, repl...)
				continue
			}
			dst = append(dst, repl...)
			return dst
		case b1 >= 0xf0 && b1 <= 0xf7:
			if sp+2 < sl {
				b2, b3, b4 := src[sp], src[sp+1], src[sp+2]
				uc := rune(b1&0x07)<<18 | rune(b2&0x3f)<<12 | rune(b3&0x3f)<<6 | rune(b4&0x3f)
				if notCont(b2) || notCont(b3) || notCont(b4) || uc < 0x10000 || uc > 0x10ffff {
					dst = append(dst, repl...)
					// malformed4: how many of b1..b3 the replacement covers.
					switch {
					case b1 > 0xf4 || malformed4_2(b1, b2):
					case notCont(b3):
						sp++
					default:
						sp += 2
					}
					continue
				}
				dst = append(dst, b1, b2, b3, b4)
				sp += 3
				continue
			}
			if b1 > 0xf4 || sp < sl && malformed4_2(b1, src[sp]) {
				dst = append(dst, repl...)
				continue
			}
			sp++
			dst = append(dst, repl...)
			if sp < sl && notCont(src[sp]) {
				continue
			}
			return dst
		default: // 0x80..0xc1, 0xf8..0xff
			dst = append(dst, repl...)
		}
	}
	return dst
}

// malformed3 is the JDK's isMalformed3_2: b2 cannot follow b1 in a 3-byte sequence.
func malformed3(b1, b2 byte) bool {
	return b1 == 0xe0 && b2&0xe0 == 0x80 || notCont(b2)
}

// malformed4_2 is the JDK's isMalformed4_2: b2 cannot follow b1 in a 4-byte sequence.
func malformed4_2(b1, b2 byte) bool {
	return b1 == 0xf0 && (b2 < 0x90 || b2 > 0xbf) || b1 == 0xf4 && b2&0xf0 != 0x80 || notCont(b2)
}
