package docs

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/versiondiff"
)

var update = flag.Bool("update", false, "rewrite the generated part of differences.md from internal/versiondiff")

// The generated part of differences.md lies between these lines; the hand-written sections
// around them say what the table does not hold.
const (
	beginGenerated = "<!-- Generated from internal/versiondiff's Table: do not edit between these markers; edit\nthe table, then run go test ./docs -run TestDifferencesPage -update. -->\n"
	endGenerated   = "<!-- end of the generated part -->\n"
)

// TestDifferencesPage fails while docs/differences.md does not show internal/versiondiff's
// table as it is: the manual's list of differences is the one the differential tests use.
func TestDifferencesPage(t *testing.T) {
	const path = "differences.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	head, rest, ok := strings.Cut(page, beginGenerated)
	if !ok {
		t.Fatalf("%s lacks the line opening its generated part:\n%s", path, beginGenerated)
	}
	_, tail, ok := strings.Cut(rest, endGenerated)
	if !ok {
		t.Fatalf("%s lacks the line closing its generated part:\n%s", path, endGenerated)
	}
	want := head + beginGenerated + "\n" + versiondiff.Markdown(versiondiff.Table) + "\n" + endGenerated + tail
	if page == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s does not show internal/versiondiff's table as it is; run\n\tgo test ./docs -run TestDifferencesPage -update\n%s", path, firstDiff(page, want))
}

// firstDiff names the first line where got and want part, which says more than two pages.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n have %s\n want %s", i+1, gl, wl)
		}
	}
	return ""
}
