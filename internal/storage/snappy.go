package storage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/snappy"
)

// ZooKeeper's snappy snapshots (zookeeper.snapshot.compression.method=snappy) are written
// through xerial's SnappyOutputStream, whose framing is neither snappy's own framing format
// nor raw snappy:
//
//	82 'S' 'N' 'A' 'P' 'P' 'Y' 00 | version int (1) | compatible version int (1)
//	then chunks: length int | a raw snappy block of length bytes
//
// Each block holds at most 32 KiB of input (SnappyOutputStream's default block size).
// SnappyInputStream also accepts a new header where a chunk would start (concatenated
// streams), so the reader does too.

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	xerialBlockSize  = 32 << 10
	// xerialMaxChunk bounds a chunk's compressed length so a corrupt length cannot make the
	// reader allocate without limit; snappy's worst case for a 32 KiB block is ~38 KiB, and
	// writers with larger blocks (xerial allows up to 512 MiB) are not expected here.
	xerialMaxChunk = 64 << 20
)

// errSnappy reports malformed snappy framing or a block that does not decode.
var errSnappy = errors.New("bad snappy stream")

// snappyReader decodes xerial's SnappyInputStream format.
type snappyReader struct {
	r    *bufio.Reader
	comp []byte
	buf  []byte // decoded bytes not yet returned
	out  []byte // backing store of buf
}

// NewSnappyReader checks the stream header of a snappy snapshot and returns a reader of
// the decompressed bytes. Framing and block errors match ErrCorruptSnapshot's cause
// (errors from its Read wrap errSnappy, which ReadSnapshot reports as corruption).
func NewSnappyReader(r io.Reader) (io.Reader, error) { return newSnappyReader(r) }

func newSnappyReader(r io.Reader) (*snappyReader, error) {
	sr := &snappyReader{r: bufio.NewReaderSize(r, 64<<10)}
	if err := sr.header(); err != nil {
		return nil, err
	}
	return sr, nil
}

func (s *snappyReader) header() error {
	var h [xerialHeaderSize]byte
	if _, err := io.ReadFull(s.r, h[:]); err != nil {
		return fmt.Errorf("%w: short header: %w", errSnappy, err)
	}
	if !bytes.Equal(h[:8], xerialMagic) {
		return fmt.Errorf("%w: bad magic % x", errSnappy, h[:8])
	}
	// SnappyCodec refuses a stream whose compatible version is older than 1.
	if compat := int32(binary.BigEndian.Uint32(h[12:])); compat < 1 {
		return fmt.Errorf("%w: compatible version %d", errSnappy, compat)
	}
	return nil
}

func (s *snappyReader) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if err := s.chunk(); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// chunk decodes the next block into s.buf; io.EOF at a chunk boundary is the end.
func (s *snappyReader) chunk() error {
	if peek, err := s.r.Peek(len(xerialMagic)); err == nil && bytes.Equal(peek, xerialMagic) {
		return s.header()
	}
	var lb [4]byte
	if _, err := io.ReadFull(s.r, lb[:]); err != nil {
		if err == io.EOF {
			return io.EOF
		}
		return fmt.Errorf("%w: short chunk length: %w", errSnappy, err)
	}
	n := int32(binary.BigEndian.Uint32(lb[:]))
	if n < 0 || n > xerialMaxChunk {
		return fmt.Errorf("%w: chunk length %d", errSnappy, n)
	}
	if cap(s.comp) < int(n) {
		s.comp = make([]byte, n)
	}
	s.comp = s.comp[:n]
	if _, err := io.ReadFull(s.r, s.comp); err != nil {
		return fmt.Errorf("%w: short chunk: %w", errSnappy, io.ErrUnexpectedEOF)
	}
	out, err := snappy.Decode(s.out[:cap(s.out)], s.comp)
	if err != nil {
		return fmt.Errorf("%w: %w", errSnappy, err)
	}
	s.out = out
	s.buf = out
	return nil
}

// SnappyWriter compresses to xerial's SnappyOutputStream format, as ZooKeeper writes
// snapshot.<zxid>.snappy. Close flushes the last block; it does not close the underlying
// writer.
type SnappyWriter struct {
	w       io.Writer
	pending []byte
	comp    []byte
	started bool
	err     error
}

// NewSnappyWriter returns a writer that frames its input as SnappyOutputStream does.
func NewSnappyWriter(w io.Writer) *SnappyWriter {
	return &SnappyWriter{w: w, pending: make([]byte, 0, xerialBlockSize)}
}

func (s *SnappyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	total := len(p)
	for len(p) > 0 {
		n := min(len(p), xerialBlockSize-len(s.pending))
		s.pending = append(s.pending, p[:n]...)
		p = p[n:]
		if len(s.pending) == xerialBlockSize {
			if err := s.flushBlock(); err != nil {
				return total - len(p), err
			}
		}
	}
	return total, nil
}

func (s *SnappyWriter) flushBlock() error {
	if !s.started {
		// SnappyOutputStream writes its header on the first flush, even of an empty stream.
		h := make([]byte, 0, xerialHeaderSize)
		h = append(h, xerialMagic...)
		h = binary.BigEndian.AppendUint32(h, 1)
		h = binary.BigEndian.AppendUint32(h, 1)
		if _, err := s.w.Write(h); err != nil {
			s.err = err
			return err
		}
		s.started = true
	}
	if len(s.pending) == 0 {
		return nil
	}
	s.comp = snappy.Encode(s.comp[:cap(s.comp)], s.pending)
	var lb [4]byte
	binary.BigEndian.PutUint32(lb[:], uint32(len(s.comp)))
	if _, err := s.w.Write(lb[:]); err != nil {
		s.err = err
		return err
	}
	if _, err := s.w.Write(s.comp); err != nil {
		s.err = err
		return err
	}
	s.pending = s.pending[:0]
	return nil
}

// Close writes what is buffered (and the header, if nothing was written yet).
func (s *SnappyWriter) Close() error {
	if s.err != nil {
		return s.err
	}
	return s.flushBlock()
}
