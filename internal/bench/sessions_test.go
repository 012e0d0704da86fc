package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// TestSessionWorkloads runs the storm and idle workloads and a get recorded under another
// name (--as) against an in-process zkd. Like TestRunAgainstZkd it asserts work, not speed.
func TestSessionWorkloads(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.FourLetterWhitelist = []string{"mntr"} }))
	jsonPath := filepath.Join(t.TempDir(), "out.jsonl")
	ctx := context.Background()
	common := []string{"--servers", srv.Addr(), "--label", "zkd", "--json", jsonPath, "--progress", "0",
		"--warmup", "0s", "--server-pid", strconv.Itoa(os.Getpid()), "--clients", "8"}
	runs := [][]string{
		{"--ops", "50", "--sessions", "50", "storm"},
		{"--sessions", "200", "idle"},
		{"--ops", "20", "--outstanding", "1", "--clients", "1", "--keys", "10", "--as", "get-1", "get"},
	}
	var stdout bytes.Buffer
	for _, r := range runs {
		args := append(append([]string{"run"}, common...), r...)
		var stderr bytes.Buffer
		if err := cli(ctx, args, &stdout, &stderr); err != nil {
			t.Fatalf("%q: %v\n%s%s", r, err, stdout.String(), stderr.String())
		}
	}
	results, err := readResultsFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 {
		t.Fatalf("%d results, want 3", len(results))
	}
	storm, idle, get1 := results[0], results[1], results[2]
	if storm.Workload != "storm" || storm.Ops != 50 || storm.Errors != 0 || storm.Clients != 50 || storm.Latency.P50 <= 0 || storm.OpsPerSec <= 0 {
		t.Errorf("storm: %+v", storm)
	}
	if idle.Workload != "idle" || idle.Ops != 200 || idle.Errors != 0 || idle.Latency.P50 <= 0 || idle.ServerRSSEnd <= 0 {
		t.Errorf("idle: %+v", idle)
	}
	if !strings.Contains(idle.Note, "200 sessions connected") {
		t.Errorf("idle note %q", idle.Note)
	}
	if get1.Workload != "get-1" || get1.Of != "get" || get1.Clients != 1 || get1.Outstanding != 1 || get1.Ops != 20 {
		t.Errorf("get --as get-1: %+v", get1)
	}
	for _, w := range []string{"\nstorm ", "\nidle ", "\nget-1 "} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("table has no row %q:\n%s", w, stdout.String())
		}
	}
	// Every session was closed. The closes were answered, so the count is 0 at once on a
	// correct server; the wait is only for a loaded machine's sake.
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := globalSessions(srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions left open", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// globalSessions asks a server (mntr) for its count of sessions.
func globalSessions(addr string) (int, error) {
	m, err := mntr(context.Background(), addr, dialOptions{})
	if err != nil {
		return 0, err
	}
	n, ok := m["zk_global_sessions"]
	if !ok {
		return 0, fmt.Errorf("no zk_global_sessions in mntr")
	}
	return int(n), nil
}

// TestPinger checks that one goroutine keeps every session pinged, each about every third
// of its timeout, and none before it is open.
func TestPinger(t *testing.T) {
	const n = 40
	sess := make([]*bareSession, n)
	var pings [n]atomic.Int64
	for i := range sess {
		if i == n-1 {
			continue // never opened: must not be touched
		}
		client, server := net.Pipe()
		t.Cleanup(func() { client.Close(); server.Close() })
		sess[i] = &bareSession{nc: client, timeout: 300 * time.Millisecond, lastPing: time.Now()}
		go func() {
			var frame [12]byte
			for {
				if _, err := io.ReadFull(server, frame[:]); err != nil {
					return
				}
				if int32(binary.BigEndian.Uint32(frame[4:])) == jute.XidPing && int32(binary.BigEndian.Uint32(frame[8:])) == int32(jute.OpPing) {
					pings[i].Add(1)
				}
			}
		}()
	}
	stop := startPinger(n, func(i int) *bareSession { return sess[i] })
	defer stop()
	deadline := time.Now().Add(time.Minute)
	for i := range n - 1 {
		for pings[i].Load() < 2 {
			if time.Now().After(deadline) {
				t.Fatalf("session %d: %d pings", i, pings[i].Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
