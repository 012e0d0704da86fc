package zkcli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

func TestSplitLine(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string
	}{
		{"ls /", []string{"ls", "/"}},
		{"  create   /a   b  ", []string{"create", "/a", "b"}},
		{`create /a "two words"`, []string{"create", "/a", "two words"}},
		{`create /a 'it is'`, []string{"create", "/a", "it is"}},
		{`set /a x"y`, []string{"set", "/a", `x"y`}},
		{`set /a ""`, []string{"set", "/a", ""}},
		{"get\t/a", []string{"get", "/a"}},
	} {
		if got := splitLine(c.line); !reflect.DeepEqual(got, c.want) {
			t.Errorf("splitLine(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}

func TestParseOptions(t *testing.T) {
	set := opts(flag("s", "stats"), flag("w", "watch"), valued("v", "version"))
	quota := commands["setquota"].opts
	for _, c := range []struct {
		set     *optSet
		args    []string
		want    map[string][]string
		rest    []string
		wantErr string
	}{
		{set, []string{"get", "-s", "/a"}, map[string][]string{"s": nil}, []string{"get", "/a"}, ""},
		{set, []string{"get", "/a", "-sw"}, map[string][]string{"s": nil, "w": nil}, []string{"get", "/a"}, ""},
		{set, []string{"set", "-v3", "/a", "d"}, map[string][]string{"v": {"3"}}, []string{"set", "/a", "d"}, ""},
		{set, []string{"set", "-v", "-1", "/a"}, map[string][]string{"v": {"-1"}}, []string{"set", "/a"}, ""},
		{set, []string{"set", "-v=4", "/a"}, map[string][]string{"v": {"4"}}, []string{"set", "/a"}, ""},
		{set, []string{"get", "--", "-s"}, map[string][]string{}, []string{"get", "-s"}, ""},
		{set, []string{"get", "-", "/a"}, map[string][]string{}, []string{"get", "-", "/a"}, ""},
		{set, []string{"get", "-x", "/a"}, nil, nil, "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -x"},
		{set, []string{"get", "-sx", "/a"}, nil, nil, "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -sx"},
		{set, []string{"set", "/a", "-v"}, nil, nil, "org.apache.commons.cli.MissingArgumentException: Missing argument for option: v"},
		{quota, []string{"setquota", "/a"}, nil, nil, "org.apache.commons.cli.MissingOptionException: Missing required option: [-n num soft quota, -b bytes soft quota, -N num hard quota, -B bytes hard quota]"},
		{quota, []string{"setquota", "-n", "1", "-b", "2", "/a"}, nil, nil, "org.apache.commons.cli.AlreadySelectedException: The option 'b' was specified but an option from this group has already been selected: 'n'"},
	} {
		cl, err := c.set.parse(c.args)
		if c.wantErr != "" {
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("parse(%q) error %v, want %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parse(%q): %v", c.args, err)
			continue
		}
		if !reflect.DeepEqual(cl.values, c.want) || !reflect.DeepEqual(cl.args, c.rest) {
			t.Errorf("parse(%q) = %q %q, want %q %q", c.args, cl.values, cl.args, c.want, c.rest)
		}
	}
}

func TestValidatePath(t *testing.T) {
	for path, want := range map[string]string{
		"/":           "",
		"/a/b":        "",
		"/a/.b":       "",
		"":            "Path length must be > 0",
		"a":           "Path must start with / character",
		"/a/":         "Path must not end with / character",
		"//a":         `Invalid path string "//a" caused by empty node name specified @1`,
		"/a/../b":     `Invalid path string "/a/../b" caused by relative paths not allowed @4`,
		"/a/./b":      `Invalid path string "/a/./b" caused by relative paths not allowed @3`,
		"/a\x01":      "Invalid path string \"/a\x01\" caused by invalid character @2",
		"/\U0001F600": "Invalid path string \"/\U0001F600\" caused by invalid character @1",
	} {
		err := validatePath(path)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("validatePath(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestStatsTrack(t *testing.T) {
	for in, want := range map[string]string{
		"count=1,bytes=5": "count=1,bytes=5",
		"count=10,bytes=-1=;byteHardLimit=-1;countHardLimit=7": "count=10,bytes=-1=;byteHardLimit=-1;countHardLimit=7",
		"": "count=-1,bytes=-1",
	} {
		if got := parseStatsTrack(in).String(); got != want {
			t.Errorf("StatsTrack(%q) = %q, want %q", in, got, want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the event goroutines' writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// take returns what was written since the last take.
func (b *syncBuffer) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.b.String()
	b.b.Reset()
	return s
}

type shell struct {
	t        *testing.T
	s        *Session
	out, err *syncBuffer
}

func newShell(t *testing.T, addr string, json bool) *shell {
	t.Helper()
	sh := &shell{t: t, out: &syncBuffer{}, err: &syncBuffer{}}
	sh.s = New(Options{Stdout: sh.out, Stderr: sh.err, JSON: json, Timeout: 10 * time.Second})
	if err := sh.s.Connect(context.Background(), addr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.s.Close)
	if json {
		// --json prints events on stderr: stdout is for the documents alone.
		sh.wait(sh.err, "type:None")
		sh.err.take()
		return sh
	}
	sh.waitOut("type:None")
	sh.out.take()
	return sh
}

// run runs a line and checks its exit code, stdout and stderr (exactly).
func (sh *shell) run(line string, code int, stdout, stderr string) {
	sh.t.Helper()
	got := sh.s.Run(context.Background(), line)
	o, e := sh.out.take(), sh.err.take()
	if got != code || o != stdout || e != stderr {
		sh.t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d, %q, %q", line, got, o, e, code, stdout, stderr)
	}
}

// runWait runs a line that must succeed and waits until stdout shows the event it causes.
func (sh *shell) runWait(line, event string) {
	sh.t.Helper()
	if code := sh.s.Run(context.Background(), line); code != 0 {
		sh.t.Fatalf("%s: exit %d, stderr %q", line, code, sh.err.take())
	}
	sh.err.take()
	sh.waitOut(event)
}

// waitOut waits until stdout holds want (events arrive asynchronously).
func (sh *shell) waitOut(want string) {
	sh.t.Helper()
	sh.wait(sh.out, want)
}

// wait waits until b holds want, consuming what it reads.
func (sh *shell) wait(b *syncBuffer, want string) {
	sh.t.Helper()
	var seen strings.Builder
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		seen.WriteString(b.take())
		if strings.Contains(seen.String(), want) {
			return
		}
	}
	sh.t.Fatalf("output never showed %q; saw %q", want, seen.String())
}

func TestCommands(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.ExtendedTypes = true }))
	sh := newShell(t, srv.Addr(), false)
	sh.run("create /a hello", 0, "", "Created /a\n")
	sh.run("create /a x", 1, "", "Node already exists: /a\n")
	sh.run("get /a", 0, "hello\n", "")
	sh.run("create /n", 0, "", "Created /n\n")
	sh.run("get /n", 0, "null\n", "")
	sh.run("get /nope", 1, "", "Node does not exist: /nope\n")
	sh.run("get", 1, "", "get [-s] [-w] path\n")
	sh.run("set -v 5 /a x", 1, "", "version No is not valid : /a\n")
	sh.run("delete /", 1, "", "Arguments are not valid : /\n")
	sh.run("ls a", 1, "", "Path must start with / character\n")
	sh.run("create -s /a/s- x", 0, "", "Created /a/s-0000000000\n")
	sh.run("ls /a", 0, "[s-0000000000]\n", "")
	sh.run("ls -R /a", 0, "/a\n/a/s-0000000000\n", "")
	sh.run("getAcl /a", 0, "'world,'anyone\n: cdrwa\n", "")
	sh.run("getAllChildrenNumber /a", 0, "1\n", "")
	sh.run("sync /a", 0, "Sync is OK\n", "")
	sh.run("whoami", 0, "Auth scheme: User\nip: 127.0.0.1\n", "")
	sh.run("create -e /a/e", 0, "", "Created /a/e\n")
	sh.run("getEphemerals", 0, "[/a/e]\n", "")
	sh.run("create /a/e/x", 1, "", "Ephemerals cannot have children: /a/e/x\n")
	sh.run("delete /a", 1, "", "Node not empty: /a\n")
	sh.run("create /r", 0, "", "Created /r\n")
	sh.run("setAcl /r world:anyone:r", 0, "", "")
	sh.run("set /r x", 1, "", "Insufficient permission : /r\n")
	sh.run("setAcl /r world:anyone:cdrwa", 1, "", "Insufficient permission : /r\n")

	st := sh.s.Run(context.Background(), "stat /n")
	out := sh.out.take()
	for _, want := range []string{"cZxid = 0x", "\nctime = ", "\ndataVersion = 0\n", "\nnumChildren = 0\n", "ephemeralOwner = 0x0\n"} {
		if st != 0 || !strings.Contains(out, want) {
			t.Errorf("stat /n: exit %d, output %q lacks %q", st, out, want)
		}
	}

	sh.run("deleteall /a", 0, "", "")
	sh.run("ls /", 0, "[n, r, zookeeper]\n", "")
}

func TestHistoryRedoAndUsage(t *testing.T) {
	srv := zktest.Start(t)
	sh := newShell(t, srv.Addr(), false)
	sh.run("create /h one", 0, "", "Created /h\n")
	sh.run("get /h", 0, "one\n", "")
	sh.run("redo 1", 0, "one\n", "")
	sh.run("redo 9", 1, "", "Command index out of range\n")
	sh.run("redo 3", 1, "", "No redoing redos\n")
	sh.run("redo x", 1, "", "java.lang.NumberFormatException: For input string: \"x\"\n")
	// redo puts the command it ran in its own place in the history.
	sh.run("history", 0, "0 - create /h one\n1 - get /h\n2 - get /h\n3 - redo 9\n4 - redo 3\n5 - redo x\n6 - history\n", "")
	code := sh.s.Run(context.Background(), "nosuch")
	errOut := sh.err.take()
	if code != ExitCommandNotFound || !strings.HasPrefix(errOut, "ZooKeeper -server host:port -client-configuration properties-file cmd args\n\taddWatch [-m mode] path") ||
		!strings.HasSuffix(errOut, "\twhoami \nCommand not found: Command not found nosuch\n") {
		t.Errorf("unknown command: exit %d, stderr %q", code, errOut)
	}
	sh.run("close", 0, "\nWATCHER::\n\nWatchedEvent state:Closed type:None path:null\n", "")
	sh.run("ls /", 0, "Not connected\n", "")
	// The connected event may print before connect returns or after: either is zkCli.sh's.
	sh.runWait("connect "+srv.Addr(), "state:SyncConnected type:None")
	sh.run("get /h", 0, "one\n", "")
}

func TestWatches(t *testing.T) {
	srv := zktest.Start(t)
	sh := newShell(t, srv.Addr(), false)
	sh.run("create /w x", 0, "", "Created /w\n")
	sh.run("get -w /w", 0, "x\n", "")
	sh.run("stat -w /w", 0, sh.statOf("/w"), "")
	sh.runWait("set /w y", "WatchedEvent state:SyncConnected type:NodeDataChanged path:/w\n")
	// Both watches fired with one change: one event, as zkCli.sh prints it.
	sh.run("printwatches", 0, "printwatches is on\n", "")
	sh.run("ls -w /w", 0, "[]\n", "")
	sh.runWait("create /w/c", "type:NodeChildrenChanged path:/w\n")
	sh.run("addWatch /w", 0, "", "")
	sh.runWait("set /w/c z", "type:NodeDataChanged path:/w/c\n")
	sh.runWait("removewatches /w", "type:PersistentWatchRemoved path:/w\n")
	sh.run("removewatches /w", 1, "", "KeeperErrorCode = No such watcher for /w\n")
	sh.run("printwatches off", 0, "", "")
	sh.run("get -w /w", 0, "y\n", "")
	sh.run("set /w q", 0, "", "")
	sh.run("sync /w", 0, "Sync is OK\n", "") // the event came before the sync's answer
	if out := sh.out.take(); out != "" {
		t.Errorf("printwatches off printed %q", out)
	}
	sh.run("getAllChildrenNumber /w", 0, "1\n", "")
	if strings.Count(sh.out.take(), "WATCHER::") != 0 {
		t.Error("an event was printed twice")
	}
}

// statOf prints path's Stat as the shell does, read with the shell's own connection.
func (sh *shell) statOf(path string) string {
	sh.t.Helper()
	_, st, err := sh.s.current().Exists(context.Background(), path)
	if err != nil {
		sh.t.Fatal(err)
	}
	var b syncBuffer
	(&env{s: &Session{out: &b}}).printStat(st)
	return b.take()
}

func TestQuota(t *testing.T) {
	srv := zktest.Start(t)
	sh := newShell(t, srv.Addr(), false)
	sh.run("create /q", 0, "", "Created /q\n")
	sh.run("create /q/a", 0, "", "Created /q/a\n")
	sh.run("setquota -n 1 /q", 0, "[Warning]: the count quota you create is less than the existing count:2\n", "")
	sh.run("listquota /q", 0, "Output quota for /q count=1,bytes=-1=;byteHardLimit=-1;countHardLimit=-1\nOutput stat for /q count=2,bytes=0\n",
		"absolute path is /zookeeper/quota/q/zookeeper_limits\n")
	sh.run("setquota -n 5 /q/a", 1, "", "/q/a has a parent /q which has a quota\n")
	sh.run("delquota -n /q", 0, "", "")
	sh.run("delquota /q", 0, "", "")
	sh.run("listquota /q", 0, "", "absolute path is /zookeeper/quota/q/zookeeper_limits\nquota for /q does not exist.\n")
	sh.run("delquota /q", 0, "Quota does not exist for /q\n", "")
}

func TestJSON(t *testing.T) {
	srv := zktest.Start(t)
	sh := newShell(t, srv.Addr(), true)
	sh.run("create /j hi", 0, "", "Created /j\n")
	sh.run("create /j/k", 0, "", "Created /j/k\n")
	for _, c := range []struct {
		line string
		want string // the document's keys and some values, as JSON
	}{
		{"ls /j", `{"children":["k"],"path":"/j"}`},
		{"ls -R /j", `{"path":"/j","paths":["/j","/j/k"]}`},
		{"get /j", `{"data":"hi","path":"/j"}`},
		{"get /j/k", `{"data":null,"path":"/j/k"}`},
		{"getAcl /j", `{"acl":[{"scheme":"world","id":"anyone","perms":"cdrwa"}],"path":"/j"}`},
		{"getAllChildrenNumber /j", `{"count":1,"path":"/j"}`},
		{"getEphemerals", `{"ephemerals":[],"path":"/"}`},
		{"whoami", `{"identities":[{"scheme":"ip","user":"127.0.0.1"}]}`},
	} {
		sh.run(c.line, 0, c.want+"\n", "")
	}
	code := sh.s.Run(context.Background(), "stat /j")
	var doc struct {
		Path string
		Stat jsonStat
	}
	out := sh.out.take()
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || doc.Path != "/j" || doc.Stat.NumChildren != 1 || doc.Stat.DataLength != 2 || doc.Stat.Czxid == 0 {
		t.Errorf("stat /j: exit %d, %q (%v)", code, out, err)
	}
	sh.run("get /none", 1, "", "Node does not exist: /none\n")
}

func TestMainModes(t *testing.T) {
	srv := zktest.Start(t)
	run := func(stdin string, args ...string) (int, string, string) {
		var out, errOut syncBuffer
		code := Main(context.Background(), append([]string{"-server", srv.Addr(), "-timeout", "10000"}, args...),
			strings.NewReader(stdin), &out, &errOut, func(string) string { return "" })
		return code, out.take(), errOut.take()
	}
	code, out, errOut := run("", "create", "/m", "a b")
	if code != 0 || errOut != "Created /m\n" || !strings.HasPrefix(out, "Connecting to "+srv.Addr()+"\n") {
		t.Errorf("one command: %d %q %q", code, out, errOut)
	}
	code, _, errOut = run("", "get", "/none")
	if code != 1 || errOut != "Node does not exist: /none\n" {
		t.Errorf("failing command: %d %q", code, errOut)
	}
	code, _, _ = run("", "nosuch")
	if code != 127 {
		t.Errorf("unknown command: exit %d", code)
	}
	code, out, errOut = run("get /m\nget /none\n")
	if code != 1 || !strings.Contains(out, "Welcome to ZooKeeper!\nJLine support is disabled\n") || !strings.Contains(out, "a b\n") ||
		errOut != "Node does not exist: /none\n" || strings.Contains(out, "Closed") {
		t.Errorf("script: %d %q %q", code, out, errOut)
	}
	code, out, _ = run("get /none\nget /m\nquit\nget /none\n")
	if code != 0 || !strings.Contains(out, "state:Closed") {
		t.Errorf("quit: exit %d, out %q", code, out)
	}
	code, _, errOut = run("", "-timeout")
	if code != 1 || errOut != "Error: no argument found for option -timeout\n" {
		t.Errorf("-timeout without value: %d %q", code, errOut)
	}
}

func TestProgress(t *testing.T) {
	old := progressInterval
	progressInterval = 0
	t.Cleanup(func() { progressInterval = old })
	srv := zktest.Start(t)
	var out, errOut, prog syncBuffer
	s := New(Options{Stdout: &out, Stderr: &errOut, Progress: &prog, Timeout: 10 * time.Second})
	if err := s.Connect(context.Background(), srv.Addr()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.Run(context.Background(), "create /p")
	for i := range 20 {
		s.Run(context.Background(), fmt.Sprintf("create /p/c%d", i))
	}
	out.take()
	errOut.take()
	if code := s.Run(context.Background(), "ls -R /p"); code != 0 {
		t.Fatalf("ls -R: exit %d", code)
	}
	if p := prog.take(); !strings.Contains(p, "\r\x1b[Kls -R /p: 21 nodes") {
		t.Errorf("ls -R progress %q", p)
	}
	if code := s.Run(context.Background(), "deleteall /p -b 7"); code != 0 {
		t.Fatalf("deleteall: exit %d, %q", code, errOut.take())
	}
	p := prog.take()
	if !strings.Contains(p, "\r\x1b[Kdeleteall /p: 21 of 21 nodes deleted") || !strings.HasSuffix(p, "\r\x1b[K") {
		t.Errorf("progress %q", p)
	}
	if o, e := out.take(), errOut.take(); strings.Contains(o+e, "deleteall") || strings.Contains(o+e, "nodes") {
		t.Errorf("progress leaked into the output: %q %q", o, e)
	}
}
