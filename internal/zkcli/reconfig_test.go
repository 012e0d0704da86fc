package zkcli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/testing/needs"
	"github.com/zkd-io/zkd/internal/testing/portlock"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/zktest"
)

func TestParseReconfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.cfg")
	if err := os.WriteFile(good, []byte("# members\nserver.2=127.0.0.1:2889:3889;2182\nserver.1 = 127.0.0.1:2888:3888:participant;127.0.0.1:2181\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.cfg")
	if err := os.WriteFile(bad, []byte("server.1=127.0.0.1:2888:3888;2181\ntickTime=2000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope.cfg")
	str := func(s string) *string { return &s }
	usage := "reconfig " + commands["reconfig"].optionStr
	for _, c := range []struct {
		line                      string
		joining, leaving, members *string
		version                   int64
		wantErr                   string
	}{
		{line: "reconfig -add server.4=Host:1:2;3", joining: str("server.4=host:1:2;3"), version: -1},
		{line: "reconfig -remove 3,4 -v 10000000a", leaving: str("3,4"), version: 0x10000000a},
		{line: "reconfig -s -add server.4=h:1:2;3 -remove 2", joining: str("server.4=h:1:2;3"), leaving: str("2"), version: -1},
		{line: "reconfig -members server.1=h:1:2;3,server.2=h:4:5;6", members: str("server.1=h:1:2;3,server.2=h:4:5;6"), version: -1},
		{line: "reconfig -file " + good, version: -1,
			members: str("server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\nserver.2=127.0.0.1:2889:3889:participant;0.0.0.0:2182\nversion=0")},
		{line: "reconfig", wantErr: usage},
		{line: "reconfig -s -v 3", wantErr: usage},
		{line: "reconfig -v xyz -remove 1", wantErr: "-v must be followed by a long (configuration version)"},
		{line: "reconfig -members server.1=h:1:2;3 -add server.2=h:1:2;3",
			wantErr: "Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)"},
		{line: "reconfig -file x -remove 1",
			wantErr: "Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)"},
		{line: "reconfig -file x -members server.1=h:1:2;3", wantErr: "Can't use -file and -members together (conflicting non-incremental modes)"},
		{line: "reconfig -file " + missing, wantErr: "Error processing " + missing + missing + " (No such file or directory)"},
		{line: "reconfig -file " + bad, wantErr: "Error processing " + bad + "Unrecognised parameter: tickTime"},
		{line: "reconfig -remove", wantErr: "org.apache.commons.cli.MissingArgumentException: Missing argument for option: remove"},
		{line: "reconfig -x 1", wantErr: "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -x"},
	} {
		cmd := commands["reconfig"]
		args := splitLine(c.line)
		cl, err := cmd.opts.parse(args)
		var r *reconfigArgs
		if err == nil {
			r, err = parseReconfig(&env{cl: cl, args: cl.args, raw: args, opts: cmd.opts, usage: cmd.usageStr()})
		}
		if c.wantErr != "" {
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("%s: error %v, want %q", c.line, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.line, err)
			continue
		}
		if !eqPtr(r.joining, c.joining) || !eqPtr(r.leaving, c.leaving) || !eqPtr(r.members, c.members) || r.version != c.version {
			t.Errorf("%s: joining %s leaving %s members %s version %x; want %s %s %s %x", c.line,
				show(r.joining), show(r.leaving), show(r.members), r.version,
				show(c.joining), show(c.leaving), show(c.members), c.version)
		}
	}
}

func eqPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func show(p *string) string {
	if p == nil {
		return "null"
	}
	return "\"" + *p + "\""
}

// TestReconfigStandalone: a standalone server refuses reconfig, and zkcli prints what
// zkCli.sh prints for the code it gets (ZooKeeper 3.8 standalone answers RECONFIGDISABLED
// unless reconfigEnabled is set).
func TestReconfigStandalone(t *testing.T) {
	srv := zktest.Start(t)
	sh := newShell(t, srv.Addr(), false)
	code := sh.s.Run(t.Context(), "reconfig -remove 2")
	o, e := sh.out.take(), sh.err.take()
	if code != ExitFailed || o != "" || e != "KeeperErrorCode = Reconfig is disabled\n" {
		t.Errorf("reconfig on a standalone zkd: exit %d, stdout %q, stderr %q", code, o, e)
	}
	sh.run("reconfig -v z -remove 2", 1, "", "-v must be followed by a long (configuration version)\n")
}

// TestReconfigMatchesZkCliSh reconfigures Apache ZooKeeper running as a one-member ensemble
// with reconfigEnabled=true through zkCli.sh and through zkcli: the same script, accepted
// and refused changes, prints the same.
func TestReconfigMatchesZkCliSh(t *testing.T) {
	t.Setenv("TZ", "UTC")
	zkCli := needs.ZkCli(t)
	refzk.Require(t)
	ports := make([]int, 5)
	for i := range ports {
		p, lock, err := portlock.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lock.Close() })
		ports[i] = p
	}
	self := fmt.Sprintf("server.1=127.0.0.1:%d:%d:participant", ports[0], ports[1])
	dynPath := filepath.Join(t.TempDir(), "zoo.cfg.dynamic.100000000")
	if err := config.WriteDynamicConfig(dynPath, self+"\nversion=100000000", false); err != nil {
		t.Fatal(err)
	}
	ref := refzk.StartStandalone(t, refzk.Options{
		MyID:             1,
		Config:           []string{"reconfigEnabled=true", "standaloneEnabled=false", "dynamicConfigFile=" + dynPath},
		SystemProperties: []string{"-Dzookeeper.skipACL=yes"}, // reconfig is the super user's otherwise
	})
	observer := fmt.Sprintf("server.2=127.0.0.1:%d:%d:observer;127.0.0.1:%d", ports[2], ports[3], ports[4])
	participant := fmt.Sprintf("server.3=127.0.0.1:%d:%d:participant;127.0.0.1:%d", ports[2], ports[3], ports[4])
	// The first line makes the state both runs start from: server.1 with its client port.
	script := strings.Join([]string{
		"reconfig -members " + self + ";127.0.0.1:" + ref.Addr()[strings.LastIndexByte(ref.Addr(), ':')+1:],
		"reconfig -s -add " + strings.ToUpper(observer), // zkCli.sh lower-cases the list
		"reconfig -v 1 -remove 2",
		"reconfig -remove 2",
		"reconfig -add " + participant,
		"reconfig -add server.4=127.0.0.1:1:2:observer",
		"config",
	}, "\n") + "\n"
	want := versionless(runZkCliSh(t, zkCli, ref.Addr(), script))
	// Three changes accepted, three refused (stale version, no quorum, no client port).
	if n := count(want.stdout, "Committed new configuration:"); n != 3 || len(want.stderr) != 3 {
		t.Fatalf("zkCli.sh did not run the script as expected:\nstdout:\n%s\nstderr:\n%s",
			strings.Join(want.stdout, "\n"), strings.Join(want.stderr, "\n"))
	}
	got := versionless(runZkcli(t, ref.Addr(), script))
	compare(t, "zkcli vs zkCli.sh on a reconfigurable ZooKeeper", want, got)
}

func count(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if l == s {
			n++
		}
	}
	return n
}

// versionless hides the configuration versions, which differ between the two runs, and
// Debian's fix of a typo in one of Apache ZooKeeper's messages, which zkcli prints as
// Apache's releases do.
func versionless(tr transcript) transcript {
	for i, l := range tr.stdout {
		if strings.HasPrefix(l, "version=") {
			tr.stdout[i] = "version=?"
		}
	}
	for i, l := range tr.stderr {
		tr.stderr[i] = strings.Replace(l, "last commmitted config", "last committed config", 1)
	}
	return tr
}
