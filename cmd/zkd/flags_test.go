package main

import (
	"flag"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/buildinfo"
	"github.com/zkd-io/zkd/internal/config"
)

// Every flag is in config.Flags (so docs/configuration.md lists it) and every row there is a
// flag; --help points to the key table.
func TestFlagsDocumented(t *testing.T) {
	fset, _ := newFlagSet()
	defined := map[string]bool{}
	fset.VisitAll(func(f *flag.Flag) { defined[f.Name] = true })
	for _, f := range config.Flags {
		if !defined[f.Name] {
			t.Errorf("config.Flags lists --%s, which zkd does not define", f.Name)
		}
		delete(defined, f.Name)
	}
	for name := range defined {
		t.Errorf("--%s is not in config.Flags", name)
	}
	var out strings.Builder
	fset.SetOutput(&out)
	if err := fset.Parse([]string{"--help"}); err != flag.ErrHelp {
		t.Fatalf("--help: %v", err)
	}
	if !strings.Contains(out.String(), config.DocsPath) || !strings.Contains(out.String(), "--config-keys") {
		t.Errorf("--help does not point to the key table:\n%s", out.String())
	}
}

// zkd --version names the build the way srvr does, and exits 0 without serving.
func TestVersionFlag(t *testing.T) {
	out, err := exec.Command(zkdBinary(t), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("zkd --version: %v\n%s", err, out)
	}
	want := buildinfo.Line("zkd")
	// The test binary and zkd are built alike (go test, go build -race): the same version
	// and toolchain; the build's own stamps, if any, follow.
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "zkd "+buildinfo.Get().Version) || !strings.Contains(got, runtime.Version()) {
		t.Errorf("zkd --version printed %q; want the shape of %q", got, want)
	}
}
