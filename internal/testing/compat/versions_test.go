package compat

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/versiondiff"
)

// TestVersionDiffsTable keeps the table whole: every field filled, ids unique and sorted,
// and every ZooKeeper id a zkdDiffers step of the differential tests cites has a row.
func TestVersionDiffsTable(t *testing.T) {
	seen := map[string]bool{}
	prev := ""
	for _, d := range versiondiff.Table {
		if d.ID == "" || d.What == "" || d.ZK380 == "" || d.ZK39 == "" || d.Zkd == "" || d.Why == "" {
			t.Errorf("row %+v has an empty field", d)
		}
		if seen[d.ID] {
			t.Errorf("row %s twice", d.ID)
		}
		if d.ID < prev {
			t.Errorf("row %s after %s: keep the ids in order", d.ID, prev)
		}
		seen[d.ID], prev = true, d.ID
	}
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	jira := regexp.MustCompile(`ZOOKEEPER-\d+`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "zkdDiffers(") && !strings.Contains(line, "zk4240") {
				continue
			}
			for _, id := range jira.FindAllString(line, -1) {
				if !seen[id] && !related(id) {
					t.Errorf("%s: zkdDiffers cites %s, which has no row in versiondiff.Table", f, id)
				}
			}
		}
	}
}

// related reports ids that a row names with another (ZOOKEEPER-4471 and -4472 under 4466).
func related(id string) bool {
	for _, d := range versiondiff.Table {
		if strings.Contains(d.What, strings.TrimPrefix(id, "ZOOKEEPER")) {
			return true
		}
	}
	return false
}
