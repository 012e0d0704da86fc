package config

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the key table")

// The committed docs/configuration.md is what the key table generates: change the table, then
// run go test ./internal/config -run TestConfigDocs -update.
func TestConfigDocs(t *testing.T) {
	path := filepath.Join("..", "..", filepath.FromSlash(DocsPath))
	want := Markdown()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it with -update)", err)
	}
	if string(got) != want {
		t.Errorf("%s is not what the key table generates; run go test ./internal/config -run TestConfigDocs -update", DocsPath)
	}
}
