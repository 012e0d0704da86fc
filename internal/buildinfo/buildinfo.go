// Package buildinfo owns what a zkd binary knows about its own build: the main module's
// version, the VCS revision, commit time and dirty flag the go command stamped into it, and
// the Go version. zkd --version, zkcli --version and version, and the server's srvr, envi and
// AdminServer answers read it from here, so every place names a build the same way.
package buildinfo

import (
	"regexp"
	"runtime/debug"
	"strings"
	"time"
)

// DevVersion is the version of a binary built from a work tree (go build, go run, go test),
// where the go command stamps "(devel)" or nothing as the main module's version.
const DevVersion = "0.0.0-dev"

// Info describes one build.
type Info struct {
	Module    string // main module path, "" when unknown
	Version   string // main module version without its "v"; "-dev" between tags (devVersion)
	Revision  string // vcs.revision: the full commit hash, "" when not stamped
	Time      string // vcs.time: the commit's time (RFC 3339), "" when not stamped
	Modified  bool   // vcs.modified: the work tree had uncommitted changes
	GoVersion string // the toolchain that built the binary, e.g. go1.26.0
}

// read is debug.ReadBuildInfo, replaceable by tests.
var read = debug.ReadBuildInfo

// Get returns the running binary's build information. It never fails: what the binary does not
// carry (a test binary has no VCS stamps) is left empty.
func Get() Info {
	bi, ok := read()
	if !ok {
		return Info{Version: DevVersion}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Module: bi.Main.Path, Version: devVersion(bi.Main.Version), GoVersion: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// pseudo is the commit part of a Go pseudo-version (v0.0.0-20261127100000-abcdefabcdef,
// v1.2.4-0.20261127100000-abcdefabcdef, v1.2.3-pre.0.20261127100000-abcdefabcdef).
var pseudo = regexp.MustCompile(`(-0\.|\.0\.|-)[0-9]{14}-[0-9a-f]{12}$`)

// devVersion is the version to show for the main module's: without its "v", and for a build
// between tags (the go command stamps a pseudo-version from the VCS, or "(devel)") the base
// with "-dev", since String names the commit anyway.
func devVersion(v string) string {
	v = strings.TrimSuffix(v, "+dirty") // String says "-dirty" after the commit
	switch {
	case v == "" || v == "(devel)":
		return DevVersion
	case pseudo.MatchString(v):
		v = pseudo.ReplaceAllString(v, "") + "-dev"
	}
	return strings.TrimPrefix(v, "v")
}

// ShortRevision is the revision's first 7 hex digits (git's short form), with "-dirty" when
// the tree was modified; "" when the build carries no revision.
func (in Info) ShortRevision() string {
	r := in.Revision
	if len(r) > 7 {
		r = r[:7]
	}
	if r != "" && in.Modified {
		r += "-dirty"
	}
	return r
}

// String is the one-line form, after the program's name:
// "0.0.0-dev (commit abc1234, 2026-11-27T10:00:00Z, go1.26.0)". Parts the build does not
// carry are left out: "0.0.0-dev (go1.26.0)".
func (in Info) String() string {
	var parts []string
	if r := in.ShortRevision(); r != "" {
		parts = append(parts, "commit "+r)
	}
	if in.Time != "" {
		parts = append(parts, in.Time)
	}
	if in.GoVersion != "" {
		parts = append(parts, in.GoVersion)
	}
	if len(parts) == 0 {
		return in.Version
	}
	return in.Version + " (" + strings.Join(parts, ", ") + ")"
}

// Line is what a program prints for --version: its name, then String.
func Line(program string) string { return program + " " + Get().String() }

// ZooKeeperVersion is the version srvr, mntr, envi and the AdminServer report, in
// ZooKeeper's shape "3.8.0-<build>, built on 2026-11-27 10:00 UTC": tools read the leading
// x.y.z (the ZooKeeper release zkd answers as) to decide which protocol features exist, and
// an operator moving an ensemble one member at a time reads the rest to tell which build
// each member runs. A build without a commit time says "built on unknown".
func (in Info) ZooKeeperVersion(compatible string) string {
	build := "zkd-" + in.Version
	if r := in.ShortRevision(); r != "" {
		build += "-" + r
	}
	built := "unknown"
	if t, err := time.Parse(time.RFC3339, in.Time); err == nil {
		built = t.UTC().Format("2006-01-02 15:04") + " UTC"
	}
	return compatible + "-" + build + ", built on " + built
}
