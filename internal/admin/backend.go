package admin

import (
	"cmp"
	"slices"

	"github.com/zkd-io/zkd/internal/buildinfo"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/watch"
)

// CompatibleRelease is the ZooKeeper release zkd answers as in its version strings.
const CompatibleRelease = "3.8.0"

// Version is what srvr, mntr and envi report: the compatible release, then this build
// (buildinfo.Info.ZooKeeperVersion).
var Version = buildinfo.Get().ZooKeeperVersion(CompatibleRelease)

// Backend is what the observer surfaces (the four-letter words, the AdminServer, the
// Prometheus endpoint) ask the server. Every answer is a copy: the server takes it in short
// steps on its core goroutine and hands back plain values, so nothing here holds a
// reference into the server's state. ok is false when the server is not serving clients, or
// stopped while answering.
type Backend interface {
	// Info is the server's settings and whereabouts; it needs no core step.
	Info() Info
	// Serving reports whether the server serves clients now.
	Serving() bool
	// ReadOnly is isro's question: serving, and whether the server serves read-only.
	ReadOnly() (serving, readOnly bool)

	// Stats is srvr's numbers (mntr's too, without the metrics registry's), in one short
	// core step; the file descriptor counts are left to the caller.
	Stats() (ServerStats, bool)
	// Monitor is Stats with what the metrics registry adds to mntr.
	Monitor() (ServerStats, bool)
	// StatConns is stat's numbers and the open connections, in one core step.
	StatConns() (ServerStats, []ConnInfo, bool)
	// Conns is the open connections, oldest first.
	Conns() ([]ConnInfo, bool)
	// Dump is the session expiry buckets and the ephemerals by owner.
	Dump() (DumpInfo, bool)
	// Watches is the data-watch table.
	Watches() (WatchTable, bool)
	// Quorum is what leader, zabstate and voting_view read.
	Quorum() (QuorumView, bool)
	// Observers is the synced observers this server serves proposals to, by sid.
	Observers() ([]LearnerInfo, bool)
	// ConfText is conf's answer given the directory sizes ("" when the server has none);
	// false when the server stopped reading its committed configuration.
	ConfText(dataDirSize, logDirSize int64) (string, bool)
	// ConnQueueDepths calls f with the number of replies each open connection has waiting
	// to be written, without a core step.
	ConnQueueDepths(f func(depth int))

	// TraceMask is what stmk set; SetTraceMask sets it.
	TraceMask() int64
	SetTraceMask(mask int64)
	// ResetConnStats is crst, ResetServerStats srst, ResetObserverStats
	// observer_connection_stat_reset.
	ResetConnStats()
	ResetServerStats()
	ResetObserverStats()

	// Builder waits for one of the slots that ration the large answers (stat, cons, dump,
	// the watch lists): they are gathered and formatted a couple at a time per process.
	// release gives the slot back; ok is false when the server stopped first.
	Builder() (release func(), ok bool)
}

// Info is the server's settings as ZooKeeperServerConf reports them, and its directories.
type Info struct {
	// Ensemble is false on a standalone server.
	Ensemble bool
	// ServerID is myid, 0 on a standalone server.
	ServerID int64
	// ClientAddr is the client port's address (host:port), "" when it does not listen.
	ClientAddr string
	// SnapDir and LogDir are the version-2 directories.
	SnapDir, LogDir                      string
	TickTime, MaxClientCnxns             int
	MinSessionTimeout, MaxSessionTimeout int
	// InitialConfig is the text of the zoo.cfg the server was started from.
	InitialConfig string
	// SnappedZxid is the zxid of the newest complete snapshot.
	SnappedZxid int64
	// Extensions are the extensions beyond ZooKeeper the server enables (zkd.extensions).
	Extensions ext.Set
}

// Member is one ensemble member of the committed configuration.
type Member struct {
	ID                       int64
	Host                     string
	QuorumAddr, ElectionAddr string
	Observer                 bool
}

// QuorumView is the server's place in its ensemble.
type QuorumView struct {
	// Ensemble is false on a standalone server (the rest is then zero).
	Ensemble bool
	// Mode is srvr's Mode ("" while looking); Serving whether clients are served.
	Mode    string
	Serving bool
	// Leader is the sid of the leader this server is or follows, -1 when none is known.
	Leader  int64
	Zxid    int64
	Members []Member
}

// Member returns the member with sid id.
func (v QuorumView) Member(id int64) (Member, bool) {
	i := slices.IndexFunc(v.Members, func(m Member) bool { return m.ID == id })
	if i < 0 {
		return Member{}, false
	}
	return v.Members[i], true
}

// WatchTable is the data-watch table as copied off the core: every (path, watcher)
// registration, sorted by path then watcher and without duplicates, and the session of
// each watching connection that has one.
type WatchTable struct {
	Entries  []watch.Entry
	Sessions map[watch.WatcherID]int64
}

// Summary is wchs's three numbers: watchers, paths and registrations.
func (v WatchTable) Summary() (watchers, paths, total int) {
	ws := make(map[watch.WatcherID]struct{})
	for i, e := range v.Entries {
		ws[e.Watcher] = struct{}{}
		if i == 0 || v.Entries[i-1].Path != e.Path {
			paths++
		}
	}
	return len(ws), paths, len(v.Entries)
}

// ByPath is wchp's blocks, paths and sessions sorted. Connections without a session are
// left out, as are paths left with none.
func (v WatchTable) ByPath() []PathSessions {
	var out []PathSessions
	for i := 0; i < len(v.Entries); {
		j := i
		var sids []int64
		for ; j < len(v.Entries) && v.Entries[j].Path == v.Entries[i].Path; j++ {
			if sid, ok := v.Sessions[v.Entries[j].Watcher]; ok {
				sids = append(sids, sid)
			}
		}
		if len(sids) > 0 {
			slices.Sort(sids)
			out = append(out, PathSessions{Path: v.Entries[i].Path, Sessions: sids})
		}
		i = j
	}
	return out
}

// BySession is wchc's blocks, sessions and paths sorted. Two connections of one session (a
// session that moved) both contribute.
func (v WatchTable) BySession() []SessionPaths {
	type pair struct {
		sid  int64
		path string
	}
	pairs := make([]pair, 0, len(v.Entries))
	for _, e := range v.Entries {
		if sid, ok := v.Sessions[e.Watcher]; ok {
			pairs = append(pairs, pair{sid, e.Path})
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int { return cmp.Or(cmp.Compare(a.sid, b.sid), cmp.Compare(a.path, b.path)) })
	var out []SessionPaths
	for i := 0; i < len(pairs); {
		j := i
		paths := make([]string, 0, 1)
		for ; j < len(pairs) && pairs[j].sid == pairs[i].sid; j++ {
			paths = append(paths, pairs[j].path)
		}
		out = append(out, SessionPaths{SessionID: pairs[i].sid, Paths: paths})
		i = j
	}
	return out
}
