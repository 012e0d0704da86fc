package server

import (
	"net"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// standaloneRole is a server of its own: an ensemble of one, whose log is its quorum. A
// write is applied once its txn is durable in the log.
type standaloneRole struct {
	roleDefaults
	s *Server
}

func (r *standaloneRole) mode() string       { return "standalone" }
func (r *standaloneRole) serving() bool      { return true }
func (r *standaloneRole) ownsSessions() bool { return true }
func (r *standaloneRole) syncIsWrite() bool  { return false }
func (r *standaloneRole) view() roleView     { return noLeaderView("standalone") }

func (r *standaloneRole) createSession(sess *clientSession) { r.s.createSessionLocal(sess) }

func (r *standaloneRole) reconnect(c *conn, req *jute.ConnectRequest) {
	r.s.reconnectLocal(c, req)
}

func (r *standaloneRole) submit(q *queued) { r.s.prepareLocal(q, false) }

func (r *standaloneRole) nextZxid() (int64, bool) {
	r.s.lastProposed++
	return r.s.lastProposed, true
}

func (r *standaloneRole) propose(p *pendingTxn) {
	r.s.pending = append(r.s.pending, p)
	r.s.appendLog(p.txn)
}

// durable applies every pending txn the log now holds.
func (r *standaloneRole) durable(zxid int64) {
	s := r.s
	n := 0
	for ; n < len(s.pending) && s.pending[n].txn.Header.Zxid <= zxid; n++ {
		s.applyTxn(s.pending[n])
		s.pending[n] = nil
	}
	if n > 0 {
		s.pending = append(s.pending[:0], s.pending[n:]...)
	}
}

func (r *standaloneRole) tick(now time.Time) { r.s.expireSessions(now, nil) }
func (r *standaloneRole) touch(sess *clientSession) {
	r.s.tracker.Touch(sess.id, r.s.sessionMs(r.s.nowMs()))
}
func (r *standaloneRole) sessionClosed(int64) {}

func (r *standaloneRole) quorumAccepted(nc net.Conn, _ net.Listener)                    { nc.Close() }
func (r *standaloneRole) quorumDialed(nc net.Conn, _ int64, _ error)                    { closeConn(nc) }
func (r *standaloneRole) quorumPacket(q *quorumConn, _ jute.QuorumPacket, _ *snapState) { q.close() }
func (r *standaloneRole) quorumClosed(*quorumConn)                                      {}
func (r *standaloneRole) stop()                                                         {}
