package jute

// Helpers shared by the golden, fuzz and benchmark tests: which record follows a header for a
// given opcode, and a parser for the annotated golden captures.

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// requestBody returns an empty record for the body of a request with opcode op (Empty for
// requests without a body), or nil when the opcode has no known request layout.
func requestBody(op OpCode) Record {
	b, ok := NewRequestBody(op)
	switch {
	case !ok:
		return nil
	case b == nil:
		return &Empty{}
	}
	return b
}

// replyBody returns an empty record for the body of a successful reply to opcode op (Empty
// for replies without a body), or nil when the opcode has no request frame, so no reply
// either. Failed replies (err != 0) have no body at all.
func replyBody(op OpCode) Record {
	r := LookupOp(op)
	switch {
	case r == nil || r.Request == nil:
		return nil
	case r.Response == nil:
		return &Empty{}
	}
	return r.Response()
}

// decodeRequest decodes a RequestHeader and the body it announces from b, requiring that b is
// consumed exactly. It returns a nil body and no error for an unknown opcode.
func decodeRequest(b []byte) (RequestHeader, Record, error) {
	var h RequestHeader
	d := Decoder{B: b}
	h.Decode(&d)
	if err := d.Err(); err != nil {
		return h, nil, err
	}
	body := requestBody(h.Type)
	if body == nil {
		return h, nil, nil
	}
	body.Decode(&d)
	if err := d.Err(); err != nil {
		return h, body, err
	}
	if d.Remaining() != 0 {
		return h, body, fmt.Errorf("%d trailing bytes after %v request", d.Remaining(), h.Type)
	}
	return h, body, nil
}

// goldenFrame is one frame of an annotated capture, without its length prefix.
type goldenFrame struct {
	File  string
	Conn  int
	N     int    // the "#n" of the header
	Dir   string // "C>S" or "S>C"
	Label string
	Bytes []byte
	// Lines maps an annotated field name ("req.path") to its annotated value text.
	Lines map[string]string
}

func (f *goldenFrame) String() string {
	return fmt.Sprintf("%s conn %d #%d %s %s", f.File, f.Conn, f.N, f.Dir, f.Label)
}

var (
	frameHeaderRE = regexp.MustCompile(`^### #(\d+) (C>S|S>C)  (.*?)  \(\d+ bytes on the wire`)
	connRE        = regexp.MustCompile(`^CONNECTION (\d+)$`)
	hexLineRE     = regexp.MustCompile(`^  ([0-9a-f]{4,})  ((?:[0-9a-f]{2} ?)+)(?:\s{2,}(.*))?$`)
)

// hexLine parses one "  offset  bytes  field = value" line.
func hexLine(line string) (off int, b []byte, field, value string, ok bool) {
	m := hexLineRE.FindStringSubmatch(strings.TrimRight(line, " "))
	if m == nil {
		return 0, nil, "", "", false
	}
	o, err := strconv.ParseInt(m[1], 16, 64)
	if err != nil {
		return 0, nil, "", "", false
	}
	b, err = hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(m[2]), " ", ""))
	if err != nil {
		return 0, nil, "", "", false
	}
	field, value, _ = strings.Cut(m[3], " = ")
	return int(o), b, strings.TrimSpace(field), value, true
}

// parseGoldenFrames reads testdata/name and returns every frame in it. It checks that the
// offsets of each frame's lines are contiguous from 0 and that the length prefix matches.
func parseGoldenFrames(t testing.TB, name string) []*goldenFrame {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var (
		frames []*goldenFrame
		cur    *goldenFrame
		raw    []byte
		conn   int
	)
	finish := func() {
		if cur == nil {
			return
		}
		if len(raw) < 4 {
			t.Fatalf("%v: only %d bytes", cur, len(raw))
		}
		if n := int(uint32(raw[0])<<24 | uint32(raw[1])<<16 | uint32(raw[2])<<8 | uint32(raw[3])); n != len(raw)-4 {
			t.Fatalf("%v: length prefix %d but %d bytes follow", cur, n, len(raw)-4)
		}
		cur.Bytes = raw[4:]
		frames = append(frames, cur)
		cur, raw = nil, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := sc.Text()
		if m := connRE.FindStringSubmatch(line); m != nil {
			finish()
			conn, _ = strconv.Atoi(m[1])
			continue
		}
		if m := frameHeaderRE.FindStringSubmatch(line); m != nil {
			finish()
			n, _ := strconv.Atoi(m[1])
			cur = &goldenFrame{File: name, Conn: conn, N: n, Dir: m[2], Label: m[3], Lines: map[string]string{}}
			continue
		}
		if cur == nil {
			continue
		}
		off, b, field, value, ok := hexLine(line)
		if !ok {
			finish()
			continue
		}
		if off != len(raw) {
			t.Fatalf("%s:%d: offset %#x, want %#x", name, lineNo, off, len(raw))
		}
		raw = append(raw, b...)
		if field != "" {
			cur.Lines[field] = value
		}
	}
	finish()
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return frames
}

// goldenTxn is one log entry of 06-txnlog.txt. Txn is nil for the entries whose bytes the
// file omits ("same layout as an earlier entry").
type goldenTxn struct {
	N      int
	Offset int // file offset of the entry
	Label  string
	Txn    []byte // the txn bytes (TxnHeader + record [+ TxnDigest])
	Lines  map[string]string
}

var entryHeaderRE = regexp.MustCompile(`^### entry (\d+) at file offset 0x([0-9a-f]+): (.*)$`)

// parseGoldenTxns returns the entries of testdata/06-txnlog.txt, checking that the shown
// bytes are contiguous and agree with the annotated length.
func parseGoldenTxns(t testing.TB) []*goldenTxn {
	t.Helper()
	data, err := os.ReadFile("testdata/06-txnlog.txt")
	if err != nil {
		t.Fatal(err)
	}
	var (
		out    []*goldenTxn
		cur    *goldenTxn
		next   int // expected offset of the next line of the current entry
		length = -1
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if m := entryHeaderRE.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			off, _ := strconv.ParseInt(m[2], 16, 64)
			cur = &goldenTxn{N: n, Offset: int(off), Label: m[3], Lines: map[string]string{}}
			out = append(out, cur)
			next, length = int(off), -1
			continue
		}
		if strings.HasPrefix(line, "###") {
			cur = nil
			continue
		}
		if cur == nil {
			continue
		}
		off, b, field, value, ok := hexLine(line)
		if !ok {
			continue
		}
		if off != next {
			t.Fatalf("entry %d: line offset %#x, want %#x", cur.N, off, next)
		}
		next += len(b)
		switch {
		case strings.HasPrefix(field, "checksum"):
		case field == "txn bytes length":
			length, _ = strconv.Atoi(value)
		case strings.HasPrefix(field, "EOR marker"):
			if len(cur.Txn) != length {
				t.Fatalf("entry %d: %d txn bytes, length field says %d", cur.N, len(cur.Txn), length)
			}
			cur = nil
		default:
			cur.Txn = append(cur.Txn, b...)
			if field != "" {
				cur.Lines[field] = value
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
