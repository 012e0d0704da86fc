package server

import (
	"bufio"
	"io"
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/watch"
)

// Version is what srvr and mntr report. Tools read the leading x.y.z to decide which
// protocol features exist, so it names the ZooKeeper release zkd is compatible with.
const Version = "3.8.0-zkd, built on 2026-11-22 00:00 UTC"

func fourLetterWord(n int32) (string, bool) { return admin.Lookup(n) }

// fourLetter answers a four-letter word and closes the connection.
func (c *conn) fourLetter(cmd string, br *bufio.Reader) {
	s := c.srv
	defer c.close()
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if cmd == "stmk" {
		var mask [admin.SetTraceMaskArgLen]byte
		if _, err := io.ReadFull(br, mask[:]); err != nil {
			return
		}
	}
	c.recv.Add(1)
	s.packetsReceived.Add(1)
	var text string
	if !admin.Allowed(cmd, s.cfg.FourLetterWhitelist, false) {
		text = admin.NotInWhitelist(cmd)
	} else {
		text = s.fourLetterText(cmd, c)
	}
	c.nc.Write([]byte(text))
}

func (s *Server) fourLetterText(cmd string, self *conn) string {
	switch cmd {
	case "ruok":
		return admin.Ruok
	case "isro":
		return admin.Isro(false)
	case "gtmk", "stmk":
		return admin.Gtmk(admin.DefaultTraceMask)
	case "envi":
		return admin.Envi(admin.Env(envInfo()))
	case "conf":
		if s.cfg.ConfText == nil {
			return ""
		}
		d, l := s.dirSizes()
		return s.cfg.ConfText(d, l)
	case "dirs":
		return admin.Dirs(s.dirSizes())
	case "crst":
		s.connsMu.Lock()
		for c := range s.allConns {
			c.recv.Store(0)
			c.sent.Store(0)
			c.stats.reset()
		}
		s.connsMu.Unlock()
		return admin.Crst
	case "srst":
		s.latency.reset()
		s.packetsReceived.Store(0)
		s.packetsSent.Store(0)
		return admin.Srst
	case "hash":
		return admin.Hash(nil)
	}
	var text string
	serving := true
	ok := s.Query(func() {
		if !s.serving() {
			serving = false
			return
		}
		switch cmd {
		case "srvr":
			text = admin.Srvr(s.serverStats())
		case "stat":
			text = admin.Stat(s.serverStats(), s.connInfos(self, false))
		case "cons":
			text = admin.Cons(s.connInfos(self, true))
		case "mntr":
			text = admin.Mntr(s.serverStats())
		case "wchs":
			sum := s.watches.Summary(watch.DataTable)
			text = admin.Wchs(sum.Watchers, sum.Paths, sum.Watches)
		case "wchc":
			by := map[int64][]string{}
			for w, paths := range s.watches.ByWatcher(watch.DataTable) {
				if c := s.watchConns[w]; c != nil && c.sess != nil {
					by[c.sess.id] = append(by[c.sess.id], paths...)
				}
			}
			text = admin.Wchc(by)
		case "wchp":
			by := map[string][]int64{}
			for p, ws := range s.watches.ByPath(watch.DataTable) {
				for _, w := range ws {
					if c := s.watchConns[w]; c != nil && c.sess != nil {
						by[p] = append(by[p], c.sess.id)
					}
				}
			}
			text = admin.Wchp(by)
		case "dump":
			text = admin.Dump(s.dumpInfo())
		}
	})
	if !ok || !serving {
		if t, ok := admin.NotServing(cmd); ok {
			return t
		}
		return admin.NotServingMsg + "\n"
	}
	return text
}

// serverStats runs on the core goroutine.
func (s *Server) serverStats() admin.ServerStats {
	s.connsMu.Lock()
	nconns := len(s.allConns)
	s.connsMu.Unlock()
	st := admin.ServerStats{
		Version:         Version,
		Mode:            s.role.mode(),
		Latency:         s.latency.summary(),
		PacketsReceived: s.packetsReceived.Load(),
		PacketsSent:     s.packetsSent.Load(),
		Connections:     nconns,
		Outstanding:     int64(len(s.tokens)),
		Zxid:            s.tree.LastZxid(),
		// ZooKeeper's node map holds the root twice, as "" and "/", and counts both.
		NodeCount:           s.tree.NodeCount() + 1,
		EphemeralsCount:     s.tree.EphemeralCount(),
		WatchCount:          s.watches.Count(),
		GlobalSessions:      int64(s.tracker.Len()),
		ApproximateDataSize: s.tree.ApproximateDataSize(),
		OpenFileDescriptors: openFDs(),
		MaxFileDescriptors:  maxFDs(),
		Uptime:              time.Since(s.start).Milliseconds(),
		ResponseSize:        admin.NewBufferStats(),
		Counters: map[string]int64{
			"diff_count": s.ens.diffs,
			"snap_count": s.ens.snaps,
			// zkd's own: ZooKeeper counts DIFF and SNAP syncs but not TRUNC ones.
			"trunc_count": s.ens.truncs,
		},
	}
	return st
}

func (s *Server) connInfos(self *conn, full bool) []admin.ConnInfo {
	s.connsMu.Lock()
	conns := make([]*conn, 0, len(s.allConns))
	for c := range s.allConns {
		conns = append(conns, c)
	}
	s.connsMu.Unlock()
	sort.Slice(conns, func(i, j int) bool { return conns[i].accepted.Before(conns[j].accepted) })
	out := make([]admin.ConnInfo, 0, len(conns))
	for _, c := range conns {
		ci := admin.ConnInfo{
			Remote:      formatRemote(c.remote),
			Interest:    1,
			Received:    c.recv.Load(),
			Sent:        c.sent.Load(),
			LastOp:      "NA",
			Established: c.accepted,
			LastCxid:    -1,
		}
		if c == self {
			ci.Interest = 0
		}
		if c.sess != nil && !c.gone {
			ci.SessionID = c.sess.id
			ci.Timeout = c.sess.timeout
			ci.LastOp = admin.LastOp(c.lastOp)
			if c.lastOp != 0 {
				ci.LastCxid = int64(c.lastCxid)
			}
			ci.LastZxid = c.lastZxid
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

func (s *Server) dumpInfo() admin.DumpInfo {
	var d admin.DumpInfo
	for _, b := range s.tracker.Buckets() {
		d.SessionSets = append(d.SessionSets, admin.SessionSet{Expire: time.UnixMilli(b.Deadline), Sessions: b.IDs})
	}
	owners := s.tree.EphemeralSessions()
	ids := make([]int64, 0, len(owners))
	for id := range owners {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		d.Ephemerals = append(d.Ephemerals, admin.SessionEphemerals{SessionID: id, Paths: s.tree.Ephemerals(id)})
	}
	return d
}

func formatRemote(remote string) string {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return "/" + remote
	}
	return admin.FormatRemote(ap)
}

func (s *Server) dirSizes() (int64, int64) {
	return dirSize(s.snapDir()), dirSize(s.logDir())
}

func dirSize(dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && !e.IsDir() {
			n += info.Size()
		}
	}
	return n
}

func openFDs() int64 {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return int64(len(entries))
}

func envInfo() admin.EnvInfo {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	e := admin.EnvInfo{
		Version:   Version,
		HostName:  host,
		GoVersion: runtime.Version(),
		Compiler:  runtime.Compiler,
		GOOS:      runtime.GOOS,
		GOARCH:    runtime.GOARCH,
		OSVersion: osVersion(),
		UserDir:   wd,
		TempDir:   os.TempDir(),
	}
	if u, err := user.Current(); err == nil {
		e.UserName, e.UserHome = u.Username, u.HomeDir
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	e.MemTotal = int64(ms.Sys)
	e.MemFree = int64(ms.Sys - ms.HeapInuse)
	e.MemMax = int64(ms.Sys)
	return e
}

func osVersion() string {
	b, err := os.ReadFile(filepath.Join("/proc/sys/kernel/osrelease"))
	if err != nil {
		return ""
	}
	return string(trimNL(b))
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
