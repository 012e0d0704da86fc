package jute

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand"
	"reflect"
	"runtime"
	"sort"
	"testing"
)

// decodeNoPanic runs rec.Decode over b and turns a panic into a test failure.
func decodeNoPanic(t *testing.T, rec Record, b []byte) (d *Decoder) {
	t.Helper()
	d = NewDecoder(b)
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%T.Decode(%x) panicked: %v", rec, b, p)
		}
	}()
	rec.Decode(d)
	return d
}

// optionalTail reports whether rec has a valid shorter encoding (a trailing field that may be
// absent), so a truncation of its encoding can decode without error.
func optionalTail(rec Record) bool {
	switch rec.(type) {
	case *ConnectRequest, *ConnectResponse, *CreateTxn, *CloseSessionTxn, *Empty:
		return true
	}
	return false
}

func TestTruncatedRecordsFail(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	names := make([]string, 0, len(recordGens))
	for name := range recordGens {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		gen := recordGens[name]
		t.Run(name, func(t *testing.T) {
			for i := 0; i < 40; i++ {
				rec := gen(r)
				full := Marshal(rec)
				for n := 0; n < len(full); n++ {
					// Capacity n too, so no reslicing could reach the rest of the encoding.
					b := full[:n:n]
					got := newEmpty(rec)
					d := decodeNoPanic(t, got, b)
					err := d.Err()
					switch {
					case err != nil:
						if !errors.Is(err, ErrShort) {
							t.Fatalf("%d of %d bytes of %x: error %v, want ErrShort", n, len(full), full, err)
						}
					case !optionalTail(rec):
						t.Fatalf("%d of %d bytes of %x decoded without error: %+v", n, len(full), full, got)
					case d.Remaining() == 0:
						// A legitimate shorter form: it must be self-consistent.
						if re := Marshal(got); !sameAfterJavaRoundTrip(re, b) {
							t.Fatalf("%d of %d bytes of %x decoded as %+v, which encodes as %x", n, len(full), full, got, re)
						}
					default:
						// Only CloseSessionTxn leaves bytes for a digest it guesses follows.
						if _, ok := rec.(*CloseSessionTxn); !ok || d.Remaining() != 12 {
							t.Fatalf("%d of %d bytes of %x: no error but %d bytes left", n, len(full), full, d.Remaining())
						}
						if err := Unmarshal(b, newEmpty(rec)); err == nil {
							t.Fatalf("Unmarshal accepted a truncated CloseSessionTxn %x", b)
						}
					}
				}
			}
		})
	}
}

func TestTruncatedTxnsFail(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for i := 0; i < 300; i++ {
		var lt LoggedTxn
		fill(r, reflect.ValueOf(&lt.Header))
		lt.Header.Type, lt.Body = randTxnBody(r, true)
		lt.Digest = &TxnDigest{Version: 2, TreeDigest: int64(r.Uint64())}
		full := EncodeTxn(nil, &lt)
		for n := 0; n < len(full); n++ {
			b := full[:n:n]
			got, err := decodeTxnNoPanic(t, b)
			if err != nil {
				continue
			}
			// Dropping the digest, or a CreateTxn's parentCVersion, leaves a valid txn.
			if re := EncodeTxn(nil, &got); !sameAfterJavaRoundTrip(re, b) {
				t.Fatalf("%d of %d bytes of %x decoded as %+v %+v, which encodes as %x", n, len(full), full, got.Header, got.Body, re)
			}
		}
	}
}

func decodeTxnNoPanic(t *testing.T, b []byte) (lt LoggedTxn, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("DecodeTxn(%x) panicked: %v", b, p)
		}
	}()
	return DecodeTxn(b)
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func TestBadLengths(t *testing.T) {
	cases := []struct {
		name string
		in   string
		rec  Record
		want error
	}{
		{"buffer -2", "fffffffe", &SASLToken{}, ErrLength},
		{"buffer min int", "80000000", &SASLToken{}, ErrLength},
		{"buffer huge", "7fffffff01", &SASLToken{}, ErrShort},
		{"buffer one short", "0000000401020304"[:14], &SASLToken{}, ErrShort},
		{"string -2", "fffffffe", &PathRequest{}, ErrLength},
		{"string huge", "7fffffff2f", &PathRequest{}, ErrShort},
		{"strings huge", "7fffffff00000000", &StringsResponse{}, ErrShort},
		{"acls huge", "00000000" + "7fffffff" + "000000000000000000000000", &SetACLRequest{}, ErrShort},
		{"ids huge", "00000000" + "0000000000000000" + "ffffffff" + "7fffffff", &QuorumPacket{}, ErrShort},
		{"clientinfo huge", "7fffffff0000000000000000", &WhoAmIResponse{}, ErrShort},
		{"txns huge", "7fffffff0000000100000000", &MultiTxn{}, ErrShort},
		{"passwd -7", "00000000" + "00000000" + "0000000000000000" + "fffffff9", &ConnectResponse{}, ErrLength},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := decodeNoPanic(t, c.rec, mustHex(c.in))
			if !errors.Is(d.Err(), c.want) {
				t.Errorf("error %v, want %v", d.Err(), c.want)
			}
		})
	}
}

// A vector count below -1 reads as an empty vector, as Java's BinaryInputArchive reads it
// (its index is done once the count is <= 0); -1 stays null.
func TestNegativeVectorCountIsEmpty(t *testing.T) {
	var s StringsResponse
	if err := Unmarshal(mustHex("fffffffe"), &s); err != nil || s.Strings == nil || len(s.Strings) != 0 {
		t.Errorf("strings -2: %#v, error %v; want an empty non-nil list", s.Strings, err)
	}
	var a SetACLRequest
	if err := Unmarshal(mustHex("00000000"+"fffffffb"+"00000007"), &a); err != nil || a.ACL == nil || len(a.ACL) != 0 || a.Version != 7 {
		t.Errorf("acls -5: %+v, error %v; want an empty non-nil list, version 7", a, err)
	}
	if err := Unmarshal(mustHex("00000000"+"80000000"+"00000007"), &a); err != nil || a.ACL == nil || len(a.ACL) != 0 {
		t.Errorf("acls min int: %+v, error %v; want an empty non-nil list", a, err)
	}
	if err := Unmarshal(mustHex("00000000"+"ffffffff"+"00000007"), &a); err != nil || a.ACL != nil {
		t.Errorf("acls -1: %+v, error %v; want a nil list", a, err)
	}
	var m MultiTxn
	if err := Unmarshal(mustHex("fffffffd"), &m); err != nil || m.Txns == nil || len(m.Txns) != 0 {
		t.Errorf("txns -3: %+v, error %v; want an empty list", m, err)
	}
}

func TestMaxLen(t *testing.T) {
	b := Marshal(&GetDataResponse{Data: make([]byte, 100)})
	d := &Decoder{B: b, MaxLen: 99}
	var r GetDataResponse
	r.Decode(d)
	if !errors.Is(d.Err(), ErrLength) {
		t.Errorf("100-byte buffer with MaxLen 99: error %v, want ErrLength", d.Err())
	}
	d = &Decoder{B: b, MaxLen: 100}
	r.Decode(d)
	if d.Err() != nil || len(r.Data) != 100 {
		t.Errorf("100-byte buffer with MaxLen 100: error %v", d.Err())
	}
	s := Marshal(&StringsResponse{Strings: []string{"a", "b", "c"}})
	d = &Decoder{B: s, MaxLen: 2}
	var sr StringsResponse
	sr.Decode(d)
	if !errors.Is(d.Err(), ErrLength) {
		t.Errorf("3-element vector with MaxLen 2: error %v, want ErrLength", d.Err())
	}
}

// A hostile vector count must be rejected before anything proportional to it is allocated.
func TestHugeVectorCountDoesNotAllocate(t *testing.T) {
	cases := map[string]struct {
		in  []byte
		rec func() Record
	}{
		"strings":    {mustHex("7fffffff" + "00000001" + "61"), func() Record { return &StringsResponse{} }},
		"acls":       {mustHex("00000001" + "2f" + "ffffffff" + "7fffffff" + "00000000"), func() Record { return &CreateRequest{} }},
		"ids":        {mustHex("00000000" + "0000000000000000" + "ffffffff" + "7fffffff" + "00000000"), func() Record { return &QuorumPacket{} }},
		"clientinfo": {mustHex("7fffffff" + "00000000"), func() Record { return &WhoAmIResponse{} }},
		"txns":       {mustHex("7fffffff" + "00000001" + "ffffffff"), func() Record { return &MultiTxn{} }},
		"buffer":     {mustHex("7fffffff" + "00"), func() Record { return &SASLToken{} }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for i := 0; i < 10; i++ {
				d := decodeNoPanic(t, c.rec(), c.in)
				if !errors.Is(d.Err(), ErrShort) {
					t.Fatalf("error %v, want ErrShort", d.Err())
				}
			}
			runtime.ReadMemStats(&after)
			// Ten decodes of a few bytes: anything near one vector of 2^31 elements would be
			// gigabytes.
			if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
				t.Errorf("decoding allocated %d bytes", n)
			}
		})
	}
}

func TestDecoderStickyError(t *testing.T) {
	d := NewDecoder(mustHex("0000000102"))
	if d.Int() != 1 || d.Err() != nil {
		t.Fatal("first Int failed")
	}
	if d.Long() != 0 || !errors.Is(d.Err(), ErrShort) {
		t.Fatalf("Long past the end: err %v", d.Err())
	}
	// Later reads return zero values and keep the first error, even where bytes remain.
	if d.Byte() != 0 || d.Bool() || d.Buffer() != nil || d.String() != "" || d.Strings() != nil {
		t.Error("reads after an error returned data")
	}
	if d.Remaining() != 1 || !errors.Is(d.Err(), ErrShort) {
		t.Errorf("remaining %d, err %v", d.Remaining(), d.Err())
	}
	d.Fail(ErrLength)
	if !errors.Is(d.Err(), ErrShort) {
		t.Errorf("Fail replaced the first error: %v", d.Err())
	}
}

func TestBoolAcceptsAnyNonZero(t *testing.T) {
	var r PathWatchRequest
	if err := Unmarshal(mustHex("000000012f"+"7f"), &r); err != nil || !r.Watch {
		t.Errorf("watch byte 0x7f: %+v, %v", r, err)
	}
	if got := Marshal(&r); got[len(got)-1] != 1 {
		t.Errorf("true encodes as %#x", got[len(got)-1])
	}
}

func TestNullString(t *testing.T) {
	d := NewDecoder(mustHex("ffffffff00000000"))
	if s, null := d.NullString(); s != "" || !null {
		t.Errorf("null string: %q %v", s, null)
	}
	if s, null := d.NullString(); s != "" || null || d.Err() != nil {
		t.Errorf("empty string: %q %v %v", s, null, d.Err())
	}
}

func TestMultiRejectsBadOps(t *testing.T) {
	// A ping inside a multi request.
	req := mustHex("0000000b" + "00" + "ffffffff" + "ffffffff01ffffffff")
	if err := Unmarshal(req, &MultiRequest{}); err == nil {
		t.Error("multi request with a ping op accepted")
	}
	// A result of type exists inside a multi response.
	resp := mustHex("00000003" + "00" + "00000000" + "ffffffff01ffffffff")
	if err := Unmarshal(resp, &MultiResponse{}); err == nil {
		t.Error("multi response with an exists result accepted")
	}
	// No end marker.
	if err := Unmarshal(mustHex("00000002"+"00"+"ffffffff"+"000000012f"+"ffffffff"), &MultiRequest{}); !errors.Is(err, ErrShort) {
		t.Errorf("multi without end marker: %v", err)
	}
}

func TestUnmarshalTrailingBytes(t *testing.T) {
	b := append(Marshal(&PathRequest{Path: "/a"}), 0)
	if err := Unmarshal(b, &PathRequest{}); err == nil {
		t.Error("trailing byte accepted")
	}
	n, err := UnmarshalPrefix(b, &PathRequest{})
	if err != nil || n != len(b)-1 {
		t.Errorf("UnmarshalPrefix = %d, %v", n, err)
	}
	if got := AppendRecord([]byte{9}, &PathRequest{Path: "/a"}); !bytes.Equal(got, append([]byte{9}, b[:len(b)-1]...)) {
		t.Errorf("AppendRecord = %x", got)
	}
}
