package peer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// Wire constants of QuorumCnxManager.
const (
	// ProtocolVersionV1 starts a connection header with one election address (3.5+).
	ProtocolVersionV1 int64 = -65536
	// ProtocolVersionV2 starts a header whose addresses are joined with '|' (3.6+,
	// multiAddress.enabled).
	ProtocolVersionV2 int64 = -65535
	// MaxMessageSize bounds a message's length prefix (PACKETMAXSIZE).
	MaxMessageSize = 512 * 1024
	// MaxAddressLen bounds the address part of a header (maxBuffer).
	MaxAddressLen = 2048
	// ObserverID is the sid of old observers that had none; each such connection gets a fresh
	// negative sid.
	ObserverID int64 = math.MaxInt64
)

// ErrHeader is returned for connection headers ZooKeeper would reject.
var ErrHeader = errors.New("peer: bad connection header")

// TCPConfig configures a TCP transport. Zero durations and sizes take the defaults shown.
type TCPConfig struct {
	// ID is this server's sid.
	ID int64
	// Listener serves the election port; when nil, ListenAddr is listened on.
	Listener   net.Listener
	ListenAddr string // several joined with '|' are all listened on (ListenAll)
	// AdvertiseAddr ("host:port") is the election address sent in connection headers; peers
	// with a larger sid connect back to it. Default: the listener's address.
	AdvertiseAddr string
	// Peers maps sids to election addresses ("host:port"; several joined with '|', as
	// multiAddress lists them, are dialled in turn until one connects).
	Peers map[int64]string
	// ProtocolVersion of the headers sent: ProtocolVersionV1 (default, what ZooKeeper sends
	// unless multiAddress.enabled) or ProtocolVersionV2.
	ProtocolVersion int64
	// DialTimeout bounds a connection attempt (zookeeper.cnxTimeout): 5 s.
	DialTimeout time.Duration
	// HandshakeTimeout bounds reading an incoming connection's header: 5 s.
	HandshakeTimeout time.Duration
	// WriteTimeout bounds one write; a peer that does not read loses its connection: 10 s.
	WriteTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between connection attempts to a peer that
	// has messages queued: 100 ms doubling to 5 s.
	MinBackoff, MaxBackoff time.Duration
	// ConnectBackWait is how long to wait for a peer with a larger sid to connect back after
	// we sent it our header, before trying again: 1 s.
	ConnectBackWait time.Duration
	// SendQueueLen is the per-peer queue; when full the oldest message is dropped. ZooKeeper
	// keeps 1 (SEND_CAPACITY), so that a peer only ever gets the latest vote.
	SendQueueLen int
	// RecvQueueLen is the receive queue; when full the oldest message is dropped: 100
	// (RECV_CAPACITY).
	RecvQueueLen int
	// Logger receives connection events; nil means slog.Default().
	Logger *slog.Logger
	// TLS secures the connections (sslQuorum, portUnification); nil = plaintext. A
	// handshake is bounded by DialTimeout when dialing and HandshakeTimeout when accepting.
	TLS *TLS

	// QuorumSASL authenticates connections after the header (quorum.auth.enableSasl,
	// quorumauth.go); nil means none.
	QuorumSASL *QuorumSASL

	// PeerState, when set, is told when a peer is found down and when it is back, for the
	// election's fast decision. Down means proof that no process listens or the peer's
	// kernel dropped the connection: a refused connection on every address, or a reset.
	// A timeout or a clean close is not (the peer may be slow, or closing a duplicate
	// connection by the one-connection rule). Up means a connection was opened or accepted.
	// It is called on the peer's own goroutines, never with a lock held, and only on a
	// change; it may block.
	PeerState func(sid int64, up bool)
}

// TCP is the election-port transport of QuorumCnxManager. Each pair of servers keeps one
// connection, opened by the larger sid: a smaller sid that wants to talk connects, sends its
// header and hangs up, and the larger one connects back. Every peer has a goroutine that
// owns its queue and (re)connects while messages wait; every connection has a reader.
type TCP struct {
	cfg    TCPConfig
	log    *slog.Logger
	ln     net.Listener
	header []byte
	recv   chan Message
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex
	closed      bool
	links       map[int64]*link
	handshaking map[net.Conn]struct{}
	nextObsID   int64
}

// link is the state kept for one peer. Fields other than sid and kick are guarded by TCP.mu.
type link struct {
	sid  int64
	kick chan struct{}

	queue       [][]byte
	last        []byte // the last message written, resent on a new connection (lastMessageSent)
	conn        *conn
	learned     string // the address(es) the peer sent in its header, joined with '|'
	connectBack bool   // the peer (smaller sid) asked us to connect
	dialNow     bool   // skip the back-off wait once
	down        bool   // last reported to PeerState as down
	redial      bool   // the current connection broke: dial once (see dropConn)

	// stateMu orders PeerState calls for this peer: the check of down and the call are
	// one step, so reports from the link's and the reader's goroutines cannot cross.
	stateMu sync.Mutex
}

type conn struct {
	nc         net.Conn
	r          io.Reader
	resendLast bool
	once       sync.Once
}

func (c *conn) close() { c.once.Do(func() { c.nc.Close() }) }

func (l *link) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// NewTCP starts a transport: it listens (or takes cfg.Listener) and connects to peers as
// messages for them are sent.
func NewTCP(cfg TCPConfig) (*TCP, error) {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 5 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(5*time.Second, cfg.MinBackoff)
	}
	if cfg.ConnectBackWait <= 0 {
		cfg.ConnectBackWait = time.Second
	}
	if cfg.SendQueueLen <= 0 {
		cfg.SendQueueLen = 1
	}
	if cfg.RecvQueueLen <= 0 {
		cfg.RecvQueueLen = 100
	}
	if cfg.ProtocolVersion == 0 {
		cfg.ProtocolVersion = ProtocolVersionV1
	}
	if cfg.ProtocolVersion != ProtocolVersionV1 && cfg.ProtocolVersion != ProtocolVersionV2 {
		return nil, fmt.Errorf("peer: unknown protocol version %d", cfg.ProtocolVersion)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("myid", cfg.ID)
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = ListenAll(SplitAddrs(cfg.ListenAddr)); err != nil {
			return nil, fmt.Errorf("peer: listening on the election port: %w", err)
		}
	}
	adv := cfg.AdvertiseAddr
	if adv == "" {
		adv = ln.Addr().String()
	}
	if len(adv) == 0 || len(adv) > MaxAddressLen {
		ln.Close()
		return nil, fmt.Errorf("peer: advertised address %q: %w", adv, ErrHeader)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &TCP{
		cfg:         cfg,
		log:         log,
		ln:          ln,
		header:      AppendHeader(nil, cfg.ProtocolVersion, cfg.ID, adv),
		recv:        make(chan Message, cfg.RecvQueueLen),
		ctx:         ctx,
		cancel:      cancel,
		links:       make(map[int64]*link),
		handshaking: make(map[net.Conn]struct{}),
		nextObsID:   -1,
	}
	t.wg.Add(1)
	go t.accept()
	return t, nil
}

// Addr is the address the election port listens on.
func (t *TCP) Addr() net.Addr { return t.ln.Addr() }

// Recv delivers received messages; it is closed by Close.
func (t *TCP) Recv() <-chan Message { return t.recv }

// Connected reports whether a connection to sid is up (QuorumCnxManager.connectedToPeer).
func (t *TCP) Connected(sid int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.links[sid]
	return l != nil && l.conn != nil
}

// SetPeers replaces the members' election addresses (a reconfig changed the
// configuration). New members are dialed with the next message for them, as
// QuorumPeer.connectNewPeers has them; links to members that left stay until they fail.
func (t *TCP) SetPeers(peers map[int64]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cfg.Peers = maps.Clone(peers)
}

// Send queues payload for sid. A payload for this server itself is delivered at once.
func (t *TCP) Send(to int64, payload []byte) {
	p := bytes.Clone(payload)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	if to == t.cfg.ID {
		if deliver(t.recv, Message{From: to, Payload: p}) {
			t.log.Debug("election receive queue full; dropped the oldest message")
		}
		return
	}
	l := t.linkLocked(to)
	if len(l.queue) >= t.cfg.SendQueueLen {
		l.queue = l.queue[1:]
	}
	l.queue = append(l.queue, p)
	l.poke()
}

// Close stops every goroutine, closes every connection and the listener, and then closes the
// Recv channel.
func (t *TCP) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	var conns []*conn
	for _, l := range t.links {
		if l.conn != nil {
			conns = append(conns, l.conn)
		}
	}
	var pending []net.Conn
	for nc := range t.handshaking {
		pending = append(pending, nc)
	}
	t.mu.Unlock()

	t.cancel()
	err := t.ln.Close()
	for _, c := range conns {
		c.close()
	}
	for _, nc := range pending {
		nc.Close()
	}
	t.wg.Wait()
	close(t.recv)
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// linkLocked returns sid's link, creating it and its goroutine. t.mu is held; t is open.
func (t *TCP) linkLocked(sid int64) *link {
	l := t.links[sid]
	if l == nil {
		l = &link{sid: sid, kick: make(chan struct{}, 1)}
		t.links[sid] = l
		t.wg.Add(1)
		go t.run(l)
	}
	return l
}

func (t *TCP) link(sid int64) *link {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	return t.linkLocked(sid)
}

// run owns one peer: it writes queued messages on the connection and, while messages wait
// and there is no connection, connects with back-off.
func (t *TCP) run(l *link) {
	defer t.wg.Done()
	backoff := t.cfg.MinBackoff
	var retryAt time.Time
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	wait := func(timeout <-chan time.Time) bool {
		select {
		case <-t.ctx.Done():
			return false
		case <-l.kick:
		case <-timeout:
		}
		return true
	}
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return
		}
		if l.dialNow {
			l.dialNow = false
			retryAt = time.Time{}
		}
		if c := l.conn; c != nil {
			backoff, retryAt = t.cfg.MinBackoff, time.Time{}
			var msg []byte
			if len(l.queue) > 0 {
				msg, l.queue = l.queue[0], l.queue[1:]
				l.last = msg
				c.resendLast = false
			} else if c.resendLast {
				// A new connection starts with the last message sent, which the old one may
				// have lost (SendWorker.run).
				c.resendLast = false
				msg = l.last
			}
			t.mu.Unlock()
			if msg == nil {
				if !wait(nil) {
					return
				}
				continue
			}
			if err := t.write(c, msg); err != nil {
				t.dropConn(l, c, err)
				// msg is l.last, which the next connection sends first: with PeerState,
				// dial for it now (see dropConn).
				t.mu.Lock()
				l.redial = l.redial || t.cfg.PeerState != nil
				t.mu.Unlock()
			}
			continue
		}
		pending := len(l.queue) > 0 || l.connectBack || l.redial
		t.mu.Unlock()
		if !pending {
			if !wait(nil) {
				return
			}
			continue
		}
		if d := time.Until(retryAt); d > 0 {
			timer.Reset(d)
			ok := wait(timer.C)
			timer.Stop()
			if !ok {
				return
			}
			continue
		}
		t.mu.Lock()
		addr := t.cfg.Peers[l.sid]
		if (l.connectBack && l.learned != "") || addr == "" {
			// A peer that connected to us is reached at the address it sent, as ZooKeeper does.
			addr = l.learned
		}
		l.connectBack, l.redial = false, false
		t.mu.Unlock()
		kept, err := t.dial(l, addr)
		switch {
		case err != nil:
			if t.ctx.Err() != nil {
				return
			}
			if peerGone(err) {
				t.setPeerState(l, false)
			}
			t.log.Debug("cannot open election channel", "sid", l.sid, "addr", addr, "err", err, "retry", backoff)
			retryAt = time.Now().Add(backoff)
			backoff = min(2*backoff, t.cfg.MaxBackoff)
		case !kept:
			retryAt = time.Now().Add(max(backoff, t.cfg.ConnectBackWait))
			backoff = min(2*backoff, t.cfg.MaxBackoff)
		}
	}
}

func (t *TCP) write(c *conn, msg []byte) error {
	if err := c.nc.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout)); err != nil {
		return err
	}
	return jute.WriteFrame(c.nc, msg)
}

// dial connects to a peer and sends our header. The connection is kept only when our sid is
// the larger; otherwise the peer is expected to connect back. kept reports which.
func (t *TCP) dial(l *link, addr string) (kept bool, err error) {
	if addr == "" {
		return false, fmt.Errorf("no election address for sid %d", l.sid)
	}
	d := net.Dialer{Timeout: t.cfg.DialTimeout}
	var nc net.Conn
	refused := true // by every address
	for _, a := range SplitAddrs(addr) {
		// QuorumCnxManager.connectOne: each of the peer's addresses in turn.
		if nc, err = d.DialContext(t.ctx, "tcp", a); err == nil {
			addr = a
			break
		}
		refused = refused && peerGone(err)
		if t.ctx.Err() != nil {
			return false, err
		}
	}
	if err != nil {
		if !refused {
			// Only a refusal by every address proves the peer down (see peerGone).
			return false, fmt.Errorf("dial sid %d: %w", l.sid, errors.Join(err, errNotAllRefused))
		}
		return false, err
	}
	t.setPeerState(l, true)
	if t.cfg.TLS.Dials() {
		if nc, err = t.cfg.TLS.Dialed(t.ctx, nc, addr, t.cfg.DialTimeout); err != nil {
			if t.ctx.Err() == nil {
				t.log.Warn("cannot open election channel", "sid", l.sid, "addr", addr, "err", err)
			}
			return false, err
		}
	}
	if err := nc.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout)); err != nil {
		nc.Close()
		return false, err
	}
	// One write: ZooKeeper reads the address with a single read() and fails on a short one.
	if _, err := nc.Write(t.header); err != nil {
		nc.Close()
		return false, err
	}
	if err := t.cfg.QuorumSASL.Learn(nc); err != nil { // quorum SASL follows the header
		nc.Close()
		return false, err
	}
	if l.sid > t.cfg.ID {
		t.log.Debug("have smaller server identifier, dropping the connection", "sid", l.sid)
		nc.Close()
		return false, nil
	}
	if err := nc.SetWriteDeadline(time.Time{}); err != nil {
		nc.Close()
		return false, err
	}
	return true, t.install(l, nc, bufio.NewReader(nc))
}

// install makes nc the connection to l's peer, replacing (and closing) any older one, and
// starts its reader.
func (t *TCP) install(l *link, nc net.Conn, r io.Reader) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		nc.Close()
		return ErrClosed
	}
	old := l.conn
	c := &conn{nc: nc, r: r, resendLast: l.last != nil}
	l.conn = c
	t.wg.Add(1)
	t.mu.Unlock()
	if old != nil {
		old.close()
	}
	t.log.Debug("election connection up", "sid", l.sid, "remote", nc.RemoteAddr())
	t.setPeerState(l, true)
	go t.read(l, c)
	l.poke()
	return nil
}

func (t *TCP) dropConn(l *link, c *conn, err error) {
	c.close()
	t.mu.Lock()
	if l.conn == c {
		l.conn = nil
		// With PeerState, dial once: the last message may have been written into a socket
		// the peer had already closed, and only a dial tells whether it is gone (refused)
		// or still there (then it gets that message again). A connection replaced under
		// the one-connection rule is not the current one, so this cannot loop.
		l.redial = t.cfg.PeerState != nil
	}
	closed := t.closed
	t.mu.Unlock()
	if !closed {
		t.log.Debug("election connection broken", "sid", l.sid, "err", err)
	}
	l.poke()
}

// read delivers the messages of one connection until it breaks (RecvWorker).
func (t *TCP) read(l *link, c *conn) {
	defer t.wg.Done()
	var err error
	for {
		var msg []byte
		msg, err = jute.ReadFrame(c.r, MaxMessageSize)
		if errors.Is(err, jute.ErrFrameSize) {
			err = fmt.Errorf("received packet with invalid length: %w", err)
		}
		if err != nil {
			break
		}
		if len(msg) == 0 {
			// QuorumCnxManager takes an empty message for a broken stream too.
			err = errors.New("received packet with invalid length 0")
			break
		}
		if deliver(t.recv, Message{From: l.sid, Payload: msg}) {
			t.log.Debug("election receive queue full; dropped the oldest message")
		}
	}
	if peerGone(err) {
		t.setPeerState(l, false)
	}
	t.dropConn(l, c, err)
}

// errNotAllRefused marks a dial error where some address failed otherwise than by a
// refusal, so that peerGone does not take it for proof.
var errNotAllRefused = errors.New("not every address refused")

// peerGone: does err prove that the peer's process is gone (nothing listens: refused; its
// kernel dropped the connection: reset)? Kill -9 gives exactly these at once, where a
// hung or partitioned peer gives timeouts, which prove nothing.
func peerGone(err error) bool {
	if err == nil || errors.Is(err, errNotAllRefused) {
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// setPeerState reports a change of l's peer to PeerState.
func (t *TCP) setPeerState(l *link, up bool) {
	if t.cfg.PeerState == nil {
		return
	}
	l.stateMu.Lock()
	defer l.stateMu.Unlock()
	t.mu.Lock()
	change := l.down == up
	l.down = !up
	closed := t.closed
	t.mu.Unlock()
	if change && !closed {
		t.log.Debug("election peer state", "sid", l.sid, "up", up)
		t.cfg.PeerState(l.sid, up)
	}
}

func (t *TCP) accept() {
	defer t.wg.Done()
	for {
		nc, err := t.ln.Accept()
		if err != nil {
			if t.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			t.log.Warn("election listener", "err", err)
			select {
			case <-t.ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			nc.Close()
			return
		}
		t.handshaking[nc] = struct{}{}
		t.wg.Add(1)
		t.mu.Unlock()
		go t.handshake(nc)
	}
}

// handshake reads an incoming connection's header and applies the one-connection rule
// (QuorumCnxManager.handleConnection).
func (t *TCP) handshake(nc net.Conn) {
	defer t.wg.Done()
	raw := nc // the key in t.handshaking; nc may become its TLS connection
	done := func() bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.handshaking, raw)
		return t.closed
	}
	var err error
	if t.cfg.TLS.Listens() {
		nc, err = t.cfg.TLS.Accepted(t.ctx, raw, t.cfg.HandshakeTimeout)
		if err != nil {
			if !done() {
				t.log.Warn("election connection rejected", "remote", raw.RemoteAddr(), "err", err)
			}
			return
		}
	}
	r := bufio.NewReader(nc)
	err = nc.SetReadDeadline(time.Now().Add(t.cfg.HandshakeTimeout))
	var sid int64
	var addrs []string
	if err == nil {
		sid, addrs, err = ReadHeader(r)
	}
	if err == nil {
		err = t.cfg.QuorumSASL.Authenticate(nc, r) // quorum SASL follows the header
	}
	if err == nil {
		err = nc.SetReadDeadline(time.Time{})
	}
	if done() {
		nc.Close()
		return
	}
	if err != nil {
		t.log.Warn("election connection rejected", "remote", nc.RemoteAddr(), "err", err)
		nc.Close()
		return
	}
	if sid == ObserverID {
		t.mu.Lock()
		sid = t.nextObsID
		t.nextObsID--
		t.mu.Unlock()
	}
	switch {
	case sid == t.cfg.ID:
		t.log.Warn("connection request from a server with our own id", "remote", nc.RemoteAddr())
		nc.Close()
	case sid < t.cfg.ID:
		// The smaller sid believes it has no connection: whatever we hold is stale. Close
		// both and connect back.
		nc.Close()
		l := t.link(sid)
		if l == nil {
			return
		}
		t.mu.Lock()
		old := l.conn
		l.conn = nil
		if len(addrs) > 0 {
			l.learned = strings.Join(addrs, "|")
		}
		l.connectBack, l.dialNow = true, true
		t.mu.Unlock()
		if old != nil {
			old.close()
		}
		l.poke()
	default:
		l := t.link(sid)
		if l == nil {
			nc.Close()
			return
		}
		if len(addrs) > 0 {
			t.mu.Lock()
			l.learned = strings.Join(addrs, "|")
			t.mu.Unlock()
		}
		t.install(l, nc, r)
	}
}

// AppendHeader appends the connection header QuorumCnxManager sends first: the protocol
// version, the sid and the election address(es), joined with '|' for several.
func AppendHeader(b []byte, version, sid int64, addrs string) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(version))
	b = binary.BigEndian.AppendUint64(b, uint64(sid))
	b = binary.BigEndian.AppendUint32(b, uint32(len(addrs)))
	return append(b, addrs...)
}

// ReadHeader reads a connection header: the legacy form (a non-negative long: the sid) or a
// v1/v2 one. Wildcard addresses are left out, as ZooKeeper does.
func ReadHeader(r io.Reader) (sid int64, addrs []string, err error) {
	var b [12]byte
	if _, err := io.ReadFull(r, b[:8]); err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrHeader, err)
	}
	v := int64(binary.BigEndian.Uint64(b[:8]))
	if v >= 0 {
		return v, nil, nil
	}
	if v != ProtocolVersionV1 && v != ProtocolVersionV2 {
		return 0, nil, fmt.Errorf("%w: unrecognized protocol version %d", ErrHeader, v)
	}
	if _, err := io.ReadFull(r, b[:12]); err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrHeader, err)
	}
	sid = int64(binary.BigEndian.Uint64(b[:8]))
	n := int32(binary.BigEndian.Uint32(b[8:12]))
	if n <= 0 || n > MaxAddressLen {
		return 0, nil, fmt.Errorf("%w: unreasonable address length %d from sid %d", ErrHeader, n, sid)
	}
	raw := make([]byte, n)
	if _, err := io.ReadFull(r, raw); err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrHeader, err)
	}
	for _, a := range strings.Split(string(raw), "|") {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return 0, nil, fmt.Errorf("%w: badly formed address %q from sid %d", ErrHeader, a, sid)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return 0, nil, fmt.Errorf("%w: bad port in %q from sid %d", ErrHeader, a, sid)
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			continue
		}
		addrs = append(addrs, a)
	}
	return sid, addrs, nil
}
