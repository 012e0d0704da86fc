package datatool

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The zk38 files were written by Apache ZooKeeper 3.8.0 (Debian) with
// -Dzookeeper.snapshot.compression.method=snappy, snapCount=40, extended types on; the
// logs are cut after their end marker (ZooKeeper's are 64 MiB of preallocated zeros). The
// .txt files are what ZooKeeper's own TxnLogToolkit and SnapshotFormatter printed for them
// (java -Duser.timezone=UTC ..., on Java 17); testdata/zk38/README says how they were made.

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

func TestDumpSnapshotMatchesSnapshotFormatter(t *testing.T) {
	for _, name := range []string{"snapshot.0.snappy", "snapshot.22.snappy", "snapshot.39.snappy", "snapshot.48"} {
		var out bytes.Buffer
		if err := DumpSnapshot(&out, filepath.Join("testdata", "zk38", name), Options{Loc: time.UTC}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		diffText(t, name, out.String(), golden(t, name+".txt"))
	}
}

func TestDumpSnapshotDataAndNcdu(t *testing.T) {
	var out bytes.Buffer
	if err := DumpSnapshot(&out, filepath.Join("testdata", "zk38", "snapshot.48"), Options{Loc: time.UTC, Data: true}); err != nil {
		t.Fatal(err)
	}
	diffText(t, "snapshot.48 -d", out.String(), golden(t, "snapshot.48.d.txt"))

	// SnapshotFormatter -json stamps the time it ran: take it from the golden file.
	want := golden(t, "snapshot.39.snappy.json")
	const key = `"timestamp":`
	i := strings.Index(want, key) + len(key)
	j := i + strings.IndexByte(want[i:], '}')
	ms, err := strconv.ParseInt(want[i:j], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := DumpNcdu(&out, filepath.Join("testdata", "zk38", "snapshot.39.snappy"), time.UnixMilli(ms)); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Errorf("ncdu output differs:\n got %s\nwant %s", out.String(), want)
	}
	if !json.Valid(out.Bytes()) {
		t.Error("ncdu output is not JSON")
	}
}
