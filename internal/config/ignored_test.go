package config

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestLogIgnored: a ZooKeeper key zkd does not implement and an unknown key (a typo) are
// logged with different messages; the first names what zkd does instead.
func TestLogIgnored(t *testing.T) {
	c := mustParse(t, baseCfg+"jvm.pause.monitor=true\nsyncEnabled=false\nzookeeper.nio.numWorkerThreads=4\nskipAcl=yes\nleaderServes=no\n")
	var buf bytes.Buffer
	c.LogIgnored(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=WARN msg="ignoring ZooKeeper key zkd does not implement" key=jvm.pause.monitor value=true zkd="no JVM: there are no JVM pauses to watch"`,
		`level=WARN msg="ignoring ZooKeeper key zkd does not implement" key=syncEnabled value=false zkd="observers log and snapshot the txns they receive anyway, as with syncEnabled=true"`,
		`level=WARN msg="ignoring ZooKeeper key zkd does not implement" key=zookeeper.nio.numWorkerThreads value=4 zkd="each connection has its own reader and writer goroutines; there is no worker pool"`,
		`level=WARN msg="ignoring unknown config key (not a ZooKeeper 3.8/3.9 key: a typo?)" key=skipAcl`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("logged\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if !c.LeaderServesNo {
		t.Error("leaderServes=no not read")
	}
	// An unimplemented key's value is still checked.
	if _, err := Parse(strings.NewReader(baseCfg + "jvm.pause.monitor=ture\n")); !errors.Is(err, ErrNotBoolean) {
		t.Errorf("jvm.pause.monitor=ture: %v, want ErrNotBoolean", err)
	}
	if _, err := Parse(strings.NewReader(baseCfg + "syncEnabled=yes\n")); !errors.Is(err, ErrNotBoolean) {
		t.Errorf("syncEnabled=yes: %v, want ErrNotBoolean", err)
	}
}

// TestAuditEnable: audit.enable=true (either spelling, any case) turns the audit log on;
// false, or no line, leaves it off; a value that is not true or false is still refused.
func TestAuditEnable(t *testing.T) {
	for _, line := range []string{"audit.enable=true", "zookeeper.audit.enable=TRUE"} {
		c := mustParse(t, baseCfg+line+"\n")
		if !c.AuditEnable || len(c.Unknown)+len(c.NotImplemented) != 0 {
			t.Errorf("%s: AuditEnable %v, unknown %v, not implemented %v", line, c.AuditEnable, c.Unknown, c.NotImplemented)
		}
	}
	if _, err := Parse(strings.NewReader(baseCfg + "audit.enable=ture\n")); !errors.Is(err, ErrNotBoolean) {
		t.Errorf("audit.enable=ture: %v, want ErrNotBoolean", err)
	}
	for _, cfg := range []string{baseCfg, baseCfg + "zookeeper.audit.enable=False\n"} {
		c := mustParse(t, cfg)
		if c.AuditEnable || len(c.Unknown)+len(c.NotImplemented) != 0 {
			t.Errorf("%q: AuditEnable %v, unknown %v, not implemented %v", cfg, c.AuditEnable, c.Unknown, c.NotImplemented)
		}
	}
}

// TestBehaviourKeys: the ZooKeeper keys that change behaviour are read, with ZooKeeper's
// spellings and defaults.
func TestBehaviourKeys(t *testing.T) {
	d := mustParse(t, baseCfg)
	if d.SkipACL || d.MaxCnxns != 0 || d.RequestThrottleMaxRequests != 0 || d.LeaderServesNo ||
		d.FsyncWarningThreshold().Milliseconds() != 1000 || d.CnxTimeout().Milliseconds() != 5000 || d.ConnectToLearnerMasterLimit != 0 {
		t.Fatalf("defaults: %+v", d)
	}
	c := mustParse(t, baseCfg+"zookeeper.skipACL=yes\nmaxCnxns=-3\nzookeeper.request_throttle_max_requests=0x10\n"+
		"zookeeper.leaderServes=no\nfsync.warningthresholdms=0\ncnxTimeout=1500\nconnectToLearnerMasterLimit=4\n")
	if !c.SkipACL || c.MaxCnxns != 0 || c.RequestThrottleMaxRequests != 16 || !c.LeaderServesNo ||
		c.FsyncWarningThreshold() != 0 || c.CnxTimeout().Milliseconds() != 1500 || c.ConnectToLearnerMasterLimit != 4 {
		t.Fatalf("set: %+v", c)
	}
	if len(c.Unknown)+len(c.NotImplemented) != 0 {
		t.Errorf("unknown %v, not implemented %v", c.Unknown, c.NotImplemented)
	}
	// As ZooKeeper: only "yes" turns skipACL on, only "no" turns leaderServes off.
	if c := mustParse(t, baseCfg+"skipACL=true\nleaderServes=false\n"); c.SkipACL || c.LeaderServesNo {
		t.Errorf("skipACL=true / leaderServes=false: %v %v", c.SkipACL, c.LeaderServesNo)
	}
	if _, err := Parse(strings.NewReader(baseCfg + "cnxTimeout=0\n")); !errors.Is(err, ErrInvalid) {
		t.Errorf("cnxTimeout=0: %v", err)
	}
	// The rendering reads back.
	if back := mustParse(t, c.String()); back.String() != c.String() {
		t.Errorf("String does not read back:\n%s\n%s", c.String(), back.String())
	}
}
