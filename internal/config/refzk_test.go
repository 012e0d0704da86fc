package config

import (
	"strconv"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/testing/refzk"
)

// Reads the zoo.cfg that Apache ZooKeeper was started with and checks that Conf renders what
// ZooKeeper's `conf` four-letter word answers, byte for byte.
func TestConfMatchesZooKeeper(t *testing.T) {
	t.Parallel()
	s := refzk.StartStandalone(t, refzk.Options{
		TickTime: 1500,
		Config: []string{
			"minSessionTimeout = 5000", // max stays derived: 20 x tickTime
			"maxClientCnxns=17",
			"clientPortListenBacklog:50",
		},
	})
	c, err := Load(s.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Command("conf")
	if err != nil {
		t.Fatal(err)
	}
	// Directory sizes are run-time state: take them from ZooKeeper's answer.
	info := ConfInfo{DataDirSize: confInt(t, want, "dataDirSize"), DataLogSize: confInt(t, want, "dataLogSize")}
	if got := c.Conf(info); got != want {
		t.Errorf("Conf:\n%s\nZooKeeper's conf:\n%s", got, want)
	}
}

func confInt(t *testing.T, conf, key string) int64 {
	t.Helper()
	for line := range strings.SplitSeq(conf, "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in %q", key, conf)
	return 0
}
