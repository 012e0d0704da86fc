package zk

import (
	"log/slog"
	"sync"
	"time"
)

// dialLogEvery bounds how often one server's failed connection attempts are logged. The
// client retries fast at first (backoff from 100 ms), so logging every attempt would flood
// the application's log while a server is down; one line per server this often, with the
// count of the attempts it stands for, still shows at once that nothing answers.
const dialLogEvery = 5 * time.Second

// dialLog logs failed connection attempts at Warn (Java's client warns on each, go-zookeeper
// prints each unconditionally), the first per server at once and then at most one per
// dialLogEvery. Its zero value is ready.
type dialLog struct {
	mu      sync.Mutex
	servers map[string]*dialLogState
	now     func() time.Time // time.Now; tests replace it
}

type dialLogState struct {
	last       time.Time // when a line was last logged for this server
	suppressed int       // failures since then that were not logged
}

// failed records a failed attempt on addr and logs it unless one was logged recently.
func (d *dialLog) failed(log *slog.Logger, addr string, err error) {
	d.mu.Lock()
	now := time.Now()
	if d.now != nil {
		now = d.now()
	}
	if d.servers == nil || len(d.servers) > 256 { // bounded: server lists can change
		d.servers = map[string]*dialLogState{}
	}
	st := d.servers[addr]
	if st == nil {
		st = &dialLogState{}
		d.servers[addr] = st
	}
	if !st.last.IsZero() && now.Sub(st.last) < dialLogEvery {
		st.suppressed++
		d.mu.Unlock()
		return
	}
	n := st.suppressed
	st.last, st.suppressed = now, 0
	d.mu.Unlock()
	if n > 0 {
		log.Warn("zk: connection attempt failed", "server", addr, "err", err, "unlogged_failures", n)
		return
	}
	log.Warn("zk: connection attempt failed", "server", addr, "err", err)
}

// reset forgets past failures once connected, so the next outage is logged at once.
func (d *dialLog) reset() {
	d.mu.Lock()
	d.servers = nil
	d.mu.Unlock()
}
