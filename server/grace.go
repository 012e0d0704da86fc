package server

import "github.com/zkd-io/zkd/internal/session"

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
