package server

import (
	"net"
	"time"

	"github.com/zkd-io/zkd/internal/prep"
	"github.com/zkd-io/zkd/internal/session"
	"github.com/zkd-io/zkd/jute"
)

// readOnlyRole is an ensemble member that has looked for a leader for a while without
// finding a quorum (Config.ReadOnlyMode, ZooKeeper's readonlymode.enabled): while the
// election goes on it serves reads from its own tree to clients that asked for a read-only
// session, as ZooKeeper's ReadOnlyZooKeeperServer does. It writes nothing: no txn, no zxid,
// no session in the log. The sessions it makes are local to it and end with the role.
type readOnlyRole struct {
	roleDefaults
	s *Server
	// tracker times out the local sessions only. The global sessions in the tree are the
	// quorum's to expire once there is one again, as in ZooKeeper (LearnerSessionTracker).
	tracker *session.Tracker
}

// readOnlyStartDelay is how long a member looks for a leader before it serves read-only:
// ZooKeeper's grace period, a tick but at least 2 s.
func readOnlyStartDelay(tickMs int) time.Duration {
	return max(2*time.Second, time.Duration(tickMs)*time.Millisecond)
}

// armReadOnly starts the grace period of the election round gen: if it is still looking
// when the period ends, the member turns read-only (QuorumPeer.run's LOOKING case).
func (s *Server) armReadOnly(gen int) {
	t := s.clk.NewTimer(readOnlyStartDelay(s.cfg.TickTime))
	go func() {
		select {
		case <-t.C():
		case <-s.stopping:
			t.Stop()
			return
		}
		s.submit(event{kind: evQuery, query: func() {
			if s.role.view().state == "looking" && s.ens.gen == gen {
				s.role = &readOnlyRole{s: s, tracker: session.NewTracker(int64(s.cfg.TickTime))}
				s.log.Info("no quorum: serving read-only clients", "after", readOnlyStartDelay(s.cfg.TickTime))
			}
		}})
	}()
}

// isReadOnly reports whether the member serves read-only now.
func (s *Server) isReadOnly() bool { return s.role.mode() == readOnlyState }

const readOnlyState = "read-only"

func (r *readOnlyRole) mode() string   { return readOnlyState }
func (r *readOnlyRole) view() roleView { return noLeaderView(readOnlyState) }
func (r *readOnlyRole) serving() bool  { return true }

// ownsSessions is false: expiring global sessions and removing containers are writes.
func (r *readOnlyRole) ownsSessions() bool { return false }
func (r *readOnlyRole) syncIsWrite() bool  { return false }

// createSession makes a local session, answered at once: ZooKeeper's read-only server with
// localSessionsEnabled. (Without it ZooKeeper 3.5+ answers the ConnectRequest with a bare
// NOTREADONLY reply header that no client can read, so no read-only session can be made;
// zkd makes local sessions whatever that key says.)
func (r *readOnlyRole) createSession(sess *clientSession) {
	sess.local = true
	r.tracker.Add(sess.id, sess.timeout, r.s.nowMs())
	r.s.establishLocal(sess, true)
}

// reconnect takes back a local session. A global session is refused by closing the
// connection, as ZooKeeper's validateSession does ("Refusing global session reconnection in
// RO mode"): the client tries another server and keeps its session for the quorum. A
// session unknown here is answered as expired, as ZooKeeper's local session tracker does.
func (r *readOnlyRole) reconnect(c *conn, req *jute.ConnectRequest) {
	s := r.s
	sess := s.sessions[req.SessionID]
	if sess != nil && !sess.local {
		s.log.Info("refusing global session reconnection in read-only mode", "session", hex(req.SessionID), "remote", c.remote)
		c.close()
		c.established <- false
		return
	}
	if sess == nil || sess.closing {
		s.refuseSession(c, req)
		return
	}
	r.tracker.TouchTimeout(sess.id, req.TimeOut, s.nowMs())
	s.attach(c, sess, req)
}

// refuse answers what a read-only server does not do itself: writes and sync get
// NOTREADONLY, as ZooKeeper's ReadOnlyRequestProcessor answers them, and closeSession ends
// the local session. It reports whether it answered r.
func (r *readOnlyRole) refuse(c *conn, req *request) bool {
	s := r.s
	op := req.hdr.Type
	switch op {
	case jute.OpSync, jute.OpCreate, jute.OpCreate2, jute.OpCreateTTL, jute.OpCreateContainer,
		jute.OpDelete, jute.OpDeleteContainer, jute.OpSetData, jute.OpReconfig, jute.OpSetACL,
		jute.OpMulti, jute.OpCheck:
	case jute.OpCloseSession:
		sess := c.sess
		c.sendAndClose(&outMsg{hdr: jute.ReplyHeader{Xid: req.hdr.Xid, Zxid: s.tree.LastZxid()}})
		s.sessionClosed(sess.id, false, c)
		s.detach(c)
		return true
	default:
		if !prep.IsWrite(op) {
			return false
		}
		// A write ZooKeeper's list does not name would need a quorum all the same.
	}
	s.reply(c, req.hdr.Xid, jute.ErrNotReadOnly, nil)
	return true
}

func (r *readOnlyRole) submit(*queued)          {}
func (r *readOnlyRole) nextZxid() (int64, bool) { return 0, false }
func (r *readOnlyRole) propose(*pendingTxn)     {}
func (r *readOnlyRole) durable(int64)           {}

// tick expires the local sessions whose clients went quiet.
func (r *readOnlyRole) tick(now time.Time) {
	for _, id := range r.tracker.Expired(now.UnixMilli()) {
		if r.s.role != r {
			return
		}
		r.s.sessionClosed(id, true, nil)
	}
}

func (r *readOnlyRole) touch(sess *clientSession) {
	if sess.local {
		r.tracker.Touch(sess.id, r.s.nowMs())
	}
}

func (r *readOnlyRole) sessionClosed(id int64) { r.tracker.Remove(id) }

func (r *readOnlyRole) quorumAccepted(nc net.Conn, _ net.Listener)                    { nc.Close() }
func (r *readOnlyRole) quorumDialed(nc net.Conn, _ int64, _ error)                    { closeConn(nc) }
func (r *readOnlyRole) quorumPacket(q *quorumConn, _ jute.QuorumPacket, _ *snapState) { q.close() }
func (r *readOnlyRole) quorumClosed(*quorumConn)                                      {}

// stop closes every client connection, as ZooKeeper's read-only server does when it shuts
// down (clients reconnect, to the quorum's members if they can), and forgets the local
// sessions, which no other server knows.
func (r *readOnlyRole) stop() {
	s := r.s
	for c := range s.conns {
		s.detach(c)
		c.close()
	}
	for id, sess := range s.sessions {
		if sess.local {
			s.dropQueue(sess)
			delete(s.sessions, id)
		}
	}
	s.log.Info("read-only mode ends")
}
