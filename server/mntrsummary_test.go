package server_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/metrics"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// mntrSummary reads avg_/min_/max_/cnt_/sum_ name from mntr's lines, failing when one is
// missing or malformed.
func mntrSummary(t *testing.T, m map[string]string, name string) (avg float64, lo, hi, cnt, sum int64) {
	t.Helper()
	var err error
	if avg, err = strconv.ParseFloat(m["avg_"+name], 64); err != nil {
		t.Fatalf("avg_%s: %q", name, m["avg_"+name])
	}
	for _, f := range []struct {
		stat string
		v    *int64
	}{{"min", &lo}, {"max", &hi}, {"cnt", &cnt}, {"sum", &sum}} {
		v, ok := mntrInt(m, f.stat+"_"+name)
		if !ok {
			t.Fatalf("%s_%s: %q", f.stat, name, m[f.stat+"_"+name])
		}
		*f.v = v
	}
	return avg, lo, hi, cnt, sum
}

// checkSummary checks that a summary is consistent: min <= avg <= max, sum = avg * cnt (to
// the average's four decimals), and cnt is want.
func checkSummary(t *testing.T, m map[string]string, name string, want int64) {
	t.Helper()
	avg, lo, hi, cnt, sum := mntrSummary(t, m, name)
	if cnt != want {
		t.Errorf("cnt_%s = %d, want %d", name, cnt, want)
	}
	if cnt == 0 {
		return
	}
	if float64(lo) > avg || avg > float64(hi) || lo < 0 {
		t.Errorf("%s: min %d, avg %v, max %d", name, lo, avg, hi)
	}
	if d := float64(sum)/float64(cnt) - avg; d > 0.0001 || d < -0.0001 {
		t.Errorf("%s: sum %d / cnt %d is not avg %v", name, sum, cnt, avg)
	}
}

// TestMntrSummaries: without a Prometheus provider, mntr prints ZooKeeper's
// AvgMinMaxCounter summaries with what the server measured since srst: one updatelatency
// per write, one readlatency per read, the fsyncs that made the writes durable (their batch
// sizes adding up to the writes), the per-namespace request sizes, and percentiles within
// the range of the latencies.
func TestMntrSummaries(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.FourLetterWhitelist = []string{"*"} }))
	// A raw client: it sends no pings, which would count as reads.
	c := rawzk.Connect(t, srv.Addr())
	c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/app", ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{})
	if out := fourLetter(t, srv.Addr(), "srst"); !strings.Contains(out, "reset") {
		t.Fatalf("srst: %q", out)
	}
	before := mntrLines(t, fourLetter(t, srv.Addr(), "mntr"))
	for _, n := range []string{"updatelatency", "readlatency", "fsynctime", "sync_processor_batch_size"} {
		checkSummary(t, before, n, 0)
	}

	const creates, sets, reads = 7, 5, 11
	for i := range creates {
		c.Call(jute.OpCreate, &jute.CreateRequest{Path: fmt.Sprintf("/app/n%d", i), Data: []byte("abc"), ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{})
	}
	for range sets {
		c.Call(jute.OpSetData, &jute.SetDataRequest{Path: "/app", Data: []byte("x"), Version: -1}, &jute.SetDataResponse{})
	}
	for i := range reads {
		c.Call(jute.OpGetData, &jute.GetDataRequest{Path: fmt.Sprintf("/app/n%d", i%creates)}, &jute.GetDataResponse{})
	}
	m := mntrLines(t, fourLetter(t, srv.Addr(), "mntr"))
	checkSummary(t, m, "updatelatency", creates+sets)
	checkSummary(t, m, "readlatency", reads)
	_, _, _, batches, txns := mntrSummary(t, m, "sync_processor_batch_size")
	if txns != creates+sets || batches < 1 || batches > txns {
		t.Errorf("sync_processor_batch_size: %d txns in %d fsyncs, want %d txns", txns, batches, creates+sets)
	}
	checkSummary(t, m, "sync_processor_batch_size", batches)
	checkSummary(t, m, "fsynctime", batches)
	// Each create wrote len("/app/nI")+3 bytes, each set len("/app")+1; each read returned
	// the path, 3 bytes and a Stat (68 bytes).
	checkSummary(t, m, "app_write_per_namespace", creates+sets)
	if _, _, _, _, sum := mntrSummary(t, m, "app_write_per_namespace"); sum != creates*(7+3)+sets*(4+1) {
		t.Errorf("sum_app_write_per_namespace = %d", sum)
	}
	checkSummary(t, m, "app_read_per_namespace", reads)
	if _, _, _, _, sum := mntrSummary(t, m, "app_read_per_namespace"); sum != reads*(7+3+68) {
		t.Errorf("sum_app_read_per_namespace = %d", sum)
	}
	for _, n := range []string{"updatelatency", "readlatency"} {
		_, lo, hi, _, _ := mntrSummary(t, m, n)
		prev := lo
		for _, p := range []string{"p50_", "p95_", "p99_", "p999_"} {
			v, ok := mntrInt(m, p+n)
			if !ok || v < prev || v > hi {
				t.Errorf("%s%s = %q: not in [%d, %d] or below the one before", p, n, m[p+n], prev, hi)
			}
			prev = v
		}
	}

	// srst starts them again, as ServerMetrics.resetAll does.
	fourLetter(t, srv.Addr(), "srst")
	m = mntrLines(t, fourLetter(t, srv.Addr(), "mntr"))
	for _, n := range []string{"updatelatency", "readlatency", "fsynctime", "app_read_per_namespace"} {
		checkSummary(t, m, n, 0)
	}
}

// TestMntrPrometheusDump: with the Prometheus provider, mntr prints what ZooKeeper's
// PrometheusMetricsProvider.dump does: the version and state lines, then every sample of
// the provider as a double, keyed by name and labels; no avg_/cnt_ lines.
func TestMntrPrometheusDump(t *testing.T) {
	reg := metrics.New(metrics.Options{})
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.FourLetterWhitelist = []string{"*"}
		c.Metrics = reg
	}))
	c := rawzk.Connect(t, srv.Addr())
	const writes, reads = 4, 6
	for i := range writes {
		c.Call(jute.OpCreate, &jute.CreateRequest{Path: fmt.Sprintf("/p%d", i), ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{})
	}
	for range reads {
		c.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/p0"}, &jute.GetDataResponse{})
	}
	out := fourLetter(t, srv.Addr(), "mntr")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "zk_version\t") || lines[1] != "zk_server_state\tstandalone" {
		t.Fatalf("mntr starts %q", lines[:min(2, len(lines))])
	}
	m := map[string]float64{}
	for _, l := range lines[2:] {
		k, v, ok := strings.Cut(l, "\t")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || !strings.HasPrefix(k, "zk_") || (!strings.Contains(v, ".") && v != "NaN") {
			t.Fatalf("mntr line %q: not a double", l)
		}
		m[strings.TrimPrefix(k, "zk_")] = f
	}
	// The session's connect is not a request; its createSession is a write in ZooKeeper
	// and zkd alike.
	for k, want := range map[string]float64{
		"readlatency_count":                   reads,
		`read_per_namespace_count{key="p0"}`:  reads,
		`write_per_namespace_count{key="p3"}`: 1,
		"znode_count":                         writes + 5, // /, /zookeeper and its config and quota nodes
	} {
		if got, ok := m[k]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
		}
	}
	for _, k := range []string{"updatelatency_count", "fsynctime_count", "sync_processor_batch_size_count"} {
		if m[k] <= 0 {
			t.Errorf("%s = %v, want > 0", k, m[k])
		}
	}
	for _, k := range []string{`fsynctime{quantile="0.5"}`, `updatelatency{quantile="0.99"}`, `readlatency{quantile="0.5"}`} {
		if _, ok := m[k]; !ok {
			t.Errorf("mntr lacks %s", k)
		}
	}
	for k := range m {
		if strings.HasPrefix(k, "cnt_") || strings.HasPrefix(k, "avg_fsynctime") {
			t.Errorf("mntr prints %s beside the provider's samples", k)
		}
	}
}
