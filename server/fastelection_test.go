package server_test

import (
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/server"
)

// TestFastElectionFailover runs three members over the real election transport with
// zkd.fastElection and a finalize wait of an hour: only the fast decision can elect, at
// start-up (every member agrees) and after the leader stops (its election port refuses, so
// the two others need only each other's votes).
func TestFastElectionFailover(t *testing.T) {
	ports := freePorts(t, 6)
	var peers []config.Member
	for i := 0; i < 3; i++ {
		peers = append(peers, config.Member{ID: int64(i + 1), Host: "127.0.0.1", QuorumPort: ports[2*i], ElectionPort: ports[2*i+1]})
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
	e.checkFailover(5)
}
