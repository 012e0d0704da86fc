package server

import (
	"net"
	"slices"
	"time"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/prep"
	"github.com/zkd-io/zkd/internal/session"
	"github.com/zkd-io/zkd/jute"
)

type eventKind int

const (
	evConnect eventKind = iota
	evRequest
	evClosed
	evQuery // run a function on the core goroutine (four-letter words, tests)
	evElection
	evQuorumAccepted
	evQuorumDialed
	evQuorumPacket
	evQuorumClosed
)

// event is the only way other goroutines reach the core. One channel keeps each
// connection's connect, requests and close in order.
type event struct {
	kind    eventKind
	c       *conn
	connect *jute.ConnectRequest
	req     *request
	query   func()

	emsg      ElectionMessage
	qconn     *quorumConn
	qpacket   jute.QuorumPacket
	snap      *snapState
	nconn     net.Conn
	listener  net.Listener
	leaderSid int64
	err       error
}

// clientSession is the core's view of a session.
type clientSession struct {
	id      int64
	timeout int32
	conn    *conn
	valid   bool // its createSession txn is applied
	closing bool
	// connReq is the ConnectRequest of a new session waiting for its createSession txn.
	connReq *jute.ConnectRequest
	// queue holds this session's requests that must wait for its earlier writes: FIFO
	// order per session means a read waits behind that session's pending writes
	// (sessionqueue.go).
	queue []*queued
	// held: a submitted sync is unanswered, or writes wait unsubmitted behind one.
	held bool
	// local: made by a read-only server (readonly.go) or a member with local sessions
	// (localsess.go), known to it alone.
	local bool
	// keeperClient: the session negotiated ClickHouse Keeper's semantics (keeperops.go).
	keeperClient bool
}

type pendingKind int

const (
	pkClient        pendingKind = iota // a client write
	pkCreateSession                    // a new session's createSession
	pkExpire                           // a server-made closeSession on expiry
	pkInternal                         // server-made (container/TTL deletion)
	pkRemote                           // a txn whose request came through another server
)

// pendingTxn is a txn that is prepared (or received from the leader) and being applied.
type pendingTxn struct {
	kind pendingKind
	txn  *jute.LoggedTxn
	data []byte // the txn as proposed (ensemble), kept in the recent history
	q    *queued
	sess *clientSession
}

func (s *Server) submit(ev event) {
	// Nearly always the channel has room: a one-case select is far cheaper than the full
	// one. Once stopping, events may still go in while there is room; the core is gone and
	// nothing reads them, as before when the send won the race with stopping.
	select {
	case s.events <- ev:
		return
	default:
	}
	select {
	case s.events <- ev:
	case <-s.stopping:
	}
}

// run is the core goroutine.
func (s *Server) run() {
	defer s.wg.Done()
	tick := s.clk.NewTicker(time.Duration(s.cfg.TickTime) * time.Millisecond / 2)
	defer tick.Stop()
	var containerC <-chan time.Time
	if s.cfg.ContainerCheckInterval > 0 {
		ct := s.clk.NewTicker(s.cfg.ContainerCheckInterval)
		defer ct.Stop()
		containerC = ct.C()
	}
	var electionIn <-chan ElectionMessage
	if s.ens.transport != nil {
		electionIn = s.ens.transport.Recv()
	}
	for {
		if err := s.stepDown; err != nil {
			s.stepDown = nil
			s.startLooking(err.Error())
		}
		select {
		case ev := <-s.events:
			s.handle(ev)
			// Take what else is queued with cheap non-blocking receives rather than a full
			// select per request; bounded, so the other cases still get their turn.
		drain:
			for i := 0; i < 64 && s.stepDown == nil; i++ {
				select {
				case ev := <-s.events:
					s.handle(ev)
				default:
					break drain
				}
			}
		case <-s.durableSignal:
			s.applyDurable()
		case <-s.doneSignal:
			s.runDone()
		case <-tick.C():
			// The clock's time now, not the tick's: a tick read late must not expire
			// sessions by a stale time.
			s.onTick(s.clk.Now())
		case <-containerC:
			s.onContainerCheck(s.clk.Now())
		case m, ok := <-electionIn:
			if !ok {
				electionIn = nil
				continue
			}
			s.onElectionMessage(m)
		case <-s.electionTimerC():
			s.onElectionTimer()
		case <-s.ens.peerStates.signal:
			s.onPeerStates()
		case <-s.stopping:
			s.shutdownCore()
			return
		}
	}
}

func (s *Server) handle(ev event) {
	switch ev.kind {
	case evConnect:
		s.onConnect(ev.c, ev.connect)
	case evRequest:
		s.onRequest(ev.c, ev.req)
	case evClosed:
		s.onClosed(ev.c)
	case evQuery:
		ev.query()
	case evElection:
		s.onElectionMessage(ev.emsg)
	case evQuorumAccepted:
		s.role.quorumAccepted(ev.nconn, ev.listener)
	case evQuorumDialed:
		s.role.quorumDialed(ev.nconn, ev.leaderSid, ev.err)
	case evQuorumPacket:
		s.role.quorumPacket(ev.qconn, ev.qpacket, ev.snap)
	case evQuorumClosed:
		s.role.quorumClosed(ev.qconn)
	}
}

func (s *Server) nowMs() int64 { return s.clk.Now().UnixMilli() }

// serving reports whether clients may be served: always when standalone, otherwise once
// this server is synced with an established leader.
func (s *Server) serving() bool { return s.role.serving() }

func (s *Server) onConnect(c *conn, req *jute.ConnectRequest) {
	s.conns[c] = struct{}{}
	c.connected = s.clk.Now()
	s.counters.add(cntConnectionRequest, 1)
	if req.SessionID != 0 {
		s.counters.add(cntConnectionRevalidate, 1)
	}
	if !s.serving() || s.role.refusesClients() {
		c.close()
		c.established <- false
		return
	}
	if !req.ReadOnly && s.isReadOnly() {
		// ZooKeeper's CloseRequestException: no answer, the client tries another server.
		// Clients older than 3.4, which send no readOnly flag, are refused the same way.
		s.log.Info("refusing session request for not-read-only client", "remote", c.remote)
		c.close()
		c.established <- false
		return
	}
	if req.LastZxidSeen > s.tree.LastZxid() {
		// The client has seen a newer state than ours: it must find another server.
		s.log.Info("refusing client ahead of this server", "remote", c.remote,
			"clientZxid", hex(req.LastZxidSeen), "serverZxid", hex(s.tree.LastZxid()))
		c.close()
		c.established <- false
		return
	}
	timeout := session.Negotiate(req.TimeOut, int32(s.cfg.MinSessionTimeout), int32(s.cfg.MaxSessionTimeout))
	req.TimeOut = timeout
	c.authIDs = append([]jute.ID{{Scheme: "ip", ID: c.ip}}, c.certIDs...)
	if req.SessionID == 0 {
		id := s.ids.Next()
		sess := &clientSession{id: id, timeout: timeout, conn: c, connReq: req}
		s.sessions[id] = sess
		c.sess = sess
		s.role.createSession(sess)
		return
	}
	secrets := s.secrets()
	if secrets != nil && !secrets.Check(req.SessionID, req.Passwd) {
		// With a session secret, a wrong password is refused before the session's current
		// connection is touched: a client that read the session id from an ephemeral's
		// Stat can neither take the session over nor keep knocking its owner off.
		s.wrongPassword(c, req)
		return
	}
	// Like ZooKeeper, a reconnect closes the session's current connection on this server
	// before the password is checked (when no secret checked it above).
	if sess := s.sessions[req.SessionID]; sess != nil && sess.conn != nil && sess.conn != c {
		old := sess.conn
		s.detach(old)
		old.close()
	}
	if secrets == nil && !secrets.Check(req.SessionID, req.Passwd) { // nil: ZooKeeper's derivation
		s.wrongPassword(c, req)
		return
	}
	s.role.reconnect(c, req)
}

// createSessionLocal prepares and proposes a new session's createSession txn here
// (standalone, or the leader).
func (s *Server) createSessionLocal(sess *clientSession) {
	zxid, ok := s.role.nextZxid()
	if !ok {
		return
	}
	txn := s.prep.CreateSession(sess.id, sess.timeout, zxid, s.nowMs())
	s.role.propose(&pendingTxn{kind: pkCreateSession, txn: txn, sess: sess})
}

// reconnectLocal checks a reconnecting session against this server's own session table
// (standalone, or the leader, which owns sessions) and attaches it or refuses it.
func (s *Server) reconnectLocal(c *conn, req *jute.ConnectRequest) bool {
	sess := s.sessions[req.SessionID]
	if sess == nil || !sess.valid || sess.closing {
		s.refuseSession(c, req)
		return false
	}
	s.tracker.Add(sess.id, req.TimeOut, s.sessionMs(s.nowMs()))
	s.attach(c, sess, req)
	return true
}

// wrongPassword refuses a reconnect whose password is not the session's, as ZooKeeper does
// (reopenSession): the answer of an expired session, and a warning.
func (s *Server) wrongPassword(c *conn, req *jute.ConnectRequest) {
	s.log.Warn("incorrect password for session", "session", hex(req.SessionID), "remote", c.remote)
	s.refuseSession(c, req)
}

// refuseSession answers a reconnect to a session that is gone: a zero session id tells the
// client its session expired.
func (s *Server) refuseSession(c *conn, req *jute.ConnectRequest) {
	s.log.Info("session expired or invalid on reconnect", "session", hex(req.SessionID), "remote", c.remote)
	resp := &jute.ConnectResponse{ProtocolVersion: c.protocolVersion(), Passwd: make([]byte, 16), ReadOnly: s.isReadOnly(), HasReadOnly: req.HasReadOnly}
	c.sendAndClose(&outMsg{raw: jute.Marshal(resp)})
	c.established <- false
}

// attach moves a live session onto a new connection.
func (s *Server) attach(c *conn, sess *clientSession, req *jute.ConnectRequest) {
	if old := sess.conn; old != nil && old != c {
		s.detach(old)
		old.close()
	}
	sess.conn = c
	sess.timeout = req.TimeOut
	c.sess = sess
	// The first secret's password, which the client keeps: after a rotation, clients move
	// to the new secret as they reconnect.
	pw := s.secrets().Password(sess.id)
	s.log.Info("session reconnected", "session", hex(sess.id), "remote", c.remote, "timeout", req.TimeOut)
	s.connectReply(c, req, &jute.ConnectResponse{
		TimeOut: req.TimeOut, SessionID: sess.id, Passwd: pw[:], ReadOnly: s.isReadOnly(), HasReadOnly: req.HasReadOnly,
	})
	c.established <- true
}

// detach forgets a connection's watches and its tie to its session.
func (s *Server) detach(c *conn) {
	if c.gone {
		return
	}
	c.gone = true
	delete(s.conns, c)
	if c.hasWatch {
		s.watches.RemoveWatcher(c.watcher)
		delete(s.watchConns, c.watcher)
	}
	if c.sess != nil && c.sess.conn == c {
		c.sess.conn = nil
	}
}

func (s *Server) onClosed(c *conn) {
	if !c.gone {
		s.detach(c)
	}
	c.closeUnlessFlushing()
}

func (s *Server) onRequest(c *conn, r *request) {
	sess := c.sess
	if c.gone || sess == nil || sess.conn != c || !s.role.serving() || s.role.refusesClients() {
		s.release()
		return
	}
	s.role.touch(sess)
	c.lastOp, c.lastCxid = r.hdr.Type, r.hdr.Xid
	if !r.known || !s.opEnabled(r.hdr.Type) {
		s.log.Info("unknown opcode: closing connection", "session", hex(sess.id), "op", int32(r.hdr.Type))
		c.sendAndClose(&outMsg{hdr: jute.ReplyHeader{Xid: r.hdr.Xid, Zxid: -1, Err: jute.ErrUnimplemented}})
		s.release()
		return
	}
	switch r.hdr.Type {
	case jute.OpAuth:
		s.doAuth(c, r)
		s.release()
		return
	case jute.OpSASL:
		if b, ok := r.body.(*jute.SASLToken); r.bodyErr != nil || !ok || b.Token == nil {
			// ZooKeeper fails reading it (a null token is a NullPointerException in
			// processSasl) and closes without a reply.
			c.sendAndClose(nil)
			s.release()
			return
		}
		if r.sasl != nil {
			s.doSASL(c, r)
			s.release()
			return
		}
		// SASL is not configured. ZooKeeper answers an empty challenge and keeps the
		// connection, which a SASL client retries forever (row zkd-sasl-unconfigured);
		// zkd ends it as ZooKeeper ends a failed SASL exchange: AUTHFAILED, then close.
		s.log.Warn("SASL authentication requested but SASL is not configured: closing connection",
			"session", hex(sess.id), "remote", c.remote)
		c.sendAndClose(&outMsg{hdr: jute.ReplyHeader{Xid: r.hdr.Xid, Zxid: 0, Err: jute.ErrAuthFailed}, body: &jute.SASLToken{}})
		s.release()
		return
	}
	if len(s.cfg.EnforceAuthSchemes) > 0 && !authenticatedWith(c.authIDs, s.cfg.EnforceAuthSchemes) {
		// AuthenticationHelper.enforceAuthentication: pings and closeSession included.
		s.log.Error("client has not authenticated with a required scheme: closing connection",
			"session", hex(sess.id), "remote", c.remote, "required", s.cfg.EnforceAuthSchemes)
		c.sendAndClose(&outMsg{hdr: jute.ReplyHeader{Xid: r.hdr.Xid, Zxid: 0, Err: jute.ErrSessionClosedRequireSASL}})
		s.release()
		return
	}
	if s.role.refuse(c, r) {
		s.release()
		return
	}
	q := &queued{c: c, req: r}
	switch {
	case sess.closing:
		// Answered in order, behind what the session sent before.
		q.expired = true
	case r.hdr.Type == jute.OpReconfig && r.bodyErr != nil:
		// ZooKeeper reads a reconfig's body before it takes a zxid: MARSHALLINGERROR with
		// the current one and no txn (a read's answer, in order). Other writes whose body
		// does not decode take a zxid and log an error txn (row ZOOKEEPER-4575).
	case r.hdr.Type == jute.OpCloseSession && sess.local:
		// No txn: answered at its turn like a read (closeLocal, localsess.go).
	case prep.IsWrite(r.hdr.Type):
		q.write = true
	case r.hdr.Type == jute.OpSync && s.role.syncIsWrite() && r.bodyErr == nil:
		q.write, q.sync = true, true
	}
	if q.write || len(sess.queue) > 0 {
		s.enqueue(sess, q)
		return
	}
	if q.expired {
		s.reply(c, r.hdr.Xid, jute.ErrSessionExpired, nil)
	} else {
		s.doRead(c, r)
	}
	s.release()
}

// submitWrite sends a write (or a quorum sync) into the pipeline: prepared here on a
// standalone server or a leader, forwarded to the leader on a learner.
func (s *Server) submitWrite(q *queued) {
	if q.req.hdr.Type == jute.OpCloseSession {
		q.c.sess.closing = true
	}
	s.role.submit(q)
}

// prepareLocal prepares a client write into a txn and proposes it (standalone, or the
// leader). moved: the session belongs to another server's connection now, and the write
// fails with SESSIONMOVED.
func (s *Server) prepareLocal(q *queued, moved bool) {
	c, r := q.c, q.req
	sess := c.sess
	zxid, ok := s.role.nextZxid()
	if !ok {
		return
	}
	var txn *jute.LoggedTxn
	switch {
	case moved:
		txn = sessionErrorTxn(sess.id, r.hdr.Xid, jute.ErrSessionMoved, zxid, s.nowMs())
	case r.hdr.Type == jute.OpCloseSession:
		s.tracker.SetClosing(sess.id)
		txn = s.prep.CloseSession(sess.id, r.hdr.Xid, zxid, s.nowMs())
	default:
		q.pr = prep.Request{SessionID: sess.id, Cxid: r.hdr.Xid, Type: r.hdr.Type, Body: r.body, AuthIDs: c.authIDs, EphemeralErr: q.ephemeralErr}
		txn = s.prep.Prepare(&q.pr, zxid, s.nowMs())
	}
	q.pt = pendingTxn{kind: pkClient, txn: txn, q: q, sess: sess}
	p := &q.pt
	q.txn = p
	s.role.propose(p)
}

// observeWrites records the creates, deletes and setDatas a txn applied in
// write_per_namespace, as ZooKeeper's DataTree does for each: a txn's events name exactly
// those nodes (a closed session's ephemerals included), and the tree now holds the data
// written.
func (s *Server) observeWrites(events []datatree.Event) {
	if s.cfg.Metrics == nil {
		return
	}
	for _, ev := range events {
		switch ev.Type {
		case jute.EventNodeCreated, jute.EventNodeDataChanged:
			size := 0
			if n := s.tree.Get(ev.Path); n != nil {
				size = len(n.Data)
			}
			s.cfg.Metrics.NamespaceWrite(ev.Path, size)
		case jute.EventNodeDeleted:
			s.cfg.Metrics.NamespaceDelete(ev.Path)
		}
	}
}

// applyDurable reacts to the log becoming durable.
func (s *Server) applyDurable() { s.role.durable(s.durable.Load()) }

func (s *Server) applyTxn(p *pendingTxn) {
	txn := p.txn
	res := s.tree.ApplyTo(&txn.Header, txn.Body, s.applyEvents)
	s.checkDigest(txn)
	// The events are done with before the next txn applies (notify and observeWrites use
	// them now): the slice is kept for it, emptied so that it holds no paths meanwhile.
	defer func() {
		clear(res.Events)
		if cap(res.Events) <= 1024 { // a large multi's or closed session's is not kept
			s.applyEvents = res.Events[:0]
		}
	}()
	if p.data != nil {
		s.history.add(txn.Header.Zxid, p.data)
	}
	s.prep.Applied(txn.Header.Zxid)
	s.txnsSinceSnap++
	for _, ev := range res.Events {
		s.notify(ev, txn.Header.Zxid)
	}
	s.recordWatchHistory(txn.Header.Zxid, res.Events)
	s.observeWrites(res.Events)
	if txn.Header.Type == jute.OpCloseSession {
		s.auditEphemerals(txn.Header.ClientID, res.Events)
	}
	defer s.maybeSnapshot()
	if txn.Header.Type == jute.OpCreateSession {
		s.sessionCreated(txn)
		return
	}
	q := p.q
	if q == nil && p.kind == pkRemote {
		// A txn a leader committed: it answers one of our clients if its session is ours
		// and waits on exactly this request.
		if sess := s.sessions[txn.Header.ClientID]; sess != nil && len(sess.queue) > 0 {
			head := sess.queue[0]
			if head.write && !head.sync && head.req.hdr.Xid == txn.Header.Cxid {
				q = head
			}
		}
	}
	if txn.Header.Type == jute.OpCloseSession {
		var by *conn
		if q != nil && !q.done {
			by = q.c
		}
		s.sessionClosed(txn.Header.ClientID, p.kind == pkExpire, by)
	}
	if q == nil || q.done {
		return // not ours, or dropped (its connection is gone)
	}
	sess := q.c.sess
	if sess == nil || len(sess.queue) == 0 || sess.queue[0] != q {
		s.outOfOrder(sess, q, hex(txn.Header.Zxid))
		return
	}
	s.replyWrite(q, txn, &res)
	s.popHead(sess, q)
}

func (s *Server) sessionCreated(txn *jute.LoggedTxn) {
	id := txn.Header.ClientID
	timeout := txn.Body.(*jute.CreateSessionTxn).TimeOut
	sess := s.sessions[id]
	if sess == nil {
		// A session created through another server.
		sess = &clientSession{id: id, timeout: timeout}
		s.sessions[id] = sess
	}
	sess.valid = true
	s.tracker.Add(id, timeout, s.sessionMs(s.nowMs()))
	s.ids.Observe(id)
	req := sess.connReq
	sess.connReq = nil
	c := sess.conn
	if req == nil || c == nil || c.gone {
		return
	}
	pw := s.secrets().Password(id)
	s.log.Info("session established", "session", hex(id), "remote", c.remote, "timeout", sess.timeout)
	s.connectReply(c, req, &jute.ConnectResponse{
		TimeOut: sess.timeout, SessionID: id, Passwd: pw[:], HasReadOnly: req.HasReadOnly,
	})
	c.established <- true
}

// sessionClosed forgets a session whose closeSession txn applied. When a client asked for
// the close on connection by, its reply (queued next) closes that connection; any other
// connection of the session (expiry, or a reconnect while the close was on its way) is
// closed now.
func (s *Server) sessionClosed(id int64, expired bool, by *conn) {
	s.tracker.Remove(id)
	s.role.sessionClosed(id)
	sess := s.sessions[id]
	delete(s.sessions, id)
	if sess == nil {
		return
	}
	if by == nil {
		// Requests still waiting (on a learner, behind a close decided elsewhere) will
		// never be answered: the connection is closed below.
		s.dropQueue(sess)
	}
	if expired {
		s.log.Info("session expired", "session", hex(id))
	} else {
		s.log.Info("session closed", "session", hex(id))
	}
	c := sess.conn
	if c == nil || c == by {
		return
	}
	s.detach(c)
	c.sendAndClose(nil)
}

// notify sends a watch event to every connection whose watches it fires. It runs before
// the reply of the write that caused it is queued, so clients see the event first.
//
// As ZooKeeper 3.8.4+/3.9.2+ (CVE-2024-23944, ServerCnxn.process), a connection whose
// credentials lack READ on the event's node (ev.ACL: the parent's for NodeChildrenChanged)
// does not get the event, whatever mode of watch fired; its one-shot watches are consumed
// all the same. The check is the one reads make (super and skipACL pass).
//
// The header carries zxid, the txn's that fired the watch, as ZooKeeper 3.9 sends it
// (ZOOKEEPER-4655; 3.8 sends -1).
func (s *Server) notify(ev datatree.Event, zxid int64) {
	for _, f := range s.watches.Trigger(ev.Path, ev.Type) {
		c := s.watchConns[f.Watcher]
		if c == nil {
			continue
		}
		if !s.cfg.SkipACL && !s.cfg.AuthProviders.Check(ev.ACL, jute.PermRead, c.authIDs) {
			s.log.Debug("watch event not delivered: no READ on the node", "remote", c.remote, "type", ev.Type, "path", ev.Path)
			continue
		}
		c.send(outMsg{
			hdr:  jute.ReplyHeader{Xid: jute.XidNotification, Zxid: zxid},
			body: &jute.WatcherEvent{Type: f.Type, State: jute.StateSyncConnected, Path: f.Path},
		})
	}
}

// onTick drives the role's clocks (a leader's or standalone server's expires sessions).
func (s *Server) onTick(now time.Time) {
	s.ticks++
	if s.grace != nil {
		s.grace.Observe(now.UnixMilli())
	}
	s.role.tick(now)
	if len(s.listViews) > 0 {
		s.expireListViews(now)
	}
}

// expireSessions closes the sessions whose timeout passed, on the server that owns them.
// A session hold reports true for is put back and asked about again at the next tick
// (session-grace's rule for a silent learner's sessions).
func (s *Server) expireSessions(now time.Time, hold func(id, sessMs int64) bool) {
	ms := now.UnixMilli()
	at := s.sessionMs(ms)
	for _, id := range s.tracker.Expired(at) {
		if !s.role.ownsSessions() {
			return // stepped down while expiring
		}
		sess := s.sessions[id]
		if sess == nil || sess.closing {
			continue
		}
		if hold != nil && hold(id, at) {
			s.tracker.Requeue(id, at)
			continue
		}
		zxid, ok := s.role.nextZxid()
		if !ok {
			return
		}
		sess.closing = true
		s.counters.add(cntStaleSessionsExpired, 1)
		txn := s.prep.CloseSession(id, 0, zxid, ms)
		s.role.propose(&pendingTxn{kind: pkExpire, txn: txn, sess: sess})
	}
}

// onContainerCheck removes expired containers and TTL nodes, on the server that owns
// sessions. It runs on its own timer at exactly the check interval, as ZooKeeper's
// ContainerManager does (inside the half-tick ticker it would miss every other interval).
func (s *Server) onContainerCheck(now time.Time) {
	if !s.role.ownsSessions() {
		return
	}
	ms := now.UnixMilli()
	for _, path := range s.tree.ExpiryCandidates(ms, 10000) {
		if !s.role.ownsSessions() {
			return
		}
		// Take a zxid only when there is something to delete: zxids have no gaps.
		if !s.prep.ContainerDeletable(path) {
			continue
		}
		zxid, ok := s.role.nextZxid()
		if !ok {
			return
		}
		if txn := s.prep.DeleteContainer(path, zxid, ms); txn != nil {
			s.role.propose(&pendingTxn{kind: pkInternal, txn: txn})
		}
	}
}

// authenticatedWith reports whether ids hold an id of one of schemes.
func authenticatedWith(ids []jute.ID, schemes []string) bool {
	for _, id := range ids {
		if slices.Contains(schemes, id.Scheme) {
			return true
		}
	}
	return false
}
