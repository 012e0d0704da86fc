package layout

import (
	"errors"
	"fmt"
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/zkd-io/zkd"

// pureCores are the packages that must stay free of I/O, clocks and goroutines.
var pureCores = []string{
	"internal/datatree", "internal/watch", "internal/session", "internal/election",
	"internal/zab", "internal/prep", "internal/auth", "internal/quorum",
}

// forbiddenInCores are the standard packages a pure core may not import (and their
// subpackages), with the exceptions that are plain values.
var (
	forbiddenInCores = []string{"net", "os", "syscall", "time", "sync"}
	allowedInCores   = []string{"net/netip"}
)

// clientMayImport are the zkd packages the client may depend on.
var clientMayImport = []string{"jute", "internal/clientwire", "internal/chcompress", "internal/ext", "internal/sasl", "internal/sasl/gssapi"}

// loadImports reads every package of the module (non-test files, this platform's build
// tags) and returns its imports by path relative to the module ("." for none).
func loadImports(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	pkgs := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "third_party") {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		pkgs[filepath.ToSlash(rel)] = p.Imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 30 || pkgs["server"] == nil {
		t.Fatalf("read %d packages (server among them: %v): the walk went wrong", len(pkgs), pkgs["server"] != nil)
	}
	return pkgs
}

// local is an import path made relative to the module, and whether it is zkd's.
func local(imp string) (string, bool) {
	if imp == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(imp, module+"/")
	return rel, ok
}

// moduleDeps is every zkd package pkg depends on, directly or not.
func moduleDeps(pkgs map[string][]string, pkg string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, imp := range pkgs[p] {
			if rel, ok := local(imp); ok && !seen[rel] {
				seen[rel] = true
				walk(rel)
			}
		}
	}
	walk(pkg)
	return seen
}

func forbiddenStd(imp string) bool {
	if slices.Contains(allowedInCores, imp) {
		return false
	}
	for _, f := range forbiddenInCores {
		if imp == f || strings.HasPrefix(imp, f+"/") {
			return true
		}
	}
	return false
}

func TestImportRules(t *testing.T) {
	for _, v := range violations(loadImports(t)) {
		t.Error(v)
	}
}

// violations is every broken import rule in pkgs (imports by package, relative to the module).
func violations(pkgs map[string][]string) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, core := range pureCores {
		imps, ok := pkgs[core]
		if !ok {
			add("pure core %s not found", core)
			continue
		}
		for _, imp := range imps {
			if forbiddenStd(imp) {
				add("pure core %s imports %s: cores do no I/O, keep no clock and start no goroutines", core, imp)
			}
			if rel, ok := local(imp); ok && rel != "jute" && !slices.Contains(pureCores, rel) {
				add("pure core %s imports %s, which is not a pure core or jute", core, rel)
			}
		}
	}
	for pkg := range pkgs {
		under := func(root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }
		if (under("internal/admin") || under("internal/storage")) && moduleDeps(pkgs, pkg)["server"] {
			add("%s depends on server: the server depends on it, not the reverse", pkg)
		}
	}
	// The harnesses (internal/testing/...) are for tests: product code, the binaries among
	// it, never depends on them, so nothing a test drives ships.
	for pkg := range pkgs {
		if strings.HasPrefix(pkg, "internal/testing/") || pkg == "zktest" || strings.HasPrefix(pkg, "zktest/") {
			continue
		}
		for dep := range moduleDeps(pkgs, pkg) {
			if strings.HasPrefix(dep, "internal/testing/") {
				add("%s depends on the test harness %s", pkg, dep)
			}
		}
	}
	clients := 0
	for pkg := range pkgs {
		if pkg != "zk" && !strings.HasPrefix(pkg, "zk/") {
			continue
		}
		clients++
		for dep := range moduleDeps(pkgs, pkg) {
			if dep == "zk" || strings.HasPrefix(dep, "zk/") || slices.Contains(clientMayImport, dep) {
				continue
			}
			add("client package %s depends on %s: the client imports from zkd only %v", pkg, dep, clientMayImport)
		}
	}
	if clients == 0 {
		add("no client package found")
	}
	return out
}

// The rules catch what they are for: a core importing time, storage importing server, the
// client importing a core.
func TestImportRulesCatch(t *testing.T) {
	pkgs := map[string][]string{
		"internal/zab":          {"time", "net/netip"},
		"internal/storage":      {module + "/internal/config"},
		"internal/config":       {module + "/server"},
		"zk":                    {module + "/internal/datatree"},
		"cmd/zkd":               {module + "/internal/testing/proc"},
		"zktest":                {module + "/internal/testing/proc"},
		"internal/testing/proc": nil,
	}
	for _, core := range pureCores {
		if _, ok := pkgs[core]; !ok {
			pkgs[core] = nil
		}
	}
	got := strings.Join(violations(pkgs), "\n")
	for _, want := range []string{
		"pure core internal/zab imports time",
		"internal/storage depends on server",
		"client package zk depends on internal/datatree",
		"cmd/zkd depends on the test harness internal/testing/proc",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no violation %q among:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"net/netip", "zktest depends"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("violation %q reported wrongly among:\n%s", unwanted, got)
		}
	}
}
