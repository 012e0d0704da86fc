package config

import (
	"slices"
	"strings"
	"testing"
)

func TestLocalSessionsKeys(t *testing.T) {
	const base = "dataDir=/d\nclientPort=2181\n"
	if c := mustParse(t, base); c.LocalSessions != (LocalSessions{}) {
		t.Fatalf("local sessions on by default: %+v", c.LocalSessions)
	}
	for _, tc := range []struct {
		lines string
		want  LocalSessions
	}{
		{"localSessionsEnabled=true\n", LocalSessions{Enabled: true}},
		{"localSessionsEnabled=TRUE\nlocalSessionsUpgradingEnabled=True\n", LocalSessions{Enabled: true, Upgrading: true}},
		{"localSessionsEnabled=false\nlocalSessionsUpgradingEnabled=true\n", LocalSessions{Upgrading: true}},
	} {
		c := mustParse(t, base+tc.lines)
		if c.LocalSessions != tc.want || len(c.Unknown) != 0 {
			t.Errorf("%q: %+v, Unknown %v; want %+v", tc.lines, c.LocalSessions, c.Unknown, tc.want)
		}
	}
	// QuorumPeerConfig.parseBoolean refuses anything but true and false.
	if _, err := Parse(strings.NewReader(base + "localSessionsEnabled=yes\n")); err == nil {
		t.Error("localSessionsEnabled=yes accepted")
	}
	// ZooKeeper reads these from zoo.cfg only: the prefixed name is no key of its.
	if c := mustParse(t, base+"zookeeper.localSessionsEnabled=true\n"); c.LocalSessions.Enabled || !slices.Contains(c.Unknown, "zookeeper.localSessionsEnabled") {
		t.Errorf("prefixed key: %+v, Unknown %v", c.LocalSessions, c.Unknown)
	}
}
