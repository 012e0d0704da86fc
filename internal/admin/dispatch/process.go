package dispatch

import (
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/zkd-io/zkd/internal/admin"
)

// The process facts the commands report: they belong to the process, not to the server's
// state, so they are read here rather than asked of the Backend.

func dirSizes(info admin.Info) (data, log int64) {
	return dirSize(info.SnapDir), dirSize(info.LogDir)
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

// withFDs adds the file descriptor counts, which read /proc, to stats taken on the core.
func withFDs(st admin.ServerStats) admin.ServerStats {
	st.OpenFileDescriptors, st.MaxFileDescriptors = openFDs(), maxFDs()
	return st
}

// lastSnapshot is the newest complete snapshot's zxid and the time its file was written
// (epoch seconds), or -1 and -1 when there is none, as ZooKeeper's getLastSnapshotInfo.
func lastSnapshot(info admin.Info) (zxid, unixSeconds int64) {
	zxid = info.SnappedZxid
	fi, err := os.Stat(filepath.Join(info.SnapDir, "snapshot."+strconv.FormatInt(zxid, 16)))
	if err != nil {
		return -1, -1
	}
	return zxid, fi.ModTime().Unix()
}

func envInfo() admin.EnvInfo {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	e := admin.EnvInfo{
		Version:   admin.Version,
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
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimRight(string(b), "\r\n")
}
