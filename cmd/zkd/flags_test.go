package main

import (
	"flag"
	"strings"
	"testing"

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
