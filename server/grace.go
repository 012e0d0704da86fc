package server

import (
	"github.com/zkd-io/zkd/internal/session"
	"github.com/zkd-io/zkd/internal/zab"
)

// newGrace is the session clock of the session-grace extension: the core ticks every half
// tickTime, and a gap beyond one more tickTime (1.5 ticks) is a stall whose time is not
// counted against sessions. Ordinary scheduling jitter on a loaded machine stays below it.
func newGrace(tickMs int) *session.Grace {
	return session.NewGrace(int64(tickMs)/2, int64(tickMs))
}

// sessionMs is the time the global session tracker runs on at wall time wallMs: the wall
// clock, or with session-grace the wall clock minus the time the core could not serve.
// Every call into s.tracker must use it, so deadlines and expiry share one clock. Local
// sessions keep the wall clock (their tracker is the member's own).
func (s *Server) sessionMs(wallMs int64) int64 {
	if s.grace == nil {
		return wallMs
	}
	return s.grace.Now(wallMs)
}

// stopServing records that this ensemble member stopped serving (it went looking), unless it
// had already: the span until it serves again is time the ensemble could not serve, as far
// as this member knows, which session-grace does not count against sessions.
func (s *Server) stopServing() {
	if s.unserved {
		return
	}
	now := s.nowMs()
	s.unserved, s.unservedAt = true, now
	if s.grace != nil {
		s.grace.SetServing(false, now)
	}
}

// startServing records that this member serves again (a quorum follows it, or it synced
// with its leader) and returns how long it did not.
func (s *Server) startServing() (unservedMs int64) {
	if !s.unserved {
		return 0
	}
	now := s.nowMs()
	s.unserved = false
	if s.grace != nil {
		s.grace.SetServing(true, now)
	}
	return max(now-s.unservedAt, 0)
}

// rearmSessions is a new leader's session table, built when a quorum has acked NEWLEADER:
// as ZooKeeper's leader creates its session tracker in startZkServer only then, every
// session gets its full timeout from now, so no election or sync, however long, expires a
// session before its client could reach a serving member. With session-grace the time this
// member could not serve (unservedMs) is added too, up to the session's own timeout:
// clients back off while nobody answers (kazoo and Curator exponentially), and all of them
// reconnect at once when service resumes.
func (s *Server) rearmSessions(unservedMs int64) {
	now := s.sessionMs(s.nowMs())
	for id, sess := range s.sessions {
		if !sess.valid || sess.closing {
			continue
		}
		extra := int64(0)
		if s.grace != nil {
			extra = min(unservedMs, int64(sess.timeout))
		}
		s.tracker.Add(id, sess.timeout, now+extra)
	}
}

// newHold is the leader's rule for its learners' sessions under session-grace (nil when
// off): they do not expire while their learner is silent (session.Hold).
func (s *Server) newHold() *session.Hold {
	if s.grace == nil {
		return nil
	}
	return session.NewHold(int64(s.cfg.TickTime))
}

// holds reports whether the leader keeps session id, due now, for its learner (see
// session.Hold); the leader's own clients' sessions are never held.
func (r *leaderRole) holds(id, nowMs int64) bool {
	sid, ok := r.owners[id]
	if !ok || sid == r.s.cfg.ServerID {
		return false
	}
	return r.hold.Holds(id, sid, nowMs)
}

// learnerHeard feeds a learner's packets to the hold rule: the first one makes the
// learner known (its sessions are held from then on when it falls silent), ping replies
// (which carry its sessions' touches) are what releases them.
func (r *leaderRole) learnerHeard(q *quorumConn, ping bool) {
	sid, ok := r.holdSid[q.id]
	if !ok {
		ls, known := r.zl.Learner(q.id)
		if !known || ls.Sid == 0 {
			return
		}
		sid = ls.Sid
		r.holdSid[q.id] = sid
		r.hold.Joined(sid, r.s.sessionMs(r.s.nowMs()))
	}
	if ping {
		r.hold.Pinged(sid, r.s.sessionMs(r.s.nowMs()))
	}
}

// learnerGone re-arms, under session-grace, the sessions a learner owned when its
// connection ends (it closed, or the leader dropped it after syncLimit): until then the
// leader held them, the learner may have served their clients all along, and those
// clients now reconnect elsewhere; they get their full timeout from now, as from a new
// leader. A dead learner's sessions thus live at most syncLimit ticks longer.
func (r *leaderRole) learnerGone(conn zab.ConnID) {
	sid, ok := r.holdSid[conn]
	if !ok {
		return
	}
	delete(r.holdSid, conn)
	for _, other := range r.holdSid {
		if other == sid {
			return // it has another connection (a reconnect raced the close)
		}
	}
	r.hold.Gone(sid)
	s := r.s
	now := s.sessionMs(s.nowMs())
	n := 0
	for id, owner := range r.owners {
		sess := s.sessions[id]
		if owner != sid || sess == nil || !sess.valid || sess.closing || sess.local {
			continue
		}
		r.hold.Touched(id)
		s.tracker.Add(id, sess.timeout, now)
		n++
	}
	if n > 0 {
		s.log.Info("session-grace: a learner left; its sessions get their full timeout", "sid", sid, "sessions", n)
	}
}
