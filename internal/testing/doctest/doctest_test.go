package doctest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// page is a made-up manual page: what a writer would put in docs/, right and wrong.
const page = "# A page\n" +
	"\n" +
	"```sh\n" +
	"zkd --config zoo.cfg   # shown, never run\n" +
	"```\n" +
	"\n" +
	"```sh runnable\n" +
	"echo hello 127.0.0.1:2181\n" +
	"echo second line\n" +
	"```\n" +
	"\n" +
	"```output\n" +
	"hello 127.0.0.1:2181\n" +
	"second\n" +
	"```\n" +
	"\n" +
	"````markdown\n" +
	"```sh runnable\n" +
	"false   # an example of the marker inside a longer fence: not a block\n" +
	"```\n" +
	"````\n" +
	"\n" +
	"```sh runnable needs=curl,nc\n" +
	"exit 3\n" +
	"```\n"

func TestExtract(t *testing.T) {
	blocks, err := Extract("page.md", page)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 {
		t.Fatalf("%d blocks, want 2: %+v", len(blocks), blocks)
	}
	b := blocks[0]
	if b.Name() != "page.md:7" || b.Script != "echo hello 127.0.0.1:2181\necho second line\n" || len(b.Needs) != 0 {
		t.Errorf("first block %+v", b)
	}
	if strings.Join(b.Output, "|") != "hello 127.0.0.1:2181|second" {
		t.Errorf("first block's output %q", b.Output)
	}
	if b := blocks[1]; b.Name() != "page.md:23" || strings.Join(b.Needs, ",") != "curl,nc" || b.Output != nil {
		t.Errorf("second block %+v", b)
	}
}

// TestExtractRefuses: what would silently run nothing is an error, not zero blocks.
func TestExtractRefuses(t *testing.T) {
	for _, tc := range []struct{ name, page, want string }{
		{"unclosed", "```sh runnable\necho hi\n", "never closed"},
		{"attribute", "```sh runnable timeout=5\necho hi\n```\n", "unknown attribute"},
		{"typo", "```sh runable\necho hi\n```\n", "info string"},
		{"other shell", "```bash runnable\necho hi\n```\n", "info string"},
		{"case", "```sh Runnable\necho hi\n```\n", "info string"},
		{"stray output", "```sh\necho hi\n```\n\n```output\nhi\n```\n", "must follow a runnable block"},
		{"output after prose", "```sh runnable\necho hi\n```\n\nsome prose\n\n```output\nhi\n```\n", "must follow a runnable block"},
	} {
		if _, err := Extract("p.md", tc.page); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// TestRun: a block passes only when it exits 0 and prints what its output block says, so a
// broken command in a page fails the doc test.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// A made-up tool in Path stands for the zkd the doc test builds.
	if err := os.WriteFile(filepath.Join(bin, "zkdfake"), []byte("#!/bin/sh\necho fake $1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := Env{Dir: dir, Path: []string{bin}, Replace: map[string]string{"127.0.0.1:2181": "127.0.0.1:45678"}, Timeout: 5 * time.Second}
	for _, tc := range []struct {
		name   string
		script string
		output []string
		fails  string // "" when the block must pass
	}{
		{"passes", "zkdfake 127.0.0.1:2181\n", []string{"fake 127.0.0.1:2181"}, ""},
		{"no output stated", "true\n", nil, ""},
		{"in the working directory", "touch here && test -f " + filepath.Join(dir, "here") + "\n", nil, ""},
		{"exit status", "zkdfake x\nexit 3\n", nil, "exit status 3"},
		{"an earlier command fails", "false\necho fine\n", nil, "exit status 1"},
		{"a pipe fails", "false | cat\n", nil, "exit status 1"},
		{"unknown command", "no-such-command-anywhere\n", nil, "exit status 127"},
		{"wrong output", "echo imok\n", []string{"imnotok"}, `lacks "imnotok"`},
		{"output out of order", "echo b\necho a\n", []string{"a", "b"}, `lacks "b"`},
		{"hangs", "sleep 60\n", nil, "not done after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Block{Page: "p.md", Line: 1, Script: tc.script, Output: tc.output}
			e := env
			if tc.name == "hangs" {
				e.Timeout = 300 * time.Millisecond
			}
			out, err := Run(b, e)
			switch {
			case tc.fails == "" && err != nil:
				t.Errorf("failed: %v\n%s", err, out)
			case tc.fails != "" && (err == nil || !strings.Contains(err.Error(), tc.fails)):
				t.Errorf("error %v, want one saying %q\n%s", err, tc.fails, out)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	got := "Connecting\nCreated /a\n\nworld\n"
	if err := Match(got, []string{"Created /a", "world"}); err != nil {
		t.Error(err)
	}
	if err := Match(got, []string{"world", "Created"}); err == nil {
		t.Error("out of order: matched")
	}
	if err := Match(got, []string{"Created", "Created"}); err == nil {
		t.Error("one line matched twice")
	}
}
