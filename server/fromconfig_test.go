package server

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/config"
)

// FromConfig carries a zoo.cfg's settings, and an ensemble member's only with its id; the
// conf four-letter word names the member.
func TestFromConfig(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(`tickTime=1000
initLimit=7
syncLimit=3
dataDir=/d
clientPort=2999
maxClientCnxns=0
forceSync=no
server.3=h3:2003:3003:observer
server.1=h1:2001:3001
server.2=h2:2002:3002;2181
`))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	sc := FromConfig(cfg, 2, log)
	if sc.ListenAddr != ":2999" || sc.TickTime != 1000 || sc.MinSessionTimeout != 2000 || !sc.NoSync ||
		sc.MaxClientCnxns != 0 || sc.ServerID != 2 || sc.InitLimit != 7 || sc.SyncLimit != 3 {
		t.Errorf("FromConfig = %+v", sc)
	}
	if len(sc.Peers) != 3 || sc.Peers[0].ID != 1 || sc.Peers[2].String() != cfg.Servers[3].String() || !sc.Peers[2].Observer {
		t.Errorf("Peers = %+v", sc.Peers)
	}
	quorum := []byte(cfg.Dynamic().Text())
	if conf := sc.ConfText(0, 0, quorum); !strings.Contains(conf, "serverId=2\n") || !strings.Contains(conf, "electionPort=3002\n") {
		t.Errorf("conf of member 2:\n%s", conf)
	}
	if alone := FromConfig(cfg, 0, log); alone.Peers != nil || alone.InitLimit != 0 {
		t.Errorf("standalone: Peers %v, InitLimit %d", alone.Peers, alone.InitLimit)
	}
}

// A Config's zero fields take the key table's defaults for zkd without a config file.
func TestSetDefaultsFromKeyTable(t *testing.T) {
	var c Config
	c.setDefaults()
	d := config.Defaults()
	got := []any{c.ListenAddr, c.DataDir, c.TickTime, c.MinSessionTimeout, c.MaxSessionTimeout, c.SnapCount,
		c.PreAllocSize, c.JuteMaxBuffer, c.GlobalOutstandingLimit, c.ContainerCheckInterval, c.SnapRetainCount,
		c.InitLimit, c.SyncLimit, c.FourLetterWhitelist, c.MaxClientCnxns}
	want := []any{"127.0.0.1:2181", d.DataDir, d.TickTime, d.MinSessionTimeout, d.MaxSessionTimeout, d.SnapCount,
		d.PreAllocSize, d.JuteMaxBuffer, d.GlobalOutstandingLimit, time.Duration(d.ContainerCheckIntervalMs) * time.Millisecond,
		d.SnapRetainCount, d.InitLimit, d.SyncLimit, d.FourLetterWhitelist, 0}
	for i := range got {
		if !equal(got[i], want[i]) {
			t.Errorf("field %d: %v, want %v", i, got[i], want[i])
		}
	}
}

func equal(a, b any) bool {
	if as, ok := a.([]string); ok {
		bs, _ := b.([]string)
		return strings.Join(as, ",") == strings.Join(bs, ",")
	}
	return a == b
}
