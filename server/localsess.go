package server

import (
	"time"

	"github.com/zkd-io/zkd/internal/session"
	"github.com/zkd-io/zkd/jute"
)

// localSessions are an ensemble member's local sessions (Config.LocalSessions, ZooKeeper's
// localSessionsEnabled): a new session is made by the member the client connected to, with
// no createSession txn, and is known to that member alone. It reads, writes persistent
// nodes, watches and syncs like any session; the member expires it and closes it without a
// txn. An ephemeral create needs a session the quorum knows: with
// Config.LocalSessionsUpgrading the member first upgrades the session (a createSession txn,
// after which it is an ordinary global session), without it the create fails with
// EPHEMERALONLOCALSESSION. This is ZooKeeper's LearnerSessionTracker and
// LeaderSessionTracker with QuorumZooKeeperServer.checkUpgradeSession.
//
// A local session is gone with the role that made it: a member that loses its leader
// closes its client connections, and the clients' reconnects find no such session.
type localSessions struct {
	s         *Server
	upgrading bool
	tracker   *session.Tracker
}

// newLocalSessions returns the local session table of a new leader or learner role, or nil
// when local sessions are off.
func (s *Server) newLocalSessions() *localSessions {
	if !s.cfg.LocalSessions {
		return nil
	}
	return &localSessions{s: s, upgrading: s.cfg.LocalSessionsUpgrading, tracker: session.NewTracker(int64(s.cfg.TickTime))}
}

// create makes sess a local session and answers its ConnectRequest at once.
func (l *localSessions) create(sess *clientSession) {
	sess.local = true
	l.tracker.Add(sess.id, sess.timeout, l.s.nowMs())
	l.s.establishLocal(sess, false)
}

// establishLocal answers the ConnectRequest of a session that needs no txn: a local
// session, or a read-only server's.
func (s *Server) establishLocal(sess *clientSession, readOnly bool) {
	sess.valid = true
	req, c := sess.connReq, sess.conn
	sess.connReq = nil
	pw := s.secrets().Password(sess.id)
	s.log.Info("local session established", "session", hex(sess.id), "remote", c.remote, "timeout", sess.timeout, "readOnly", readOnly)
	s.connectReply(c, req, &jute.ConnectResponse{
		TimeOut: sess.timeout, SessionID: sess.id, Passwd: pw[:], ReadOnly: readOnly, HasReadOnly: req.HasReadOnly,
	})
	c.established <- true
}

// reconnect takes back one of this member's local sessions (LearnerZooKeeperServer's
// revalidateSession checks a local session itself); it reports false for any other
// session, which the role revalidates as a global one.
func (l *localSessions) reconnect(c *conn, req *jute.ConnectRequest) bool {
	if l == nil {
		return false
	}
	s := l.s
	sess := s.sessions[req.SessionID]
	if sess == nil || !sess.local {
		return false
	}
	if sess.closing {
		s.refuseSession(c, req)
		return true
	}
	l.tracker.TouchTimeout(sess.id, req.TimeOut, s.nowMs())
	s.attach(c, sess, req)
	return true
}

// touch records a local session's activity; it reports false for a global session.
func (l *localSessions) touch(sess *clientSession) bool {
	if l == nil || !sess.local {
		return false
	}
	l.tracker.Touch(sess.id, l.s.nowMs())
	return true
}

// expire closes the local sessions whose clients went quiet, as ZooKeeper's
// LocalSessionTracker does: no txn, the connection is closed, and a reconnect is answered
// as expired.
func (l *localSessions) expire(now time.Time) {
	if l == nil {
		return
	}
	for _, id := range l.tracker.Expired(now.UnixMilli()) {
		if sess := l.s.sessions[id]; sess != nil && sess.local {
			l.s.sessionClosed(id, true, nil)
		}
		l.tracker.Remove(id)
	}
}

func (l *localSessions) forget(id int64) {
	if l != nil {
		l.tracker.Remove(id)
	}
}

// stop forgets the local sessions: no other server knows them, and the next role starts
// with none.
func (l *localSessions) stop() {
	if l == nil {
		return
	}
	s := l.s
	for id, sess := range s.sessions {
		if sess.local {
			s.dropQueue(sess)
			delete(s.sessions, id)
		}
	}
}

// needsGlobal reports whether q must run in a global session: it comes from a local
// session and creates an ephemeral (create, create2, or a multi holding one), as
// QuorumZooKeeperServer.checkUpgradeSession decides. A body that does not decode upgrades
// nothing (ZooKeeper logs the error and goes on).
func (l *localSessions) needsGlobal(q *queued) bool {
	if l == nil || q.sync || q.c.sess == nil || !q.c.sess.local || q.req.bodyErr != nil {
		return false
	}
	return createsEphemeral(q.req.hdr.Type, q.req.body)
}

// createsEphemeral reports whether a create, create2 or multi request creates an ephemeral
// node. createTTL and createContainer never do, and neither do those ops inside a multi.
func createsEphemeral(op jute.OpCode, body jute.Record) bool {
	switch op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateIfNotExists, jute.OpCreateWithParents:
		// The keeper-ops extension's creates make ephemerals as create does.
		cr, ok := body.(*jute.CreateRequest)
		return ok && (cr.Flags == jute.FlagEphemeral || cr.Flags == jute.FlagEphemeralSequential || cr.Flags == jute.FlagEphemeralSequential64)
	case jute.OpMulti:
		m, ok := body.(*jute.MultiRequest)
		if !ok {
			return false
		}
		for _, o := range m.Ops {
			if (o.Type == jute.OpCreate || o.Type == jute.OpCreate2 || o.Type == jute.OpCreateIfNotExists) && createsEphemeral(o.Type, o.Body) {
				return true
			}
		}
	}
	return false
}

// upgrade turns a local session into a global one on its way to the quorum: the caller
// sends its createSession txn ahead of the request that needed it. From here on the leader
// owns its expiry.
func (l *localSessions) upgrade(sess *clientSession) {
	l.s.log.Info("upgrading local session", "session", hex(sess.id))
	sess.local = false
	l.tracker.Remove(sess.id)
}

// foreign reports whether id may be a local session of another member: the leader then
// takes its writes without knowing it, as ZooKeeper's LeaderSessionTracker.checkSession
// lets through a session it does not know whose id names another server.
func (l *localSessions) foreign(id int64) bool {
	return l != nil && uint64(id)>>56 != uint64(l.s.cfg.ServerID)&0xff
}

// closeLocal answers a local session's closeSession at its turn in the session's queue:
// no txn, the reply carries the last applied zxid (FinalRequestProcessor for a request
// without a txn), and the connection is closed after it.
func (s *Server) closeLocal(c *conn, r *request) {
	sess := c.sess
	c.sendAndClose(&outMsg{hdr: jute.ReplyHeader{Xid: r.hdr.Xid, Zxid: s.tree.LastZxid()}})
	s.sessionClosed(sess.id, false, c)
	s.detach(c)
}
