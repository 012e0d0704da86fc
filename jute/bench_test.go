package jute

import "testing"

func benchStat() Stat {
	return Stat{Czxid: 2, Mzxid: 5, Ctime: 1795337712852, Mtime: 1795337713263, Version: 2,
		Cversion: 2, DataLength: 1024, NumChildren: 2, Pzxid: 5}
}

func BenchmarkEncodeGetDataResponse1K(b *testing.B) {
	r := GetDataResponse{Data: make([]byte, 1024), Stat: benchStat()}
	buf := make([]byte, 0, 2048)
	b.SetBytes(int64(len(Marshal(&r))))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendRecord(buf[:0], &r)
	}
}

func BenchmarkMarshalGetDataResponse1K(b *testing.B) {
	r := GetDataResponse{Data: make([]byte, 1024), Stat: benchStat()}
	b.SetBytes(int64(len(Marshal(&r))))
	b.ReportAllocs()
	for b.Loop() {
		_ = Marshal(&r)
	}
}

func BenchmarkDecodeGetDataResponse1K(b *testing.B) {
	enc := Marshal(&GetDataResponse{Data: make([]byte, 1024), Stat: benchStat()})
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	var r GetDataResponse
	for b.Loop() {
		if err := Unmarshal(enc, &r); err != nil {
			b.Fatal(err)
		}
	}
}

func benchCreate() CreateRequest {
	return CreateRequest{Path: "/golden/some/node-0000000001", Data: []byte("hello"),
		ACL: OpenACLUnsafe, Flags: FlagEphemeralSequential}
}

func BenchmarkEncodeCreateRequest(b *testing.B) {
	r := benchCreate()
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(Marshal(&r))))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendRecord(buf[:0], &r)
	}
}

func BenchmarkDecodeCreateRequest(b *testing.B) {
	r0 := benchCreate()
	enc := Marshal(&r0)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	var r CreateRequest
	for b.Loop() {
		if err := Unmarshal(enc, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// Unmarshal's Decoder escapes through the Record interface call; a caller that keeps its own
// Decoder avoids that allocation.
func BenchmarkDecodeGetDataResponse1KReusedDecoder(b *testing.B) {
	enc := Marshal(&GetDataResponse{Data: make([]byte, 1024), Stat: benchStat()})
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	var r GetDataResponse
	d := NewDecoder(nil)
	for b.Loop() {
		*d = Decoder{B: enc}
		r.Decode(d)
		if d.Err() != nil {
			b.Fatal(d.Err())
		}
	}
}

// The string benchmarks cover what nearly every request carries: an ASCII path, and a path
// of BMP characters (2- and 3-byte UTF-8), which must stay on the copy-only fast paths.
var benchStrings = []struct{ name, s string }{
	{"ASCII", "/golden/some/node-0000000001"},
	{"BMP", "/gölden/sömé/nœde-€-日本語-0000000001"},
}

func BenchmarkEncodeString(b *testing.B) {
	for _, c := range benchStrings {
		b.Run(c.name, func(b *testing.B) {
			e := Encoder{Buf: make([]byte, 0, 256)}
			b.SetBytes(int64(len(c.s)))
			b.ReportAllocs()
			for b.Loop() {
				e.Buf = e.Buf[:0]
				e.String(c.s)
			}
		})
	}
}

func BenchmarkDecodeString(b *testing.B) {
	for _, c := range benchStrings {
		b.Run(c.name, func(b *testing.B) {
			e := Encoder{}
			e.String(c.s)
			b.SetBytes(int64(len(c.s)))
			b.ReportAllocs()
			var d Decoder
			for b.Loop() {
				d = Decoder{B: e.Buf}
				if d.String() == "" {
					b.Fatal(d.Err())
				}
			}
		})
	}
}
