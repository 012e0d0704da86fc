package server

import (
	"io"
	"sync"
)

// A client connection's buffers. A pipelining client needs big ones: a read of 64 KiB takes
// in a batch of requests with one syscall, and a batch of replies goes out in one write. An
// idle session needs almost none, and a server holds tens of thousands of those. So each
// connection owns only a small read buffer, and the big buffers are shared from pools: the
// writer takes one for the time of a write, the reader while its client keeps it full.
const (
	smallReadBuf = 2 << 10
	bigBuf       = 64 << 10
	// maxPooledBuf keeps a buffer grown for a rare huge batch out of the pool.
	maxPooledBuf = 4 << 20
)

var bigBufs = sync.Pool{New: func() any { b := make([]byte, 0, bigBuf); return &b }}

func getBigBuf() *[]byte { return bigBufs.Get().(*[]byte) }

func putBigBuf(b *[]byte) {
	if cap(*b) > maxPooledBuf {
		return
	}
	*b = (*b)[:0]
	bigBufs.Put(b)
}

// connReader is a buffered reader (the part of bufio.Reader the connection uses) that holds
// a big buffer only while its client sends faster than one small buffer a read: a fill that
// fills the small buffer takes a big one from the pool for the next fill, and a fill that
// would have fitted the small one gives the big one back before the next. So a client that
// goes quiet right after a big burst (a SetWatches of many paths on reconnect) keeps the
// big buffer until its next small request, its next ping at the latest; giving it back on
// every fill that did not fill it would cost a pipelining client an extra small read per
// batch.
type connReader struct {
	r          io.Reader
	buf        []byte // the buffer in use: small or *big
	start, end int
	last       int // bytes the last fill read
	big        *[]byte
	small      [smallReadBuf]byte
}

func newConnReader(r io.Reader) *connReader {
	cr := &connReader{r: r}
	cr.buf = cr.small[:]
	return cr
}

// Buffered is the number of bytes a Read returns without reading from the connection.
func (b *connReader) Buffered() int { return b.end - b.start }

func (b *connReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if b.start == b.end {
		b.resize()
		if len(p) >= len(b.buf) {
			// Bigger than the buffer: straight into p, as bufio does.
			return b.r.Read(p)
		}
		n, err := b.r.Read(b.buf)
		if n == 0 {
			return 0, err
		}
		b.start, b.end = 0, n
		b.last = n
	}
	n := copy(p, b.buf[b.start:b.end])
	b.start += n
	return n, nil
}

// resize picks the buffer of the next fill from the size of the last one; only called when
// the buffer is empty, so nothing buffered moves.
func (b *connReader) resize() {
	switch {
	case b.big == nil && b.last == len(b.small):
		b.big = getBigBuf()
		b.buf = (*b.big)[:cap(*b.big)]
	case b.big != nil && b.last < len(b.small):
		b.release()
	}
}

// release gives the big buffer back; the reader must not be used with buffered data after.
func (b *connReader) release() {
	if b.big != nil {
		putBigBuf(b.big)
		b.big = nil
		b.buf = b.small[:]
		b.start, b.end = 0, 0
	}
}
