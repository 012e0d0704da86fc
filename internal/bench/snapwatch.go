package bench

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkd-io/zkd/internal/bench/benchstat"
)

// snapWatch tells the requests that were in flight while the server wrote a snapshot from
// the rest (issue 28: p99.9 and max latency with and without a snapshot running), by
// watching the server's data directory: both servers write a snapshot under a temporary
// name and rename it when it is complete and synced (zkd: tmp.snapshot.<zxid>; ZooKeeper
// 3.8 with fsync on, AtomicFileOutputStream: snapshot.<zxid>.tmp), so a snapshot is running
// while such a file exists. It sees the server from outside, as a client would, for both
// servers alike.
type snapWatch struct {
	dir      string
	interval time.Duration
	b        *bench

	running  atomic.Bool
	lastSeen atomic.Int64 // Unix ns of the last poll that saw a snapshot running

	mu      sync.Mutex
	seen    map[string]bool // snapshots seen running in the measured window
	busy    time.Duration   // measured time with a snapshot running
	polls   int64           // polls in the measured window
	lastErr error
}

// isSnapshotTemp reports whether name is a snapshot being written, by zkd or by ZooKeeper.
func isSnapshotTemp(name string) bool {
	return strings.HasPrefix(name, "tmp.snapshot.") ||
		strings.HasPrefix(name, "snapshot.") && strings.HasSuffix(name, ".tmp")
}

// start polls the directory until stop is called.
func (s *snapWatch) start() (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(s.interval)
		defer t.Stop()
		last := time.Now()
		for {
			s.poll(last)
			select {
			case <-done:
				return
			case last = <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

// poll reads the directory once; prev is the time of the previous poll, for the measured
// time with a snapshot running.
func (s *snapWatch) poll(prev time.Time) {
	entries, err := os.ReadDir(s.dir)
	now := time.Now()
	var names []string
	for _, e := range entries {
		if isSnapshotTemp(e.Name()) {
			names = append(names, e.Name())
		}
	}
	running := len(names) > 0
	if running {
		s.lastSeen.Store(now.UnixNano())
	}
	s.running.Store(running)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.lastErr = err
	}
	if s.b.measuring() {
		s.polls++
		if running {
			s.busy += now.Sub(prev)
			for _, n := range names {
				s.seen[n] = true
			}
		}
	}
}

// during reports whether a request that took d and has just completed was in flight while
// a snapshot ran: one is running now, or was seen running after the request started.
func (s *snapWatch) during(d time.Duration) bool {
	return s.running.Load() || time.Now().Add(-d).UnixNano() <= s.lastSeen.Load()
}

// fill sets the result's snapshot-window fields from the merged recorder.
func (s *snapWatch) fill(res *Result, r *recorder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	window := func(w *benchstat.Recorder) *benchstat.Window {
		l := w.Latency()
		l.Spectrum = nil
		return &benchstat.Window{Ops: w.Ops(), Latency: l}
	}
	res.DuringSnapshot = window(r.during)
	res.OutsideSnapshot = window(r.outside)
	res.SnapshotRunningS = round3(s.busy.Seconds())
	res.SnapshotsSeen = len(s.seen)
	if s.polls == 0 && s.lastErr != nil {
		res.Note = strings.TrimSpace(res.Note + " snapshot directory: " + s.lastErr.Error())
	}
}
