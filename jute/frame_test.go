package jute

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf []byte
	payloads := [][]byte{{}, {1}, bytes.Repeat([]byte{0xab}, 300), bytes.Repeat([]byte{7}, DefaultMaxBuffer)}
	for _, p := range payloads {
		buf = AppendFrame(buf, p)
	}
	buf, start := StartFrame(buf)
	buf = append(buf, "in place"...)
	EndFrame(buf, start)
	var w bytes.Buffer
	if err := WriteFrame(&w, []byte("written")); err != nil {
		t.Fatal(err)
	}
	buf = append(buf, w.Bytes()...)

	r := bytes.NewReader(buf)
	want := append(payloads, []byte("in place"), []byte("written"))
	var reuse []byte
	for i, p := range want {
		got, err := ReadFrameInto(r, reuse, DefaultMaxBuffer)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(got, p) {
			t.Fatalf("frame %d: %d bytes, want %d", i, len(got), len(p))
		}
		reuse = got
	}
	if _, err := ReadFrame(r, DefaultMaxBuffer); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func TestFrameLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		max  int
		want error // nil: reads a frame
		text string
	}{
		{"at the limit", append([]byte{0, 0, 0, 3}, "abc"...), 3, nil, ""},
		{"one above", append([]byte{0, 0, 0, 4}, "abcd"...), 3, ErrFrameSize, "frame length 4 outside 0..3"},
		{"negative", []byte{0xff, 0xff, 0xff, 0xfe, 0}, 3, ErrFrameSize, "frame length -2 outside 0..3"},
		{"four-letter word", []byte("ruok"), DefaultMaxBuffer, ErrFrameSize, "frame length 1920298859 outside 0..1048575"},
		{"short prefix", []byte{0, 0}, 3, io.ErrUnexpectedEOF, ""},
		{"short payload", []byte{0, 0, 0, 3, 'a'}, 3, io.ErrUnexpectedEOF, ""},
		{"no payload", []byte{0, 0, 0, 3}, 3, io.ErrUnexpectedEOF, ""},
		{"empty", nil, 3, io.EOF, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bytes.NewReader(tc.in)
			_, err := ReadFrame(r, tc.max)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if tc.text != "" && err.Error() != tc.text {
				t.Fatalf("err %q, want %q", err, tc.text)
			}
			var fe *FrameSizeError
			if errors.As(err, &fe) && r.Len() != len(tc.in)-FrameHeaderSize {
				t.Fatalf("read %d bytes past a bad prefix", len(tc.in)-FrameHeaderSize-r.Len())
			}
		})
	}
	if n, err := FrameLen([]byte("ruok"), DefaultMaxBuffer); err == nil || n != 0x72756f6b {
		t.Fatalf("FrameLen(ruok) = %#x, %v: want the word's value and an error", n, err)
	}
}

// FuzzReadFrame reads a stream of frames until it fails and checks that what was read is
// exactly what the stream holds: every payload within the limit, re-framed, gives back the
// bytes consumed; a failure consumes no byte beyond a bad prefix.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{}, uint16(16))
	f.Add([]byte{0, 0, 0, 0}, uint16(0))
	f.Add(append([]byte{0, 0, 0, 3}, "abc"...), uint16(3))
	f.Add(append([]byte{0, 0, 0, 4}, "abcd"...), uint16(3))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint16(100))
	f.Add([]byte{0x80, 0, 0, 0, 1, 2}, uint16(100))
	f.Add([]byte("ruok"), uint16(0xffff))
	f.Add([]byte{0, 0, 0, 2, 'h', 'i', 0, 0, 0, 1}, uint16(8))
	f.Add([]byte{0, 0, 0, 1, 'x', 0, 0}, uint16(8))
	f.Add(AppendFrame(AppendFrame(nil, []byte("connect")), bytes.Repeat([]byte{9}, 40)), uint16(40))
	f.Fuzz(func(t *testing.T, in []byte, max16 uint16) {
		max := int(max16)
		viaBufio(t, in, max)
		r := bytes.NewReader(in)
		var again []byte
		var buf []byte
		for {
			before := r.Len()
			p, err := ReadFrameInto(r, buf, max)
			if err != nil {
				var fe *FrameSizeError
				switch {
				case errors.As(err, &fe):
					if before-r.Len() != FrameHeaderSize || (fe.Len >= 0 && fe.Len <= int64(max)) || !errors.Is(err, ErrFrameSize) {
						t.Fatalf("size error %v after consuming %d bytes", err, before-r.Len())
					}
				case err == io.EOF:
					if before != 0 {
						t.Fatalf("io.EOF with %d bytes left", before)
					}
				case err == io.ErrUnexpectedEOF:
					if r.Len() != 0 {
						t.Fatalf("unexpected EOF with %d bytes left", r.Len())
					}
				default:
					t.Fatalf("error %v", err)
				}
				consumed := len(in) - before
				if !bytes.Equal(again, in[:consumed]) {
					t.Fatalf("re-framed payloads differ from the %d bytes they came from", consumed)
				}
				return
			}
			if len(p) > max {
				t.Fatalf("payload of %d bytes, limit %d", len(p), max)
			}
			if before-r.Len() != FrameHeaderSize+len(p) {
				t.Fatalf("consumed %d bytes for a %d-byte payload", before-r.Len(), len(p))
			}
			again = AppendFrame(again, p)
			buf = p
		}
	})
}

// viaBufio checks that reading from a bufio.Reader, which ReadFrame peeks into, gives the
// frames and the error that reading the bytes directly gives.
func viaBufio(t *testing.T, in []byte, max int) {
	direct, buffered := bytes.NewReader(in), bufio.NewReaderSize(bytes.NewReader(in), 16)
	for {
		p1, err1 := ReadFrame(direct, max)
		p2, err2 := ReadFrame(buffered, max)
		if !bytes.Equal(p1, p2) || (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("direct %q %v, via bufio %q %v", p1, err1, p2, err2)
		}
		if err1 != nil {
			return
		}
	}
}
