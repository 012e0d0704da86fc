package difffuzz

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/zkd-io/zkd/jute"
)

// Kind is what a step does.
type Kind uint8

const (
	// Request sends one request frame: a RequestHeader (the session's next xid, or Xid when
	// set) and Body as given.
	Request Kind = iota
	// Raw sends Body as one whole frame (header included, length prefix computed), or as
	// the bytes on the wire when RawWire is set: malformed input no client library sends.
	Raw
	// Open opens a new session under the step's name (a later Reconnect resumes the newest).
	Open
	// Reconnect opens a new connection for the session (its id and password), as a client
	// does after losing its connection; the server drops the old connection, if any.
	Reconnect
	// Drop closes the session's connection without closing the session.
	Drop
	// Batch sends several requests in one write, without waiting between them: Body is
	// their frames, length prefixes and headers (with their own xids) included. The
	// server must answer them in order.
	Batch
)

var kindNames = map[Kind]string{Raw: "raw", Open: "open", Reconnect: "reconnect", Drop: "drop", Batch: "batch"}

// Step is one line of a program.
type Step struct {
	Sess string
	Kind Kind
	Op   jute.OpCode // Request
	Xid  int32       // Request: 0 for the session's next ordinary xid
	Body []byte      // Request: the body after the header; Raw: the frame
	// RawWire (Raw) writes Body to the connection as it is, length prefix included.
	RawWire bool
	// Note is a human description (the decoded request); it is not part of the step.
	Note string
}

// Program is what the fuzzer runs: sessions opened first, in this order, then the steps.
type Program struct {
	Seed     int64 // the generator's seed, 0 when not generated
	Sessions []string
	Steps    []Step
}

// Clone returns a copy of p whose step list may be changed freely.
func (p *Program) Clone() *Program {
	c := *p
	c.Sessions = append([]string(nil), p.Sessions...)
	c.Steps = append([]Step(nil), p.Steps...)
	return &c
}

// Decode returns the step's request record (nil for requests without a body or steps
// that are not requests) and whether the body decodes exactly.
func (s *Step) Decode() (jute.Record, bool) {
	if s.Kind != Request {
		return nil, false
	}
	rec, ok := jute.NewRequestBody(s.Op)
	if !ok {
		return nil, false
	}
	if rec == nil {
		return nil, len(s.Body) == 0
	}
	d := jute.NewDecoder(s.Body)
	rec.Decode(d)
	return rec, d.Err() == nil && d.Remaining() == 0
}

// header is the first line of a program file; the number is the format's version.
const header = "zkd-difffuzz 1"

// Encode writes p in the text format described in doc.go.
func (p *Program) Encode(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, header)
	if p.Seed != 0 {
		fmt.Fprintf(bw, "seed %d\n", p.Seed)
	}
	fmt.Fprintf(bw, "sessions %s\n", strings.Join(p.Sessions, " "))
	for i := range p.Steps {
		fmt.Fprintln(bw, p.Steps[i].line())
	}
	return bw.Flush()
}

func (s *Step) line() string {
	var b strings.Builder
	b.WriteString(s.Sess)
	b.WriteByte(' ')
	switch s.Kind {
	case Request:
		b.WriteString(opName(s.Op))
		if s.Xid != 0 {
			fmt.Fprintf(&b, "@%d", s.Xid)
		}
		b.WriteByte(' ')
		if len(s.Body) == 0 {
			b.WriteByte('-')
		} else {
			b.WriteString(hex.EncodeToString(s.Body))
		}
	case Batch:
		b.WriteString("batch ")
		b.WriteString(hex.EncodeToString(s.Body))
	case Raw:
		b.WriteString("raw")
		if s.RawWire {
			b.WriteString("wire")
		}
		b.WriteByte(' ')
		if len(s.Body) == 0 {
			b.WriteByte('-')
		} else {
			b.WriteString(hex.EncodeToString(s.Body))
		}
	default:
		b.WriteString(kindNames[s.Kind])
	}
	note := s.Note
	if note == "" {
		note = s.Describe()
	}
	if note != "" {
		b.WriteString("  # ")
		b.WriteString(strings.ReplaceAll(note, "\n", " "))
	}
	return b.String()
}

// opName is the op's name in program files: ZooKeeper's name, or op<N> for a code it does
// not define.
func opName(op jute.OpCode) string {
	if r := jute.LookupOp(op); r != nil {
		return r.Name
	}
	return fmt.Sprintf("op%d", int32(op))
}

func parseOp(s string) (jute.OpCode, error) {
	for _, r := range jute.Ops() {
		if r.Name == s {
			return r.Code, nil
		}
	}
	if n, ok := strings.CutPrefix(s, "op"); ok {
		v, err := strconv.ParseInt(n, 10, 32)
		if err == nil {
			return jute.OpCode(v), nil
		}
	}
	return 0, fmt.Errorf("unknown op %q", s)
}

// Parse reads a program in the text format described in doc.go.
func Parse(r io.Reader) (*Program, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 8<<20)
	p := &Program{}
	ln := 0
	sawHeader, sawSessions := false, false
	for sc.Scan() {
		ln++
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !sawHeader {
			if strings.Join(f, " ") != header {
				return nil, fmt.Errorf("line %d: want %q", ln, header)
			}
			sawHeader = true
			continue
		}
		switch {
		case f[0] == "seed" && len(f) == 2:
			v, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: seed: %w", ln, err)
			}
			p.Seed = v
			continue
		case f[0] == "sessions":
			p.Sessions = f[1:]
			sawSessions = true
			continue
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("line %d: want <session> <step> [body]", ln)
		}
		st := Step{Sess: f[0]}
		verb := f[1]
		switch verb {
		case "open":
			st.Kind = Open
		case "reconnect":
			st.Kind = Reconnect
		case "drop":
			st.Kind = Drop
		default:
			if len(f) != 3 {
				return nil, fmt.Errorf("line %d: %s wants a body (hex, or - for none)", ln, verb)
			}
			body, err := parseHex(f[2])
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", ln, err)
			}
			st.Body = body
			if verb == "batch" {
				if _, err := SplitFrames(body); err != nil {
					return nil, fmt.Errorf("line %d: %w", ln, err)
				}
				st.Kind = Batch
				break
			}
			if verb == "raw" || verb == "rawwire" {
				st.Kind, st.RawWire = Raw, verb == "rawwire"
				break
			}
			name, xid, hasXid := strings.Cut(verb, "@")
			op, err := parseOp(name)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", ln, err)
			}
			st.Kind, st.Op = Request, op
			if hasXid {
				v, err := strconv.ParseInt(xid, 10, 32)
				if err != nil || v == 0 {
					return nil, fmt.Errorf("line %d: bad xid %q", ln, xid)
				}
				st.Xid = int32(v)
			}
		}
		p.Steps = append(p.Steps, st)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !sawHeader || !sawSessions {
		return nil, fmt.Errorf("not a program: want the %q and sessions lines", header)
	}
	return p, nil
}

func parseHex(s string) ([]byte, error) {
	if s == "-" {
		return nil, nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	return b, nil
}

// SplitFrames splits a batch's body into its frames (without their length prefixes).
func SplitFrames(b []byte) ([][]byte, error) {
	var out [][]byte
	for len(b) > 0 {
		if len(b) < jute.FrameHeaderSize {
			return nil, fmt.Errorf("batch: %d stray bytes", len(b))
		}
		n, err := jute.FrameLen(b, len(b)-jute.FrameHeaderSize)
		if err != nil || n < 8 {
			return nil, fmt.Errorf("batch: frame length %d", n)
		}
		b = b[jute.FrameHeaderSize:]
		out = append(out, b[:n])
		b = b[n:]
	}
	return out, nil
}
