package bench

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkd-io/zkd/internal/bench/benchstat"
	"github.com/zkd-io/zkd/internal/storage"
)

// snapWatch tells the requests that were in flight while the server wrote a snapshot from
// the rest (issue 28: p99.9 and max latency with and without a snapshot running), by
// watching the server's data directory. zkd writes a snapshot under a temporary name
// (tmp.snapshot.<zxid>) and renames it when it is complete and synced; ZooKeeper 3.8 writes
// its periodic snapshots straight to snapshot.<zxid>, unsynced (only a snapshot it syncs
// goes through AtomicFileOutputStream's snapshot.<zxid>.tmp). So a snapshot is running while
// a temporary one exists or while the newest snapshot file grows (a new one counts as
// growing). It sees the server from outside, as a client would, for both servers alike.
type snapWatch struct {
	dir      string
	interval time.Duration
	b        *bench

	running  atomic.Bool
	lastSeen atomic.Int64 // Unix ns of the last poll that saw a snapshot running

	newest     string // the newest snapshot file at the last poll, and its size
	newestSize int64
	first      bool            // no poll yet
	temps      map[string]bool // the temporary files of the last poll
	lastPoll   time.Time

	mu      sync.Mutex
	seen    map[string]bool // snapshots seen running in the measured window
	busy    time.Duration   // measured time with a snapshot running
	readOK  bool            // a poll has read the directory
	lastErr error
}

// newSnapWatch watches dir for the run of b.
func newSnapWatch(dir string, b *bench) *snapWatch {
	return &snapWatch{dir: dir, interval: 10 * time.Millisecond, b: b, first: true,
		temps: map[string]bool{}, seen: map[string]bool{}}
}

// start polls the directory until stop is called.
func (s *snapWatch) start() (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(s.interval)
		defer t.Stop()
		for {
			s.poll()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

// poll reads the directory once.
func (s *snapWatch) poll() {
	entries, err := os.ReadDir(s.dir)
	now := time.Now()
	var names []string
	newest, newestZxid := "", int64(0)
	for _, e := range entries {
		name := e.Name()
		if storage.SnapInProgress(name) {
			names = append(names, name)
		} else if z, _, ok := storage.ParseSnapName(name); ok && (newest == "" || z > newestZxid) {
			newest, newestZxid = name, z
		}
	}
	if newest != "" {
		if info, err := os.Stat(filepath.Join(s.dir, newest)); err == nil {
			changed := newest != s.newest || info.Size() != s.newestSize
			// Not a snapshot being written: one there before the first poll, or zkd's
			// temporary file just renamed.
			if changed && !s.first && !s.temps["tmp."+newest] {
				names = append(names, newest)
			}
			s.newest, s.newestSize = newest, info.Size()
		}
	}
	s.first = false
	clear(s.temps)
	for _, n := range names {
		s.temps[n] = true
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
	} else {
		s.readOK = true
	}
	prev := s.lastPoll
	s.lastPoll = now
	if s.b.measuring() {
		if running && !prev.IsZero() {
			// From the poll before: a snapshot seen now ran for about that long.
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
	if !s.readOK && s.lastErr != nil {
		res.Note = strings.TrimSpace(res.Note + " snapshot directory: " + s.lastErr.Error())
	}
}
