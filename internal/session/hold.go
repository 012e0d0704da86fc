package session

// Hold is the leader's rule, under zkd's session-grace extension, for sessions whose client
// connection is on a learner: such a session is refreshed only by the touches the learner
// reports in its ping replies, so while the learner is silent (stalled, partitioned, or
// dead and not yet dropped) the leader cannot tell a silent client from a silent server.
// Hold keeps such a session from expiring until its learner has answered pings for a full
// tick after the session came due without reporting it; a learner that is gone (its
// connection closed or dropped after syncLimit) holds nothing, and the caller re-arms the
// sessions it owned (Gone).
//
// Times are milliseconds of the session clock (the one the Tracker runs on).
type Hold struct {
	tick   int64
	pinged map[int64]replies // learner sid -> its ping replies
	dueAt  map[int64]int64   // session -> when it first came due while held
}

// replies is a learner's latest run of ping replies without a silence longer than a tick.
type replies struct{ since, last int64 }

// NewHold returns a Hold for a leader whose learners answer pings every half tickMs.
func NewHold(tickMs int64) *Hold {
	return &Hold{tick: max(tickMs, 1), pinged: map[int64]replies{}, dueAt: map[int64]int64{}}
}

// Joined records that learner sid connected at nowMs: from then on its sessions are held
// while it is silent, although it has not answered a ping yet.
func (h *Hold) Joined(sid, nowMs int64) {
	if _, ok := h.pinged[sid]; !ok {
		h.pinged[sid] = replies{since: nowMs, last: nowMs}
	}
}

// Pinged records a ping reply from learner sid at nowMs.
func (h *Hold) Pinged(sid, nowMs int64) {
	r, ok := h.pinged[sid]
	switch {
	case !ok || nowMs-r.last > h.tick:
		r = replies{since: nowMs, last: nowMs} // back from a silence: a new run
	case nowMs > r.last:
		r.last = nowMs
	}
	h.pinged[sid] = r
}

// Gone forgets learner sid: its sessions are held no more.
func (h *Hold) Gone(sid int64) { delete(h.pinged, sid) }

// Touched forgets that session id came due: it was refreshed, or closed.
func (h *Hold) Touched(id int64) {
	if len(h.dueAt) > 0 {
		delete(h.dueAt, id)
	}
}

// Holds reports whether session id, due at nowMs and owned by learner sid, must wait: the
// learner is connected and has not answered pings without a silence for a full tick since
// the session came due. Once it has, the touches its replies carried (the client pings it
// read after a stall of its own included) have been applied, so a session still due is one
// whose client did not heartbeat through it.
func (h *Hold) Holds(id, sid, nowMs int64) bool {
	r, ok := h.pinged[sid]
	if !ok {
		return false
	}
	due, held := h.dueAt[id]
	if !held {
		due = nowMs
	}
	if r.last >= max(due, r.since)+h.tick {
		delete(h.dueAt, id)
		return false
	}
	h.dueAt[id] = due
	return true
}

// Held is how many sessions are waiting on their learner, for tests and metrics.
func (h *Hold) Held() int { return len(h.dueAt) }
