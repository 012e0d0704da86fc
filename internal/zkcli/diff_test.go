package zkcli

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/testing/needs"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// transcript is what a shell printed for a script, normalised for comparison.
type transcript struct {
	stdout, stderr []string
	events         []string // WatchedEvent lines, sorted: they arrive asynchronously
	code           int
}

var (
	statID   = regexp.MustCompile(`^(cZxid|mZxid|pZxid|ephemeralOwner) = 0x[0-9a-f]+$`)
	statTime = regexp.MustCompile(`^(ctime|mtime) = .*$`)
	identity = regexp.MustCompile(`^[a-z0-9]+: [^ ]+$`)
)

// normalise drops what differs between runs and servers (zxids, times, session ids), pulls
// out the watch events, and drops the JVM's own noise: SLF4J's warnings.
func normalise(stdout, stderr string, code int) transcript {
	tr := transcript{code: code}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l == "WATCHER::" && i+2 < len(lines) && strings.HasPrefix(lines[i+2], "WatchedEvent ") {
			if n := len(tr.stdout); n > 0 && tr.stdout[n-1] == "" {
				tr.stdout = tr.stdout[:n-1]
			}
			tr.events = append(tr.events, lines[i+2])
			i += 2
			continue
		}
		if strings.HasPrefix(l, "Connecting to ") {
			l = "Connecting to <server>"
		}
		l = statID.ReplaceAllString(l, "$1 = 0x?")
		l = statTime.ReplaceAllString(l, "$1 = ?")
		tr.stdout = append(tr.stdout, l)
	}
	sort.Strings(tr.events)
	// ZooKeeper 3.8 answers whoami in the hash order of its set of ids, zkd in the order the
	// ids were added: compare the identities as a set.
	for i, l := range tr.stdout {
		if l != "Auth scheme: User" {
			continue
		}
		j := i + 1
		for j < len(tr.stdout) && identity.MatchString(tr.stdout[j]) {
			j++
		}
		sort.Strings(tr.stdout[i+1 : j])
	}
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if strings.HasPrefix(l, "SLF4J:") {
			continue
		}
		tr.stderr = append(tr.stderr, l)
	}
	return tr
}

func diffLines(t *testing.T, what string, a, b []string) {
	t.Helper()
	n := max(len(a), len(b))
	for i := 0; i < n; i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			t.Errorf("%s differ first at line %d:\n  want %q\n  got  %q\n(want has %d lines, got %d)", what, i+1, x, y, len(a), len(b))
			return
		}
	}
}

func compare(t *testing.T, name string, want, got transcript) {
	t.Helper()
	diffLines(t, name+": stdout", want.stdout, got.stdout)
	diffLines(t, name+": stderr", want.stderr, got.stderr)
	diffLines(t, name+": watch events", want.events, got.events)
	if want.code != got.code {
		t.Errorf("%s: exit code %d, want %d", name, got.code, want.code)
	}
}

// runZkCliSh runs Debian's zkCli.sh with script on stdin against addr.
func runZkCliSh(t *testing.T, zkCli, addr, script string) transcript {
	t.Helper()
	return runZkCliShArgs(t, zkCli, script, "-server", addr, "-waitforconnection")
}

// runZkcli runs zkcli's Main in process, as the zkcli binary does.
func runZkcli(t *testing.T, addr, script string) transcript {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := Main(ctx, []string{"-server", addr, "-waitforconnection"}, strings.NewReader(script), &out, &errOut, func(string) string { return "" })
	return normalise(out.String(), errOut.String(), code)
}

// TestDifferential runs one script, every command and its error cases, through zkCli.sh
// against Apache ZooKeeper 3.8, and through zkcli against zkd and against ZooKeeper: the
// three transcripts must be equal.
func TestDifferential(t *testing.T) {
	t.Setenv("TZ", "UTC") // the Stat printout's dates, in the local zone for both shells
	script, err := os.ReadFile("testdata/diff.script")
	if err != nil {
		t.Fatal(err)
	}
	zkCli := needs.ZkCli(t)
	ref := refzk.StartStandalone(t, refzk.Options{Config: []string{"extendedTypesEnabled=true"}})
	// zkd with every extension on: the script is ZooKeeper's commands only, whose answers
	// the extensions must not change.
	zkd := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.ExtendedTypes = true
		c.Extensions = ext.Of(ext.All...)
	}))

	want := runZkCliSh(t, zkCli, ref.Addr(), string(script))
	if len(want.stdout) < 50 || len(want.stderr) < 50 {
		t.Fatalf("zkCli.sh printed too little, is it working?\nstdout:\n%s\nstderr:\n%s",
			strings.Join(want.stdout, "\n"), strings.Join(want.stderr, "\n"))
	}
	// The script works under /t; run it again on the same server under /u.
	onRef := runZkcli(t, ref.Addr(), strings.ReplaceAll(string(script), "/t", "/u"))
	onRef = renamed(onRef, "/u", "/t")
	compare(t, "zkcli on ZooKeeper vs zkCli.sh", want, onRef)
	onZkd := runZkcli(t, zkd.Addr(), string(script))
	compare(t, "zkcli on zkd vs zkCli.sh", want, onZkd)
}

func renamed(tr transcript, from, to string) transcript {
	fix := func(ls []string) []string {
		out := make([]string, len(ls))
		for i, l := range ls {
			out[i] = strings.ReplaceAll(l, from, to)
		}
		return out
	}
	tr.stdout, tr.stderr, tr.events = fix(tr.stdout), fix(tr.stderr), fix(tr.events)
	sort.Strings(tr.events)
	return tr
}
