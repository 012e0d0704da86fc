package jute

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// FrameHeaderSize is the size of a frame's length prefix (doc.go, "Framing").
const FrameHeaderSize = 4

// ErrFrameSize is wrapped by every error about a frame length outside what the reader
// accepts. A reader cannot resynchronise after one (the stream has no frame markers), so
// the connection that sent it must be closed; other connections are unaffected.
var ErrFrameSize = errors.New("jute: frame length out of range")

// FrameSizeError reports a frame length prefix outside 0..Max.
type FrameSizeError struct {
	Len int64 // as sent, read as a signed int
	Max int
}

func (e *FrameSizeError) Error() string {
	return fmt.Sprintf("frame length %d outside 0..%d", e.Len, e.Max)
}

func (e *FrameSizeError) Unwrap() error { return ErrFrameSize }

// FrameLen decodes the length prefix at the start of hdr (at least FrameHeaderSize bytes)
// and checks it against 0..max. The decoded length is returned even when it is out of
// range, for readers that give such a prefix another meaning (a four-letter word, a TLS
// record); it is negative when the prefix is.
func FrameLen(hdr []byte, max int) (int, error) {
	n := int(int32(binary.BigEndian.Uint32(hdr)))
	if n < 0 || n > max {
		return n, &FrameSizeError{Len: int64(n), Max: max}
	}
	return n, nil
}

// ReadFrame reads one frame from r and returns its payload in a new buffer. A length out
// of 0..max is a *FrameSizeError, and nothing beyond the prefix is read. I/O errors are
// returned as r reports them, so io.EOF means the stream ended cleanly between frames.
func ReadFrame(r io.Reader, max int) ([]byte, error) {
	return ReadFrameInto(r, nil, max)
}

// ReadFrameInto is ReadFrame reading into buf's storage when it is large enough, so a
// reader that is done with each payload before the next allocates nothing once warm.
func ReadFrameInto(r io.Reader, buf []byte, max int) ([]byte, error) {
	n, err := readFrameLen(r, max)
	if err != nil {
		return nil, err
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			// The prefix promised a payload: a stream that ends here ends mid-frame.
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// StartFrame appends a length prefix to be filled in by EndFrame, and returns the frame's
// offset in buf. The payload is then appended in place, so a frame costs no copy and, with
// a buffer of enough capacity, no allocation.
func StartFrame(buf []byte) ([]byte, int) {
	return append(buf, 0, 0, 0, 0), len(buf)
}

// EndFrame sets the length prefix of the frame that StartFrame began at start: everything
// appended to buf since.
func EndFrame(buf []byte, start int) {
	binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-FrameHeaderSize))
}

// AppendFrame appends payload to buf as one frame.
func AppendFrame(buf, payload []byte) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(payload)))
	return append(buf, payload...)
}

// WriteFrame writes payload to w as one frame, in a single Write: writers sharing a
// net.Conn cannot then interleave one's prefix with another's payload.
func WriteFrame(w io.Writer, payload []byte) error {
	_, err := w.Write(AppendFrame(make([]byte, 0, FrameHeaderSize+len(payload)), payload))
	return err
}

// readFrameLen reads and checks a length prefix. From a bufio.Reader, the usual source, it
// peeks: an array handed to io.ReadFull escapes through the interface, costing a heap
// allocation per frame.
func readFrameLen(r io.Reader, max int) (int, error) {
	if br, ok := r.(*bufio.Reader); ok {
		hdr, err := br.Peek(FrameHeaderSize)
		if err != nil {
			if len(hdr) > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			br.Discard(len(hdr))
			return 0, err
		}
		br.Discard(FrameHeaderSize)
		return FrameLen(hdr, max)
	}
	var hdr [FrameHeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	return FrameLen(hdr[:], max)
}
