package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
)

// Version is what srvr and mntr report. Tools read the leading x.y.z to decide which
// protocol features exist, so it names the ZooKeeper release zkd is compatible with.
const Version = "3.8.0-zkd, built on 2026-11-22 00:00 UTC"

func fourLetterWord(n int32) (string, bool) { return admin.Lookup(n) }

// stmkArgWait is how long stmk's 8-byte argument may trail the command. ZooKeeper takes
// only what is already in the socket when it reads the command and drops the connection
// without an answer if that is short; the small grace only spares a client whose argument
// went out in a second segment, while "stmk" alone is still dropped at once, not after
// the 10 s read deadline.
const stmkArgWait = 250 * time.Millisecond

// fourLetter answers a four-letter word and closes the connection.
func (c *conn) fourLetter(cmd string, br *connReader) {
	s := c.srv
	defer c.close()
	// ZooKeeper counts the command as a packet before it checks the whitelist or reads the
	// stmk argument.
	c.recv.Add(1)
	s.packetsReceived.Add(1)
	var text string
	switch {
	case !admin.Allowed(cmd, s.cfg.FourLetterWhitelist, s.cfg.ReadOnlyMode):
		// Like ZooKeeper, without reading stmk's argument.
		text = admin.NotInWhitelist(cmd)
	case cmd == "stmk":
		mask, err := readTraceMask(c.nc, br)
		if err != nil {
			s.log.Debug("stmk without its argument", "remote", c.remote, "err", err)
			return
		}
		s.traceMask.Store(mask)
		text = admin.Stmk(mask)
	default:
		text = s.fourLetterText(cmd, c)
	}
	// The deadline is for the client to take the answer; waiting for a builder slot and
	// building do not count against it.
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	c.nc.Write([]byte(text))
}

// readTraceMask reads stmk's argument, a big-endian int64, from what the connection
// already holds or delivers within stmkArgWait.
func readTraceMask(nc net.Conn, br *connReader) (int64, error) {
	var arg [admin.SetTraceMaskArgLen]byte
	if br.Buffered() < len(arg) {
		nc.SetReadDeadline(time.Now().Add(stmkArgWait))
	}
	if _, err := io.ReadFull(br, arg[:]); err != nil {
		return 0, fmt.Errorf("stmk argument: %w", err)
	}
	return int64(binary.BigEndian.Uint64(arg[:])), nil
}

func (s *Server) fourLetterText(cmd string, self *conn) string {
	switch cmd {
	case "ruok":
		return admin.Ruok
	case "isro":
		serving, ro := s.readOnlyAnswer()
		if !serving {
			return notServing(cmd)
		}
		return admin.Isro(ro)
	case "gtmk":
		return admin.Gtmk(s.traceMask.Load())
	case "envi":
		return admin.Envi(admin.Env(envInfo()))
	case "conf":
		if s.cfg.ConfText == nil {
			return ""
		}
		d, l := s.dirSizes()
		var quorum []byte
		if s.ensembleMode() {
			// The committed configuration, which a reconfig changes on the core.
			if !s.query(func() { quorum = s.quorumConfigText() }) {
				return notServing(cmd)
			}
		}
		return s.cfg.ConfText(d, l, quorum)
	case "dirs":
		return admin.Dirs(s.dirSizes())
	case "crst":
		s.resetConnStats()
		return admin.Crst
	case "srst":
		s.resetServerStats()
		return admin.Srst
	case "hash":
		return admin.Hash(nil)
	}
	switch cmd {
	case "srvr", "mntr":
		// One small core step; not rationed, monitoring polls these.
		st, ok := s.gatherStats()
		if !ok {
			return notServing(cmd)
		}
		if cmd == "srvr" {
			return admin.Srvr(st)
		}
		s.cfg.Metrics.Mntr(&st)
		return admin.Mntr(st)
	case "stat", "cons", "wchs", "wchc", "wchp", "dump":
	default:
		return ""
	}
	if !s.acquireBuilder() {
		return notServing(cmd)
	}
	defer releaseBuilder()
	switch cmd {
	case "stat":
		st, conns, ok := s.gatherStat(self)
		if !ok {
			return notServing(cmd)
		}
		return admin.Stat(st, conns)
	case "cons":
		conns, ok := s.gatherConns(self)
		if !ok {
			return notServing(cmd)
		}
		return admin.Cons(conns)
	case "dump":
		d, ok := s.gatherDump()
		if !ok {
			return notServing(cmd)
		}
		return admin.Dump(d)
	}
	v, ok := s.gatherWatches()
	if !ok {
		return notServing(cmd)
	}
	switch cmd {
	case "wchs":
		return v.wchs()
	case "wchc":
		return v.wchc()
	}
	return v.wchp()
}

// resetConnStats is crst: every connection's counters and latencies start again.
func (s *Server) resetConnStats() {
	s.connsMu.Lock()
	for c := range s.allConns {
		c.recv.Store(0)
		c.sent.Store(0)
		c.stats.reset()
	}
	s.connsMu.Unlock()
}

// resetServerStats is srst: the server's latency and packet counters start again.
func (s *Server) resetServerStats() {
	s.latency.reset()
	s.packetsReceived.Store(0)
	s.packetsSent.Store(0)
	s.counters.reset()
	s.responseSizes.reset()
	s.learnerQPs.reset()
	s.cfg.Metrics.ResetMntr()
	// The leader's proposal sizes and sync counts live on the core. A server that is not
	// serving has none to reset.
	s.coreQuery(func() {
		s.ens.diffs, s.ens.snaps, s.ens.truncs = 0, 0, 0
		s.role.resetStats()
	})
}

// notServing is cmd's answer when the server is not serving or stopped while answering.
func notServing(cmd string) string {
	if t, ok := admin.NotServing(cmd); ok {
		return t
	}
	return admin.NotServingMsg + "\n"
}

// serverStats runs on the core goroutine. It leaves the file descriptor counts, which read
// /proc, to gatherStats.
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
	s.roleStats(&st)
	return st
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
