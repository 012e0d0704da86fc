package chcompress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

func stream(t testing.TB, parts ...[]byte) []byte {
	t.Helper()
	var z Writer
	var out []byte
	for _, p := range parts {
		out = z.AppendBlocks(out, p)
	}
	return out
}

// TestRoundTrip: small, empty-free, compressible and random data of several blocks read
// back through Reader exactly, the block layout as ClickHouse writes it.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 3<<20+17)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	parts := [][]byte{[]byte("hello"), bytes.Repeat([]byte("zkd "), 1<<19), random, {0}}
	s := stream(t, parts...)
	got, err := io.ReadAll(NewReader(bytes.NewReader(s)))
	if err != nil {
		t.Fatal(err)
	}
	if want := bytes.Join(parts, nil); !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, want %d", len(got), len(want))
	}
	// The first block: LZ4, the size fields little-endian, the checksum over the rest.
	if s[16] != MethodLZ4 || binary.LittleEndian.Uint32(s[21:25]) != 5 {
		t.Fatalf("first block header % x", s[:25])
	}
}

// TestChecksumMismatch: one flipped bit in a block's data is ErrChecksum, and the reader
// stays failed.
func TestChecksumMismatch(t *testing.T) {
	s := stream(t, bytes.Repeat([]byte("abc"), 1000))
	s[len(s)-1] ^= 1
	z := NewReader(bytes.NewReader(s))
	if _, err := io.ReadAll(z); !errors.Is(err, ErrChecksum) {
		t.Fatalf("got %v, want ErrChecksum", err)
	}
	if _, err := z.Read(make([]byte, 1)); !errors.Is(err, ErrChecksum) {
		t.Fatalf("after the error: %v", err)
	}
}

// TestBadHeaders: an unknown method and sizes out of range are refused before anything is
// read or allocated for them.
func TestBadHeaders(t *testing.T) {
	for name, h := range map[string][]byte{
		"method":  {0x90, 9, 0, 0, 0, 0, 0, 0, 0},
		"small":   {MethodLZ4, 8, 0, 0, 0, 0, 0, 0, 0},
		"huge":    {MethodLZ4, 0xff, 0xff, 0xff, 0x7f, 1, 0, 0, 0},
		"ratio":   {MethodLZ4, 10, 0, 0, 0, 0, 0, 0, 1},
		"none-sz": {MethodNone, 10, 0, 0, 0, 2, 0, 0, 0},
	} {
		b := append(make([]byte, ChecksumSize), h...)
		if _, _, err := DecodeBlock(nil, append(b, make([]byte, 64)...)); !errors.Is(err, ErrBadBlock) {
			t.Errorf("%s: %v, want ErrBadBlock", name, err)
		}
	}
}

// FuzzDecodeBlock: any input decodes or fails without panicking; one whose checksum is made
// right decodes or fails with ErrBadBlock; what decodes re-encodes to the same data.
func FuzzDecodeBlock(f *testing.F) {
	for _, p := range [][]byte{[]byte("x"), bytes.Repeat([]byte("ab"), 300), {0, 1, 2, 3}} {
		f.Add(stream(f, p))
	}
	none := []byte{MethodNone, 12, 0, 0, 0, 3, 0, 0, 0, 'a', 'b', 'c'}
	sum := checksum(none)
	f.Add(append(sum[:], none...))
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(b []byte) {
			data, n, err := DecodeBlock(nil, b)
			if err != nil {
				return
			}
			if n > len(b) {
				t.Fatalf("block of %d bytes in %d", n, len(b))
			}
			back, _, err := DecodeBlock(nil, stream(t, data))
			if len(data) > 0 && (err != nil || !bytes.Equal(back, data)) {
				t.Fatalf("re-encoded block: %v", err)
			}
		}
		check(b)
		if len(b) >= ChecksumSize+HeaderSize {
			c := bytes.Clone(b)
			csize := int(binary.LittleEndian.Uint32(c[ChecksumSize+1:]))
			if csize >= HeaderSize && ChecksumSize+csize <= len(c) {
				sum := checksum(c[ChecksumSize : ChecksumSize+csize])
				copy(c, sum[:])
				if _, _, err := DecodeBlock(nil, c); err != nil && !errors.Is(err, ErrBadBlock) {
					t.Fatalf("checksummed block: %v", err)
				}
			}
			check(c)
		}
	})
}

// TestDecodeClickHouseBlock decodes a block made by another implementation of ClickHouse's
// format (ClickHouse/ch-go's compress/_golden/data_compressed_lz4): zkd's own round trips
// cannot show that the checksum's CityHash version and word order, or the header's fields,
// are ClickHouse's.
func TestDecodeClickHouseBlock(t *testing.T) {
	block := []byte{
		0xc5, 0xbc, 0xbc, 0x07, 0xc1, 0x1e, 0xc4, 0x71, 0xfd, 0x74, 0xaf, 0x8d, 0x5b, 0x0f, 0x00, 0xc5,
		0x82, 0x26, 0x00, 0x00, 0x00, 0xaf, 0x00, 0x00, 0x00, 0x7f, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x21,
		0x0a, 0x07, 0x00, 0x82, 0x00, 0x93, 0x00, 0x00, 0x9a, 0x00, 0xb0, 0x6c, 0x6f, 0x21, 0x0a, 0x48,
		0x65, 0x6c, 0x6c, 0x6f, 0x21, 0x0a,
	}
	data, n, err := DecodeBlock(nil, block)
	if err != nil || n != len(block) {
		t.Fatalf("DecodeBlock: %d bytes, %v", n, err)
	}
	if want := strings.Repeat("Hello!\n", 25); string(data) != want {
		t.Fatalf("decoded %q, want %q", data, want)
	}
	// And zkd's checksum of the same header and data is the one the block carries.
	if sum := checksum(block[ChecksumSize:]); !bytes.Equal(sum[:], block[:ChecksumSize]) {
		t.Fatalf("checksum %x, the block says %x", sum, block[:ChecksumSize])
	}
}
