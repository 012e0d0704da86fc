package layout

import (
	"errors"
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
var clientMayImport = []string{"jute", "internal/sasl", "internal/sasl/gssapi"}

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
	pkgs := loadImports(t)
	for _, core := range pureCores {
		imps, ok := pkgs[core]
		if !ok {
			t.Errorf("pure core %s not found", core)
			continue
		}
		for _, imp := range imps {
			if forbiddenStd(imp) {
				t.Errorf("pure core %s imports %s: cores do no I/O, keep no clock and start no goroutines", core, imp)
			}
			if rel, ok := local(imp); ok && rel != "jute" && !slices.Contains(pureCores, rel) {
				t.Errorf("pure core %s imports %s, which is not a pure core or jute", core, rel)
			}
		}
	}
	for _, pkg := range []string{"internal/admin", "internal/storage"} {
		if moduleDeps(pkgs, pkg)["server"] {
			t.Errorf("%s depends on server: the server depends on it, not the reverse", pkg)
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
			t.Errorf("client package %s depends on %s: the client imports from zkd only %v", pkg, dep, clientMayImport)
		}
	}
	if clients == 0 {
		t.Error("no client package found")
	}
}

// The rules catch what they are for: a core importing time, storage importing server, the
// client importing a core.
func TestImportRulesCatch(t *testing.T) {
	pkgs := map[string][]string{
		"internal/zab":     {"time", "net/netip"},
		"internal/storage": {module + "/internal/config"},
		"internal/config":  {module + "/server"},
		"zk":               {module + "/internal/datatree"},
	}
	if !forbiddenStd(pkgs["internal/zab"][0]) || forbiddenStd(pkgs["internal/zab"][1]) {
		t.Error("time must be forbidden in a core, net/netip allowed")
	}
	if !moduleDeps(pkgs, "internal/storage")["server"] {
		t.Error("storage's indirect import of server went unseen")
	}
	if !moduleDeps(pkgs, "zk")["internal/datatree"] {
		t.Error("the client's import of a core went unseen")
	}
}
