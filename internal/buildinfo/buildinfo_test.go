package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, c := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"release", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/zkd-io/zkd", Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc1234def5678"}, {Key: "vcs.time", Value: "2026-11-27T10:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			"1.2.3 (commit abc1234, 2026-11-27T10:00:00Z, go1.26.0)"},
		{"dirty work tree", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc1234def5678"}, {Key: "vcs.time", Value: "2026-11-27T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"0.0.0-dev (commit abc1234-dirty, 2026-11-27T10:00:00Z, go1.26.0)"},
		{"pseudo-version of a dirty clone", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-20261127100000-abc1234def56+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc1234def5678"}, {Key: "vcs.time", Value: "2026-11-27T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"0.0.0-dev (commit abc1234-dirty, 2026-11-27T10:00:00Z, go1.26.0)"},
		{"pseudo-version after a tag", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.4-0.20261127100000-abc1234def56"}}, "1.2.4-dev (go1.26.0)"},
		{"pseudo-version after a pre-release", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3-rc.1.0.20261127100000-abc1234def56"}}, "1.2.3-rc.1-dev"},
		{"no vcs stamps", debug.BuildInfo{GoVersion: "go1.26.0"}, "0.0.0-dev (go1.26.0)"},
		{"nothing", debug.BuildInfo{}, "0.0.0-dev"},
	} {
		if got := fromBuildInfo(&c.bi).String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestGet(t *testing.T) {
	in := Get()
	// A test binary carries its toolchain and no module version.
	if in.GoVersion != runtime.Version() || in.Version == "" {
		t.Errorf("Get() = %+v; want GoVersion %s and a version", in, runtime.Version())
	}
	if l := Line("zkd"); !strings.HasPrefix(l, "zkd "+in.Version) || !strings.Contains(l, runtime.Version()) {
		t.Errorf("Line = %q", l)
	}

	old := read
	t.Cleanup(func() { read = old })
	read = func() (*debug.BuildInfo, bool) { return nil, false }
	if got := Get(); got != (Info{Version: DevVersion}) {
		t.Errorf("without build info: %+v", got)
	}
}

// srvr's version keeps ZooKeeper's shape, so that tools reading the leading x.y.z and the
// "built on" date still parse it, while naming the build.
func TestZooKeeperVersion(t *testing.T) {
	for _, c := range []struct {
		in   Info
		want string
	}{
		{Info{Version: "1.2.3", Revision: "abc1234def5678", Time: "2026-11-27T10:00:59Z"}, "3.8.0-zkd-1.2.3-abc1234, built on 2026-11-27 10:00 UTC"},
		{Info{Version: "0.0.0-dev", Revision: "abc1234def5678", Time: "2026-11-27T11:00:00+01:00", Modified: true}, "3.8.0-zkd-0.0.0-dev-abc1234-dirty, built on 2026-11-27 10:00 UTC"},
		{Info{Version: "0.0.0-dev"}, "3.8.0-zkd-0.0.0-dev, built on unknown"},
	} {
		if got := c.in.ZooKeeperVersion("3.8.0"); got != c.want {
			t.Errorf("%+v: %q, want %q", c.in, got, c.want)
		}
	}
}
