package jute

import (
	"errors"
	"fmt"
	"slices"
)

// ErrShort reports input that ended inside a record.
var ErrShort = errors.New("jute: record truncated")

// ErrLength reports a negative or oversized length field.
var ErrLength = errors.New("jute: bad length")

// Record is implemented by every jute record.
type Record interface {
	Encode(e *Encoder)
	Decode(d *Decoder)
}

// Encoder appends jute-encoded values to Buf.
type Encoder struct {
	Buf []byte
}

func (e *Encoder) Int(v int32) {
	e.Buf = append(e.Buf, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func (e *Encoder) Long(v int64) {
	e.Buf = append(e.Buf, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32),
		byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func (e *Encoder) Bool(v bool) {
	if v {
		e.Buf = append(e.Buf, 1)
	} else {
		e.Buf = append(e.Buf, 0)
	}
}

func (e *Encoder) Byte(v byte) { e.Buf = append(e.Buf, v) }

// Buffer writes b; a nil slice is written as length -1 (null), an empty one as length 0.
func (e *Encoder) Buffer(b []byte) {
	if b == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(b)))
	e.Buf = append(e.Buf, b...)
}

// Strings writes a vector<ustring>; nil is written as null.
func (e *Encoder) Strings(v []string) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	if len(v) > 64 {
		// A long list (getChildren of a big node: 12 MB for a million children) is sized
		// once: growing by doubling would copy and allocate it twice over.
		n := 4 * len(v)
		for _, s := range v {
			n += len(s)
		}
		e.Buf = slices.Grow(e.Buf, n)
	}
	// Encoding through a copy on the stack keeps the per-string stores of Buf's header out
	// of the heap, where each would pay the collector's write barrier while it marks.
	le := Encoder{Buf: e.Buf}
	for _, s := range v {
		le.String(s)
	}
	e.Buf = le.Buf
}

// Record appends r.
func (e *Encoder) Record(r Record) { r.Encode(e) }

// Marshal encodes r into a new slice.
func Marshal(r Record) []byte {
	e := Encoder{Buf: make([]byte, 0, 64)}
	r.Encode(&e)
	return e.Buf
}

// AppendRecord appends r's encoding to buf.
func AppendRecord(buf []byte, r Record) []byte {
	e := Encoder{Buf: buf}
	r.Encode(&e)
	return e.Buf
}

// DefaultMaxBuffer is jute.maxbuffer's default (0xfffff).
const DefaultMaxBuffer = 0xfffff

// Decoder reads jute values from B. The first failure is kept in err and every later read
// returns zero values, so callers may decode a whole record and check Err once.
type Decoder struct {
	B   []byte
	Off int
	// MaxLen bounds buffer, string and vector lengths; 0 means len(B) is the only bound.
	MaxLen int
	err    error
}

// NewDecoder returns a decoder over b.
func NewDecoder(b []byte) *Decoder { return &Decoder{B: b} }

func (d *Decoder) Err() error { return d.err }

// Fail sets the decoder's error if none is set yet.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// Remaining is the number of unread bytes.
func (d *Decoder) Remaining() int { return len(d.B) - d.Off }

// Rest returns the unread bytes without consuming them.
func (d *Decoder) Rest() []byte { return d.B[d.Off:] }

func (d *Decoder) need(n int) bool {
	if d.err != nil {
		return false
	}
	if n < 0 || len(d.B)-d.Off < n {
		d.err = ErrShort
		return false
	}
	return true
}

func (d *Decoder) Int() int32 {
	if !d.need(4) {
		return 0
	}
	b := d.B[d.Off:]
	d.Off += 4
	return int32(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
}

func (d *Decoder) Long() int64 {
	if !d.need(8) {
		return 0
	}
	b := d.B[d.Off:]
	d.Off += 8
	return int64(uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7]))
}

// Bool reads a boolean; any non-zero byte is true, as Java's reader does.
func (d *Decoder) Bool() bool {
	if !d.need(1) {
		return false
	}
	v := d.B[d.Off]
	d.Off++
	return v != 0
}

func (d *Decoder) Byte() byte {
	if !d.need(1) {
		return 0
	}
	v := d.B[d.Off]
	d.Off++
	return v
}

func (d *Decoder) length() (int, bool) {
	n := d.Int()
	if d.err != nil {
		return 0, false
	}
	if n == -1 {
		return -1, true
	}
	if n < 0 || (d.MaxLen > 0 && int(n) > d.MaxLen) {
		d.err = fmt.Errorf("%w: %d", ErrLength, n)
		return 0, false
	}
	return int(n), true
}

// Buffer reads a buffer. It aliases the input; null (-1) decodes as nil, empty as a non-nil
// empty slice.
func (d *Decoder) Buffer() []byte {
	n, ok := d.length()
	if !ok || n < 0 {
		return nil
	}
	if !d.need(n) {
		return nil
	}
	b := d.B[d.Off : d.Off+n : d.Off+n]
	d.Off += n
	return b
}

// String reads a ustring; null decodes as "". Bytes that are not UTF-8 read as Java reads
// them (JavaString).
func (d *Decoder) String() string {
	s, _ := d.NullString()
	return s
}

// NullString reads a ustring and reports whether it was null.
func (d *Decoder) NullString() (string, bool) {
	n, ok := d.length()
	if !ok {
		return "", false
	}
	if n < 0 {
		return "", true
	}
	if !d.need(n) {
		return "", false
	}
	b := d.B[d.Off : d.Off+n]
	d.Off += n
	return JavaString(b), false
}

// vectorLen reads a vector length: -1 for null, else the element count. A count below -1
// reads as 0, as in Java's BinaryInputArchive, whose vector index is done once its count is
// <= 0 (so ZooKeeper decodes an ACL list of length -2 as empty and answers INVALIDACL, not
// MARSHALLINGERROR). It checks that at least minElem bytes per element remain, so a hostile
// count cannot make the caller allocate more than the input could hold.
func (d *Decoder) vectorLen(minElem int) int {
	n := int(d.Int())
	if d.err != nil || n == -1 {
		return -1
	}
	if n < 0 {
		return 0
	}
	if d.MaxLen > 0 && n > d.MaxLen {
		d.err = fmt.Errorf("%w: %d", ErrLength, n)
		return -1
	}
	if minElem > 0 && n > (len(d.B)-d.Off)/minElem {
		d.Fail(ErrShort)
		return -1
	}
	return n
}

// Strings reads a vector<ustring>; null decodes as nil.
func (d *Decoder) Strings() []string {
	n := d.vectorLen(4)
	if n < 0 {
		return nil
	}
	v := make([]string, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		v = append(v, d.String())
	}
	return v
}

// Unmarshal decodes b into r and requires that all of b is consumed.
func Unmarshal(b []byte, r Record) error {
	d := Decoder{B: b}
	r.Decode(&d)
	if d.err != nil {
		return d.err
	}
	if d.Off != len(b) {
		return fmt.Errorf("jute: %d trailing bytes after %T", len(b)-d.Off, r)
	}
	return nil
}

// UnmarshalPrefix decodes a record from the start of b and returns the bytes consumed.
func UnmarshalPrefix(b []byte, r Record) (int, error) {
	d := Decoder{B: b}
	r.Decode(&d)
	return d.Off, d.err
}
