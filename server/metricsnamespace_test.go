package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/metrics"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

// TestMetricsNamespaceChurn: creating and deleting 20,000 distinct top-level znodes leaves
// no per-namespace series once their retention has passed on the metrics' clock (ZooKeeper
// keeps 60,000, three per namespace, for good), and a namespace still holding a znode keeps
// its series.
func TestMetricsNamespaceChurn(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	reg := metrics.New(metrics.Options{Now: clock})
	ep, err := reg.Serve("127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.Metrics = reg }))
	url := "http://" + ep.Addr() + "/metrics"
	c := connectZK(t, srv.Addr())
	if _, err := c.Create(t.Context(), "/kept", nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}

	const n = 20_000
	const batch = 500 // pipelined: a loaded machine does not spend an fsync round per znode
	for start := 0; start < n; start += batch {
		pipelined(t, 2*batch, func(ctx context.Context, i int) error {
			p := fmt.Sprintf("/churn%05d", start+i/2)
			if i%2 == 0 {
				_, err := c.Create(ctx, p, []byte("x"), zk.OpenACL(), 0)
				return err
			}
			return c.Delete(ctx, p, -1)
		})
	}
	perNamespace := func() (int, series) {
		s := scrapeMetrics(t, url)
		count := 0
		for _, name := range []string{"read_per_namespace", "write_per_namespace"} {
			count += len(s[name]) + len(s[name+"_sum"]) + len(s[name+"_count"])
		}
		return count, s
	}
	if got, _ := perNamespace(); got > 2*3*(metrics.DefaultNamespaceLimit+1) {
		t.Fatalf("%d per-namespace series before the retention passed, more than the limit allows", got)
	}
	mu.Lock()
	now = now.Add(metrics.DefaultNamespaceRetention)
	mu.Unlock()
	got, s := perNamespace()
	if s.get("write_per_namespace_count", "key", "kept") != 1 {
		t.Errorf("the live namespace lost its series: %v", s["write_per_namespace_count"])
	}
	// kept's write series and the overflow key's (for the namespaces past the limit before
	// the retention could free any room): at most two summaries of three series.
	if got > 2*3 {
		t.Fatalf("%d per-namespace series left after creating and deleting %d top-level znodes: %v",
			got, n, s["write_per_namespace_count"])
	}
}
