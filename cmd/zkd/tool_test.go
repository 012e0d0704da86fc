package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestToolCommands(t *testing.T) {
	const td = "../../internal/datatool/testdata/zk38/"
	run := func(args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := runTool(args, &out, &errb)
		return out.String(), err
	}
	want, err := os.ReadFile(td + "log.3b.txt")
	if err != nil {
		t.Fatal(err)
	}
	// Dates print in time.Local (as Java's in its default zone), so only the shape is
	// compared here; internal/datatool compares the text itself in UTC.
	got, err := run("log", td+"log.3b")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(got, "\n") != strings.Count(string(want), "\n") || !strings.HasSuffix(got, "EOF reached after 14 txns.\n") {
		t.Errorf("tool log:\n%s", got)
	}
	// Flags after the file work too.
	if got, err = run("log", td+"log.3b", "--json"); err != nil || strings.Count(got, "\n") != 14 || !strings.HasPrefix(got, "{") {
		t.Errorf("tool log --json: %v\n%s", err, got)
	}
	if got, err = run("snapshot", "-d", td+"snapshot.48"); err != nil || !strings.Contains(got, "  data = aGVsbG8=\n") {
		t.Errorf("tool snapshot -d: %v\n%s", err, got)
	}
	if got, err = run("verify", td); err != nil || strings.Count(got, "ok  ") != 8 {
		t.Errorf("tool verify: %v\n%s", err, got)
	}
	if _, err = run("diff", td+"snapshot.48", td+"snapshot.48"); err != nil {
		t.Errorf("tool diff of one file: %v", err)
	}
	if _, err = run("diff", td+"snapshot.22.snappy", td+"snapshot.48"); err == nil {
		t.Error("tool diff of different snapshots succeeded")
	}
	if got, err = run("summary", td+"snapshot.48", "--top", "1"); err != nil || !strings.Contains(got, "/bulk\n") || strings.Contains(got, "/app\n") {
		t.Errorf("tool summary: %v\n%s", err, got)
	}
	for _, bad := range [][]string{{"nope"}, {"log"}, {"diff", "x"}, {}} {
		if _, err := run(bad...); err == nil {
			t.Errorf("tool %q succeeded", bad)
		}
	}
}
