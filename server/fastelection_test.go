package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd-io/zkd/server"
)

// TestFastElectionFailover runs three members over the real election transport with
// zkd.fastElection and a finalize wait of an hour: only the fast decision can elect, at
// start-up (every member agrees) and after the leader stops (its election port refuses, so
// the two others need only each other's votes).
func TestFastElectionFailover(t *testing.T) {
	ports := freePorts(t, 6)
	var peers []server.Peer
	for i := 0; i < 3; i++ {
		peers = append(peers, server.Peer{ID: int64(i + 1), Host: "127.0.0.1", QuorumPort: ports[2*i], ElectionPort: ports[2*i+1]})
	}
	e := &testEnsemble{t: t}
	for i := 0; i < 3; i++ {
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		if os.Getenv("ZKTEST_LOG") != "" {
			logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("sid", i+1)
		}
		cfg := server.Config{
			ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(), TickTime: 100, InitLimit: 20, SyncLimit: 10,
			ServerID: int64(i + 1), Peers: peers, PreAllocSize: 1 << 20, Logger: logger,
			MaxSessionTimeout: 20000, FastElection: true,
		}
		server.SetFinalizeWait(&cfg, int64(time.Hour/time.Millisecond))
		srv, err := server.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		cfg.ListenAddr = srv.Addr()
		e.members = append(e.members, &ensembleMember{cfg: cfg, srv: srv})
	}
	t.Cleanup(func() {
		for i := range e.members {
			e.stop(i)
		}
	})
	e.waitServing()
	c, _, err := zk.Connect(e.addrs(), 10*time.Second, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, "session", func() bool { return c.State() == zk.StateHasSession })
	for i := 0; i < 5; i++ {
		if _, err := c.Create(fmt.Sprintf("/before%d", i), nil, 0, open); err != nil {
			t.Fatal(err)
		}
	}
	old := e.leaderIndex()
	e.stop(old)
	waitFor(t, "a new leader", func() bool {
		li := e.leaderIndex()
		return li >= 0 && li != old
	})
	var lastErr error
	waitFor(t, "writes to succeed again", func() bool {
		_, lastErr = c.Create("/after", nil, 0, open)
		return lastErr == nil || lastErr == zk.ErrNodeExists
	})
	for i := 0; i < 5; i++ {
		if ok, _, err := c.Exists(fmt.Sprintf("/before%d", i)); err != nil || !ok {
			t.Fatalf("/before%d lost in failover: %v %v", i, ok, err)
		}
	}
}
