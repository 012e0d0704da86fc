package admin

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Wchs is the answer of wchs. ZooKeeper counts only its data-watch table here (getData,
// exists and the data half of persistent watches), not child watches: connections with at
// least one data watch, watched paths, and (connection, path) pairs.
func Wchs(connections, paths, total int) string {
	return strconv.Itoa(connections) + " connections watching " + strconv.Itoa(paths) +
		" paths\nTotal watches:" + strconv.Itoa(total) + "\n"
}

// Wchc is the answer of wchc: each session with data watches, then its paths indented by a
// tab, then an empty line. ZooKeeper prints hash order; sessions and paths are sorted here.
func Wchc(bySession map[int64][]string) string {
	sorted := make([]SessionPaths, 0, len(bySession))
	for _, sid := range slices.Sorted(maps.Keys(bySession)) {
		sorted = append(sorted, SessionPaths{sid, slices.Sorted(slices.Values(bySession[sid]))})
	}
	return WchcSorted(sorted)
}

// SessionPaths is one session's block of wchc.
type SessionPaths struct {
	SessionID int64
	Paths     []string
}

// WchcSorted is Wchc for input the caller has already grouped and sorted (sessions
// ascending, each one's paths ascending), so that a large answer costs no map or second sort.
func WchcSorted(sessions []SessionPaths) string {
	n := 1
	for _, s := range sessions {
		n += 19 // "0x", up to 16 digits, newline
		for _, p := range s.Paths {
			n += len(p) + 2
		}
	}
	var b strings.Builder
	b.Grow(n)
	for _, s := range sessions {
		b.WriteString("0x")
		b.WriteString(hex(s.SessionID))
		b.WriteByte('\n')
		for _, p := range s.Paths {
			b.WriteByte('\t')
			b.WriteString(p)
			b.WriteByte('\n')
		}
	}
	b.WriteByte('\n')
	return b.String()
}

// Wchp is the answer of wchp: each path with data watches, then the watching sessions
// indented by a tab, then an empty line. Paths and sessions are sorted.
func Wchp(byPath map[string][]int64) string {
	sorted := make([]PathSessions, 0, len(byPath))
	for _, p := range slices.Sorted(maps.Keys(byPath)) {
		sorted = append(sorted, PathSessions{p, slices.Sorted(slices.Values(byPath[p]))})
	}
	return WchpSorted(sorted)
}

// PathSessions is one path's block of wchp.
type PathSessions struct {
	Path     string
	Sessions []int64
}

// WchpSorted is Wchp for input the caller has already grouped and sorted (paths ascending,
// each one's sessions ascending).
func WchpSorted(paths []PathSessions) string {
	n := 1
	for _, p := range paths {
		n += len(p.Path) + 1 + 20*len(p.Sessions) // "\t0x", up to 16 digits, newline
	}
	var b strings.Builder
	b.Grow(n)
	for _, p := range paths {
		b.WriteString(p.Path)
		b.WriteByte('\n')
		for _, sid := range p.Sessions {
			b.WriteString("\t0x")
			b.WriteString(hex(sid))
			b.WriteByte('\n')
		}
	}
	b.WriteByte('\n')
	return b.String()
}

// SessionSet is one bucket of the session expiry queue.
type SessionSet struct {
	// Expire is the bucket's deadline as wall-clock time, in the location dump should print
	// (ZooKeeper prints the JVM's default zone). The server converts its monotonic deadline:
	// now + (deadline - monotonic now).
	Expire   time.Time
	Sessions []int64
}

// ConnRef names one connection in the connection expiry queue.
type ConnRef struct {
	Remote    string // see FormatRemote
	SessionID int64  // 0 before the handshake
}

// ConnSet is one bucket of the connection expiry queue (NIOServerCnxnFactory's idle
// connection timeouts).
type ConnSet struct {
	Expire time.Time
	Conns  []ConnRef
}

// SessionEphemerals is one session's ephemeral nodes.
type SessionEphemerals struct {
	SessionID int64
	Paths     []string
}

// DumpInfo is what dump prints. Empty buckets are printed ("0 expire at ..."), as ZooKeeper
// keeps them until they expire.
type DumpInfo struct {
	SessionSets []SessionSet
	Ephemerals  []SessionEphemerals
	ConnSets    []ConnSet
}

// Dump is the answer of dump. Buckets are sorted by deadline, as ZooKeeper sorts them;
// sessions inside a bucket, ephemeral owners and their paths keep the caller's order
// (ZooKeeper's is hash order).
func Dump(d DumpInfo) string {
	var b strings.Builder
	b.WriteString("SessionTracker dump:\n")
	sessions := slices.Clone(d.SessionSets)
	slices.SortStableFunc(sessions, func(x, y SessionSet) int { return x.Expire.Compare(y.Expire) })
	n := 0
	for _, s := range sessions {
		n += len(s.Sessions)
	}
	setsHeader(&b, "Session", len(sessions), n)
	for _, s := range sessions {
		bucketHeader(&b, len(s.Sessions), s.Expire)
		for _, id := range s.Sessions {
			b.WriteString("\t0x")
			b.WriteString(hex(id))
			b.WriteByte('\n')
		}
	}

	b.WriteString("ephemeral nodes dump:\n")
	b.WriteString("Sessions with Ephemerals (")
	b.WriteString(strconv.Itoa(len(d.Ephemerals)))
	b.WriteString("):\n")
	for _, e := range d.Ephemerals {
		b.WriteString("0x")
		b.WriteString(hex(e.SessionID))
		b.WriteString(":\n")
		for _, p := range e.Paths {
			b.WriteByte('\t')
			b.WriteString(p)
			b.WriteByte('\n')
		}
	}

	b.WriteString("Connections dump:\n")
	conns := slices.Clone(d.ConnSets)
	slices.SortStableFunc(conns, func(x, y ConnSet) int { return x.Expire.Compare(y.Expire) })
	n = 0
	for _, s := range conns {
		n += len(s.Conns)
	}
	setsHeader(&b, "Connections", len(conns), n)
	for _, s := range conns {
		bucketHeader(&b, len(s.Conns), s.Expire)
		for _, c := range s.Conns {
			b.WriteString("\tip: ")
			b.WriteString(c.Remote)
			b.WriteString(" sessionId: 0x")
			b.WriteString(hex(c.SessionID))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// setsHeader writes ExpiryQueue.dump's first line, prefixed by its owner's word.
func setsHeader(b *strings.Builder, owner string, sets, elems int) {
	b.WriteString(owner)
	b.WriteString(" Sets (")
	b.WriteString(strconv.Itoa(sets))
	b.WriteString(")/(")
	b.WriteString(strconv.Itoa(elems))
	b.WriteString("):\n")
}

func bucketHeader(b *strings.Builder, n int, at time.Time) {
	b.WriteString(strconv.Itoa(n))
	b.WriteString(" expire at ")
	b.WriteString(javaDate(at))
	b.WriteString(":\n")
}

// EnvInfo is the process environment envi reports. The server fills it (os.Hostname,
// runtime.Version, ...). Empty strings and negative sizes print as "<NA>", ZooKeeper's
// marker for an unknown property.
type EnvInfo struct {
	Version   string // as ServerStats.Version
	HostName  string
	GoVersion string // runtime.Version()
	Compiler  string // runtime.Compiler
	GOOS      string // runtime.GOOS, printed the Java way (os.name=Linux)
	GOARCH    string // runtime.GOARCH, printed the Java way (os.arch=amd64, aarch64)
	OSVersion string // kernel release (uname -r), Java's os.version
	UserName  string
	UserHome  string
	UserDir   string // working directory
	TempDir   string
	// Memory in bytes, printed in whole MiB as Java does ("123MB"): free and total are the
	// Go heap's idle and obtained-from-OS sizes; max is the soft memory limit (debug.
	// SetMemoryLimit), negative when there is none.
	MemFree, MemMax, MemTotal int64
}

// Env returns envi's key=value pairs. Keys keep ZooKeeper's names and order where they mean
// the same thing; the java.* keys, which describe a JVM zkd does not have, are replaced by
// go.version and go.compiler, and java.io.tmpdir by the neutral io.tmpdir.
func Env(e EnvInfo) []KV {
	na := func(s string) string {
		if s == "" {
			return "<NA>"
		}
		return s
	}
	mb := func(n int64) string {
		if n < 0 {
			return "<NA>"
		}
		return strconv.FormatInt(n/(1024*1024), 10) + "MB"
	}
	return []KV{
		{"zookeeper.version", na(e.Version)},
		{"host.name", na(e.HostName)},
		{"go.version", na(e.GoVersion)},
		{"go.compiler", na(e.Compiler)},
		{"io.tmpdir", na(e.TempDir)},
		{"os.name", na(javaOSName(e.GOOS))},
		{"os.arch", na(javaOSArch(e.GOARCH))},
		{"os.version", na(e.OSVersion)},
		{"user.name", na(e.UserName)},
		{"user.home", na(e.UserHome)},
		{"user.dir", na(e.UserDir)},
		{"os.memory.free", mb(e.MemFree)},
		{"os.memory.max", mb(e.MemMax)},
		{"os.memory.total", mb(e.MemTotal)},
	}
}

// Envi is the answer of envi: "Environment:" and one key=value line per pair.
func Envi(env []KV) string { return "Environment:\n" + Conf(env) }

func javaOSName(goos string) string {
	switch goos {
	case "linux":
		return "Linux"
	case "darwin":
		return "Mac OS X"
	case "windows":
		return "Windows"
	case "freebsd":
		return "FreeBSD"
	case "openbsd":
		return "OpenBSD"
	case "netbsd":
		return "NetBSD"
	case "solaris", "illumos":
		return "SunOS"
	case "aix":
		return "AIX"
	}
	return goos
}

func javaOSArch(goarch string) string {
	switch goarch {
	case "arm64":
		return "aarch64"
	case "386":
		return "x86"
	}
	return goarch
}
