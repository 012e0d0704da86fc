package zk

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// Option configures Connect.
type Option func(*config)

type config struct {
	sessionTimeout time.Duration
	logger         *slog.Logger
	dial           func(ctx context.Context, network, addr string) (net.Conn, error)
	sessionID      int64
	passwd         []byte
	readOnly       bool
	maxBufferSize  int
	compression    bool
	backoffMin     time.Duration
	backoffMax     time.Duration
	rng            *rand.Rand
	tls            *tls.Config
	saslMech       string
	sasl           func(server string) (SASLClient, error) // nil: no SASL
	configWatch    bool
	xid64          bool  // WithXID64
	firstXid       int64 // the first request's xid, for tests; 0 is 1
}

// WithSessionTimeout sets the session timeout to request; the server clamps it to its
// [minSessionTimeout, maxSessionTimeout] and SessionTimeout reports the result. The default is
// DefaultSessionTimeout.
func WithSessionTimeout(d time.Duration) Option { return func(c *config) { c.sessionTimeout = d } }

// WithLogger sets the logger for connection events (connects, disconnects, expiry at Info;
// failed connection attempts at Warn, rate-limited; details at Debug). The default is
// slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithDialer replaces the TCP dialer, e.g. for TLS or a proxy. addr is "host:port" as given in
// the connection string, so names are resolved again on every attempt.
func WithDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) Option {
	return func(c *config) { c.dial = dial }
}

// WithTLS connects over TLS with cfg, around the dialer (WithDialer's or the default). When
// cfg.ServerName is empty, each connection verifies the host of its "host:port" as the
// server's name. cfg is not modified.
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// WithSession resumes an existing session (see SessionID and SessionPassword) instead of
// creating one. If the server has expired it, Connect fails with ErrSessionExpired.
func WithSession(id int64, passwd []byte) Option {
	return func(c *config) { c.sessionID, c.passwd = id, slices.Clone(passwd) }
}

// WithReadOnly lets the client use servers that are cut off from their quorum and serve
// reads only (StateConnectedReadOnly; writes and Sync fail with ErrNotReadOnly). Without it
// such servers refuse the client. While connected read-only the client keeps asking the other
// servers whether they serve read-write (the "isro" four-letter word, as ZooKeeper's Java
// client) and moves to the first that does. A session made by a read-only server is local to
// it: until the client has been connected to a read-write server, every reconnect asks for a
// new session, so the session id changes and ephemeral nodes cannot be made before then.
func WithReadOnly() Option { return func(c *config) { c.readOnly = true } }

// WithMaxBufferSize bounds the size of a frame the client accepts from the server; a longer
// reply is read and dropped, and its request fails with ErrReplyTooLarge (the connection
// stays up). The default is 16 MiB, well above the server's jute.maxbuffer
// default, so big replies are never what breaks a connection.
func WithMaxBufferSize(n int) Option { return func(c *config) { c.maxBufferSize = n } }

// WithCompression asks each server for ClickHouse Keeper's compressed session (protocol
// version 10): everything after the handshake goes both ways in ClickHouse's LZ4 blocks,
// each with a CityHash128 checksum. A server that grants it (zkd with the large-replies
// extension, ClickHouse Keeper) answers version 10; one that does not (Apache ZooKeeper,
// zkd without the extension) answers 0 and the connection stays uncompressed. Compression
// pays for big values and listings over slow links; small requests cost a block header.
// Conn.Compressed tells which one a connection got. With WithXID64 too, a connection in
// version 11 (64-bit xids) is not compressed: zkd does not serve both on one connection.
func WithCompression() Option { return func(c *config) { c.compression = true } }

// WithReconnectBackoff sets the pause after every server has been tried without success: it
// starts at min, doubles per round up to max, and is jittered by up to half. Defaults: 100 ms
// and 2 s.
func WithReconnectBackoff(min, max time.Duration) Option {
	return func(c *config) { c.backoffMin, c.backoffMax = min, max }
}

// Conn is a client session with a ZooKeeper ensemble. It is safe for concurrent use. Requests
// are pipelined on one connection and answered in the order they were issued; the session
// survives reconnects to any server of the ensemble until it expires or Close is called.
type Conn struct {
	cfg    config
	log    *slog.Logger
	chroot chroot

	ctx      context.Context // cancelled by Close: interrupts dialing and backoff
	cancel   context.CancelFunc
	loopDone chan struct{}
	ready    chan struct{} // closed when the first session is established
	readyOne sync.Once

	lastZxid atomic.Int64
	// maxFrame is the client's read limit: WithMaxBufferSize, raised by SetMaxBuffer; every
	// connection starts with it.
	maxFrame atomic.Int64
	watches  registry
	events   *eventQueue

	mu        sync.Mutex
	hosts     *hostProvider
	state     State
	sessionID int64
	passwd    []byte
	timeout   time.Duration // negotiated; the requested one until the first connect
	xid       int64
	w         *wire      // the live connection, nil while disconnected
	queued    []*request // issued while disconnected, sent after the next connect
	lossy     bool       // disconnected for longer than the session timeout
	lossGen   int        // identifies the current disconnection for its loss timer
	lossTimer *time.Timer
	auths     []*authCred
	closing   bool
	termErr   error // set when the session is over: ErrSessionExpired, ErrClosed, ...
	server    string
	lastErr   error // last connection attempt's failure, for Connect's error
	rounds    int   // full rounds of failed attempts since the last connect

	// resumeFrom is the zxid AddWatchSince's watches resume from on a new connection;
	// resumePending: a connection's resumes are not all answered yet (watchresume.go).
	resumeFrom    int64
	resumePending bool
	// seenRW: a read-write server has answered this session. Until then the session is
	// one a read-only server made, local to it, so a reconnect asks for a new session
	// (ClientCnxn's seenRwServerBefore); a session given with WithSession counts as seen.
	seenRW bool
	// rwServer is where the next attempt goes: a read-write server found while connected
	// to a read-only one (readonly.go).
	rwServer string
	dialLog  dialLog // failed attempts, logged rate-limited (dialog.go)

	caps capsCache // the connected server's capabilities (caps.go)

	wideAt map[string]wideState // WithXID64: what each server was found to offer (xid64.go)
}

// Connect connects to an ensemble and returns once a session is established, or fails when ctx
// ends first. connString is a comma-separated list of host:port (port 2181 by default),
// optionally followed by a chroot path that every path of every request, reply and event is
// relative to: "zk1:2181,zk2:2181,zk3:2181/app".
func Connect(ctx context.Context, connString string, opts ...Option) (*Conn, error) {
	cs, err := parseConnString(connString)
	if err != nil {
		return nil, fmt.Errorf("zk: connect: %w", err)
	}
	cfg := config{
		sessionTimeout: DefaultSessionTimeout,
		maxBufferSize:  16 << 20,
		backoffMin:     100 * time.Millisecond,
		backoffMax:     2 * time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	if cfg.dial == nil {
		d := &net.Dialer{}
		cfg.dial = d.DialContext
	}
	if cfg.tls != nil {
		cfg.dial = tlsDialer(cfg.dial, cfg.tls)
	}
	if cfg.rng == nil {
		cfg.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if cfg.sessionTimeout <= 0 {
		return nil, fmt.Errorf("zk: connect: %w", badArgs("session timeout %v", cfg.sessionTimeout))
	}
	if cfg.backoffMin <= 0 {
		cfg.backoffMin = time.Millisecond
	}
	cfg.backoffMax = max(cfg.backoffMax, cfg.backoffMin)

	c := &Conn{
		cfg:       cfg,
		log:       cfg.logger,
		chroot:    chroot(cs.chroot),
		loopDone:  make(chan struct{}),
		ready:     make(chan struct{}),
		events:    newEventQueue(persistentBuffer),
		hosts:     newHostProvider(cs.servers, cfg.rng),
		state:     StateConnecting,
		sessionID: cfg.sessionID,
		passwd:    cfg.passwd,
		timeout:   cfg.sessionTimeout,
		seenRW:    cfg.sessionID != 0,
		xid:       max(cfg.firstXid, 1) - 1,
	}
	c.maxFrame.Store(int64(cfg.maxBufferSize))
	c.ctx, c.cancel = context.WithCancel(context.Background())
	go c.run()

	select {
	case <-c.ready:
		if cfg.configWatch {
			go c.followConfig()
		}
		return c, nil
	case <-c.loopDone:
		c.mu.Lock()
		err := c.termErr
		c.mu.Unlock()
		return nil, fmt.Errorf("zk: connect: %w", err)
	case <-ctx.Done():
		c.mu.Lock()
		last := c.lastErr
		c.mu.Unlock()
		c.Close()
		if last != nil {
			return nil, fmt.Errorf("zk: connect: %w (last attempt: %v)", ctx.Err(), last)
		}
		return nil, fmt.Errorf("zk: connect: %w", ctx.Err())
	}
}

// State is the session's current state.
func (c *Conn) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Events returns the session's state changes: StateConnected (or StateConnectedReadOnly) each
// time a connection is established (always the first event of a connection, before any watch
// event it causes), StateDisconnected when one is lost, and a final StateExpired,
// StateAuthFailed or StateClosed, after which the channel is closed. Events wait in an
// unbounded queue until read.
func (c *Conn) Events() <-chan Event { return c.events.ch }

// SessionID is the session's id; with SessionPassword it resumes the session elsewhere
// (WithSession).
func (c *Conn) SessionID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// SessionPassword is the session's password.
func (c *Conn) SessionPassword() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.passwd)
}

// SessionTimeout is the timeout the server granted (the requested one before the first
// connection).
func (c *Conn) SessionTimeout() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timeout
}

// Compressed reports whether the live connection is a compressed session (WithCompression,
// granted by the server); false while disconnected.
func (c *Conn) Compressed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w != nil && c.w.compressed
}

// Server is the address of the server the client is connected to, or was connected to last.
func (c *Conn) Server() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.server
}

// LastZxid is the last zxid the client has seen in a reply. After a reconnect, the server
// compares it with its own state: it refuses to serve a client that has seen more than it
// has, and replays the watch events the client missed since then.
func (c *Conn) LastZxid() int64 { return c.lastZxid.Load() }

// UpdateServerList replaces the list of servers (the chroot must not change). To spread the
// load, the client may drop its connection and move to another server, with the probability
// that evens out the number of clients per server (ZooKeeper's algorithm): always if its
// server was removed; with probability 1-old/new if servers were added. A move fails the
// requests in flight with ErrConnectionLoss, like any reconnect; the session survives.
func (c *Conn) UpdateServerList(connString string) error {
	cs, err := parseConnString(connString)
	if err != nil {
		return fmt.Errorf("zk: update server list: %w", err)
	}
	if chroot(cs.chroot) != c.chroot {
		return fmt.Errorf("zk: update server list: %w", badArgs("chroot %q differs from %q", cs.chroot, c.chroot))
	}
	c.updateServers(cs.servers)
	return nil
}

// updateServers is UpdateServerList's work on a parsed list.
func (c *Conn) updateServers(servers []string) {
	c.mu.Lock()
	cur := ""
	if c.w != nil {
		cur = c.w.addr
	}
	move := c.hosts.update(servers, cur)
	w := c.w
	c.mu.Unlock()
	if move && w != nil {
		c.log.Info("zk: moving to another server after server list update", "from", w.addr)
		w.kill(errors.New("moving to another server after a server list update"))
	}
}

// Close ends the session: requests issued before Close are answered first, then the server
// deletes the session's ephemeral nodes and watches. If the client is disconnected, it does
// not wait for a connection; the server then expires the session after its timeout. Close
// waits until the client's goroutines are done (except those still delivering events to the
// application); it is safe to call more than once.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closing || c.termErr != nil {
		c.mu.Unlock()
		c.cancel()
		<-c.loopDone
		return nil
	}
	c.closing = true
	w := c.w
	var r *request
	if w != nil {
		r = newRequest(jute.OpCloseSession, "", nil, nil, 0)
		c.sendLocked(w, r)
	}
	queued := c.queued
	c.queued = nil
	c.mu.Unlock()
	for _, q := range queued {
		c.fail(q, ErrClosed)
	}
	var err error
	if r != nil {
		// A dead server is detected by the reader's deadline; the timer is only a backstop.
		t := time.NewTimer(w.readTimeout + time.Second)
		select {
		case <-r.done:
			if r.err != nil && !errors.Is(r.err, ErrConnectionLoss) {
				err = r.wrap(r.err)
			}
		case <-t.C:
		}
		t.Stop()
	}
	c.cancel()
	if w != nil {
		w.kill(ErrClosed)
	}
	<-c.loopDone
	return err
}

// run is the connection loop: connect, serve the connection until it fails, reconnect,
// until the session ends.
func (c *Conn) run() {
	defer close(c.loopDone)
	for {
		w, err := c.attempt()
		if w == nil {
			switch {
			case c.isClosing():
				c.finish(StateClosed, ErrClosed)
				return
			case errors.Is(err, ErrSessionExpired):
				c.finish(StateExpired, ErrSessionExpired)
				return
			case errors.Is(err, ErrAuthFailed):
				c.finish(StateAuthFailed, err)
				return
			}
			continue
		}
		if !c.activate(w) {
			w.kill(ErrClosed)
			c.finish(StateClosed, ErrClosed)
			return
		}
		go w.writeLoop()
		err = w.readLoop()
		w.kill(err)
		<-w.writerDone
		cause := w.cause()
		authFailed := errors.Is(cause, errAuthFailed)
		c.deactivate(w, cause, authFailed)
		switch {
		case authFailed:
			c.finish(StateAuthFailed, ErrAuthFailed)
			return
		case c.isClosing():
			c.finish(StateClosed, ErrClosed)
			return
		}
	}
}

func (c *Conn) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

// attempt makes one connection attempt: pick a server, back off if every server was tried,
// dial, and handshake, all within the connect timeout (session timeout / number of servers,
// as Java's client). It returns the wire ready to be activated.
func (c *Conn) attempt() (*wire, error) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	addr, wrapped := c.hosts.next()
	if c.rwServer != "" {
		addr, wrapped = c.rwServer, false
		c.hosts.pointAt(addr)
		c.rwServer = ""
	}
	var pause time.Duration
	if wrapped {
		c.rounds++
		pause = c.backoff(c.rounds)
	}
	timeout := c.timeout / time.Duration(c.hosts.size())
	req := &jute.ConnectRequest{
		LastZxidSeen: c.lastZxid.Load(),
		TimeOut:      int32(c.cfg.sessionTimeout / time.Millisecond),
		SessionID:    c.sessionID,
		Passwd:       c.passwd,
		ReadOnly:     c.cfg.readOnly,
		HasReadOnly:  true,
	}
	if c.cfg.compression {
		req.ProtocolVersion = jute.ProtocolVersionCompressed
	}
	if !c.seenRW {
		req.SessionID, req.Passwd = 0, nil
	}
	c.mu.Unlock()
	if req.Passwd == nil {
		req.Passwd = make([]byte, 16)
	}
	if pause > 0 {
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return nil, ErrClosed
		}
	}

	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	if !c.cfg.xid64 {
		return c.connectTo(ctx, addr, req, false)
	}
	return c.connectXID64(ctx, addr, req)
}

// connectTo dials addr and opens or resumes the session with req, on a connection in
// protocol version 11 when wide (errXID64Refused: the server answered another version), and
// logs in with SASL when configured. It returns the wire ready to be activated.
func (c *Conn) connectTo(ctx context.Context, addr string, req *jute.ConnectRequest, wide bool) (*wire, error) {
	if wide {
		r64 := *req
		r64.ProtocolVersion, r64.XID64 = jute.ProtocolVersionXID64, true
		req = &r64
	}
	w, resp, err := c.dialAndHandshake(ctx, addr, req, wide)
	if err == nil && wide && resp.ProtocolVersion != jute.ProtocolVersionXID64 {
		w.nc.Close()
		err = fmt.Errorf("%w: version %d", errXID64Refused, resp.ProtocolVersion)
	}
	if err != nil {
		if c.ctx.Err() == nil {
			c.dialLog.failed(c.log, addr, err)
		}
		c.mu.Lock()
		c.lastErr = fmt.Errorf("%s: %w", addr, err)
		c.mu.Unlock()
		return nil, err
	}
	if resp.TimeOut <= 0 {
		// The server no longer knows the session: it expired (or never existed).
		w.nc.Close()
		c.log.Info("zk: session expired", "server", addr, "session", fmt.Sprintf("0x%x", req.SessionID))
		return nil, ErrSessionExpired
	}
	if req.SessionID != 0 && resp.SessionID != req.SessionID {
		w.nc.Close()
		return nil, fmt.Errorf("%w: server answered session 0x%x for 0x%x", errProtocol, resp.SessionID, req.SessionID)
	}
	w.setTimeouts(time.Duration(resp.TimeOut) * time.Millisecond)
	w.connResp = resp
	if c.cfg.compression && resp.ProtocolVersion == jute.ProtocolVersionCompressed {
		w.wc.StartCompression()
		w.compressed = true
	}
	if c.cfg.sasl != nil {
		// Before activation, so the requests waiting for this connection (auth packets,
		// setWatches, queued calls) go out only after the exchange, as in Java's client.
		if err := c.saslLogin(w); err != nil {
			w.nc.Close()
			if errors.Is(err, ErrAuthFailed) {
				c.log.Warn("zk: SASL authentication failed", "server", addr, "err", err)
			} else if c.ctx.Err() == nil {
				c.log.Debug("zk: connection attempt failed during SASL", "server", addr, "err", err)
			}
			c.mu.Lock()
			c.lastErr = fmt.Errorf("%s: %w", addr, err)
			c.mu.Unlock()
			return nil, err
		}
	}
	return w, nil
}

func (c *Conn) dialAndHandshake(ctx context.Context, addr string, req *jute.ConnectRequest, wide bool) (*wire, *jute.ConnectResponse, error) {
	nc, err := c.cfg.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	w := newWire(c, nc, addr, wide)
	// Close or the connect timeout interrupts the handshake through the socket's deadline.
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	resp, err := w.handshake(req)
	if !stop() {
		nc.Close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, nil, fmt.Errorf("handshake: %w", err)
	}
	if err != nil {
		nc.Close()
		if errors.Is(err, io.EOF) {
			// Servers close without answering when they will not take the session: a
			// read-only server for a read-write client, or one behind our last zxid.
			err = fmt.Errorf("server closed the connection during the handshake: %w", err)
		}
		return nil, nil, err
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return w, resp, nil
}

// backoff is the pause after the n-th full round of failed attempts: exponential from
// backoffMin to backoffMax, jittered down by up to half so clients spread out.
func (c *Conn) backoff(n int) time.Duration {
	d := c.cfg.backoffMin
	for i := 1; i < n && d < c.cfg.backoffMax; i++ {
		d *= 2
	}
	d = min(d, c.cfg.backoffMax)
	half := d / 2
	return half + time.Duration(c.cfg.rng.Int64N(int64(half)+1))
}

// activate makes w the session's connection: it records the session, queues the auth
// packets, the setWatches that re-arm every watch from the last seen zxid, and the requests
// issued while disconnected, in that order, and announces the state. Nothing is read from w
// before this returns, so the connect event precedes every event the connection causes.
func (c *Conn) activate(w *wire) bool {
	resp := w.connResp
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	newSession := c.sessionID != resp.SessionID
	c.sessionID = resp.SessionID
	c.seenRW = c.seenRW || !resp.ReadOnly
	c.passwd = slices.Clone(resp.Passwd)
	c.timeout = time.Duration(resp.TimeOut) * time.Millisecond
	c.hosts.onConnected()
	c.rounds = 0
	c.lastErr = nil
	c.dialLog.reset()
	c.lossy = false
	c.lossGen++
	if c.lossTimer != nil {
		c.lossTimer.Stop()
		c.lossTimer = nil
	}
	c.w = w
	c.server = w.addr

	for _, a := range c.auths {
		w.enqueueAuth(a)
	}
	if lists, any := c.watches.paths(); any {
		for _, sw := range setWatchesPackets(lists, c.lastZxid.Load(), c.chroot) {
			op := jute.OpSetWatches
			if sw.V2 {
				op = jute.OpSetWatches2
			}
			r := newRequest(op, "", sw, nil, 256)
			c.sendLocked(w, r)
			// Logged off the reader's goroutine: the logger is the application's.
			go func() {
				<-r.done
				if r.err != nil && !errors.Is(r.err, ErrConnectionLoss) {
					c.log.Warn("zk: re-registering watches failed", "server", w.addr, "err", r.err)
				}
			}()
		}
	}
	// AddWatchSince's watches resume from the last zxid the client saw, the point up to
	// which it has every event: off this goroutine, since a resume first reads the new
	// server's capabilities.
	if keys := c.watches.resumable(); len(keys) > 0 {
		// Until every resume of a connection is answered the resume point stays: replies
		// to other requests on a connection lost before then carry zxids whose events
		// only the unanswered resumes would have replayed.
		if !c.resumePending {
			c.resumeFrom = c.lastZxid.Load()
		}
		c.resumePending = true
		go c.resumeWatches(w, c.resumeFrom, keys)
	}
	for _, r := range c.queued {
		if !r.abandoned.Load() {
			c.sendLocked(w, r)
		}
	}
	c.queued = nil

	c.state = StateConnected
	if resp.ReadOnly {
		c.state = StateConnectedReadOnly
		go c.huntReadWrite(w)
	}
	c.log.Info("zk: connected", "server", w.addr, "session", fmt.Sprintf("0x%x", c.sessionID),
		"timeout", c.timeout, "new_session", newSession, "state", c.state)
	c.events.push(Event{Type: EventSession, State: c.state, Server: w.addr}, false)
	c.readyOne.Do(func() { close(c.ready) })
	return true
}

// deactivate handles the loss of w: every request sent on it fails with ErrConnectionLoss
// (it may or may not have been applied), and requests issued from now on wait for the next
// connection, for at most the session timeout.
func (c *Conn) deactivate(w *wire, cause error, authFailed bool) {
	pending := w.takePending()
	c.mu.Lock()
	if c.w == w {
		c.w = nil
	}
	if !authFailed && !c.closing {
		c.state = StateDisconnected
		c.log.Info("zk: disconnected", "server", w.addr, "err", cause)
		c.events.push(Event{Type: EventSession, State: StateDisconnected, Server: w.addr}, false)
		c.lossGen++
		gen := c.lossGen
		c.lossTimer = time.AfterFunc(c.timeout, func() { c.connectionLost(gen) })
	}
	c.mu.Unlock()
	err := connLoss(cause)
	if authFailed {
		err = ErrAuthFailed
	}
	for _, r := range pending {
		c.fail(r, err)
	}
}

// connectionLost runs when the client has been disconnected for a whole session timeout: the
// session has most likely expired, so requests stop waiting for a reconnect. The loop keeps
// trying; the server will say whether the session is gone.
func (c *Conn) connectionLost(gen int) {
	c.mu.Lock()
	if gen != c.lossGen || c.w != nil || c.termErr != nil {
		c.mu.Unlock()
		return
	}
	c.lossy = true
	queued := c.queued
	c.queued = nil
	var waiters []*request
	for _, a := range c.auths {
		waiters = append(waiters, a.waiters...)
		a.waiters = nil
	}
	c.mu.Unlock()
	for _, r := range append(queued, waiters...) {
		c.fail(r, ErrConnectionLoss)
	}
}

// finish ends the session for good: everything waiting fails with err, every watch gets an
// EventNotWatching, and the final state event closes Events.
func (c *Conn) finish(state State, err error) {
	c.mu.Lock()
	c.state = state
	c.termErr = err
	if state == StateClosed {
		c.termErr = ErrClosed
	}
	c.w = nil
	queued := c.queued
	c.queued = nil
	c.lossGen++
	if c.lossTimer != nil {
		c.lossTimer.Stop()
		c.lossTimer = nil
	}
	var waiters []*request
	for _, a := range c.auths {
		waiters = append(waiters, a.waiters...)
		a.waiters = nil
	}
	c.mu.Unlock()
	c.cancel()
	for _, r := range append(queued, waiters...) {
		c.fail(r, err)
	}
	c.watches.terminate(state, err)
	if state != StateClosed {
		c.log.Info("zk: session ended", "state", state, "err", err)
	}
	c.events.push(Event{Type: EventSession, State: state, Err: err}, true)
}

// notify dispatches a server notification to the watch registry.
func (c *Conn) notify(ev jute.WatcherEvent) {
	c.log.Debug("zk: notification", "type", EventType(ev.Type), "path", ev.Path)
	if ev.Path == ConfigNode {
		c.watches.dispatchConfig(Event{Type: EventType(ev.Type), State: StateConnected, Path: ConfigNode})
	}
	p, ok := c.chroot.toClient(ev.Path)
	if !ok {
		c.log.Debug("zk: notification outside the chroot", "path", ev.Path)
		return
	}
	c.watches.dispatch(Event{Type: EventType(ev.Type), State: StateConnected, Path: p})
}

// authCred is one AddAuth: kept for the session's life and re-sent on every connection.
type authCred struct {
	scheme  string
	auth    []byte
	acked   bool
	waiters []*request
}

func (a *authCred) frame(xid64 bool) []byte {
	r := newRequest(jute.OpAuth, "", &jute.AuthPacket{Scheme: a.scheme, Auth: a.auth}, nil, 16+len(a.scheme)+len(a.auth))
	r.setXid(int64(jute.XidAuth), xid64)
	return r.frame
}

func putLen(b []byte) {
	n := uint32(len(b) - 4)
	b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
}

// authDone completes the AddAuth calls waiting for a's reply.
func (c *Conn) authDone(a *authCred, code Code) {
	c.mu.Lock()
	waiters := a.waiters
	a.waiters = nil
	if code == jute.OK {
		a.acked = true
	} else {
		// Only AUTHFAILED ends the session; any other refusal just drops the credentials.
		c.auths = slices.DeleteFunc(c.auths, func(x *authCred) bool { return x == a })
	}
	c.mu.Unlock()
	for _, r := range waiters {
		c.fail(r, code.Err())
	}
}

// AddAuth adds credentials to the session, e.g. AddAuth(ctx, "digest", []byte("user:pass")).
// They are re-sent after every reconnect. It returns once the server has accepted them; a
// rejection (ErrAuthFailed) ends the session, as in ZooKeeper's Java client.
func (c *Conn) AddAuth(ctx context.Context, scheme string, auth []byte) error {
	r := &request{op: jute.OpAuth, done: make(chan struct{})}
	return c.await(ctx, r, func(r *request) { c.addAuth(scheme, auth, r) })
}

func (c *Conn) addAuth(scheme string, auth []byte, r *request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.termErr != nil:
		c.fail(r, c.termErr)
		return
	case c.closing:
		c.fail(r, ErrClosed)
		return
	}
	var a *authCred
	for _, x := range c.auths {
		if x.scheme == scheme && bytes.Equal(x.auth, auth) {
			a = x
		}
	}
	if a != nil && a.acked {
		c.fail(r, nil)
		return
	}
	if c.w == nil && c.lossy {
		// Kept if already known, but nobody waits for a reconnect any more.
		c.fail(r, ErrConnectionLoss)
		return
	}
	if a == nil {
		a = &authCred{scheme: scheme, auth: slices.Clone(auth)}
		c.auths = append(c.auths, a)
		if c.w != nil {
			c.w.enqueueAuth(a)
		}
	}
	a.waiters = append(a.waiters, r)
}

// tlsDialer wraps dial with a TLS client handshake, bounded by the dial's context.
func tlsDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error), cfg *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := cfg
		if c.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				nc.Close()
				return nil, fmt.Errorf("tls: server address %q: %w", addr, err)
			}
			c = cfg.Clone()
			c.ServerName = host
		}
		tc := tls.Client(nc, c)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
		}
		return tc, nil
	}
}
