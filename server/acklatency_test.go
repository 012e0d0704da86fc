package server_test

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/metrics"
	"github.com/zkd-io/zkd/server"
)

// TestMetricsAckLatency: the leader feeds ZooKeeper's ack_latency set, keyed by the acking
// sid, with the acks of sampled proposals that arrive before they commit (every proposal
// here; one in 1000 by default), and its /metrics shows them; the followers, which take no
// acks, export none.
func TestMetricsAckLatency(t *testing.T) {
	var mu sync.Mutex
	urls := map[int64]string{}
	e := startEnsembleConfig(t, 3, func(c *server.Config) {
		reg := metrics.New(metrics.Options{})
		ep, err := reg.Serve("127.0.0.1:0", slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ep.Close() })
		mu.Lock()
		urls[c.ServerID] = "http://" + ep.Addr() + "/metrics"
		mu.Unlock()
		c.Metrics = reg
		server.SetAckSampleEvery(c, 1)
	})
	e.waitServing()
	c, _ := connect(t, e.addrs()[0], 10*time.Second)
	const writes = 20
	for i := range writes {
		if _, err := c.Create(fmt.Sprintf("/ack%d", i), nil, 0, open); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	leader := int64(e.leaderIndex() + 1)
	// Each proposal commits on the second of its three acks, so two of them are observed.
	waitFor(t, "the leader's ack_latency to count two acks per write", func() bool {
		m := scrapeMetrics(t, urls[leader])
		var n float64
		for _, s := range m["ack_latency_count"] {
			sid, err := strconv.ParseInt(s.labels["key"], 10, 64)
			if err != nil || sid < 1 || sid > 3 {
				t.Fatalf("ack_latency series keyed %q, want a member's sid", s.labels["key"])
			}
			n += s.value
		}
		return n >= 2*writes
	})
	m := scrapeMetrics(t, urls[leader])
	for _, s := range m["ack_latency"] {
		if s.value < 0 {
			t.Errorf("ack_latency %v = %v ms", s.labels, s.value)
		}
	}
	if len(m["ack_latency"]) == 0 || m.get("ack_latency", "quantile", "0.99") == -1 {
		t.Errorf("ack_latency quantiles %v, want 0.5, 0.9 and 0.99 (ADVANCED)", m["ack_latency"])
	}
	for id, url := range urls {
		if id == leader {
			continue
		}
		if s := scrapeMetrics(t, url)["ack_latency_count"]; len(s) != 0 {
			t.Errorf("follower %d exports ack_latency %v", id, s)
		}
	}
}
