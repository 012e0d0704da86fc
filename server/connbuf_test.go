package server

import (
	"bytes"
	"io"
	"math/rand"
	"testing"
)

// chunkReader returns its data in reads of the given sizes, cycling through them.
type chunkReader struct {
	data   []byte
	sizes  []int
	i      int
	reads  int
	maxLen int // the largest p a Read was given
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	r.reads++
	r.maxLen = max(r.maxLen, len(p))
	n := min(len(p), len(r.data), r.sizes[r.i%len(r.sizes)])
	r.i++
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// The reader returns the stream unchanged whatever the sizes of the reads under it and of
// the reads asked of it.
func TestConnReaderStream(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for trial := 0; trial < 200; trial++ {
		want := make([]byte, rng.Intn(300<<10))
		rng.Read(want)
		src := &chunkReader{data: want, sizes: []int{1 + rng.Intn(100), smallReadBuf, bigBuf, 1 + rng.Intn(70<<10)}}
		br := newConnReader(src)
		var got bytes.Buffer
		for {
			p := make([]byte, 1+rng.Intn(5000))
			if rng.Intn(10) == 0 {
				p = make([]byte, 1+rng.Intn(100<<10))
			}
			n, err := io.ReadFull(br, p)
			got.Write(p[:n])
			if err != nil {
				break
			}
		}
		br.release()
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("trial %d: read %d bytes, not the %d written (or not the same)", trial, got.Len(), len(want))
		}
	}
}

// A client that fills the small buffer gets the big one for the next read; one whose reads
// fit the small one again gives it back.
func TestConnReaderTakesAndReturnsTheBigBuffer(t *testing.T) {
	src := &chunkReader{data: make([]byte, 1<<20), sizes: []int{bigBuf}}
	br := newConnReader(src)
	p := make([]byte, 100)
	if _, err := br.Read(p); err != nil {
		t.Fatal(err)
	}
	if br.big != nil || src.maxLen != smallReadBuf {
		t.Fatalf("first read: big buffer %v, read of %d; want the small buffer", br.big != nil, src.maxLen)
	}
	for br.Buffered() > 0 {
		br.Read(p)
	}
	br.Read(p) // the small buffer was filled: this fill uses a big one
	if br.big == nil || src.maxLen != bigBuf {
		t.Fatalf("after a full small read: big buffer %v, largest read %d; want a read of %d", br.big != nil, src.maxLen, bigBuf)
	}
	src.sizes = []int{12} // now pings
	for br.Buffered() > 0 {
		br.Read(p)
	}
	br.Read(p) // a 12-byte fill into the big buffer
	for br.Buffered() > 0 {
		br.Read(p)
	}
	br.Read(p) // the last fill was small: back to the small buffer
	if br.big != nil || len(br.buf) != smallReadBuf {
		t.Fatalf("after small reads the big buffer is still held (buffer of %d)", len(br.buf))
	}
}
