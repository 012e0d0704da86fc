package zkcli

import (
	"reflect"
	"testing"

	"github.com/zkd-io/zkd/zktest"
)

func TestCompleter(t *testing.T) {
	srv := zktest.Start(t)
	sh := newShell(t, srv.Addr(), false)
	sh.run("create /foo", 0, "", "Created /foo\n")
	sh.run("create /foo/bar", 0, "", "Created /foo/bar\n")
	sh.run("create /foo/baz", 0, "", "Created /foo/baz\n")
	sh.run("create /fox", 0, "", "Created /fox\n")
	c := &completer{ctx: t.Context(), s: sh.s}
	for _, tc := range []struct {
		line string
		want []string
		n    int
	}{
		{"ls /fo", []string{"o", "x"}, 2},
		{"ls /foo/b", []string{"ar", "az"}, 1},
		{"ls /foo/bar/", nil, 0},
		{"get -s /", []string{"foo", "fox", "zookeeper"}, 0},
		{"ls /nope/x", nil, 1},
		{"getE", []string{"phemerals "}, 4},
		{"  deletea", []string{"ll "}, 7},
		{"ls x", nil, 0},
		{"ls", []string{" "}, 2},
	} {
		got, n := c.Do([]rune(tc.line), len([]rune(tc.line)))
		var words []string
		for _, g := range got {
			words = append(words, string(g))
		}
		if !reflect.DeepEqual(words, tc.want) || n != tc.n {
			t.Errorf("complete %q = %q, %d; want %q, %d", tc.line, words, n, tc.want, tc.n)
		}
	}
	s := New(Options{})
	s.host = "h:1/x"
	if got := prompt(s); got != "[zk: h:1/x(CLOSED) 0] " {
		t.Errorf("prompt %q", got)
	}
}
