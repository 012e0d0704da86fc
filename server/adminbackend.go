package server

import (
	"cmp"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/admin/httpadmin"
	"github.com/zkd-io/zkd/internal/watch"
	"github.com/zkd-io/zkd/jute"
)

// adminBackend answers the observer surfaces (internal/admin: the four-letter words, the
// AdminServer, the Prometheus source): it is the one place where they read the server, and
// it hands them copies.
//
// The four-letter words that list watches, connections or sessions (wchs, wchc, wchp,
// dump, cons, stat) can answer megabytes. The core goroutine owns the state they read, and
// everything else the server does waits while it runs a query, so on the core they only
// copy flat data, in batches of at most adminBatch items per core step; sorting, grouping
// and formatting happen on the asking goroutine.
type adminBackend struct {
	s *Server
	// self is the connection asking (a four-letter word's), nil for the others: cons
	// shows it as not interested in reading while it answers.
	self *conn
}

var _ admin.Backend = adminBackend{}

func (b adminBackend) Info() admin.Info {
	s := b.s
	info := admin.Info{
		SnapDir: s.snapDir(), LogDir: s.logDir(),
		TickTime: s.cfg.TickTime, MaxClientCnxns: s.cfg.MaxClientCnxns,
		MinSessionTimeout: s.cfg.MinSessionTimeout, MaxSessionTimeout: s.cfg.MaxSessionTimeout,
		InitialConfig: s.cfg.InitialConfig,
		SnappedZxid:   s.snappedZxid.Load(),
		Extensions:    s.cfg.Extensions,
	}
	if s.ensembleMode() {
		info.Ensemble, info.ServerID = true, s.cfg.ServerID
	}
	if ln := s.listener(); ln != nil {
		info.ClientAddr = ln.Addr().String()
	}
	return info
}

func (b adminBackend) Serving() bool { return b.s.coreQuery(func() {}) }

// ReadOnly runs on the core: isro and is_read_only say "ro" from the role; serving is
// false when the server serves nobody (isro's "null").
func (b adminBackend) ReadOnly() (serving, readOnly bool) {
	s := b.s
	ok := s.query(func() { serving, readOnly = s.role.serving(), s.isReadOnly() })
	return ok && serving, readOnly
}

func (b adminBackend) TraceMask() int64        { return b.s.admin.traceMask.Load() }
func (b adminBackend) SetTraceMask(mask int64) { b.s.admin.traceMask.Store(mask) }

func (b adminBackend) ConfText(dataDirSize, logDirSize int64) (string, bool) {
	s := b.s
	if s.cfg.ConfText == nil {
		return "", true
	}
	var quorum []byte
	if s.ensembleMode() {
		// The committed configuration, which a reconfig changes on the core.
		if !s.query(func() { quorum = s.quorumConfigText() }) {
			return "", false
		}
	}
	return s.cfg.ConfText(dataDirSize, logDirSize, quorum), true
}

func (b adminBackend) Builder() (release func(), ok bool) {
	select {
	case adminBuilders <- struct{}{}:
		return releaseBuilder, true
	case <-b.s.stopping:
		return nil, false
	}
}

// ResetConnStats is crst: every connection's counters and latencies start again.
func (b adminBackend) ResetConnStats() {
	s := b.s
	s.connsMu.Lock()
	for c := range s.allConns {
		c.recv.Store(0)
		c.sent.Store(0)
		c.stats.reset()
	}
	s.connsMu.Unlock()
}

// ResetServerStats is srst: the server's latency and packet counters start again.
func (b adminBackend) ResetServerStats() {
	s := b.s
	s.latency.reset()
	s.packetsReceived.Store(0)
	s.packetsSent.Store(0)
	s.counters.reset()
	s.responseSizes.reset()
	s.learnerQPs.Reset()
	s.cfg.Metrics.ResetMntr()
	// The leader's proposal sizes and sync counts live on the core. A server that is not
	// serving has none to reset.
	s.coreQuery(func() {
		s.ens.diffs, s.ens.snaps, s.ens.truncs = 0, 0, 0
		s.role.resetStats()
	})
}

// Observers is gathered in one core step that only loads counters.
func (b adminBackend) Observers() ([]admin.LearnerInfo, bool) {
	var out []admin.LearnerInfo
	ok := b.s.coreQuery(func() {
		b.s.role.eachObserver(func(q *quorumConn, sid int64) { out = append(out, q.info(sid)) })
	})
	slices.SortFunc(out, func(a, b admin.LearnerInfo) int { return cmp.Compare(a.Sid, b.Sid) })
	return out, ok
}

// ResetObserverStats is Leader's or Follower's resetObserverConnectionStats, on the
// connections Observers lists.
func (b adminBackend) ResetObserverStats() {
	b.s.coreQuery(func() {
		b.s.role.eachObserver(func(q *quorumConn, _ int64) { q.st.resetObserverStats() })
	})
}

func (b adminBackend) Quorum() (admin.QuorumView, bool) {
	s := b.s
	var v admin.QuorumView
	ok := s.query(func() {
		v.Ensemble = s.ensembleMode()
		v.Mode = s.role.mode()
		v.Serving = s.serving()
		v.Zxid = s.tree.LastZxid()
		v.Leader = s.role.view().leader
		// A reconfig changes the members on the core.
		v.Members = make([]admin.Member, len(s.ens.peers))
		for i, p := range s.ens.peers {
			v.Members[i] = admin.Member{ID: p.ID, Host: p.Host, QuorumAddr: p.QuorumAddr(), ElectionAddr: p.ElectionAddr(), Observer: p.Observer}
		}
	})
	return v, ok
}

// ConnQueueDepths reads the connections' reply queues under their own locks, without the
// core.
func (b adminBackend) ConnQueueDepths(f func(depth int)) {
	s := b.s
	s.connsMu.Lock()
	conns := make([]*conn, 0, len(s.allConns))
	for c := range s.allConns {
		conns = append(conns, c)
	}
	s.connsMu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		d, closed := len(c.queue), c.closed
		c.mu.Unlock()
		if !closed {
			f(d)
		}
	}
}

// The AdminServer's own questions (httpadmin.Backend): the root ACL for the identity rule,
// and the snapshot and restore commands' work (adminsnap.go).

var _ httpadmin.Backend = adminBackend{}

// RootACL is the ACL of "/", for the identity rule.
func (b adminBackend) RootACL() ([]jute.ACL, bool) {
	s := b.s
	var acls []jute.ACL
	ok := s.coreQuery(func() {
		if root := s.tree.Get("/"); root != nil {
			acls = s.tree.ACL(root.ACL)
		}
	})
	return acls, ok
}

// Snapshot writes a snapshot now and opens it.
func (b adminBackend) Snapshot() (io.ReadCloser, int64, int64, error) {
	s := b.s
	path, zxid, err := s.writeAdminSnapshot()
	if err != nil {
		return nil, 0, 0, err
	}
	f, err := s.cfg.FS.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("server: admin snapshot: %w", err)
	}
	size, err := s.cfg.FS.Stat(path)
	if err != nil {
		f.Close()
		return nil, 0, 0, fmt.Errorf("server: admin snapshot: %w", err)
	}
	return f, zxid, size, nil
}

// ReadRestore reads a restore's snapshot stream, off the core.
func (b adminBackend) ReadRestore(r io.Reader) (httpadmin.Restored, error) {
	return b.s.readRestore(r)
}

// InstallRestore installs a tree ReadRestore read, in one core step.
func (b adminBackend) InstallRestore(t httpadmin.Restored) (zxid int64, ok bool) {
	ld, _ := t.(*loaded)
	if ld == nil {
		return 0, false
	}
	s := b.s
	ok = s.coreQuery(func() { zxid = s.installRestore(ld) })
	return zxid, ok
}

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

// Watches copies the data-watch table in batches, one core step each. The steps let other
// work run between them, so the copy is a scan over a changing table rather than one
// instant's view (see watch.Manager.Scan); entries are de-duplicated here.
func (b adminBackend) Watches() (admin.WatchTable, bool) {
	s := b.s
	var v admin.WatchTable
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
				v.Sessions = make(map[watch.WatcherID]int64)
				for w, c := range s.watchConns {
					if c != nil && c.sess != nil {
						v.Sessions[w] = c.sess.id
					}
				}
				items += len(s.watchConns)
			}
			noteAdminStep(items)
		})
		if !ok {
			return admin.WatchTable{}, false
		}
		finished = last
		v.Entries = append(v.Entries, batch...)
	}
	// Sorted by path then watcher: what wchp prints, and it exposes the duplicates a
	// changing table can produce.
	slices.SortFunc(v.Entries, func(a, b watch.Entry) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Watcher, b.Watcher))
	})
	v.Entries = slices.Compact(v.Entries)
	return v, true
}

// Dump copies what dump prints: the session expiry buckets and the owners of
// ephemerals in one core step, then the owners' paths in batches of about adminBatch.
// A session whose ephemerals all went away between steps is left out.
func (b adminBackend) Dump() (admin.DumpInfo, bool) {
	s := b.s
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

// Conns copies the connections for cons in one core step (see connRows).
func (b adminBackend) Conns() ([]admin.ConnInfo, bool) {
	var rows []connRow
	if !b.s.coreQuery(func() { rows = b.connRows() }) {
		return nil, false
	}
	return connInfos(rows, b.self), true
}

// StatConns copies stat's numbers and connections in one core step.
func (b adminBackend) StatConns() (admin.ServerStats, []admin.ConnInfo, bool) {
	var st admin.ServerStats
	var rows []connRow
	if !b.s.coreQuery(func() { st, rows = b.serverStats(), b.connRows() }) {
		return admin.ServerStats{}, nil, false
	}
	return st, connInfos(rows, b.self), true
}

// connRows runs on the core: it copies the core-owned fields of every open connection.
func (b adminBackend) connRows() []connRow {
	s := b.s
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

// Stats copies srvr's and mntr's numbers in one core step; the learners' queue summaries
// are read under their own locks, off the core.
func (b adminBackend) Stats() (admin.ServerStats, bool) {
	var st admin.ServerStats
	if !b.s.coreQuery(func() { st = b.serverStats() }) {
		return admin.ServerStats{}, false
	}
	st.LearnerQueueSize, st.LearnerQueueTime = b.s.learnerQPs.Summaries()
	return st, true
}

// Monitor adds what the metrics registry prints in mntr.
func (b adminBackend) Monitor() (admin.ServerStats, bool) {
	st, ok := b.Stats()
	if ok {
		b.s.cfg.Metrics.Mntr(&st)
	}
	return st, ok
}

// serverStats runs on the core goroutine. It leaves the file descriptor counts, which read
// /proc, to the caller.
func (b adminBackend) serverStats() admin.ServerStats {
	s := b.s
	s.connsMu.Lock()
	nconns := len(s.allConns)
	s.connsMu.Unlock()
	st := admin.ServerStats{
		Version:                Version,
		Mode:                   s.role.mode(),
		Latency:                s.latency.summary(),
		PacketsReceived:        s.packetsReceived.Load(),
		FsyncThresholdExceeded: s.fsyncSlow.Load(),
		PacketsSent:            s.packetsSent.Load(),
		Connections:            nconns,
		Outstanding:            int64(len(s.tokens)),
		Zxid:                   s.tree.LastZxid(),
		// ZooKeeper's node map holds the root twice, as "" and "/", and counts both.
		NodeCount:           s.tree.NodeCount() + 1,
		EphemeralsCount:     s.tree.EphemeralCount(),
		WatchCount:          s.watches.Count(),
		ApproximateDataSize: s.tree.ApproximateDataSize(),
		Uptime:              time.Since(s.start).Milliseconds(),
		ResponseSize:        s.responseSizes.stats(),
		// Sized for every counter: growing it would be most of this core step's
		// allocation.
		Counters: make(map[string]int64, numCounters+3),
	}
	st.Counters["diff_count"] = s.ens.diffs
	st.Counters["snap_count"] = s.ens.snaps
	// zkd's own: ZooKeeper counts DIFF and SNAP syncs but not TRUNC ones.
	st.Counters["trunc_count"] = s.ens.truncs
	// global_sessions is ZKDatabase.getSessionCount (the sessions txns made, on every
	// member), local_sessions the member's own local sessions (localSessionsEnabled).
	for _, sess := range s.sessions {
		switch {
		case sess.local:
			st.LocalSessions++
		case sess.valid:
			st.GlobalSessions++
		}
	}
	s.counters.fill(st.Counters)
	st.QuotaGauges, st.QuotaExceeded = s.quotaMetrics()
	b.roleStats(&st)
	return st
}

// roleStats adds what an ensemble member's role reports to mntr, srvr and /metrics: its
// detailed peer state, QuorumZooKeeperServer's quorum_size, and the gauges ZooKeeper 3.9
// registers for the role (LeaderZooKeeperServer.registerMetrics,
// FollowerZooKeeperServer.registerMetrics), with the leader's proposal sizes for srvr. It
// runs on the core goroutine.
func (b adminBackend) roleStats(st *admin.ServerStats) {
	s := b.s
	if !s.ensembleMode() {
		return
	}
	// QuorumPeer.getDetailedPeerState while serving: the Zab phase is broadcast and no
	// sync is running (a sync mode would be named otherwise).
	state := map[string]string{"leader": "leading", "follower": "following", "observer": "observing"}[st.Mode]
	if state == "" {
		state = "looking"
	} else if s.role.serving() {
		state += " - broadcast"
	}
	st.PeerState = state
	// The committed configuration's voters (a reconfig changes them).
	st.RoleGauges = append(st.RoleGauges, admin.Gauge{Name: "quorum_size", Value: int64(len(s.voters()))})
	rv := s.role.view()
	if rv.lead != nil {
		ls := rv.lead.stats
		uptime := rv.lead.uptime.Milliseconds()
		ps := rv.lead.proposalSizes
		st.ProposalSizes = &ps
		st.RoleGauges = append(st.RoleGauges,
			admin.Gauge{Name: "learners", Value: int64(ls.Learners)},
			admin.Gauge{Name: "synced_followers", Value: int64(ls.SyncedFollowers)},
			admin.Gauge{Name: "synced_non_voting_followers", Value: int64(ls.SyncedNonVotingFollowers)},
			admin.Gauge{Name: "synced_observers", Value: int64(ls.SyncedObservers)},
			admin.Gauge{Name: "pending_syncs", Value: int64(ls.PendingSyncs)},
			admin.Gauge{Name: "leader_uptime", Value: uptime},
			admin.Gauge{Name: "last_proposal_size", Value: ps.Last},
			admin.Gauge{Name: "max_proposal_size", Value: ps.Max},
			admin.Gauge{Name: "min_proposal_size", Value: ps.Min},
		)
	}
	// ObserverZooKeeperServer.dumpMonitorValues: the learner master, the leader without
	// observerMasterPort.
	st.ObserverMasterID = rv.masterSid
	// Follower.getSyncedObserverSize: its observer master's observers, null (and not
	// printed) without one.
	if rv.syncedObservers >= 0 {
		st.RoleGauges = append(st.RoleGauges, admin.Gauge{Name: "synced_observers", Value: int64(rv.syncedObservers)})
	}
}

func formatRemote(remote string) string {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return "/" + remote
	}
	return admin.FormatRemote(ap)
}
