package server

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/config"
)

// TestEnsembleTimeoutKeys: cnxTimeout bounds the election transport's dials, and a learner
// connects to its leader within tickTime * connectToLearnerMasterLimit, or tickTime *
// initLimit when that is not set (Learner.connectToLeader).
func TestEnsembleTimeoutKeys(t *testing.T) {
	peers := PeersOf(map[int]config.Member{
		1: {ID: 1, Host: "127.0.0.1", QuorumPort: 1001, ElectionPort: 2001},
		2: {ID: 2, Host: "127.0.0.1", QuorumPort: 1002, ElectionPort: 2002},
	})
	for _, tc := range []struct {
		limit      int
		cnx, learn time.Duration
	}{{3, 1500 * time.Millisecond, 300 * time.Millisecond}, {0, 0, time.Second}} {
		s, err := New(Config{
			DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			ServerID: 2, Peers: peers, TickTime: 100, InitLimit: 10,
			ConnectToLearnerMasterLimit: tc.limit, CnxTimeout: tc.cnx,
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.electionTCPConfig(nil, 0, "", nil).DialTimeout; got != tc.cnx {
			t.Errorf("election dial timeout %v, want %v", got, tc.cnx)
		}
		if got := s.learnerConnectTimeout(); got != tc.learn {
			t.Errorf("connectToLearnerMasterLimit=%d: learner connect timeout %v, want %v", tc.limit, got, tc.learn)
		}
		s.unlockDirs()
	}
}
