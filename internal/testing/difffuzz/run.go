package difffuzz

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// Target is a server a program runs on.
type Target struct {
	Name string // "zookeeper", "zkd"
	Addr string
	// SuperAuth is the digest credential ("super:password") of the server's super user, which
	// the runner's own control session uses to clear the program's tree afterwards whatever
	// its ACLs are.
	SuperAuth string
	// LoseResumedEvent is a fault for tests of ResumeInvariants: the runner discards the
	// first notification a resuming addWatchSince (ResumeSince) replays, as a server that
	// lost one event of its history would.
	LoseResumedEvent bool
}

// ResumeSince, as an addWatchSince's sinceZxid in a program, is replaced when the step is
// sent by the last zxid its session had seen when its connection was last replaced (by a
// reconnect step): the resume point a client names after a disconnect, which a program
// cannot know when it is written.
const ResumeSince int64 = -2

// Root is the node every generated program works under; the runner deletes it before and
// after each program.
const Root = "/fz"

// Outcome is what one step produced on one server: its lines (reply, notifications, a
// close, in the order they arrived, then the other sessions' notifications).
type Outcome struct {
	Lines []string
	// Err is the step's reply code, valid when Replied.
	Err     jute.Code
	Replied bool
	// Closed reports that the step's connection was closed by the server.
	Closed bool
}

func (o Outcome) String() string { return strings.Join(o.Lines, "\n") }

// Transcript is one program's outcomes on one server, one per step.
type Transcript struct {
	Target   string
	Outcomes []Outcome
}

// Timeouts.
const (
	sessionTimeout = 40000 // ms, the longest both servers grant with tickTime 2000
	readDeadline   = 15 * time.Second
	dialTimeout    = 10 * time.Second
)

// session is one raw client connection and the session it carries.
type session struct {
	label    string // the name, with #N for the Nth session opened under it
	nc       net.Conn
	xid      int32
	id       int64
	passwd   []byte
	timeout  int32
	lastZxid int64
	dead     bool
	// resumeFrom is lastZxid when the session's connection was last replaced: what
	// ResumeSince stands for.
	resumeFrom int64
}

// frame is one frame read from a connection.
type frame struct {
	h    jute.ReplyHeader
	body []byte
}

func writeFrame(nc net.Conn, b []byte) error {
	nc.SetWriteDeadline(time.Now().Add(readDeadline))
	return jute.WriteFrame(nc, b)
}

// errClosed reports a connection the server closed.
var errClosed = errors.New("connection closed")

func readFrame(nc net.Conn) ([]byte, error) {
	nc.SetReadDeadline(time.Now().Add(readDeadline))
	b, err := jute.ReadFrame(nc, 16<<20)
	if err != nil && !errors.Is(err, jute.ErrFrameSize) {
		return nil, readErr(err)
	}
	return b, err
}

func readErr(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("nothing within %v: %w", readDeadline, err)
	}
	return fmt.Errorf("%w (%v)", errClosed, err)
}

func request(xid int32, op jute.OpCode, body []byte) []byte {
	e := jute.Encoder{}
	(&jute.RequestHeader{Xid: xid, Type: op}).Encode(&e)
	return append(e.Buf, body...)
}

var pingFrame = request(jute.XidPing, jute.OpPing, nil)

// handshake connects and sends req; it returns the response, or nil when the server closed
// the connection instead of answering.
func handshake(ctx context.Context, addr string, req *jute.ConnectRequest) (net.Conn, *jute.ConnectResponse, error) {
	d := net.Dialer{Timeout: dialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if err := writeFrame(nc, jute.Marshal(req)); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("handshake: %w", err)
	}
	b, err := readFrame(nc)
	if errors.Is(err, errClosed) {
		nc.Close()
		return nil, nil, nil
	}
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("handshake: %w", err)
	}
	var resp jute.ConnectResponse
	if err := jute.Unmarshal(b, &resp); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("handshake: %w", err)
	}
	return nc, &resp, nil
}

// runner plays one program on one server.
type runner struct {
	ctx  context.Context
	tgt  Target
	norm Norm
	// byName is the newest session opened under each name; gen counts them.
	byName map[string]*session
	gen    map[string]int
	all    []*session
	ctl    *session
	// loseReplayed: the step being sent is a resume under Target.LoseResumedEvent, whose
	// first replayed event is to be discarded.
	loseReplayed bool
}

// Run plays p on tgt and returns its transcript. An error is a failure of the harness or
// of the server as a whole (it cannot be reached, the program's tree cannot be cleared),
// not a difference in behaviour.
func Run(ctx context.Context, tgt Target, p *Program) (*Transcript, error) {
	r := &runner{ctx: ctx, tgt: tgt, norm: Norm{Owners: map[int64]string{}},
		byName: map[string]*session{}, gen: map[string]int{}}
	ctl, err := r.control()
	if err != nil {
		return nil, err
	}
	defer ctl.close()
	r.ctl = ctl
	if err := r.clear(ctl); err != nil {
		return nil, fmt.Errorf("%s: before the program: %w", tgt.Name, err)
	}
	for _, name := range p.Sessions {
		if line := r.open(name); !strings.HasPrefix(line, name+": opened") {
			return nil, fmt.Errorf("%s: opening session %s: %s", tgt.Name, name, line)
		}
	}
	h, _, err := ctl.call(jute.XidPing, jute.OpPing, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: ping: %w", tgt.Name, err)
	}
	r.norm.Base = h.Zxid
	tr := &Transcript{Target: tgt.Name, Outcomes: make([]Outcome, 0, len(p.Steps))}
	lastPing := time.Now()
	for i := range p.Steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tr.Outcomes = append(tr.Outcomes, r.exec(&p.Steps[i]))
		// The control session sends nothing while the program runs: keep it alive.
		if time.Since(lastPing) > time.Duration(sessionTimeout/8)*time.Millisecond {
			if _, _, err := ctl.call(jute.XidPing, jute.OpPing, nil); err != nil {
				return nil, fmt.Errorf("%s: control session: %w", tgt.Name, err)
			}
			lastPing = time.Now()
		}
	}
	r.closeAll()
	if err := r.clear(ctl); err != nil {
		return tr, fmt.Errorf("%s: after the program: %w", tgt.Name, err)
	}
	return tr, nil
}

// control opens the runner's own session, authenticated as the super user.
func (r *runner) control() (*session, error) {
	nc, resp, err := handshake(r.ctx, r.tgt.Addr, &jute.ConnectRequest{TimeOut: sessionTimeout, Passwd: make([]byte, 16)})
	if err != nil || resp == nil || resp.SessionID == 0 {
		return nil, fmt.Errorf("%s: control session: %v %+v", r.tgt.Name, err, resp)
	}
	s := &session{label: "ctl", nc: nc, id: resp.SessionID}
	if r.tgt.SuperAuth != "" {
		auth := jute.Marshal(&jute.AuthPacket{Scheme: "digest", Auth: []byte(r.tgt.SuperAuth)})
		h, _, err := s.call(jute.XidAuth, jute.OpAuth, auth)
		if err != nil || h.Err != 0 {
			return nil, fmt.Errorf("%s: super auth: %v %v", r.tgt.Name, err, h.Err)
		}
	}
	return s, nil
}

// close ends the session (not only the connection: a session left to expire would take a
// zxid in the middle of a later program).
func (s *session) close() {
	s.xid++
	s.call(s.xid, jute.OpCloseSession, nil)
	s.nc.Close()
}

// call sends one request and reads up to its reply, discarding notifications.
func (s *session) call(xid int32, op jute.OpCode, body []byte) (jute.ReplyHeader, []byte, error) {
	if err := writeFrame(s.nc, request(xid, op, body)); err != nil {
		return jute.ReplyHeader{}, nil, err
	}
	for {
		b, err := readFrame(s.nc)
		if err != nil {
			return jute.ReplyHeader{}, nil, err
		}
		d := jute.NewDecoder(b)
		var h jute.ReplyHeader
		h.Decode(d)
		if d.Err() != nil {
			return h, nil, fmt.Errorf("short reply % x", b)
		}
		if h.Xid == jute.XidNotification {
			continue
		}
		return h, d.Rest(), nil
	}
}

// clear deletes every top-level node but /zookeeper: Root and anything a program made
// beside it (a sequential create of Root itself makes /fz0000000001).
func (r *runner) clear(ctl *session) error {
	h, b, err := ctl.call(1, jute.OpGetChildren, jute.Marshal(&jute.PathWatchRequest{Path: "/"}))
	if err != nil {
		return err
	}
	if h.Err != 0 {
		return fmt.Errorf("getChildren /: %w", h.Err)
	}
	var kids jute.StringsResponse
	if err := jute.Unmarshal(b, &kids); err != nil {
		return err
	}
	for _, k := range kids.Strings {
		if k == "zookeeper" {
			continue
		}
		if err := deleteTree(ctl, "/"+k, 0); err != nil {
			return err
		}
	}
	// And the quotas programs set (/zookeeper/quota itself stays).
	h, b, err = ctl.call(1, jute.OpGetChildren, jute.Marshal(&jute.PathWatchRequest{Path: quotaRoot}))
	if err != nil || h.Err != 0 {
		return fmt.Errorf("getChildren %s: %v %v", quotaRoot, err, h.Err)
	}
	if err := jute.Unmarshal(b, &kids); err != nil {
		return err
	}
	for _, k := range kids.Strings {
		if err := deleteTree(ctl, quotaRoot+"/"+k, 0); err != nil {
			return err
		}
	}
	return nil
}

// quotaRoot holds the quota nodes (ZooKeeper's Quotas.quotaZookeeper).
const quotaRoot = "/zookeeper/quota"

func deleteTree(s *session, path string, depth int) error {
	if depth > 64 {
		return fmt.Errorf("%s: tree too deep", path)
	}
	h, b, err := s.call(1, jute.OpGetChildren, jute.Marshal(&jute.PathWatchRequest{Path: path}))
	if err != nil {
		return err
	}
	if h.Err == jute.ErrNoNode {
		return nil
	}
	if h.Err != 0 {
		return fmt.Errorf("getChildren %s: %w", path, h.Err)
	}
	var kids jute.StringsResponse
	if err := jute.Unmarshal(b, &kids); err != nil {
		return err
	}
	for _, k := range kids.Strings {
		if err := deleteTree(s, path+"/"+k, depth+1); err != nil {
			return err
		}
	}
	h, _, err = s.call(2, jute.OpDelete, jute.Marshal(&jute.PathVersionRequest{Path: path, Version: -1}))
	if err != nil {
		return err
	}
	if h.Err != 0 && h.Err != jute.ErrNoNode {
		return fmt.Errorf("delete %s: %w", path, h.Err)
	}
	return nil
}

// open opens a new session under name.
func (r *runner) open(name string) string {
	if old := r.byName[name]; old != nil && !old.dead {
		old.nc.Close()
		old.dead = true
	}
	nc, resp, err := handshake(r.ctx, r.tgt.Addr, &jute.ConnectRequest{TimeOut: sessionTimeout, Passwd: make([]byte, 16)})
	if err != nil {
		return fmt.Sprintf("%s: open: %v", name, err)
	}
	if resp == nil {
		return name + ": open: closed by the server"
	}
	r.gen[name]++
	label := name
	if g := r.gen[name]; g > 1 {
		label = fmt.Sprintf("%s#%d", name, g)
	}
	s := &session{label: label, nc: nc, id: resp.SessionID, passwd: resp.Passwd, timeout: resp.TimeOut}
	r.byName[name] = s
	r.all = append(r.all, s)
	r.norm.Owners[s.id] = label
	return fmt.Sprintf("%s: opened as %s timeout=%d", name, label, resp.TimeOut)
}

// reconnect resumes the newest session under name on a new connection.
func (r *runner) reconnect(name string) string {
	s := r.byName[name]
	if s == nil {
		return name + ": no session"
	}
	if !s.dead {
		s.nc.Close()
	}
	s.dead = true
	s.resumeFrom = s.lastZxid
	nc, resp, err := handshake(r.ctx, r.tgt.Addr, &jute.ConnectRequest{
		LastZxidSeen: s.lastZxid, TimeOut: s.timeout, SessionID: s.id, Passwd: s.passwd})
	switch {
	case err != nil:
		return fmt.Sprintf("%s: reconnect: %v", name, err)
	case resp == nil:
		return name + ": reconnect: closed by the server"
	case resp.SessionID == 0 || resp.TimeOut <= 0:
		nc.Close()
		return fmt.Sprintf("%s: reconnect: session gone (timeout=%d)", name, resp.TimeOut)
	}
	s.nc, s.dead, s.xid = nc, false, 0
	return fmt.Sprintf("%s: reconnected timeout=%d", name, resp.TimeOut)
}

// closeAll closes every session the program opened, resuming those whose connection is
// gone: a session left to expire would delete its ephemerals in the middle of the next
// program.
func (r *runner) closeAll() {
	for _, s := range r.all {
		if s.dead {
			nc, resp, err := handshake(r.ctx, r.tgt.Addr, &jute.ConnectRequest{
				LastZxidSeen: s.lastZxid, TimeOut: s.timeout, SessionID: s.id, Passwd: s.passwd})
			if err != nil || resp == nil || resp.SessionID != s.id || resp.TimeOut <= 0 {
				if nc != nil {
					nc.Close()
				}
				continue // closed or expired already
			}
			s.nc, s.dead = nc, false
		}
		s.xid++
		s.call(s.xid, jute.OpCloseSession, nil)
		s.nc.Close()
		s.dead = true
	}
}

func (r *runner) exec(st *Step) Outcome {
	var o Outcome
	switch st.Kind {
	case Open:
		o.Lines = append(o.Lines, r.open(st.Sess))
	case Reconnect:
		o.Lines = append(o.Lines, r.reconnect(st.Sess))
	case Drop:
		if s := r.byName[st.Sess]; s != nil && !s.dead {
			s.nc.Close()
			s.dead = true
		}
		o.Lines = append(o.Lines, st.Sess+": dropped")
	case Request, Raw:
		r.send(st, &o)
	case Batch:
		r.batch(st, &o)
	}
	if o.Closed {
		r.barrier()
	}
	o.Lines = append(o.Lines, r.drain(st.Sess)...)
	return o
}

// send sends the step's frame and a ping after it, and reads everything up to the pong:
// the reply, the notifications before and after it, or the connection's close.
func (r *runner) send(st *Step, o *Outcome) {
	s := r.byName[st.Sess]
	if s == nil || s.dead {
		o.Lines = append(o.Lines, st.Sess+": not connected")
		return
	}
	var out []byte
	op, xid := st.Op, st.Xid
	switch {
	case st.Kind == Raw && st.RawWire:
		out = st.Body
	case st.Kind == Raw:
		out = jute.AppendFrame(nil, st.Body)
		op, xid = jute.OpCode(-1000), 0 // unknown: any reply but the pong is the step's
		if len(st.Body) >= 8 {
			xid = int32(binary.BigEndian.Uint32(st.Body))
			op = jute.OpCode(int32(binary.BigEndian.Uint32(st.Body[4:])))
		}
	default:
		if xid == 0 {
			s.xid++
			xid = s.xid
		}
		body := st.Body
		if rec, ok := st.Decode(); ok && op == jute.OpAddWatchSince {
			if req := rec.(*jute.AddWatchSinceRequest); req.SinceZxid == ResumeSince {
				req.SinceZxid = s.resumeFrom
				body = jute.Marshal(req)
				r.loseReplayed = r.tgt.LoseResumedEvent
			}
		}
		out = jute.AppendFrame(nil, request(xid, op, body))
	}
	defer func() { r.loseReplayed = false }()
	s.nc.SetWriteDeadline(time.Now().Add(readDeadline))
	// A write error is not an outcome: a server that refuses a large frame may close the
	// connection while the rest is still being written, or after. What it sent before
	// closing is read below.
	s.nc.Write(out)
	// The reply first, and only then the ping that shows what follows it: whether
	// ZooKeeper still answers requests sent behind a closeSession or an unknown opcode
	// (SESSIONEXPIRED, a pong) or closes the connection first is a race between its
	// threads. After a closeSession the step reads up to the close.
	r.readFrames(s, st.Sess, op, xid, o, true)
	if s.dead || op == jute.OpCloseSession {
		if !s.dead {
			r.readFrames(s, st.Sess, op, xid, o, false)
		}
		return
	}
	if err := writeFrame(s.nc, pingFrame); err != nil {
		o.Lines = append(o.Lines, st.Sess+": ping failed")
	}
	r.readFrames(s, st.Sess, op, xid, o, false)
}

// readFrames reads frames on s until the pong (or, with toReply, the step's reply), the
// close, or the deadline.
func (r *runner) readFrames(s *session, name string, op jute.OpCode, xid int32, o *Outcome, toReply bool) {
	for i := 0; ; i++ {
		b, err := readFrame(s.nc)
		if err != nil {
			s.nc.Close()
			s.dead = true
			if errors.Is(err, errClosed) {
				o.Lines = append(o.Lines, name+": closed")
				o.Closed = true
			} else {
				o.Lines = append(o.Lines, name+": "+err.Error())
			}
			return
		}
		d := jute.NewDecoder(b)
		var h jute.ReplyHeader
		h.Decode(d)
		if d.Err() != nil {
			o.Lines = append(o.Lines, fmt.Sprintf("%s: short frame % x", name, b))
			continue
		}
		if h.Zxid > s.lastZxid {
			s.lastZxid = h.Zxid
		}
		switch {
		case h.Xid == jute.XidNotification:
			var ev jute.WatcherEvent
			ev.Decode(d)
			if d.Err() != nil || d.Remaining() != 0 {
				o.Lines = append(o.Lines, fmt.Sprintf("%s: bad notification % x", name, b))
				continue
			}
			if r.loseReplayed && !o.Replied {
				r.loseReplayed = false // the fault: one replayed event lost
				continue
			}
			o.Lines = append(o.Lines, r.norm.Event(name, ev, h.Zxid))
		case h.Xid == jute.XidPing && op != jute.OpPing:
			if h.Err != 0 || d.Remaining() != 0 {
				o.Lines = append(o.Lines, fmt.Sprintf("%s: pong err=%d % x", name, h.Err, d.Rest()))
			}
			return
		case h.Xid == jute.XidPing && op == jute.OpPing && o.Replied:
			return // the runner's own ping, after the step's
		default:
			line := name + ": reply "
			if h.Xid != xid {
				line += fmt.Sprintf("xid=%d ", h.Xid)
			}
			o.Lines = append(o.Lines, line+r.norm.Reply(op, h, d.Rest()))
			if !o.Replied {
				o.Replied, o.Err = true, h.Err
			}
			if toReply {
				return
			}
		}
	}
}

// drain pings every live session but the step's and collects the notifications that
// arrive before the pong: a server queues a notification before the reply of the write
// that caused it and answers a later ping only after that, so this catches every event the
// step caused.
func (r *runner) drain(except string) []string {
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var lines []string
	for _, n := range names {
		s := r.byName[n]
		if s.dead || n == except {
			continue
		}
		if err := writeFrame(s.nc, pingFrame); err != nil {
			s.nc.Close()
			s.dead = true
			lines = append(lines, n+": ping failed")
			continue
		}
		var o Outcome
		r.readFrames(s, n, jute.OpCode(-1000), jute.XidPing, &o, false)
		lines = append(lines, o.Lines...)
	}
	return lines
}

// batch sends the step's requests in one write and reads their replies (and the
// notifications among them) up to the last, then a ping's pong.
func (r *runner) batch(st *Step, o *Outcome) {
	s := r.byName[st.Sess]
	if s == nil || s.dead {
		o.Lines = append(o.Lines, st.Sess+": not connected")
		return
	}
	frames, err := SplitFrames(st.Body)
	if err != nil {
		o.Lines = append(o.Lines, st.Sess+": "+err.Error())
		return
	}
	s.nc.SetWriteDeadline(time.Now().Add(readDeadline))
	s.nc.Write(st.Body) // as in send, a write error is not an outcome
	for _, f := range frames {
		xid := int32(binary.BigEndian.Uint32(f))
		op := jute.OpCode(int32(binary.BigEndian.Uint32(f[4:])))
		o.Replied = false
		r.readFrames(s, st.Sess, op, xid, o, true)
		if s.dead {
			return
		}
	}
	if err := writeFrame(s.nc, pingFrame); err != nil {
		o.Lines = append(o.Lines, st.Sess+": ping failed")
	}
	r.readFrames(s, st.Sess, jute.OpCode(-1000), jute.XidPing, o, false)
}

// barrier waits until the writes of a connection the server closed are applied: a write
// it received before closing (a batch's, a pipelined one) may still be in its pipeline,
// and a read on another session could see it or not by timing. The control session's
// write (a setData of a missing node: an error txn, one zxid on either server) is ordered
// after them.
func (r *runner) barrier() {
	r.ctl.call(4, jute.OpSetData, jute.Marshal(&jute.SetDataRequest{Path: Root + "-barrier", Version: -1}))
}
