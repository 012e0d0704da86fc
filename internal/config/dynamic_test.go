package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

const threeServers = "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n" +
	"server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182\n" +
	"server.3=127.0.0.1:2890:3890:participant;127.0.0.1:2183\n"

func mustDynamic(t *testing.T, text string) Dynamic {
	t.Helper()
	d, err := ParseDynamic([]byte(text))
	if err != nil {
		t.Fatalf("ParseDynamic(%q): %v", text, err)
	}
	return d
}

func TestParseDynamicRoundTrip(t *testing.T) {
	for _, text := range []string{
		threeServers + "version=100000000",
		// As ZooKeeper prints a hierarchical configuration (ReconfigFailureCasesTest's).
		"server.1=127.0.0.1:11221:11222:participant;127.0.0.1:11223\n" +
			"server.2=127.0.0.1:11224:11225:participant;127.0.0.1:11226\n" +
			"server.3=127.0.0.1:11227:11228:participant;127.0.0.1:11229\n" +
			"server.4=127.0.0.1:11230:11231:participant;127.0.0.1:11232\n" +
			"server.5=127.0.0.1:11233:11234:participant;127.0.0.1:11235\n" +
			"group.1=3:4:5\ngroup.2=1:2\n" +
			"weight.1=0\nweight.2=0\nweight.3=1\nweight.4=1\nweight.5=1\nversion=200000004",
		"server.1=127.0.0.1:2888:3888:participant\nserver.2=[::1]:2889:3889:observer;[::1]:2182\n" +
			"server.3=h3:2890:3890:participant;0.0.0.0:2183\nversion=0",
	} {
		d := mustDynamic(t, text)
		if got := d.Text(); got != text {
			t.Errorf("Text() =\n%s\nwant\n%s", got, text)
		}
		if v, err := ConfigVersion([]byte(text)); err != nil || v != d.Version {
			t.Errorf("ConfigVersion = %x %v, want %x", v, err, d.Version)
		}
	}
	d := mustDynamic(t, threeServers+"server.4=127.0.0.1:2891:3891:observer;2184\nversion=1a")
	if d.Version != 0x1a || len(d.Servers) != 4 || !d.Servers[4].Observer || len(d.Voters()) != 3 {
		t.Errorf("parsed %+v", d)
	}
	qv, err := d.Verifier()
	if err != nil || !qv.IsQuorum(map[int64]bool{1: true, 3: true}) || qv.IsQuorum(map[int64]bool{1: true, 4: true}) {
		t.Errorf("Verifier: %v %v", qv, err)
	}
}

func TestParseDynamicErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		standalone bool
		exc        JavaException
		msg        string
	}{
		{"unknown key", threeServers + "tickTime=2000", true, ConfigException, "Unrecognised parameter: tickTime"},
		{"bad server", "server.1=127.0.0.1:2888\nserver.2=127.0.0.1:2889:3889", true, ConfigException, "server.1"},
		{"bad id", "server.x=127.0.0.1:2888:3888", true, IllegalArgumentException, "not a number"},
		{"bad version", threeServers + "version=xyz", true, IllegalArgumentException, "hexadecimal"},
		{"observers only", "server.1=127.0.0.1:2888:3888:observer", true, IllegalArgumentException,
			"Observers w/o participants is an invalid configuration"},
		{"one participant and observers", "server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889:observer", true,
			IllegalArgumentException, "Observers w/o quorum is an invalid configuration"},
		{"no participants, standalone disabled", "version=1", false, IllegalArgumentException,
			"standaloneEnabled = false then number of participants should be >0"},
		{"participant outside groups", threeServers + "group.1=1:2", true, ConfigException, "not in a group"},
		{"server in two groups", threeServers + "group.1=1:2\ngroup.2=2:3", true, ConfigException, "multiple groups"},
		{"bad group", threeServers + "group.1=1:x", true, IllegalArgumentException, "group.1"},
	} {
		_, err := ParseDynamicStandalone([]byte(tc.text), tc.standalone)
		var de *DynamicError
		if !errors.As(err, &de) || !errors.Is(err, ErrDynamic) || de.Exception != tc.exc || !strings.Contains(de.Msg, tc.msg) {
			t.Errorf("%s: %v (%#v), want exception %d with %q", tc.name, err, de, tc.exc, tc.msg)
		}
	}
	// What parseDynamicConfig lets through.
	for _, tc := range []struct {
		text       string
		standalone bool
	}{
		{"", true},                              // no members at all (a standalone server's)
		{"server.1=127.0.0.1:2888:3888", true},  // HBase's single line
		{"server.1=127.0.0.1:2888:3888", false}, // a one-member ensemble
		{"server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889:observer", false},
	} {
		if _, err := ParseDynamicStandalone([]byte(tc.text), tc.standalone); err != nil {
			t.Errorf("ParseDynamicStandalone(%q, %v): %v", tc.text, tc.standalone, err)
		}
	}
}

func TestVersionFromFilename(t *testing.T) {
	for _, tc := range []struct {
		path string
		v    int64
		ok   bool
	}{
		{"zoo.cfg.dynamic.0", 0, true},
		{"zoo.cfg.dynamic.1001", 0x1001, true},
		{"/etc/zk/zoo.cfg.dynamic.100000000", 0x100000000, true},
		{"zoo.cfg.dynamic", 0, false},
		{"dynamic", 0, false},
		{"/a.b/dynamic", 0, false},
		{"zoo.cfg.dynamic.next", 0, false},
		{"zoo.cfg.dynamic.", 0, false},
	} {
		if v, ok := VersionFromFilename(tc.path); v != tc.v || ok != tc.ok {
			t.Errorf("VersionFromFilename(%q) = %x %v, want %x %v", tc.path, v, ok, tc.v, tc.ok)
		}
	}
	if got := DynamicConfigPath("/c/zoo.cfg", 0x100000003); got != "/c/zoo.cfg.dynamic.100000003" {
		t.Errorf("DynamicConfigPath = %q", got)
	}
}

func TestCheckReconfigStart(t *testing.T) {
	for _, tc := range []struct {
		committed, lastSeen, from int64
		want                      jute.Code
	}{
		{0x100000000, 0x100000000, -1, jute.OK},
		{0x100000000, 0x100000000, 0x100000000, jute.OK},
		{0x100000000, 0x100000000, 8, jute.ErrBadVersion}, // ReconfigFailureCasesTest.testReconfigVersionConditionFails
		{0x100000000, 0x100000005, -1, jute.ErrReconfigInProgress},
		{0x100000000, 0x100000005, 0x100000005, jute.ErrReconfigInProgress},
	} {
		err := CheckReconfigStart(tc.committed, tc.lastSeen, tc.from)
		if tc.want == jute.OK {
			if err != nil {
				t.Errorf("%+v: %v", tc, err)
			}
		} else if !errors.Is(err, tc.want) || !errors.Is(err, ErrReconfig) {
			t.Errorf("%+v: %v, want %v", tc, err, tc.want)
		}
	}
}

func TestApplyReconfig(t *testing.T) {
	cur := mustDynamic(t, threeServers+"version=100000000")
	hier := mustDynamic(t, threeServers+"group.1=1:2:3\nweight.1=1\nversion=100000000")
	str := func(s string) *string { return &s }
	all := func(int64) bool { return true }
	only := func(ids ...int64) func(int64) bool {
		return func(sid int64) bool {
			for _, id := range ids {
				if id == sid {
					return true
				}
			}
			return false
		}
	}
	const v = 0x100000007
	for _, tc := range []struct {
		name               string
		cur                Dynamic
		joining, leaving   string
		newMembers         *string
		standaloneDisabled bool
		synced             func(int64) bool
		want               string // the new configuration's text, or
		code               jute.Code
	}{{
		name: "add participant", cur: cur, synced: all,
		joining: "server.4=127.0.0.1:2891:3891:participant;127.0.0.1:2184",
		want:    threeServers + "server.4=127.0.0.1:2891:3891:participant;127.0.0.1:2184\nversion=100000007",
	}, {
		name: "remove and add observer, spaces and empty entries", cur: cur, synced: all,
		joining: " server.5 = 127.0.0.1:2892:3892:observer;2185 ,", leaving: "3, ,",
		want: "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n" +
			"server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182\n" +
			"server.5=127.0.0.1:2892:3892:observer;0.0.0.0:2185\nversion=100000007",
	}, {
		name: "update a member (participant to observer)", cur: cur, synced: all,
		joining: "server.3=127.0.0.1:2890:3890:observer;127.0.0.1:2183",
		want: "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n" +
			"server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182\n" +
			"server.3=127.0.0.1:2890:3890:observer;127.0.0.1:2183\nversion=100000007",
	}, {
		name: "the id is after the last dot", cur: cur, synced: all,
		joining: "participant.4=127.0.0.1:2891:3891;2184", leaving: "1,2,3,4",
		code: jute.ErrBadArguments, // leaves one participant: "at least 2 followers"
	}, {
		name: "no client port", cur: cur, joining: "server.4=127.0.0.1:2891:3891:participant",
		code: jute.ErrBadArguments,
	}, {
		name: "two '='", cur: cur, joining: "server.4=127.0.0.1:2891:3891=x;2184", code: jute.ErrBadArguments,
	}, {
		name: "no '='", cur: cur, joining: "server.4", code: jute.ErrBadArguments,
	}, {
		name: "bad spec", cur: cur, joining: "server.4=127.0.0.1:2891:3891:leader;2184", code: jute.ErrBadArguments,
	}, {
		name: "leaving id not a number", cur: cur, leaving: "two", code: jute.ErrMarshallingError,
	}, {
		name: "joining id not a number", cur: cur, joining: "server.x=127.0.0.1:2891:3891;2184", code: jute.ErrMarshallingError,
	}, {
		name:    "address conflict",
		cur:     mustDynamic(t, "server.1=10.0.0.1:2888:3888;10.0.0.1:2181\nserver.2=10.0.0.2:2888:3888;10.0.0.2:2181"),
		joining: "server.3=10.0.0.3:2888:3888;10.0.0.1:2181", code: jute.ErrBadArguments,
	}, {
		name:    "loopback and wildcard addresses never conflict",
		cur:     mustDynamic(t, "server.1=127.0.0.1:2888:3888;2181\nserver.2=127.0.0.1:2889:3889;2182"),
		joining: "server.3=127.0.0.1:2888:3888;2181", synced: all,
		want: "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n" +
			"server.2=127.0.0.1:2889:3889:participant;0.0.0.0:2182\n" +
			"server.3=127.0.0.1:2888:3888:participant;0.0.0.0:2181\nversion=100000007",
	}, {
		// ReconfigFailureCasesTest.testIncrementalReconfigInvokedOnHiearchicalQS
		name: "incremental on hierarchical", cur: hier, leaving: "3", code: jute.ErrBadArguments,
	}, {
		name: "too few participants", cur: cur, leaving: "2,3", code: jute.ErrBadArguments,
	}, {
		name: "one participant without standalone", cur: cur, leaving: "2,3", standaloneDisabled: true, synced: all,
		want: "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\nversion=100000007",
	}, {
		name: "no participants without standalone", cur: cur, leaving: "1,2,3", standaloneDisabled: true,
		code: jute.ErrBadArguments,
	}, {
		name: "new config has no synced quorum", cur: cur, synced: only(1),
		joining: "server.4=127.0.0.1:2891:3891;2184,server.5=127.0.0.1:2892:3892;2185",
		code:    jute.ErrNewConfigNoQuorum,
	}, {
		name: "synced quorum of the new config", cur: cur, synced: only(1, 4, 5),
		leaving: "2,3", joining: "server.4=127.0.0.1:2891:3891;2184,server.5=127.0.0.1:2892:3892;2185",
		want: "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n" +
			"server.4=127.0.0.1:2891:3891:participant;0.0.0.0:2184\n" +
			"server.5=127.0.0.1:2892:3892:participant;0.0.0.0:2185\nversion=100000007",
	}, {
		name: "bulk, comma separated, version replaced", cur: cur, synced: all,
		newMembers: str("server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181," +
			"server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182,version=5"),
		want: "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n" +
			"server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182\nversion=100000007",
	}, {
		name: "bulk hierarchical from majority", cur: cur, synced: all,
		newMembers: str(threeServers + "group.1=1:2\ngroup.2=3\nweight.3=0"),
		want:       threeServers + "group.1=1:2\ngroup.2=3\nweight.1=1\nweight.2=1\nweight.3=0\nversion=100000007",
	}, {
		name: "bulk, hierarchical, no synced quorum of groups", cur: hier, synced: only(1, 3),
		newMembers: str(threeServers + "group.1=1:2\ngroup.2=3"),
		code:       jute.ErrNewConfigNoQuorum,
	}, {
		name: "bulk empty (a non-null empty newMembers)", cur: cur, newMembers: str(""), code: jute.ErrBadArguments,
	}, {
		name: "bulk unknown key", cur: cur, newMembers: str(threeServers + "tickTime=1"), code: jute.ErrBadArguments,
	}, {
		name: "bulk bad server", cur: cur, newMembers: str("server.1=127.0.0.1:2888"), code: jute.ErrBadArguments,
	}, {
		name: "bulk observers only", cur: cur, newMembers: str("server.1=127.0.0.1:2888:3888:observer;2181"),
		code: jute.ErrMarshallingError,
	}, {
		name: "bulk participant outside groups", cur: cur, newMembers: str(threeServers + "group.1=1:2"),
		code: jute.ErrBadArguments,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ApplyReconfig(tc.cur, tc.joining, tc.leaving, tc.newMembers, ReconfigOptions{
				Version: v, StandaloneEnabled: !tc.standaloneDisabled, Synced: tc.synced,
			})
			if tc.code != jute.OK {
				var re *ReconfigError
				if !errors.As(err, &re) || re.Code != tc.code || !errors.Is(err, tc.code) || !errors.Is(err, ErrReconfig) {
					t.Fatalf("err = %v, want code %v", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != v || got.Text() != tc.want {
				t.Fatalf("new config:\n%s\nwant\n%s", got.Text(), tc.want)
			}
			// What a follower reads back from /zookeeper/config is the same configuration.
			if back := mustDynamic(t, got.Text()); !back.Equal(got) {
				t.Errorf("reparsed %q", back.Text())
			}
		})
	}
	// The current configuration is not changed.
	if cur.Text() != threeServers+"version=100000000" {
		t.Errorf("cur changed: %q", cur.Text())
	}
}

func TestWriteDynamicConfig(t *testing.T) {
	dir := t.TempDir()
	text := "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n" +
		"server.2=127.0.0.1:2889:3889:observer;0.0.0.0:2182\n" +
		"server.10=127.0.0.1:2890:3890:participant;0.0.0.0:2183\n" +
		"group.1=1:10\nweight.1=1\nweight.10=1\nversion=100000003"
	// writeDynamicConfig sorts whole "key=value" strings: "server.10=" before "server.1=".
	want := "group.1=1:10\n" +
		"server.10=127.0.0.1:2890:3890:participant;0.0.0.0:2183\n" +
		"server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n" +
		"server.2=127.0.0.1:2889:3889:observer;0.0.0.0:2182\n" +
		"weight.10=1\nweight.1=1"
	path := DynamicConfigPath(filepath.Join(dir, "zoo.cfg"), 0x100000003)
	if err := WriteDynamicConfig(path, text, false); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != want {
		t.Errorf("dynamic file:\n%s\nwant\n%s", got, want)
	}
	next := filepath.Join(dir, "zoo.cfg"+NextDynamicConfigSuffix)
	if err := WriteDynamicConfig(next, text, true); err != nil {
		t.Fatal(err)
	}
	wantNext := strings.Replace(want, "server.2=127.0.0.1:2889:3889:observer;0.0.0.0:2182\n",
		"server.2=127.0.0.1:2889:3889:observer;0.0.0.0:2182\nversion=100000003\n", 1)
	if got := readFile(t, next); got != wantNext {
		t.Errorf("next file:\n%s\nwant\n%s", got, wantNext)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file left: %v", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDynamicConfigFileLifecycle goes through what ZooKeeper does to the files: a zoo.cfg
// with the members is backed up at start, the first reconfig writes zoo.cfg.dynamic.<v> and
// points the zoo.cfg at it, a proposed configuration waits in zoo.cfg.dynamic.next, and each
// step reads back.
func TestDynamicConfigFileLifecycle(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "zoo.cfg")
	static := "tickTime=2000\ninitLimit=5\nsyncLimit=2\ndataDir=" + dir + "\nclientPort=2181\n" +
		"clientPortAddress=127.0.0.1\nclientPortListenBacklog=10\npeerType=participant\nreconfigEnabled=true\n" + threeServers
	writeFile(t, cfgPath, static)
	c, err := Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !c.ReconfigEnabled || !c.StandaloneEnabled() || !c.Distributed() || !c.BacksUpStaticConfig() || c.DynamicVersion != 0 {
		t.Fatalf("loaded %+v", c)
	}
	if err := BackupOldConfig(cfgPath); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, cfgPath+".bak"); got != static {
		t.Errorf("backup = %q", got)
	}

	d := c.Dynamic()
	d.Version = 0x100000000
	dynPath := DynamicConfigPath(cfgPath, d.Version)
	if err := WriteDynamicConfig(dynPath, d.Text(), false); err != nil {
		t.Fatal(err)
	}
	if err := EditStaticConfig(cfgPath, dynPath, true); err != nil {
		t.Fatal(err)
	}
	canon, err := filepath.EvalSymlinks(dynPath)
	if err != nil {
		t.Fatal(err)
	}
	wantStatic := "tickTime=2000\ninitLimit=5\nsyncLimit=2\ndataDir=" + dir + "\nreconfigEnabled=true\n" +
		"dynamicConfigFile=" + canon + "\n"
	if got := readFile(t, cfgPath); got != wantStatic {
		t.Errorf("edited zoo.cfg:\n%s\nwant\n%s", got, wantStatic)
	}
	c2, err := Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := c2.Dynamic(); !got.Equal(d) || c2.DynamicConfigFile != canon || c2.BacksUpStaticConfig() || c2.NextDynamic != nil {
		t.Errorf("reloaded: %+v\n%s", c2, got.Text())
	}
	// A String of it names the file instead of the members, and reads back.
	if s := c2.String(); strings.Contains(s, "server.") || !strings.Contains(s, "dynamicConfigFile="+canon) {
		t.Errorf("String:\n%s", s)
	}

	// Without erasing, the client port stays; a second edit replaces the pointer.
	writeFile(t, cfgPath, static)
	if err := EditStaticConfig(cfgPath, dynPath, false); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, cfgPath); !strings.Contains(got, "clientPort=2181\nclientPortAddress=127.0.0.1\nclientPortListenBacklog=10\n") ||
		strings.Count(got, "dynamicConfigFile=") != 1 || strings.Contains(got, "server.") || strings.Contains(got, "peerType") {
		t.Errorf("edited zoo.cfg:\n%s", got)
	}

	// A proposal in flight.
	nd, err := ApplyReconfig(d, "", "3", nil, ReconfigOptions{Version: 0x100000004, StandaloneEnabled: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteDynamicConfig(cfgPath+NextDynamicConfigSuffix, nd.Text(), true); err != nil {
		t.Fatal(err)
	}
	c3, err := Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if c3.NextDynamic == nil || !c3.NextDynamic.Equal(nd) {
		t.Errorf("NextDynamic = %+v, want %s", c3.NextDynamic, nd.Text())
	}
}

func TestDynamicConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	dyn := filepath.Join(dir, "zoo.cfg.dynamic.100000000")
	writeFile(t, dyn, threeServers)
	base := "tickTime=2000\ninitLimit=5\nsyncLimit=2\ndataDir=" + dir + "\n"
	for _, tc := range []struct{ name, static, dynamic, want string }{
		{"server line in both", base + "dynamicConfigFile=" + dyn + "\nserver.4=127.0.0.1:1:2\n", "",
			"parameter: server.4 must be in a separate dynamic config file"},
		{"group in the static file", base + "group.1=1:2:3\ndynamicConfigFile=" + dyn + "\n", "",
			"parameter: group.1 must be in a separate dynamic config file"},
		{"version inside", base + "dynamicConfigFile=" + dyn + "\n", threeServers + "version=100000000",
			"dynamic file shouldn't have version inside"},
		{"other key inside", base + "dynamicConfigFile=" + dyn + "\n", threeServers + "tickTime=1",
			"Unrecognised parameter: tickTime"},
		{"missing file", base + "dynamicConfigFile=" + dyn + ".missing\n", "", "no such file"},
		{"bad boolean", base + "reconfigEnabled=yes\n" + threeServers, "", "reconfigEnabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dynamic != "" {
				writeFile(t, dyn, tc.dynamic)
				t.Cleanup(func() { writeFile(t, dyn, threeServers) })
			}
			cfg := filepath.Join(t.TempDir(), "zoo.cfg")
			writeFile(t, cfg, tc.static)
			_, err := Load(cfg)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v, want %q", err, tc.want)
			}
		})
	}

	// A relative dynamicConfigFile is opened from the working directory, as in ZooKeeper;
	// a name without a version gives version 0.
	t.Chdir(dir)
	writeFile(t, filepath.Join(dir, "members"), threeServers)
	cfg := filepath.Join(t.TempDir(), "zoo.cfg")
	writeFile(t, cfg, base+"dynamicConfigFile=members\nstandaloneEnabled=false\n")
	c, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 3 || c.DynamicVersion != 0 || c.StandaloneEnabled() {
		t.Errorf("loaded %+v", c)
	}
}

// TestStandaloneDisabled follows StandaloneDisabledTest's premise: with
// standaloneEnabled=false one participant is an ensemble (and reconfig can grow it).
func TestStandaloneDisabled(t *testing.T) {
	base := "tickTime=2000\ninitLimit=5\nsyncLimit=2\ndataDir=/d\nclientPort=2181\n" +
		"server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n"
	for _, tc := range []struct {
		extra       string
		distributed bool
	}{
		{"", false},
		{"standaloneEnabled=false\n", true},
		{"standaloneEnabled=FALSE\nreconfigEnabled=True\n", true},
		{"server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182\n", true},
	} {
		c, err := Parse(strings.NewReader(base + tc.extra))
		if err != nil {
			t.Fatal(err)
		}
		if c.Distributed() != tc.distributed {
			t.Errorf("%q: Distributed = %v", tc.extra, c.Distributed())
		}
	}
	d := mustDynamic(t, base[strings.Index(base, "server.1"):])
	grown, err := ApplyReconfig(d, "server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182", "", nil,
		ReconfigOptions{Version: 0x100000002, StandaloneEnabled: false, Synced: func(sid int64) bool { return true }})
	if err != nil || len(grown.Voters()) != 2 {
		t.Fatalf("grow: %v %+v", err, grown)
	}
}

func FuzzParseDynamic(f *testing.F) {
	f.Add([]byte(threeServers + "version=100000000"))
	f.Add([]byte(threeServers + "group.1=1:2\ngroup.2=3\nweight.3=0\nversion=1"))
	f.Add([]byte("server.1=[::1]:2888:3888|h:1:2:observer;2181\nserver.2=h:1:2"))
	f.Add([]byte("server.1=a:1:2,server.2=b:1:2\\\n  ;3\n#c\nversion : ff"))
	f.Fuzz(func(t *testing.T, text []byte) {
		d, err := ParseDynamic(text)
		if err != nil {
			if !errors.Is(err, ErrDynamic) {
				t.Fatalf("error %v does not match ErrDynamic", err)
			}
			return
		}
		// What zkd prints, zkd (and a peer) reads back to the same configuration. Like
		// ZooKeeper's toString, Text does not escape: a backslash in a host name does not
		// survive (ZooKeeper could not resolve such a host either).
		out := d.Text()
		if strings.Contains(out, "\\") {
			return
		}
		back, err := ParseDynamic([]byte(out))
		if err != nil {
			t.Fatalf("reparsing %q (from %q): %v", out, text, err)
		}
		if back.Text() != out || back.Version != d.Version {
			t.Fatalf("round trip of %q:\n%q\n%q", text, out, back.Text())
		}
		if v, err := ConfigVersion([]byte(out)); err != nil || v != d.Version {
			t.Fatalf("ConfigVersion(%q) = %x %v", out, v, err)
		}
	})
}
