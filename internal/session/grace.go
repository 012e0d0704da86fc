package session

// Grace is the clock session deadlines run on under zkd's session-grace extension: the
// caller's clock minus the time the server could not serve. A leader that stalls (a GC
// pause, a disk stall that holds its core) or has no quorum does not read the pings that
// sessions keep sending to live members, and without Grace would expire those sessions as
// soon as it runs again. Feeding a Tracker Grace's time instead of the wall clock extends
// every deadline by the time lost; a session that did not heartbeat still expires, after
// its timeout plus that time.
//
// A stall is seen as the gap between two Observe calls (the core's ticks) beyond one
// interval plus slack: the part of the gap beyond one interval is not counted. Times are
// milliseconds of the caller's monotonic clock, as everywhere in this package.
type Grace struct {
	interval int64 // the expected gap between Observe calls
	slack    int64 // a gap up to interval+slack is ordinary scheduling noise
	last     int64 // the wall time of the latest Observe; valid when started
	started  bool
	lost     int64 // ms not counted so far
	down     bool  // not serving since downAt
	downAt   int64
}

// NewGrace returns a Grace for a caller that observes every intervalMs; gaps longer than
// intervalMs+slackMs count as stalls.
func NewGrace(intervalMs, slackMs int64) *Grace {
	return &Grace{interval: max(intervalMs, 1), slack: max(slackMs, 0)}
}

// Observe records a tick at wallMs and returns the session time then. A gap since the
// previous tick beyond interval+slack adds gap-interval to the time lost.
func (g *Grace) Observe(wallMs int64) int64 {
	if g.started && !g.down {
		if gap := wallMs - g.last; gap > g.interval+g.slack {
			g.lost += gap - g.interval
		}
	}
	g.last, g.started = wallMs, true
	return g.Now(wallMs)
}

// SetServing records that the server could (true) or could not (false) serve from wallMs
// on, e.g. a leader that has lost its quorum; time not serving is not counted.
func (g *Grace) SetServing(serving bool, wallMs int64) {
	switch {
	case !serving && !g.down:
		g.down, g.downAt = true, wallMs
	case serving && g.down:
		g.down = false
		g.lost += max(wallMs-g.downAt, 0)
		g.last = wallMs // the gap while down is already counted
	}
}

// Now is the session time at wallMs: wallMs minus the time lost so far (and, while not
// serving, the time since it stopped). It never runs backwards while wallMs does not.
func (g *Grace) Now(wallMs int64) int64 {
	t := wallMs - g.lost
	if g.down {
		t -= max(wallMs-g.downAt, 0)
	}
	return t
}

// Lost is the time not counted so far, for metrics and logs.
func (g *Grace) Lost() int64 { return g.lost }
