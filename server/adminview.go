package server

import (
	"cmp"
	"iter"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/watch"
)

// The four-letter words that list watches, connections or sessions (wchs, wchc, wchp,
// dump, cons, stat) can answer megabytes. The core goroutine owns the state they read, and
// everything else the server does waits while it runs a query, so on the core they only
// copy flat data, in batches of at most adminBatch items per core step; sorting, grouping
// and formatting happen on the asking connection's own goroutine.

// adminBatch bounds the items one core step of a four-letter word copies (about a
// millisecond of core time).
const adminBatch = 8192

// adminBuilders bounds how many large answers are gathered and formatted at once; others
// wait their turn on their own goroutine. It is per process rather than per Server because
// what it rations is the process's CPU and memory.
var adminBuilders = make(chan struct{}, 2)

// adminSteps counts the core steps the batched four-letter words took and the largest
// number of items one of them copied; tests read them to check that no step does it all.
var adminSteps struct {
	steps    atomic.Int64
	maxItems atomic.Int64
}

func noteAdminStep(items int) {
	adminSteps.steps.Add(1)
	for {
		cur := adminSteps.maxItems.Load()
		if int64(items) <= cur || adminSteps.maxItems.CompareAndSwap(cur, int64(items)) {
			return
		}
	}
}

// acquireBuilder waits for a builder slot; false when the server stops first.
func (s *Server) acquireBuilder() bool {
	select {
	case adminBuilders <- struct{}{}:
		return true
	case <-s.stopping:
		return false
	}
}

func releaseBuilder() { <-adminBuilders }

// coreQuery runs f on the core. It reports false when the server is not serving (f is then
// not run) or stops first; in that last case f may still be running, so the caller must not
// read what f writes.
func (s *Server) coreQuery(f func()) bool {
	serving := true
	ok := s.query(func() {
		if serving = s.serving(); serving {
			f()
		}
	})
	return ok && serving
}

// watchView is the data-watch table as gathered off the core: every (path, watcher)
// registration, and the session of each watching connection that has one.
type watchView struct {
	entries  []watch.Entry
	sessions map[watch.WatcherID]int64
}

// gatherWatches copies the data-watch table in batches, one core step each. The steps let
// other work run between them, so the copy is a scan over a changing table rather than one
// instant's view (see watch.Manager.Scan); entries are de-duplicated by the formatters.
func (s *Server) gatherWatches() (watchView, bool) {
	var v watchView
	// next and stop must never run at once: Query returns false as soon as the server
	// stops, possibly while the core is still inside a step.
	var mu sync.Mutex
	var next func() ([]watch.Entry, bool)
	var stop func()
	finished := false // only this goroutine touches it: steps may outlive a failed Query
	defer func() {
		if finished {
			return // the scan has returned; nothing to stop
		}
		// An abandoned scan is stopped on the core, like every other step, unless the
		// core has stopped too.
		stopScan := func() {
			mu.Lock()
			defer mu.Unlock()
			if stop != nil {
				stop()
			}
		}
		if !s.query(stopScan) {
			stopScan()
		}
	}()
	for !finished {
		var batch []watch.Entry
		var last bool
		ok := s.coreQuery(func() {
			mu.Lock()
			defer mu.Unlock()
			if next == nil {
				next, stop = iter.Pull(s.watches.Scan(watch.DataTable, adminBatch))
			}
			var more bool
			batch, more = next()
			items := len(batch)
			if !more {
				last = true
				v.sessions = make(map[watch.WatcherID]int64)
				for w, c := range s.watchConns {
					if c != nil && c.sess != nil {
						v.sessions[w] = c.sess.id
					}
				}
				items += len(s.watchConns)
			}
			noteAdminStep(items)
		})
		if !ok {
			return watchView{}, false
		}
		finished = last
		v.entries = append(v.entries, batch...)
	}
	// Sorted by path then watcher: what wchp prints, and it exposes the duplicates a
	// changing table can produce.
	slices.SortFunc(v.entries, func(a, b watch.Entry) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Watcher, b.Watcher))
	})
	v.entries = slices.Compact(v.entries)
	return v, true
}

// wchs counts what gatherWatches copied: watchers (with or without a session), paths and
// registrations.
func (v watchView) wchs() string { return admin.Wchs(v.summary()) }

// summary is wchs's three numbers: watchers, paths and registrations.
func (v watchView) summary() (watchers, paths, total int) {
	ws := make(map[watch.WatcherID]struct{})
	for i, e := range v.entries {
		ws[e.Watcher] = struct{}{}
		if i == 0 || v.entries[i-1].Path != e.Path {
			paths++
		}
	}
	return len(ws), paths, len(v.entries)
}

// wchp lists each path's watching sessions; connections without a session are left out, as
// are paths left with none.
func (v watchView) wchp() string { return admin.WchpSorted(v.byPath()) }

// byPath is wchp's blocks, paths and sessions sorted.
func (v watchView) byPath() []admin.PathSessions {
	var out []admin.PathSessions
	for i := 0; i < len(v.entries); {
		j := i
		var sids []int64
		for ; j < len(v.entries) && v.entries[j].Path == v.entries[i].Path; j++ {
			if sid, ok := v.sessions[v.entries[j].Watcher]; ok {
				sids = append(sids, sid)
			}
		}
		if len(sids) > 0 {
			slices.Sort(sids)
			out = append(out, admin.PathSessions{Path: v.entries[i].Path, Sessions: sids})
		}
		i = j
	}
	return out
}

// wchc lists each session's watched paths. Two connections of one session (a session
// that moved) both contribute, as before.
func (v watchView) wchc() string { return admin.WchcSorted(v.bySession()) }

// bySession is wchc's blocks, sessions and paths sorted.
func (v watchView) bySession() []admin.SessionPaths {
	type pair struct {
		sid  int64
		path string
	}
	pairs := make([]pair, 0, len(v.entries))
	for _, e := range v.entries {
		if sid, ok := v.sessions[e.Watcher]; ok {
			pairs = append(pairs, pair{sid, e.Path})
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int { return cmp.Or(cmp.Compare(a.sid, b.sid), cmp.Compare(a.path, b.path)) })
	var out []admin.SessionPaths
	for i := 0; i < len(pairs); {
		j := i
		paths := make([]string, 0, 1)
		for ; j < len(pairs) && pairs[j].sid == pairs[i].sid; j++ {
			paths = append(paths, pairs[j].path)
		}
		out = append(out, admin.SessionPaths{SessionID: pairs[i].sid, Paths: paths})
		i = j
	}
	return out
}

// gatherDump copies what dump prints: the session expiry buckets and the owners of
// ephemerals in one core step, then the owners' paths in batches of about adminBatch.
// A session whose ephemerals all went away between steps is left out.
func (s *Server) gatherDump() (admin.DumpInfo, bool) {
	var d admin.DumpInfo
	var owners map[int64]int
	ok := s.coreQuery(func() {
		for _, b := range s.tracker.Buckets() {
			d.SessionSets = append(d.SessionSets, admin.SessionSet{Expire: time.UnixMilli(b.Deadline), Sessions: b.IDs})
		}
		owners = s.tree.EphemeralSessions()
		noteAdminStep(s.tracker.Len() + len(owners))
	})
	if !ok {
		// The step may still be running (Query gives up when the server stops): leave d.
		return admin.DumpInfo{}, false
	}
	ids := slices.Sorted(maps.Keys(owners))
	for i := 0; i < len(ids); {
		j, n := i, 0
		for ; j < len(ids) && (j == i || n+owners[ids[j]] <= adminBatch); j++ {
			n += owners[ids[j]]
		}
		batch := ids[i:j]
		paths := make([][]string, len(batch))
		ok := s.coreQuery(func() {
			items := 0
			for k, id := range batch {
				paths[k] = s.tree.Ephemerals(id)
				items += len(paths[k])
			}
			noteAdminStep(items)
		})
		if !ok {
			return d, false
		}
		for k, id := range batch {
			if len(paths[k]) > 0 {
				d.Ephemerals = append(d.Ephemerals, admin.SessionEphemerals{SessionID: id, Paths: paths[k]})
			}
		}
		i = j
	}
	return d, true
}

// connRow is one connection as copied on the core for stat and cons.
type connRow struct {
	c        *conn
	accepted time.Time
	hasSess  bool
	info     admin.ConnInfo // the core-owned fields
}

// gatherConns copies the connections for cons in one core step (see connRows).
func (s *Server) gatherConns(self *conn) ([]admin.ConnInfo, bool) {
	var rows []connRow
	if !s.coreQuery(func() { rows = s.connRows() }) {
		return nil, false
	}
	return connInfos(rows, self), true
}

// gatherStat copies stat's numbers and connections in one core step.
func (s *Server) gatherStat(self *conn) (admin.ServerStats, []admin.ConnInfo, bool) {
	var st admin.ServerStats
	var rows []connRow
	if !s.coreQuery(func() { st, rows = s.serverStats(), s.connRows() }) {
		return admin.ServerStats{}, nil, false
	}
	st.OpenFileDescriptors, st.MaxFileDescriptors = openFDs(), maxFDs()
	return st, connInfos(rows, self), true
}

// connRows runs on the core: it copies the core-owned fields of every open connection.
func (s *Server) connRows() []connRow {
	s.connsMu.Lock()
	rows := make([]connRow, 0, len(s.allConns))
	for c := range s.allConns {
		rows = append(rows, connRow{c: c})
	}
	s.connsMu.Unlock()
	for i := range rows {
		r := &rows[i]
		c := r.c
		r.accepted = c.accepted
		r.info = admin.ConnInfo{LastOp: "NA", LastCxid: -1}
		if c.sess != nil && !c.gone {
			r.hasSess = true
			r.info.SessionID = c.sess.id
			r.info.Timeout = c.sess.timeout
			r.info.LastOp = admin.LastOp(c.lastOp)
			if c.lastOp != 0 {
				r.info.LastCxid = int64(c.lastCxid)
			}
			r.info.LastZxid = c.lastZxid
		}
	}
	noteAdminStep(len(rows))
	return rows
}

// connInfos completes connRows off the core: the counters and latencies (behind their own
// locks), the remote address's text, and the order (oldest connection first).
func connInfos(rows []connRow, self *conn) []admin.ConnInfo {
	slices.SortStableFunc(rows, func(a, b connRow) int { return a.accepted.Compare(b.accepted) })
	out := make([]admin.ConnInfo, 0, len(rows))
	for _, r := range rows {
		ci := r.info
		c := r.c
		ci.Remote = formatRemote(c.remote)
		ci.Interest = 1
		if c == self {
			ci.Interest = 0
		}
		ci.Received = c.recv.Load()
		ci.Sent = c.sent.Load()
		ci.Established = r.accepted
		if r.hasSess {
			sum := c.stats.summary()
			ci.MinLatency, ci.MaxLatency = sum.Min, sum.Max
			if sum.Count > 0 {
				ci.AvgLatency = sum.Sum / sum.Count
			}
			ci.LastLatency = c.stats.lastLatency()
			ci.LastResponse = c.stats.lastResponse()
		}
		out = append(out, ci)
	}
	return out
}

// gatherStats copies srvr's and mntr's numbers in one core step; the file descriptor
// counts, which read /proc, are taken off the core.
func (s *Server) gatherStats() (admin.ServerStats, bool) {
	var st admin.ServerStats
	if !s.coreQuery(func() { st = s.serverStats() }) {
		return admin.ServerStats{}, false
	}
	st.OpenFileDescriptors, st.MaxFileDescriptors = openFDs(), maxFDs()
	st.LearnerQueueSize, st.LearnerQueueTime = s.learnerQPs.summaries()
	return st, true
}
