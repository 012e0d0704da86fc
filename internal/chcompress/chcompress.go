// Package chcompress is ClickHouse's compressed block stream, as ClickHouse Keeper's
// compressed session (protocol version 10) frames everything after the handshake, both
// ways (ClickHouse's src/Compression/CompressedReadBufferBase.cpp, CompressedWriteBuffer.cpp,
// CompressionInfo.h). The stream is a sequence of blocks, each:
//
//	+------------------+--------+-----------------+-------------------+-------------+
//	| checksum 16      | method | compressed size | decompressed size | data        |
//	| CityHash128      | 1 byte | uint32 LE       | uint32 LE         |             |
//	+------------------+--------+-----------------+-------------------+-------------+
//	                   |<------------ compressed size (header 9 + data) ------------>|
//
// The checksum is CityHash v1.0.2's CityHash128 of everything after it in the block
// (method, sizes, data), written low 64 bits first, each little-endian. The method is LZ4
// (0x82: data is one LZ4 block) or none (0x02: data is the bytes). Blocks do not follow
// ZooKeeper's frames: a block holds whatever was flushed (several frames, or part of one).
// Decoding does no I/O but what its reader does and starts no goroutines.
package chcompress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/go-faster/city"
	"github.com/pierrec/lz4/v4"
)

const (
	// ChecksumSize and HeaderSize are the block's checksum and its header after it.
	ChecksumSize = 16
	HeaderSize   = 9
	// MethodLZ4 and MethodNone are ClickHouse's CompressionMethodByte values read here.
	MethodLZ4  byte = 0x82
	MethodNone byte = 0x02
	// MaxBlock is the most data a block decodes to (and its compressed size): ClickHouse's
	// writers emit blocks of at most 1 MiB (DBMS_DEFAULT_BUFFER_SIZE); this bound keeps a
	// peer from making the reader hold more than that for one block.
	MaxBlock = 16 << 20
	// writeBlock is the most data Writer puts in one block, ClickHouse's buffer size.
	writeBlock = 1 << 20
	// maxRatio bounds decompressed/compressed: LZ4 cannot do better than about 255:1, so a
	// larger claim is a lie meant to make the reader allocate.
	maxRatio = 256
)

var (
	// ErrChecksum is wrapped by the error of a block whose checksum does not match.
	ErrChecksum = errors.New("chcompress: block checksum mismatch")
	// ErrBadBlock is wrapped by the error of a block that cannot be decoded (unknown
	// method, sizes out of range, LZ4 data that does not decode to the stated size).
	ErrBadBlock = errors.New("chcompress: bad block")
)

// checksum is the block's checksum of b (the block after the checksum), as stored.
func checksum(b []byte) [ChecksumSize]byte {
	h := city.CH128(b)
	var sum [ChecksumSize]byte
	binary.LittleEndian.PutUint64(sum[:8], h.Low)
	binary.LittleEndian.PutUint64(sum[8:], h.High)
	return sum
}

// header checks a block's checksum-less header and returns its compressed size (header
// included) and decompressed size.
func header(h []byte) (method byte, csize, dsize int, err error) {
	method = h[0]
	csize = int(binary.LittleEndian.Uint32(h[1:5]))
	dsize = int(binary.LittleEndian.Uint32(h[5:9]))
	switch {
	case method != MethodLZ4 && method != MethodNone:
		return 0, 0, 0, fmt.Errorf("%w: method 0x%02x", ErrBadBlock, method)
	case csize < HeaderSize || csize-HeaderSize > MaxBlock || dsize > MaxBlock:
		return 0, 0, 0, fmt.Errorf("%w: sizes %d/%d", ErrBadBlock, csize, dsize)
	case method == MethodNone && dsize != csize-HeaderSize:
		return 0, 0, 0, fmt.Errorf("%w: uncompressed block of %d bytes says %d", ErrBadBlock, csize-HeaderSize, dsize)
	case dsize > maxRatio*(csize-HeaderSize)+64:
		return 0, 0, 0, fmt.Errorf("%w: %d bytes cannot decompress to %d", ErrBadBlock, csize-HeaderSize, dsize)
	}
	return method, csize, dsize, nil
}

// DecodeBlock decodes the block at the start of b into dst (grown as needed) and returns the
// data and the block's length. A b shorter than its block is io.ErrUnexpectedEOF.
func DecodeBlock(dst, b []byte) (data []byte, n int, err error) {
	if len(b) < ChecksumSize+HeaderSize {
		return nil, 0, io.ErrUnexpectedEOF
	}
	method, csize, dsize, err := header(b[ChecksumSize:])
	if err != nil {
		return nil, 0, err
	}
	if len(b) < ChecksumSize+csize {
		return nil, 0, io.ErrUnexpectedEOF
	}
	block := b[ChecksumSize : ChecksumSize+csize]
	data, err = decode(dst, b[:ChecksumSize], block, method, dsize)
	return data, ChecksumSize + csize, err
}

// decode checks block (header and data) against sum and decodes its data into dst.
func decode(dst, sum, block []byte, method byte, dsize int) ([]byte, error) {
	if want := checksum(block); string(want[:]) != string(sum) {
		return nil, ErrChecksum
	}
	src := block[HeaderSize:]
	if method == MethodNone {
		return append(dst[:0], src...), nil
	}
	if dsize == 0 {
		// LZ4 encodes nothing as one empty token; the decoder must not see an empty
		// destination (its assembly reads through a nil one: a fuzzed block did).
		if len(src) != 1 || src[0] != 0 {
			return nil, fmt.Errorf("%w: %d bytes of LZ4 data for an empty block", ErrBadBlock, len(src))
		}
		return dst[:0], nil
	}
	if cap(dst) < dsize {
		dst = make([]byte, dsize)
	}
	dst = dst[:dsize]
	n, err := lz4.UncompressBlock(src, dst)
	if err != nil || n != dsize {
		return nil, fmt.Errorf("%w: LZ4 data decodes to %d bytes of %d: %v", ErrBadBlock, n, dsize, err)
	}
	return dst, nil
}

// Reader reads the data of a block stream.
type Reader struct {
	r    io.Reader
	buf  []byte // the block being read, checksum and header included
	data []byte // decoded data of the current block
	off  int    // read up to here in data
	err  error
}

// NewReader reads blocks from r, which should be buffered: a block is read in two reads
// (its header, then the rest), and both callers already read through a buffer.
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

// Read reads decoded bytes. An error in a block (ErrChecksum, ErrBadBlock) ends the
// stream: nothing after a damaged block can be trusted.
func (z *Reader) Read(p []byte) (int, error) {
	for z.off == len(z.data) {
		if z.err != nil {
			return 0, z.err
		}
		z.err = z.next()
	}
	n := copy(p, z.data[z.off:])
	z.off += n
	return n, nil
}

// next reads and decodes the next block.
func (z *Reader) next() error {
	var head [ChecksumSize + HeaderSize]byte
	if _, err := io.ReadFull(z.r, head[:]); err != nil {
		return err
	}
	method, csize, dsize, err := header(head[ChecksumSize:])
	if err != nil {
		return err
	}
	if cap(z.buf) < csize {
		z.buf = make([]byte, csize)
	}
	block := z.buf[:csize]
	copy(block, head[ChecksumSize:])
	if _, err := io.ReadFull(z.r, block[HeaderSize:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	data, err := decode(z.data, head[:ChecksumSize], block, method, dsize)
	if err != nil {
		return err
	}
	z.data, z.off = data, 0
	return nil
}

// Writer encodes data as LZ4 blocks. Not safe for concurrent use.
type Writer struct {
	c   lz4.Compressor
	out []byte
}

// AppendBlocks appends p's blocks (LZ4, at most 1 MiB of data each) to dst. Empty p
// appends nothing.
func (z *Writer) AppendBlocks(dst, p []byte) []byte {
	for len(p) > 0 {
		chunk := p[:min(len(p), writeBlock)]
		p = p[len(chunk):]
		start := len(dst)
		dst = append(dst, make([]byte, ChecksumSize+HeaderSize+lz4.CompressBlockBound(len(chunk)))...)
		body := dst[start+ChecksumSize:]
		// With room for the bound, compression always succeeds (and LZ4 is what
		// ClickHouse's reader expects of every block once the first said LZ4).
		n, err := z.c.CompressBlock(chunk, body[HeaderSize:])
		if err != nil || n == 0 {
			panic(fmt.Sprintf("chcompress: LZ4 block of %d bytes: %d, %v", len(chunk), n, err))
		}
		body[0] = MethodLZ4
		binary.LittleEndian.PutUint32(body[1:5], uint32(HeaderSize+n))
		binary.LittleEndian.PutUint32(body[5:9], uint32(len(chunk)))
		sum := checksum(body[:HeaderSize+n])
		copy(dst[start:], sum[:])
		dst = dst[:start+ChecksumSize+HeaderSize+n]
	}
	return dst
}

// Write writes p to w as blocks, in one write.
func (z *Writer) Write(w io.Writer, p []byte) error {
	z.out = z.AppendBlocks(z.out[:0], p)
	_, err := w.Write(z.out)
	if cap(z.out) > 4*writeBlock {
		z.out = nil
	}
	return err
}
