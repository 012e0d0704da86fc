package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zkd-io/zkd/internal/clientwire"
	"github.com/zkd-io/zkd/internal/testing/linearize"
	"github.com/zkd-io/zkd/jute"
)

// opKind is what a client request is for.
type opKind int

const (
	kSync opKind = iota // the first half of a sync+read
	kRead               // the second half: getData after its sync
	kSet                // setData, version -1
	kCAS                // setData with the version last seen
	kExists
	kPing
	kClose
)

// pendingOp is a request sent and not yet answered.
type pendingOp struct {
	kind    opKind
	xid     int32
	key     string
	value   string
	version int32
	call    time.Duration
	sync    *pendingOp // kRead: its sync
	done    bool       // kSync: answered
	ok      bool       // kSync: answered OK
}

// Recorder collects what all clients of a run saw. Its methods are safe for concurrent use.
type Recorder struct {
	start time.Time

	mu       sync.Mutex
	conns    []*ConnLog
	ops      []porcupine.Operation
	writes   []WriteRecord
	stats    Stats
	sessions map[int64]bool
}

// Stats count what the clients did.
type Stats struct {
	Requests   int // requests sent, pings included
	Replies    int // replies received (pings included, notifications not)
	Ops        int // operations for the linearizability check (sync+reads, writes, CASes)
	Unknown    int // writes whose outcome the client never learned
	Acked      int // writes acknowledged OK
	Sessions   int
	Expired    int // sessions found expired at reconnect
	Conns      int
	ConnErrors int // dials and handshakes that failed
}

// NewRecorder starts the run's clock.
func NewRecorder() *Recorder { return &Recorder{start: time.Now(), sessions: map[int64]bool{}} }

func (r *Recorder) now() time.Duration { return time.Since(r.start) }

// unknownReturn is the return time of an operation whose outcome is unknown: it may take
// effect at any point after its call, even after the final reads.
const unknownReturn = int64(1) << 62

func (r *Recorder) addOp(client int, call, ret time.Duration, in linearize.Input, out linearize.Output) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rv := int64(ret)
	if out.Result == linearize.Unknown {
		rv = unknownReturn
		r.stats.Unknown++
	}
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Call: int64(call), Return: rv, Input: in, Output: out})
	r.stats.Ops++
	if in.Kind != linearize.Get {
		if out.Result == linearize.OK {
			r.stats.Acked++
		}
		r.writes = append(r.writes, WriteRecord{Key: in.Key, Value: in.Value, Acked: out.Result == linearize.OK, Version: out.Version})
	}
}

// Snapshot returns copies of what was recorded so far.
func (r *Recorder) Snapshot() (conns []*ConnLog, ops []porcupine.Operation, writes []WriteRecord, st Stats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*ConnLog(nil), r.conns...), append([]porcupine.Operation(nil), r.ops...),
		append([]WriteRecord(nil), r.writes...), r.stats
}

// ClientConfig configures one load client.
type ClientConfig struct {
	ID             int
	Seed           uint64          // the request mix and the choice of members follow from it
	Members        func() []string // each member's client address, "" while it is down
	Keys           []string
	Depth          int           // most requests outstanding at once
	SessionTimeout time.Duration // requested
	Recorder       *Recorder
}

// Client is one ZooKeeper session on one TCP connection at a time, speaking the wire
// protocol directly so that it sees every reply in the order the server sent it. It
// pipelines up to Depth requests, moves to another member with the same session id and
// password when its connection breaks, and opens a new session only when the old one
// expired.
type Client struct {
	cfg ClientConfig
	rec *Recorder
	// Two generators, so that the sequence of requests does not depend on how often
	// the client had to reconnect.
	opRand, dialRand *rand.Rand

	// Owned by the run loop.
	sid      int64
	passwd   []byte
	timeout  time.Duration // negotiated
	lastAddr string
	xid      int32
	seq      int

	mu       sync.Mutex // guards what the reader shares with the writer below
	lastZxid int64
	known    map[string]int32 // the latest version of each key seen in a reply
	conn     *clientConn
}

// clientConn is one connection of the session, on the client loop zk uses too
// (internal/clientwire). The run loop is its only sender, so the event log and the
// pending map, written before each Send, are in wire order.
type clientConn struct {
	wc      *clientwire.Conn
	log     *ConnLog
	slots   chan struct{} // one per outstanding request
	pending map[int32]*pendingOp
	dead    chan struct{}
	once    sync.Once
	why     string
	readErr chan struct{} // closed when the reader has returned
}

func (cc *clientConn) fail(why string) {
	cc.once.Do(func() {
		cc.why = why
		cc.wc.Kill(errors.New(why))
		close(cc.dead)
	})
}

// NewClient makes a client; Run drives it.
func NewClient(cfg ClientConfig) *Client {
	if cfg.Depth <= 0 {
		cfg.Depth = 8
	}
	return &Client{cfg: cfg, rec: cfg.Recorder, known: map[string]int32{},
		opRand:   rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.ID)*2)),
		dialRand: rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.ID)*2+1))}
}

// Run generates load until ctx ends, then lets outstanding requests finish (for a bounded
// time) and closes the session.
func (c *Client) Run(ctx context.Context) {
	for ctx.Err() == nil {
		cc, err := c.connect(ctx)
		if err != nil {
			c.rec.mu.Lock()
			c.rec.stats.ConnErrors++
			c.rec.mu.Unlock()
			// Every member may be down or electing; do not spin on dials.
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(50+c.dialRand.IntN(150)) * time.Millisecond):
			}
			continue
		}
		c.serve(ctx, cc)
		<-cc.readErr
		c.abandon(cc)
	}
}

// connect dials a member (another one than last time, when there is a choice) and opens
// or resumes the session.
func (c *Client) connect(ctx context.Context) (*clientConn, error) {
	var up, others []int
	all := c.cfg.Members()
	for i, a := range all {
		if a != "" {
			up = append(up, i)
			if a != c.lastAddr {
				others = append(others, i)
			}
		}
	}
	if len(others) > 0 {
		up = others // another member than last time, when there is a choice
	}
	if len(up) == 0 {
		return nil, errors.New("no member runs")
	}
	server := up[c.dialRand.IntN(len(up))]
	addr := all[server]
	c.lastAddr = addr
	d := net.Dialer{Timeout: 2 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	passwd := c.passwd
	if c.sid == 0 {
		passwd = make([]byte, 16)
	}
	c.mu.Lock()
	lastZxid := c.lastZxid
	c.mu.Unlock()
	req := &jute.ConnectRequest{LastZxidSeen: lastZxid, TimeOut: int32(c.cfg.SessionTimeout / time.Millisecond),
		SessionID: c.sid, Passwd: passwd, HasReadOnly: true}
	nc.SetDeadline(time.Now().Add(c.cfg.SessionTimeout))
	// Writes are bounded by the requested timeout: the negotiated one is not known yet,
	// and either bounds a write that a live server would take.
	wc := clientwire.New(nc, clientwire.Config{Addr: addr, MaxFrame: maxFrame, WriteTimeout: c.cfg.SessionTimeout})
	resp, err := wc.Handshake(req)
	if err != nil {
		// A member that does not serve, or that is behind the zxid we saw, closes.
		nc.Close()
		return nil, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	if resp.TimeOut <= 0 || resp.SessionID == 0 {
		nc.Close()
		if c.sid != 0 {
			c.rec.mu.Lock()
			c.rec.stats.Expired++
			c.rec.mu.Unlock()
		}
		// The session expired: start a new one, as an application would.
		c.sid, c.passwd = 0, nil
		c.mu.Lock()
		c.lastZxid = 0
		c.known = map[string]int32{}
		c.mu.Unlock()
		return nil, fmt.Errorf("session expired (%s)", addr)
	}
	if c.sid != 0 && resp.SessionID != c.sid {
		nc.Close()
		return nil, fmt.Errorf("resumed session 0x%x but got 0x%x", c.sid, resp.SessionID)
	}
	c.sid, c.passwd = resp.SessionID, resp.Passwd
	c.timeout = time.Duration(resp.TimeOut) * time.Millisecond
	nc.SetDeadline(time.Time{})
	// As ZooKeeper's clients do: a member silent for 2/3 of the session timeout is gone.
	// No pings from the loop: the run loop sends its own, which the log records.
	wc.SetTimeouts(c.timeout*2/3, 0)
	cc := &clientConn{wc: wc, slots: make(chan struct{}, c.cfg.Depth), pending: map[int32]*pendingOp{},
		dead: make(chan struct{}), readErr: make(chan struct{})}
	c.rec.mu.Lock()
	cc.log = &ConnLog{ID: len(c.rec.conns) + 1, Client: c.cfg.ID, Session: c.sid, Server: server}
	c.rec.conns = append(c.rec.conns, cc.log)
	c.rec.stats.Conns++
	if !c.rec.sessions[c.sid] {
		c.rec.sessions[c.sid] = true
		c.rec.stats.Sessions++
	}
	c.rec.mu.Unlock()
	c.mu.Lock()
	c.conn = cc
	c.mu.Unlock()
	go wc.WriteLoop()
	go c.read(cc)
	return cc, nil
}

// serve writes requests until the connection fails or ctx ends.
func (c *Client) serve(ctx context.Context, cc *clientConn) {
	idle := c.timeout / 3
	tick := time.NewTicker(idle / 2)
	defer tick.Stop()
	lastSend := time.Now()
	acquire := func() bool {
		for {
			select {
			case cc.slots <- struct{}{}:
				return true
			case <-cc.dead:
				return false
			case <-ctx.Done():
				return false
			case <-tick.C:
				// Keep the session alive while every slot waits for a slow server.
				if time.Since(lastSend) >= idle {
					if !c.send(cc, &pendingOp{kind: kPing}, jute.OpPing, nil) {
						return false
					}
					lastSend = time.Now()
				}
			}
		}
	}
	for {
		if !acquire() {
			break
		}
		lastSend = time.Now()
		r := c.opRand
		key := c.cfg.Keys[r.IntN(len(c.cfg.Keys))]
		var ok bool
		switch p := r.IntN(100); {
		case p < 40: // sync + getData, pipelined
			if !acquire() {
				<-cc.slots
				break
			}
			s := &pendingOp{kind: kSync, key: key}
			ok = c.send(cc, s, jute.OpSync, &jute.SyncRequest{Path: key}) &&
				c.send(cc, &pendingOp{kind: kRead, key: key, sync: s}, jute.OpGetData, &jute.GetDataRequest{Path: key})
		case p < 70:
			c.seq++
			v := fmt.Sprintf("c%d-%d", c.cfg.ID, c.seq)
			ok = c.send(cc, &pendingOp{kind: kSet, key: key, value: v}, jute.OpSetData, &jute.SetDataRequest{Path: key, Data: []byte(v), Version: -1})
		case p < 92:
			c.seq++
			v := fmt.Sprintf("c%d-%d", c.cfg.ID, c.seq)
			c.mu.Lock()
			ver := c.known[key]
			c.mu.Unlock()
			ok = c.send(cc, &pendingOp{kind: kCAS, key: key, value: v, version: ver}, jute.OpSetData, &jute.SetDataRequest{Path: key, Data: []byte(v), Version: ver})
		case p < 97:
			ok = c.send(cc, &pendingOp{kind: kExists, key: key}, jute.OpExists, &jute.ExistsRequest{Path: key})
		default:
			<-cc.slots // pings take no slot
			ok = c.send(cc, &pendingOp{kind: kPing}, jute.OpPing, nil)
		}
		if !ok {
			break
		}
	}
	if ctx.Err() == nil {
		return
	}
	c.finish(cc)
}

// finish waits (boundedly) for the replies still due, then closes the session.
func (c *Client) finish(cc *clientConn) {
	deadline := time.NewTimer(c.timeout)
	defer deadline.Stop()
	for range c.cfg.Depth {
		select {
		case cc.slots <- struct{}{}:
		case <-cc.dead:
			return
		case <-deadline.C:
			cc.fail("stopped with requests outstanding")
			return
		}
	}
	// Every slot is ours: the reader frees one when the close is answered.
	if c.send(cc, &pendingOp{kind: kClose}, jute.OpCloseSession, nil) {
		select {
		case cc.slots <- struct{}{}: // the close was answered
		case <-cc.dead:
		case <-deadline.C:
		}
	}
	cc.fail("closed at the end of the run")
}

// send records and writes one request. It reports false when the connection failed.
func (c *Client) send(cc *clientConn, p *pendingOp, op jute.OpCode, body jute.Record) bool {
	xid := jute.XidPing
	if p.kind != kPing {
		c.xid++
		xid = c.xid
	}
	p.xid = xid
	e := jute.Encoder{}
	(&jute.RequestHeader{Xid: xid, Type: op}).Encode(&e)
	if body != nil {
		body.Encode(&e)
	}
	c.mu.Lock()
	p.call = c.rec.now()
	cc.log.Events = append(cc.log.Events, WireEvent{At: p.call, Dir: Sent, Xid: xid, Op: op})
	if p.kind != kPing {
		cc.pending[xid] = p
	}
	c.mu.Unlock()
	c.rec.mu.Lock()
	c.rec.stats.Requests++
	c.rec.mu.Unlock()
	if err := cc.wc.Send(jute.AppendFrame(nil, e.Buf)); err != nil {
		cc.fail("write: " + err.Error())
		return false
	}
	return true
}

// errFailed ends the read loop of a connection the handler has already failed.
var errFailed = errors.New("connection failed")

// read takes replies off the connection until it fails.
func (c *Client) read(cc *clientConn) {
	defer close(cc.readErr)
	err := cc.wc.ReadLoop(func(b []byte) error {
		d := jute.NewDecoder(b)
		var h jute.ReplyHeader
		h.Decode(d)
		if d.Err() != nil {
			cc.fail("reply header: " + d.Err().Error())
			return errFailed
		}
		now := c.rec.now()
		c.mu.Lock()
		if h.Xid != jute.XidNotification {
			cc.log.Events = append(cc.log.Events, WireEvent{At: now, Dir: Received, Xid: h.Xid, Zxid: h.Zxid, Err: h.Err})
			if h.Zxid > c.lastZxid {
				c.lastZxid = h.Zxid
			}
		}
		p := cc.pending[h.Xid]
		delete(cc.pending, h.Xid)
		c.mu.Unlock()
		if h.Xid == jute.XidNotification || h.Xid == jute.XidPing {
			if h.Xid == jute.XidPing {
				c.countReply()
			}
			return nil
		}
		c.countReply()
		if p == nil {
			cc.fail(fmt.Sprintf("reply for xid %d, which is not outstanding", h.Xid))
			return errFailed
		}
		<-cc.slots
		if err := c.complete(p, h, d, now); err != nil {
			cc.fail(fmt.Sprintf("reply to xid %d: %v", h.Xid, err))
			return errFailed
		}
		return nil
	})
	if err != errFailed {
		cc.fail("read: " + err.Error())
	}
}

func (c *Client) countReply() {
	c.rec.mu.Lock()
	c.rec.stats.Replies++
	c.rec.mu.Unlock()
}

// complete records what a reply says about its request.
func (c *Client) complete(p *pendingOp, h jute.ReplyHeader, d *jute.Decoder, now time.Duration) error {
	decode := func(r jute.Record) error {
		r.Decode(d)
		if d.Err() != nil {
			return d.Err()
		}
		if d.Remaining() != 0 {
			return fmt.Errorf("%d trailing bytes", d.Remaining())
		}
		return nil
	}
	switch p.kind {
	case kSync:
		c.mu.Lock()
		p.done, p.ok = true, h.Err == jute.OK
		c.mu.Unlock()
		if h.Err == jute.OK {
			return decode(&jute.SyncResponse{})
		}
	case kRead:
		if h.Err != jute.OK {
			return nil
		}
		var r jute.GetDataResponse
		if err := decode(&r); err != nil {
			return err
		}
		c.mu.Lock()
		c.known[p.key] = r.Stat.Version
		// Only a read behind a sync that succeeded first is linearizable.
		linear := p.sync.done && p.sync.ok
		c.mu.Unlock()
		if linear {
			c.rec.addOp(c.cfg.ID, p.sync.call, now, linearize.Input{Key: p.key, Kind: linearize.Get},
				linearize.Output{Value: string(r.Data), Version: r.Stat.Version})
		}
	case kSet, kCAS:
		in := linearize.Input{Key: p.key, Kind: linearize.Set, Value: p.value}
		if p.kind == kCAS {
			in.Kind, in.Version = linearize.CAS, p.version
		}
		out := linearize.Output{Result: linearize.Unknown}
		switch {
		case h.Err == jute.OK:
			var r jute.SetDataResponse
			if err := decode(&r); err != nil {
				c.rec.addOp(c.cfg.ID, p.call, now, in, out)
				return err
			}
			out = linearize.Output{Result: linearize.OK, Version: r.Stat.Version}
			c.mu.Lock()
			c.known[p.key] = r.Stat.Version
			c.mu.Unlock()
		case h.Err == jute.ErrBadVersion && p.kind == kCAS:
			out = linearize.Output{Result: linearize.BadVersion}
		}
		// Any other error (connection loss, session moved, ...) leaves the outcome unknown.
		c.rec.addOp(c.cfg.ID, p.call, now, in, out)
	case kExists:
		if h.Err == jute.OK {
			var r jute.ExistsResponse
			return decode(&r)
		}
	}
	return nil
}

// abandon ends a failed connection: writes still outstanding have unknown outcomes, reads
// tell nothing.
func (c *Client) abandon(cc *clientConn) {
	c.mu.Lock()
	cc.log.Closed = cc.why
	var lost []*pendingOp
	for _, p := range cc.pending {
		if p.kind == kSet || p.kind == kCAS {
			lost = append(lost, p)
		}
	}
	cc.pending = nil
	c.conn = nil
	c.mu.Unlock()
	for _, p := range lost {
		in := linearize.Input{Key: p.key, Kind: linearize.Set, Value: p.value}
		if p.kind == kCAS {
			in.Kind, in.Version = linearize.CAS, p.version
		}
		c.rec.addOp(c.cfg.ID, p.call, 0, in, linearize.Output{Result: linearize.Unknown})
	}
}

// maxFrame bounds a reply: the harness reads small nodes only, so a larger length is a
// corrupt stream.
const maxFrame = 1 << 20
