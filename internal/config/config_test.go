package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func mustParse(t *testing.T, in string) *Config {
	t.Helper()
	c, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatalf("Parse(%q): %v", in, err)
	}
	return c
}

// Values for keys a zoo.cfg leaves out, as Apache ZooKeeper 3.8 fills them in (checked against
// QuorumPeerConfig: tickTime 3000, session bounds 2x/20x, dataLogDir = dataDir).
func TestParseMinimalUsesZooKeeperDefaults(t *testing.T) {
	got := mustParse(t, "dataDir=/var/zk\nclientPort=2181\n")
	want := &Config{
		TickTime:                 3000,
		DataDir:                  "/var/zk",
		DataLogDir:               "/var/zk",
		ClientPort:               2181,
		MaxClientCnxns:           60,
		MinSessionTimeout:        6000,
		MaxSessionTimeout:        60000,
		ClientPortListenBacklog:  -1,
		SnapRetainCount:          3,
		SnapCount:                100000,
		PreAllocSize:             64 << 20,
		ForceSync:                true,
		DigestEnabled:            true,
		JuteMaxBuffer:            1048575,
		FourLetterWhitelist:      []string{"srvr"},
		GlobalOutstandingLimit:   1000,
		ContainerCheckIntervalMs: 60000,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseAllKeys(t *testing.T) {
	in := `# every key zkd reads
tickTime = 1000
initLimit=7
syncLimit=3
dataDir=/data/zk
dataLogDir=/log/zk
clientPort=12181
clientPortAddress=10.0.0.1
maxClientCnxns=0
minSessionTimeout=2500
maxSessionTimeout=90000
clientPortListenBacklog=128
autopurge.snapRetainCount=5
autopurge.purgeInterval=24
snapCount=5000
preAllocSize=1024
forceSync=no
jute.maxbuffer=0x400000
4lw.commands.whitelist=ruok, stat ,mntr
extendedTypesEnabled=true
digest.enabled=false
DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=
globalOutstandingLimit=500
znode.container.checkIntervalMs=1000
server.1=zk1:2888:3888
server.2=zk2:2888:3888:observer;12182
server.3=[::1]:2889:3889:participant;[::1]:12183
admin.enableServer=false
standaloneEnabled=false
syncEnabled=true
syncEnable=true
`
	want := &Config{
		TickTime: 1000, InitLimit: 7, SyncLimit: 3,
		DataDir: "/data/zk", DataLogDir: "/log/zk",
		ClientPort: 12181, ClientPortAddress: "10.0.0.1",
		MaxClientCnxns: 0, MinSessionTimeout: 2500, MaxSessionTimeout: 90000,
		ClientPortListenBacklog: 128,
		SnapRetainCount:         5, PurgeInterval: 24, SnapCount: 5000,
		PreAllocSize: 1 << 20, ForceSync: false, JuteMaxBuffer: 4 << 20,
		FourLetterWhitelist:    []string{"ruok", "stat", "mntr", "srvr"},
		ExtendedTypesEnabled:   true,
		SuperDigest:            "super:D/InIHSb7yEEbrWz8b9l71RjZJU=",
		GlobalOutstandingLimit: 500, ContainerCheckIntervalMs: 1000,
		Servers: map[int]Member{
			1: {ID: 1, Host: "zk1", QuorumPort: 2888, ElectionPort: 3888},
			2: {ID: 2, Host: "zk2", QuorumPort: 2888, ElectionPort: 3888, Observer: true, ClientPort: 12182},
			3: {ID: 3, Host: "::1", QuorumPort: 2889, ElectionPort: 3889, ClientHost: "::1", ClientPort: 12183},
		},
		StandaloneDisabled: true,
		// admin.enableServer=false is known (AdminServer), syncEnabled=true is what zkd's
		// observers do; syncEnable is a typo.
		Unknown: []string{"syncEnable"},
	}
	got := mustParse(t, in)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseValues(t *testing.T) {
	const base = "dataDir=/d\nclientPort=2181\n"
	tests := []struct {
		name  string
		lines string
		check func(*Config) any // returns the value under test
		want  any
	}{
		{"session bounds follow tickTime", "tickTime=1000", func(c *Config) any {
			return [2]int{c.MinSessionTimeout, c.MaxSessionTimeout}
		}, [2]int{2000, 20000}},
		{"-1 means derived", "tickTime=500\nminSessionTimeout=-1\nmaxSessionTimeout=-1", func(c *Config) any {
			return [2]int{c.MinSessionTimeout, c.MaxSessionTimeout}
		}, [2]int{1000, 10000}},
		{"plus sign", "tickTime=+100", func(c *Config) any { return c.TickTime }, 100},
		{"snapRetainCount raised to 3", "autopurge.snapRetainCount=1", func(c *Config) any { return c.SnapRetainCount }, 3},
		{"negative purgeInterval is off", "autopurge.purgeInterval=-2", func(c *Config) any { return c.PurgeInterval }, 0},
		{"snapCount raised to 2", "snapCount=1", func(c *Config) any { return c.SnapCount }, 2},
		{"prefixed snapCount", "zookeeper.snapCount=77", func(c *Config) any { return c.SnapCount }, 77},
		{"prefixed preAllocSize", "zookeeper.preAllocSize=4", func(c *Config) any { return c.PreAllocSize }, int64(4096)},
		{"prefixed forceSync", "zookeeper.forceSync=no", func(c *Config) any { return c.ForceSync }, false},
		{"forceSync yes", "forceSync=yes", func(c *Config) any { return c.ForceSync }, true},
		{"prefixed jute.maxbuffer", "zookeeper.jute.maxbuffer=4194304", func(c *Config) any { return c.JuteMaxBuffer }, 4194304},
		{"jute.maxbuffer #hex", "jute.maxbuffer=#100", func(c *Config) any { return c.JuteMaxBuffer }, 256},
		{"jute.maxbuffer octal", "jute.maxbuffer=010", func(c *Config) any { return c.JuteMaxBuffer }, 8},
		{"prefixed extendedTypesEnabled", "zookeeper.extendedTypesEnabled=TRUE", func(c *Config) any { return c.ExtendedTypesEnabled }, true},
		{"digest on by default", "", func(c *Config) any { return c.DigestEnabled }, true},
		{"digest.enabled", "digest.enabled=false", func(c *Config) any { return c.DigestEnabled }, false},
		{"prefixed digest.enabled", "zookeeper.digest.enabled=false", func(c *Config) any { return c.DigestEnabled }, false},
		{"enforceQuota", "enforceQuota=true", func(c *Config) any { return c.EnforceQuota }, true},
		{"prefixed enforceQuota", "zookeeper.enforceQuota=True", func(c *Config) any { return c.EnforceQuota }, true},
		{"snapshot compression", "snapshot.compression.method=snappy", func(c *Config) any { return c.SnapshotCompression }, "snappy"},
		{"prefixed snapshot compression", "zookeeper.snapshot.compression.method=GZ", func(c *Config) any { return c.SnapshotCompression }, "GZ"},
		{"snapshot compression default", "", func(c *Config) any { return [2]any{c.SnapshotCompression, c.Unknown} }, [2]any{"", []string(nil)}},
		{"prefixed globalOutstandingLimit", "zookeeper.globalOutstandingLimit=9", func(c *Config) any { return c.GlobalOutstandingLimit }, 9},
		{"prefixed container interval", "zookeeper.znode.container.checkIntervalMs=250", func(c *Config) any { return c.ContainerCheckIntervalMs }, 250},
		{"prefixed superDigest", "zookeeper.DigestAuthenticationProvider.superDigest=super:x", func(c *Config) any { return c.SuperDigest }, "super:x"},
		{"prefixed whitelist", "zookeeper.4lw.commands.whitelist=*", func(c *Config) any { return c.FourLetterWhitelist }, []string{"*"}},
		{"whitelist star wins", "4lw.commands.whitelist=ruok,*", func(c *Config) any { return c.FourLetterWhitelist }, []string{"*"}},
		{"empty whitelist keeps srvr", "4lw.commands.whitelist=", func(c *Config) any { return c.FourLetterWhitelist }, []string{"srvr"}},
		{"whitelist dedup", "4lw.commands.whitelist= mntr,,srvr, mntr", func(c *Config) any { return c.FourLetterWhitelist }, []string{"mntr", "srvr"}},
		{"last repeated key wins, earlier bad value ignored", "tickTime=abc\ntickTime=1000", func(c *Config) any { return c.TickTime }, 1000},
		{"unknown keys in order, once", "b.x=1\na.x=2\nb.x=3\nzookeeper.foo=4", func(c *Config) any { return c.Unknown }, []string{"a.x", "b.x", "zookeeper.foo"}},
		{"zookeeper. prefix only for system properties", "zookeeper.tickTime=5", func(c *Config) any { return [2]any{c.TickTime, c.Unknown} }, [2]any{3000, []string{"zookeeper.tickTime"}}},
		{"negative maxClientCnxns allowed", "maxClientCnxns=-1", func(c *Config) any { return c.MaxClientCnxns }, -1},
		{"server client address", "initLimit=5\nsyncLimit=2\nserver.4=h:1:2;0.0.0.0:2181", func(c *Config) any { return c.Servers[4] },
			Member{ID: 4, Host: "h", QuorumPort: 1, ElectionPort: 2, ClientHost: "0.0.0.0", ClientPort: 2181}},
		{"server empty client part", "initLimit=5\nsyncLimit=2\nserver.0=h:1:2:OBSERVER;", func(c *Config) any { return c.Servers[0] },
			Member{ID: 0, Host: "h", QuorumPort: 1, ElectionPort: 2, Observer: true}},
		{"servers need no clientPort", "initLimit=5\nsyncLimit=2\nclientPort=0\nserver.1=h:1:2", func(c *Config) any { return c.ClientPort }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, base+tt.lines+"\n")
			if got := tt.check(c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	const base = "dataDir=/d\nclientPort=2181\n"
	tests := []struct {
		name  string
		in    string
		key   string // key of the (first) KeyError
		wants []string
	}{
		{"non-numeric", base + "tickTime=abc", "tickTime", []string{`config: line 3: tickTime="abc": not an integer`}},
		{"int overflow", base + "tickTime=99999999999", "tickTime", []string{"out of the 32-bit integer range"}},
		{"hex not allowed in zoo.cfg keys", base + "tickTime=0x10", "tickTime", []string{"not an integer"}},
		{"zero tickTime", base + "tickTime=0", "tickTime", []string{"tickTime is not set"}},
		{"negative tickTime", base + "tickTime=-5", "tickTime", []string{`tickTime="-5": must be positive`}},
		{"no dataDir", "clientPort=2181", "dataDir", []string{"dataDir is not set"}},
		{"no clientPort", "dataDir=/d", "clientPort", []string{"clientPort is not set"}},
		{"address without port", "dataDir=/d\nclientPortAddress=1.2.3.4", "clientPortAddress", []string{"clientPort is not set"}},
		{"port too big", "dataDir=/d\nclientPort=70000", "clientPort", []string{`clientPort="70000": port out of range`}},
		{"port negative", "dataDir=/d\nclientPort=-3", "clientPort", []string{"port out of range"}},
		{"min above max", base + "tickTime=2000\nminSessionTimeout=50000", "minSessionTimeout", []string{"must not be larger than maxSessionTimeout (40000)"}},
		{"min above explicit max", base + "tickTime=2000\nminSessionTimeout=9000\nmaxSessionTimeout=8000", "minSessionTimeout", []string{"larger than maxSessionTimeout (8000)"}},
		{"negative min", base + "minSessionTimeout=-7", "minSessionTimeout", []string{"must not be negative"}},
		{"bad bool", base + "extendedTypesEnabled=yes", "extendedTypesEnabled", []string{`must be "true" or "false"`}},
		{"forceSync takes yes/no", base + "forceSync=false", "forceSync", []string{`must be "yes" or "no"`}},
		{"zero jute.maxbuffer", base + "jute.maxbuffer=0", "jute.maxbuffer", []string{"must be positive"}},
		{"bad jute.maxbuffer", base + "jute.maxbuffer=0xzz", "jute.maxbuffer", []string{"not an integer"}},
		{"bad preAllocSize", base + "preAllocSize=64k", "preAllocSize", []string{`preAllocSize="64k": not an integer (KiB)`}},
		{"zero container interval", base + "znode.container.checkIntervalMs=0", "znode.container.checkIntervalMs", []string{"must be positive"}},
		{"zero outstanding limit", base + "globalOutstandingLimit=0", "globalOutstandingLimit", []string{"must be positive"}},
		{"ensemble needs initLimit", base + "syncLimit=2\nserver.1=h:1:2", "initLimit", []string{"initLimit is not set"}},
		{"server too short", base + "server.1=h:2888", "server.1", []string{`server.1="h:2888"`, "want host:quorumPort"}},
		{"server too long", base + "server.1=h:1:2:participant:x", "server.1", []string{"want host:quorumPort"}},
		{"server bad type", base + "server.1=h:1:2:voter", "server.1", []string{`unrecognised peer type "voter"`}},
		{"server bad port", base + "server.1=h:abc:3888", "server.1", []string{"quorum port: not an integer"}},
		{"server port range", base + "server.1=h:2888:99999", "server.1", []string{"election port: port 99999 out of range"}},
		{"server same ports", base + "server.1=h:2888:2888", "server.1", []string{"must be different"}},
		{"server bad id", base + "server.x=h:1:2", "server.x", []string{`server id "x"`}},
		{"server negative id", base + "server.-1=h:1:2", "server.-1", []string{"non-negative"}},
		{"server two client parts", base + "server.1=h:1:2;a;b", "server.1", []string{"want host:quorumPort"}},
		{"server spaces", base + "server.1= h1 : 2888 : 3888", "server.1", []string{"quorum port: not an integer"}},
		{"server space in host", base + "server.1=h 1:2888:3888", "server.1", []string{`bad host "h 1"`}},
		{"server unclosed bracket", base + "server.1=[::1:1:2", "server.1", []string{"missing ']'"}},
		{"server client port range", base + "server.1=h:1:2;0", "server.1", []string{"client port: port 0 out of range"}},
		{"server client too many parts", base + "server.1=h:1:2;a:1:2", "server.1", []string{"want host:quorumPort"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(strings.NewReader(tt.in + "\n"))
			if err == nil {
				t.Fatalf("no error; parsed %+v", c)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("errors.Is(%v, ErrInvalid) = false", err)
			}
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != tt.key {
				t.Errorf("error %q: want a KeyError for %q, got %+v", err, tt.key, ke)
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseReportsEveryBadKey(t *testing.T) {
	_, err := Parse(strings.NewReader("tickTime=x\nclientPort=y\ndataDir=/d\n"))
	for _, w := range []string{`tickTime="x"`, `clientPort="y"`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not mention %s", err, w)
		}
	}
}

func TestParseSyntaxError(t *testing.T) {
	_, err := Parse(strings.NewReader("dataDir=/d\nclientPort=1\nk=\\u12\n"))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "line 3: malformed") {
		t.Errorf("got %v, want an ErrInvalid naming line 3", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(good, []byte("tickTime=2000\ndataDir=/d\nclientPort=2181\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(good)
	if err != nil || c.TickTime != 2000 || c.ClientPort != 2181 {
		t.Fatalf("Load = %+v, %v", c, err)
	}

	bad := filepath.Join(dir, "bad.cfg")
	if err := os.WriteFile(bad, []byte("dataDir=/d\n\nclientPort=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	if want := bad + `:3: clientPort="x"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Load(bad) = %v, want it to contain %q", err, want)
	}

	noPort := filepath.Join(dir, "noport.cfg")
	if err := os.WriteFile(noPort, []byte("dataDir=/d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(noPort)
	if want := noPort + `: clientPort="0": clientPort is not set`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Load(noport) = %v, want it to contain %q", err, want)
	}

	if _, err := Load(filepath.Join(dir, "missing.cfg")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want fs.ErrNotExist", err)
	}
}

func TestDefaults(t *testing.T) {
	c := Defaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("Defaults().Validate() = %v", err)
	}
	got := [...]any{c.TickTime, c.ClientPort, c.ClientPortAddress, c.DataDir, c.DataLogDir, c.MaxClientCnxns,
		c.MinSessionTimeout, c.MaxSessionTimeout, c.FourLetterWhitelist}
	want := [...]any{2000, 2181, "127.0.0.1", "./zkd-data", "./zkd-data", 60, 4000, 40000, []string{"srvr"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Defaults() = %v, want %v", got, want)
	}
	// Each call returns a fresh value.
	c.FourLetterWhitelist[0] = "x"
	if Defaults().FourLetterWhitelist[0] != "srvr" {
		t.Error("Defaults shares its whitelist slice between calls")
	}
}

func TestValidateZeroConfig(t *testing.T) {
	err := (&Config{}).Validate()
	for _, key := range []string{"tickTime", "dataDir", "clientPort", "snapRetainCount", "jute.maxbuffer", "4lw.commands.whitelist"} {
		if err == nil || !strings.Contains(err.Error(), key+"=") {
			t.Errorf("Validate(zero) = %v; want it to name %s", err, key)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	c := mustParse(t, `tickTime=1000
initLimit=7
syncLimit=3
dataDir=/data/zk dir/é\\x
clientPort=12181
clientPortAddress=::1
forceSync=no
4lw.commands.whitelist=ruok,stat
extendedTypesEnabled=true
DigestAuthenticationProvider.superDigest=super:abc=
server.1=zk1:2888:3888
server.2=zk2:2888:3888:observer;12182
server.3=[fe80::1]:2889:3889;[::1]:12183
`)
	c.DataLogDir = "/logs/\t\u263a\U0001F600"
	for _, in := range []*Config{c, Defaults()} {
		back := mustParse(t, in.String())
		if !reflect.DeepEqual(back, in) {
			t.Errorf("round trip changed the config:\n text %s\n got  %+v\n want %+v", in.String(), back, in)
		}
	}
}

func TestFourLetterAllowed(t *testing.T) {
	tests := []struct {
		list    string
		allowed []string
		denied  []string
	}{
		{"", []string{"srvr"}, []string{"ruok", "stat", "*"}},
		{"ruok, stat", []string{"srvr", "ruok", "stat"}, []string{"mntr"}},
		{"*", []string{"srvr", "ruok", "mntr", "wchc"}, nil},
	}
	for _, tt := range tests {
		c := mustParse(t, "dataDir=/d\nclientPort=1\n4lw.commands.whitelist="+tt.list+"\n")
		for _, cmd := range tt.allowed {
			if !c.FourLetterAllowed(cmd) {
				t.Errorf("whitelist %q: %s not allowed", tt.list, cmd)
			}
		}
		for _, cmd := range tt.denied {
			if c.FourLetterAllowed(cmd) {
				t.Errorf("whitelist %q: %s allowed", tt.list, cmd)
			}
		}
	}
}

// The `conf` answer of a standalone Apache ZooKeeper 3.8.0 (golden 05, with its paths filled in).
func TestConf(t *testing.T) {
	c := mustParse(t, "tickTime=2000\ndataDir=/var/lib/zk\nclientPort=25181\n")
	got := c.Conf(ConfInfo{DataDirSize: 67109337, DataLogSize: 67109337})
	want := `clientPort=25181
secureClientPort=-1
dataDir=/var/lib/zk/version-2
dataDirSize=67109337
dataLogDir=/var/lib/zk/version-2
dataLogSize=67109337
tickTime=2000
maxClientCnxns=60
minSessionTimeout=4000
maxSessionTimeout=40000
clientPortListenBacklog=-1
serverId=0
`
	if got != want {
		t.Errorf("Conf:\n%s\nwant:\n%s", got, want)
	}

	c.DataDir, c.DataLogDir = "rel", "/logs"
	pairs := c.Pairs(ConfInfo{ServerID: 3})
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if pairs[2] != (KV{"dataDir", filepath.Join(wd, "rel", "version-2")}) || pairs[4] != (KV{"dataLogDir", "/logs/version-2"}) ||
		pairs[11] != (KV{"serverId", "3"}) {
		t.Errorf("Pairs = %v", pairs)
	}
	if got := c.Pairs(ConfInfo{SnapDir: "/s", LogDir: "/l"}); got[2].Value != "/s" || got[4].Value != "/l" {
		t.Errorf("Pairs ignores the given dirs: %v", got)
	}
}

func TestServerSpecString(t *testing.T) {
	for _, in := range []string{"h:1:2:participant", "h:1:2:observer;3", "[::1]:1:2:participant;[::2]:3", "h:1:2:participant;0.0.0.0:3"} {
		s, err := parseServer("1", in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if s.String() != in {
			t.Errorf("String() = %q, want %q", s.String(), in)
		}
	}
}

// javaDecodeInt follows Integer.decode, which ZooKeeper uses for its system-property integers.
func TestJavaDecodeInt(t *testing.T) {
	good := map[string]int{"0": 0, "17": 17, "-17": -17, "+17": 17, "0x1F": 31, "0X1f": 31, "#1f": 31,
		"-0x10": -16, "017": 15, "2147483647": 1<<31 - 1, "-2147483648": -1 << 31, "-0x80000000": -1 << 31}
	for in, want := range good {
		if got, err := javaDecodeInt(in); err != nil || got != want {
			t.Errorf("javaDecodeInt(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-", "0x", "#", "0b11", "1_000", "2147483648", "-2147483649", "0x-1", "--1", "08", " 1"} {
		if got, err := javaDecodeInt(in); err == nil {
			t.Errorf("javaDecodeInt(%q) = %d, want an error", in, got)
		}
	}
}

// AdminServer (issue 14): the admin.* keys, bare or with ZooKeeper's system-property
// prefix, and zkd's defaults (off, loopback, 8080, /commands).
func TestAdminServerKeys(t *testing.T) {
	c := mustParse(t, "dataDir=/d\nclientPort=2181\n")
	if c.AdminEnableServer || c.AdminListenAddr() != "127.0.0.1:8080" || c.AdminURL() != "/commands" {
		t.Errorf("defaults: enable=%v addr=%s url=%s", c.AdminEnableServer, c.AdminListenAddr(), c.AdminURL())
	}
	c = mustParse(t, "dataDir=/d\nclientPort=2181\nadmin.enableServer=true\n"+
		"zookeeper.admin.serverAddress=0.0.0.0\nadmin.serverPort=9090\nadmin.commandURL=/cmds\n")
	if !c.AdminEnableServer || c.AdminListenAddr() != "0.0.0.0:9090" || c.AdminURL() != "/cmds" {
		t.Errorf("set: enable=%v addr=%s url=%s", c.AdminEnableServer, c.AdminListenAddr(), c.AdminURL())
	}
	if back := mustParse(t, c.String()); !reflect.DeepEqual(back, c) {
		t.Errorf("String does not round-trip:\n%s", c.String())
	}
	for _, bad := range []string{"admin.serverPort=70000", "admin.commandURL=cmds", "admin.enableServer=yes"} {
		if _, err := Parse(strings.NewReader("dataDir=/d\nclientPort=2181\n" + bad + "\n")); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", bad, err)
		}
	}
}

// AdminServer snapshot/restore part: 3.9's keys, read as ZooKeeper reads them
// (Integer.parseInt) except that a boolean must be "true" or "false" (ZooKeeper's
// Boolean.parseBoolean reads anything else as false), and their round trip.
func TestAdminSnapshotKeys(t *testing.T) {
	c := mustParse(t, "dataDir=/d\nclientPort=2181\n")
	// restore is off unless enabled (ZooKeeper's default is on; zkd's is not).
	if c.AdminSnapshotDisabled || c.AdminRestoreEnabled || c.AdminRateLimiterMs != 0 || c.AdminNeedClientAuth {
		t.Errorf("defaults: %v %v %v %v", c.AdminSnapshotDisabled, c.AdminRestoreEnabled, c.AdminRateLimiterMs, c.AdminNeedClientAuth)
	}
	for _, bad := range []string{"admin.snapshot.enabled=no", "zookeeper.admin.restore.enabled=off", "admin.needClientAuth=1", "admin.snapshot.enabled="} {
		_, err := Parse(strings.NewReader("dataDir=/d\nclientPort=2181\n" + bad + "\n"))
		key, _, _ := strings.Cut(bad, "=")
		if !errors.Is(err, ErrNotBoolean) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: err = %v, want ErrNotBoolean naming %s", bad, err, key)
		}
	}
	c = mustParse(t, "dataDir=/d\nclientPort=2181\nadmin.snapshot.enabled=false\nzookeeper.admin.restore.enabled=FALSE\n"+
		"admin.rateLimiterIntervalInMS=1000\nadmin.needClientAuth=true\n")
	if !c.AdminSnapshotDisabled || c.AdminRestoreEnabled || c.AdminRateLimiterMs != 1000 || !c.AdminNeedClientAuth {
		t.Errorf("set: %v %v %v %v", c.AdminSnapshotDisabled, c.AdminRestoreEnabled, c.AdminRateLimiterMs, c.AdminNeedClientAuth)
	}
	if back := mustParse(t, c.String()); !reflect.DeepEqual(back, c) {
		t.Errorf("String does not round-trip:\n%s", c.String())
	}
	c = mustParse(t, "dataDir=/d\nclientPort=2181\nzookeeper.admin.restore.enabled=true\n")
	if !c.AdminRestoreEnabled {
		t.Error("admin.restore.enabled=true left restore off")
	}
	if back := mustParse(t, c.String()); !reflect.DeepEqual(back, c) {
		t.Errorf("String does not round-trip:\n%s", c.String())
	}
	if c = mustParse(t, "dataDir=/d\nclientPort=2181\nadmin.rateLimiterIntervalInMS=0\n"); c.AdminRateLimiterMs != -1 {
		t.Errorf("interval 0: %d, want -1 (no limit)", c.AdminRateLimiterMs)
	}
	if back := mustParse(t, c.String()); !reflect.DeepEqual(back, c) {
		t.Errorf("String does not round-trip:\n%s", c.String())
	}
	if _, err := Parse(strings.NewReader("dataDir=/d\nclientPort=2181\nadmin.rateLimiterIntervalInMS=5m\n")); !errors.Is(err, ErrInvalid) {
		t.Errorf("interval 5m: err = %v, want ErrInvalid", err)
	}
}
