package datatool

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The zk38 files were written by Apache ZooKeeper 3.8.0 (Debian) with
// -Dzookeeper.snapshot.compression.method=snappy, snapCount=40, extended types on; the
// logs are cut after their end marker (ZooKeeper's are 64 MiB of preallocated zeros). The
// .txt files are what ZooKeeper's own TxnLogToolkit and SnapshotFormatter printed for them
// (java -Duser.timezone=UTC ..., on Java 17). See testdata/zk38/README.

func golden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "zk38", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func diffText(t *testing.T, name, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("%s: line %d differs:\n got: %q\nwant: %q", name, i+1, g, w)
		}
	}
}

func TestDumpLogMatchesTxnLogToolkit(t *testing.T) {
	for _, name := range []string{"log.1", "log.24", "log.3b", "log.49"} {
		var out bytes.Buffer
		if err := DumpLog(&out, filepath.Join("testdata", "zk38", name), Options{Loc: time.UTC}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		diffText(t, name, out.String(), golden(t, name+".txt"))
	}
}
