package tlsconf

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A store rewritten within one tick of the file clock, with the same size, is still a new
// version: file times alone would miss it (and then never reload it).
func TestStampSeesSameSizeSameTimeRewrite(t *testing.T) {
	f := filepath.Join(t.TempDir(), "store.pem")
	if err := os.WriteFile(f, []byte("first version"), 0o600); err != nil {
		t.Fatal(err)
	}
	mod := time.Unix(1_700_000_000, 0)
	if err := os.Chtimes(f, mod, mod); err != nil {
		t.Fatal(err)
	}
	src := &source{s: Settings{KeyStore: Store{Location: f}}}
	before := src.stampFiles()
	if err := os.WriteFile(f, []byte("other version"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(f, mod, mod); err != nil {
		t.Fatal(err)
	}
	after := src.stampFiles()
	if before[0].mod != after[0].mod || before[0].size != after[0].size {
		t.Fatalf("set-up: time or size differ: %+v %+v", before[0], after[0])
	}
	if before[0] == after[0] {
		t.Error("a rewrite with the same size and time looks unchanged")
	}
	if again := src.stampFiles(); again[0] != after[0] {
		t.Error("an unchanged file looks changed")
	}
}
