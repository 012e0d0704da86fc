package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// fromZooCfg is what the server runs with for a zoo.cfg holding lines (standalone unless
// serverID is set).
func fromZooCfg(t *testing.T, serverID int64, lines ...string) server.Config {
	t.Helper()
	cfg, err := config.Parse(strings.NewReader("tickTime=1000\ninitLimit=5\nsyncLimit=2\ndataDir=/d\nclientPort=2999\n" +
		"server.1=h1:2001:3001\nserver.2=h2:2002:3002\n" + strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Unknown)+len(cfg.NotImplemented) != 0 {
		t.Fatalf("ignored: %v %v", cfg.Unknown, cfg.NotImplemented)
	}
	return server.FromConfig(cfg, serverID, slog.New(slog.DiscardHandler))
}

// The behaviour keys reach the server's Config.
func TestFromConfigBehaviourKeys(t *testing.T) {
	sc := fromZooCfg(t, 1, "skipACL=yes", "maxCnxns=7", "zookeeper.request_throttle_max_requests=9",
		"leaderServes=no", "fsync.warningthresholdms=250", "cnxTimeout=1500", "connectToLearnerMasterLimit=3")
	if !sc.SkipACL || sc.MaxCnxns != 7 || sc.RequestThrottleMaxRequests != 9 || !sc.LeaderServesNo ||
		sc.FsyncWarningThreshold != 250*time.Millisecond || sc.CnxTimeout != 1500*time.Millisecond || sc.ConnectToLearnerMasterLimit != 3 {
		t.Errorf("FromConfig = %+v", sc)
	}
	if !fromZooCfg(t, 0, "audit.enable=true").Audit || fromZooCfg(t, 0, "audit.enable=false").Audit {
		t.Error("audit.enable does not reach Config.Audit")
	}
	d := fromZooCfg(t, 1)
	if d.Audit || d.SkipACL || d.MaxCnxns != 0 || d.RequestThrottleMaxRequests != 0 || d.LeaderServesNo ||
		d.FsyncWarningThreshold != time.Second || d.CnxTimeout != 5*time.Second || d.ConnectToLearnerMasterLimit != 0 {
		t.Errorf("defaults: FromConfig = %+v", d)
	}
	if z := fromZooCfg(t, 0, "fsync.warningthresholdms=0"); z.FsyncWarningThreshold >= 0 {
		t.Errorf("fsync.warningthresholdms=0: %v, want every fsync (negative)", z.FsyncWarningThreshold)
	}
}

// TestSkipACLKey: zookeeper.skipACL=yes from zoo.cfg turns ACL checks off: a node only its
// creator may read is read by anyone; without it the read is NOAUTH.
func TestSkipACLKey(t *testing.T) {
	for _, skip := range []bool{false, true} {
		line := "skipACL=no"
		if skip {
			line = "zookeeper.skipACL=yes"
		}
		sc := fromZooCfg(t, 0, line)
		srv := startStock(t, zktest.WithConfig(func(c *server.Config) { c.SkipACL = sc.SkipACL }))
		owner, _ := connect(t, srv.Addr(), 10*time.Second)
		if err := owner.AddAuth("digest", []byte("u:p")); err != nil {
			t.Fatal(err)
		}
		if _, err := owner.Create("/secret", []byte("s"), 0, zk.DigestACL(zk.PermAll, "u", "p")); err != nil {
			t.Fatal(err)
		}
		other, _ := connect(t, srv.Addr(), 10*time.Second)
		data, _, err := other.Get("/secret")
		switch {
		case skip && (err != nil || string(data) != "s"):
			t.Errorf("skipACL=yes: read %q %v", data, err)
		case !skip && err != zk.ErrNoAuth:
			t.Errorf("skipACL=no: read %q %v, want NOAUTH", data, err)
		}
	}
}

// TestMaxCnxns: past zookeeper.maxCnxns a new connection, from any address, is closed at
// once (ServerCnxnFactory.limitTotalNumberOfCnxns); a slot frees when one closes.
func TestMaxCnxns(t *testing.T) {
	sc := fromZooCfg(t, 0, "maxCnxns=2", "maxClientCnxns=0")
	srv := startStock(t, zktest.WithConfig(func(c *server.Config) { c.MaxCnxns, c.MaxClientCnxns = sc.MaxCnxns, sc.MaxClientCnxns }))
	a := rawzk.Connect(t, srv.Addr())
	rawzk.Connect(t, srv.Addr())
	third := rawzk.Dial(t, srv.Addr())
	if _, err := third.Handshake(&jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)}); err == nil {
		t.Fatal("a connection past maxCnxns was served")
	}
	a.NC.Close()
	waitFor(t, "a slot to free up", func() bool {
		c := rawzk.Dial(t, srv.Addr())
		_, err := c.Handshake(&jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)})
		c.NC.Close()
		return err == nil
	})
}

// TestRequestThrottle: with zookeeper.request_throttle_max_requests=1 requests wait their
// turn rather than fail: a client pipelining many gets every answer, in order.
func TestRequestThrottle(t *testing.T) {
	sc := fromZooCfg(t, 0, "request_throttle_max_requests=1")
	srv := startStock(t, zktest.WithConfig(func(c *server.Config) { c.RequestThrottleMaxRequests = sc.RequestThrottleMaxRequests }))
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Create(fmt.Sprintf("/t%d", i), nil, 0, open); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	children, _, err := c.Children("/")
	if err != nil || len(children) != n+1 { // and /zookeeper
		t.Fatalf("children %d %v", len(children), err)
	}
	if got := server.OutstandingSlots(srv.Config()); got != 1 {
		t.Errorf("slots %d, want 1", got)
	}
	if got := server.OutstandingSlots(server.Config{GlobalOutstandingLimit: 10, RequestThrottleMaxRequests: 50}); got != 10 {
		t.Errorf("slots %d, want globalOutstandingLimit's 10", got)
	}
}

// lockedBuffer is a log sink written by the server's goroutines and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestFsyncWarningThreshold: an fsync of the txn log slower than
// fsync.warningthresholdms is logged (WARN); under the threshold nothing is.
func TestFsyncWarningThreshold(t *testing.T) {
	const msg = "fsync of the txn log took longer than fsync.warningthresholdms"
	for _, tc := range []struct {
		line string
		warn bool
	}{{"fsync.warningthresholdms=5", true}, {"zookeeper.fsync.warningthresholdms=60000", false}} {
		sc := fromZooCfg(t, 0, tc.line)
		var logs lockedBuffer
		srv := startStock(t, zktest.WithConfig(func(c *server.Config) {
			c.FsyncWarningThreshold = sc.FsyncWarningThreshold
			c.FS = slowSyncFS{delay: 30 * time.Millisecond}
			c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			c.AdminAddr = "127.0.0.1:0"
		}))
		c, _ := connect(t, srv.Addr(), 10*time.Second)
		if _, err := c.Create("/f", nil, 0, open); err != nil {
			t.Fatal(err)
		}
		// server_stats counts them, as ZooKeeper's ServerStats.fsyncThresholdExceedCount.
		exceeded := func() float64 {
			_, _, body := adminHTTP(t, http.MethodGet, "http://"+srv.AdminAddr()+"/commands/server_stats")
			var v struct {
				ServerStats map[string]any `json:"server_stats"`
			}
			if err := json.Unmarshal(body, &v); err != nil {
				t.Fatalf("server_stats: %v\n%s", err, body)
			}
			n, ok := v.ServerStats["fsync_threshold_exceed_count"].(float64)
			if !ok {
				t.Fatalf("server_stats has no fsync_threshold_exceed_count:\n%s", body)
			}
			return n
		}
		if tc.warn {
			waitFor(t, "the fsync warning", func() bool { return strings.Contains(logs.String(), msg) })
			if n := exceeded(); n < 1 {
				t.Errorf("%s: fsync_threshold_exceed_count %v after a slow fsync", tc.line, n)
			}
			if !strings.Contains(logs.String(), "threshold_ms=5") {
				t.Errorf("%s: warning without the threshold:\n%s", tc.line, logs.String())
			}
		} else if strings.Contains(logs.String(), msg) {
			t.Errorf("%s: warned:\n%s", tc.line, logs.String())
		} else if n := exceeded(); n != 0 {
			t.Errorf("%s: fsync_threshold_exceed_count %v under the threshold", tc.line, n)
		}
	}
}

// TestLeaderServesNo: with zookeeper.leaderServes=no the leader closes client connections
// (Leader.lead does not give the client port its ZooKeeperServer) while the followers
// serve, writes included; leaderServes=yes (the default) serves on the leader too.
func TestLeaderServesNo(t *testing.T) {
	sc := fromZooCfg(t, 1, "leaderServes=no")
	e := startEnsembleConfig(t, 3, func(c *server.Config) { c.LeaderServesNo = sc.LeaderServesNo })
	e.waitServing()
	leader := e.leaderIndex()
	handshake := func(addr string) error {
		c := rawzk.Dial(t, addr)
		defer c.NC.Close()
		_, err := c.Handshake(&jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)})
		return err
	}
	if err := handshake(e.addrs()[leader]); err == nil {
		t.Fatal("the leader served a client with leaderServes=no")
	}
	for i, addr := range e.addrs() {
		if i == leader {
			continue
		}
		c := connectTo(t, addr)
		if _, err := c.Create(fmt.Sprintf("/via%d", i), nil, 0, open); err != nil {
			t.Fatalf("write through follower %d: %v", i, err)
		}
	}

	serves := startEnsemble(t, 3)
	serves.waitServing()
	if err := handshake(serves.addrs()[serves.leaderIndex()]); err != nil {
		t.Fatalf("leaderServes=yes: the leader refused a client: %v", err)
	}
}

// TestObserverLogsTxns: syncEnabled=true (ZooKeeper's default, and what zkd's observers
// always do): an observer writes the txns it is informed of to its own txn log.
func TestObserverLogsTxns(t *testing.T) {
	fromZooCfg(t, 1, "syncEnabled=true", "zookeeper.observer.syncEnabled=true") // accepted, not ignored
	e := startEnsembleObservers(t, 3, 1)
	e.waitServing()
	obs := len(e.members) - 1
	c := connectTo(t, e.addrs()[obs])
	var last int64
	for i := range 5 {
		if _, err := c.Create(fmt.Sprintf("/o%d", i), nil, 0, open); err != nil {
			t.Fatal(err)
		}
	}
	_, st, err := c.Get("/o4")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	dir := filepath.Join(e.members[obs].cfg.DataDir, "version-2")
	waitFor(t, "the observer's log to hold the last write", func() bool {
		last, err = storage.ReadLog(storage.OSFS{}, dir, 0, func(int64, []byte) error { return nil })
		return err == nil && last >= st.Czxid
	})
}

// TestSnapshotTrustEmpty: a data directory whose log has txns and which has no snapshot is
// refused (FileTxnSnapLog.restore: "No snapshot found, but there are log entries"), unless
// zookeeper.snapshot.trust.empty=true, which starts from the log alone.
func TestSnapshotTrustEmpty(t *testing.T) {
	srv := startStock(t)
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	for i := range 3 {
		if _, err := c.Create(fmt.Sprintf("/k%d", i), []byte("v"), 0, open); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	cfg := srv.Config()
	srv.Stop()
	snaps, err := filepath.Glob(filepath.Join(cfg.DataDir, "version-2", "snapshot.*"))
	if err != nil || len(snaps) == 0 {
		t.Fatalf("snapshots %v %v", snaps, err)
	}
	for _, f := range snaps {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	start := func(trust bool) (*server.Server, error) {
		cfg := cfg
		cfg.SnapshotTrustEmpty = trust
		s, err := server.New(cfg)
		if err == nil {
			if err = s.Start(); err != nil {
				s.Close()
			}
		}
		return s, err
	}
	if s, err := start(fromZooCfg(t, 0, "snapshot.trust.empty=false").SnapshotTrustEmpty); err == nil {
		s.Close()
		t.Fatal("started with log entries and no snapshot")
	} else if !strings.Contains(err.Error(), "no snapshot found") || !strings.Contains(err.Error(), "snapshot.trust.empty") {
		t.Fatalf("error does not say what is wrong: %v", err)
	}
	s, err := start(fromZooCfg(t, 0, "zookeeper.snapshot.trust.empty=true").SnapshotTrustEmpty)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, _ = connect(t, s.Addr(), 10*time.Second)
	if d, _, err := c.Get("/k2"); err != nil || string(d) != "v" {
		t.Fatalf("after trusting the log: %q %v", d, err)
	}
}
