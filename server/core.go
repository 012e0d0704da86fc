package server

import (
	"bytes"
	"time"

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
)

// event is the only way other goroutines reach the core. One channel keeps each
// connection's connect, requests and close in order.
type event struct {
	kind    eventKind
	c       *conn
	connect *jute.ConnectRequest
	req     *request
	query   func()
}

// clientSession is the core's view of a session.
type clientSession struct {
	id      int64
	timeout int32
	conn    *conn
	valid   bool // its createSession txn is applied
	closing bool
	// queue holds this session's requests that must wait for its earlier writes: FIFO
	// order per session means a read waits behind that session's pending writes.
	queue []*queued
}

// queued is a request waiting in its session's queue.
type queued struct {
	c    *conn
	req  *request
	txn  *pendingTxn // nil for reads
	done bool
}

type pendingKind int

const (
	pkClient        pendingKind = iota // a client write
	pkCreateSession                    // a new session's createSession
	pkExpire                           // a server-made closeSession on expiry
	pkInternal                         // server-made (container/TTL deletion)
)

// pendingTxn is a txn that is prepared and sent to the log but not yet applied.
type pendingTxn struct {
	kind    pendingKind
	txn     *jute.LoggedTxn
	q       *queued
	c       *conn
	sess    *clientSession
	connReq *jute.ConnectRequest
}

func (s *Server) submit(ev event) {
	select {
	case s.events <- ev:
	case <-s.stopping:
	}
}

// run is the core goroutine.
func (s *Server) run() {
	defer s.wg.Done()
	tick := time.NewTicker(time.Duration(s.cfg.TickTime) * time.Millisecond / 2)
	defer tick.Stop()
	for {
		if s.walk != nil {
			select {
			case ev := <-s.events:
				s.handle(ev)
			case <-s.durableSignal:
				s.applyDurable()
			case now := <-tick.C:
				s.onTick(now)
			case <-s.stopping:
				s.shutdownCore()
				return
			default:
				s.snapshotStep()
			}
			continue
		}
		select {
		case ev := <-s.events:
			s.handle(ev)
		case <-s.durableSignal:
			s.applyDurable()
		case now := <-tick.C:
			s.onTick(now)
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
	}
}

func (s *Server) nowMs() int64 { return s.clock().UnixMilli() }

func (s *Server) onConnect(c *conn, req *jute.ConnectRequest) {
	s.conns[c] = struct{}{}
	c.connected = s.clock()
	if req.LastZxidSeen > s.tree.LastZxid() {
		// The client has seen a newer state than ours: it must find another server.
		s.log.Info("refusing client ahead of this server", "remote", c.remote,
			"clientZxid", hex(req.LastZxidSeen), "serverZxid", hex(s.tree.LastZxid()))
		c.close()
		c.established <- false
		return
	}
	timeout := session.Negotiate(req.TimeOut, int32(s.cfg.MinSessionTimeout), int32(s.cfg.MaxSessionTimeout))
	c.authIDs = []jute.ID{{Scheme: "ip", ID: c.ip}}
	if req.SessionID == 0 {
		id := s.ids.Next()
		sess := &clientSession{id: id, timeout: timeout, conn: c}
		s.sessions[id] = sess
		c.sess = sess
		txn := s.prep.CreateSession(id, timeout, s.nextZxid(), s.nowMs())
		s.propose(&pendingTxn{kind: pkCreateSession, txn: txn, c: c, sess: sess, connReq: req})
		return
	}
	sess := s.sessions[req.SessionID]
	pw := session.Password(req.SessionID)
	if sess == nil || !sess.valid || sess.closing || !bytes.Equal(req.Passwd, pw[:]) {
		s.log.Info("session expired or invalid on reconnect", "session", hex(req.SessionID), "remote", c.remote)
		resp := &jute.ConnectResponse{Passwd: make([]byte, 16), ReadOnly: false, HasReadOnly: req.HasReadOnly}
		c.sendAndClose(&outMsg{raw: jute.Marshal(resp)})
		c.established <- false
		return
	}
	if old := sess.conn; old != nil && old != c {
		s.detach(old)
		old.close()
	}
	sess.conn = c
	sess.timeout = timeout
	c.sess = sess
	s.tracker.Add(sess.id, timeout, s.nowMs())
	s.log.Info("session reconnected", "session", hex(sess.id), "remote", c.remote, "timeout", timeout)
	c.send(outMsg{raw: jute.Marshal(&jute.ConnectResponse{
		TimeOut: timeout, SessionID: sess.id, Passwd: pw[:], HasReadOnly: req.HasReadOnly,
	})})
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
	if c.gone || sess == nil || sess.conn != c {
		s.release()
		return
	}
	s.tracker.Touch(sess.id, s.nowMs())
	c.lastOp, c.lastCxid = r.hdr.Type, r.hdr.Xid
	if !r.known {
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
		// SASL is not supported: answer as a server with no SASL provider would.
		c.sendAndClose(&outMsg{hdr: jute.ReplyHeader{Xid: r.hdr.Xid, Err: jute.ErrAuthFailed}, body: &jute.SASLToken{}})
		s.release()
		return
	}
	if sess.closing {
		c.send(outMsg{hdr: jute.ReplyHeader{Xid: r.hdr.Xid, Zxid: s.tree.LastZxid(), Err: jute.ErrSessionExpired}})
		s.release()
		return
	}
	q := &queued{c: c, req: r}
	if prep.IsWrite(r.hdr.Type) {
		q.txn = s.prepareWrite(c, r)
		q.txn.q = q
		sess.queue = append(sess.queue, q)
		return
	}
	if len(sess.queue) > 0 {
		sess.queue = append(sess.queue, q)
		return
	}
	s.doRead(c, r)
	s.release()
}

func (s *Server) prepareWrite(c *conn, r *request) *pendingTxn {
	pr := &prep.Request{SessionID: c.sess.id, Cxid: r.hdr.Xid, Type: r.hdr.Type, Body: r.body, AuthIDs: c.authIDs}
	if r.hdr.Type == jute.OpCloseSession {
		c.sess.closing = true
		s.tracker.SetClosing(c.sess.id)
		txn := s.prep.CloseSession(c.sess.id, r.hdr.Xid, s.nextZxid(), s.nowMs())
		p := &pendingTxn{kind: pkClient, txn: txn, c: c, sess: c.sess}
		s.propose(p)
		return p
	}
	txn := s.prep.Prepare(pr, s.nextZxid(), s.nowMs())
	p := &pendingTxn{kind: pkClient, txn: txn, c: c, sess: c.sess}
	s.propose(p)
	return p
}

func (s *Server) nextZxid() int64 {
	s.lastProposed++
	return s.lastProposed
}

// propose sends a prepared txn to the log; it is applied once durable.
func (s *Server) propose(p *pendingTxn) {
	s.pending = append(s.pending, p)
	s.appendLog(p.txn)
}

// applyDurable applies every pending txn the log has made durable, in zxid order.
func (s *Server) applyDurable() {
	durable := s.durable.Load()
	n := 0
	for ; n < len(s.pending) && s.pending[n].txn.Header.Zxid <= durable; n++ {
		s.applyTxn(s.pending[n])
		s.pending[n] = nil
	}
	if n > 0 {
		s.pending = append(s.pending[:0], s.pending[n:]...)
		s.maybeSnapshot()
	}
}

func (s *Server) applyTxn(p *pendingTxn) {
	txn := p.txn
	res := s.tree.Apply(&txn.Header, txn.Body)
	s.prep.Applied(txn.Header.Zxid)
	s.txnsSinceSnap++
	for _, ev := range res.Events {
		s.notify(ev.Type, ev.Path)
	}
	switch txn.Header.Type {
	case jute.OpCreateSession:
		s.sessionCreated(p)
		return
	case jute.OpCloseSession:
		s.sessionClosed(txn.Header.ClientID, p)
		if p.kind != pkClient {
			return
		}
	}
	if p.kind != pkClient {
		return
	}
	q := p.q
	sess := p.sess
	if len(sess.queue) == 0 || sess.queue[0] != q {
		// Cannot happen: a session's writes apply in the order they were queued.
		s.log.Error("session queue out of order", "session", hex(sess.id), "zxid", hex(txn.Header.Zxid))
	} else {
		sess.queue = sess.queue[1:]
	}
	s.replyWrite(q, &res)
	s.release()
	s.runQueued(sess)
}

// runQueued answers the reads at the head of a session's queue up to its next write.
func (s *Server) runQueued(sess *clientSession) {
	for len(sess.queue) > 0 && sess.queue[0].txn == nil {
		q := sess.queue[0]
		sess.queue[0] = nil
		sess.queue = sess.queue[1:]
		if !q.c.gone {
			s.doRead(q.c, q.req)
		}
		s.release()
	}
	if len(sess.queue) == 0 {
		sess.queue = nil
	}
}

func (s *Server) sessionCreated(p *pendingTxn) {
	sess := p.sess
	sess.valid = true
	s.tracker.Add(sess.id, sess.timeout, s.nowMs())
	c := p.c
	if c == nil || c.gone || sess.conn != c {
		return
	}
	pw := session.Password(sess.id)
	s.log.Info("session established", "session", hex(sess.id), "remote", c.remote, "timeout", sess.timeout)
	c.send(outMsg{raw: jute.Marshal(&jute.ConnectResponse{
		TimeOut: sess.timeout, SessionID: sess.id, Passwd: pw[:], HasReadOnly: p.connReq.HasReadOnly,
	})})
	c.established <- true
}

func (s *Server) sessionClosed(id int64, p *pendingTxn) {
	s.tracker.Remove(id)
	sess := s.sessions[id]
	delete(s.sessions, id)
	if sess == nil {
		return
	}
	if p.kind == pkExpire {
		s.log.Info("session expired", "session", hex(id))
	} else {
		s.log.Info("session closed", "session", hex(id))
	}
	c := sess.conn
	if c == nil {
		return
	}
	if p.kind == pkClient && p.c == c {
		// The reply is queued by replyWrite; the connection closes once it is written.
		return
	}
	s.detach(c)
	c.sendAndClose(nil)
}

// notify sends a watch event to every connection whose watches it fires. It runs before
// the reply of the write that caused it is queued, so clients see the event first.
func (s *Server) notify(t jute.EventType, path string) {
	for _, f := range s.watches.Trigger(path, t) {
		c := s.watchConns[f.Watcher]
		if c == nil {
			continue
		}
		c.send(outMsg{
			hdr:  jute.ReplyHeader{Xid: jute.XidNotification, Zxid: -1},
			body: &jute.WatcherEvent{Type: f.Type, State: jute.StateSyncConnected, Path: f.Path},
		})
	}
}

// onTick expires sessions and removes expired containers and TTL nodes.
func (s *Server) onTick(now time.Time) {
	ms := now.UnixMilli()
	for _, id := range s.tracker.Expired(ms) {
		sess := s.sessions[id]
		if sess == nil || sess.closing {
			continue
		}
		sess.closing = true
		txn := s.prep.CloseSession(id, 0, s.nextZxid(), ms)
		s.propose(&pendingTxn{kind: pkExpire, txn: txn, sess: sess})
	}
	if s.cfg.ContainerCheckInterval > 0 && now.Sub(s.lastContainerCheck) >= s.cfg.ContainerCheckInterval {
		s.lastContainerCheck = now
		for _, path := range s.tree.ExpiryCandidates(ms, 10000) {
			if txn := s.prep.DeleteContainer(path, s.lastProposed+1, ms); txn != nil {
				s.lastProposed++
				s.propose(&pendingTxn{kind: pkInternal, txn: txn})
			}
		}
	}
}
