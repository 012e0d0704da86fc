package server_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/zkd-io/zkd/internal/metrics"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// dashboardNames are the metric names Grafana dashboard 10465 ("ZooKeeper by Prometheus",
// the one ZooKeeper's monitoring guide points to) and the guide's example alert rules
// query, as PromQL sees them (a summary's _sum and _count are its series). The dashboard
// list is from knowledge of its panels, not a download of its JSON; each name was checked
// against ZooKeeper 3.9's registrations (internal/metrics/testdata) or, for the jvm_ and
// process_ names, the Java client's hotspot exports. The quorum-role gauges (learners,
// synced_followers, pending_syncs, leader_uptime, quorum_size...) exist on ensemble
// members only, in ZooKeeper as in zkd, and are not checked on this standalone server.
var dashboardNames = []string{
	// gauges
	"znode_count", "num_alive_connections", "avg_latency", "min_latency", "max_latency",
	"outstanding_requests", "packets_received", "packets_sent", "watch_count",
	"ephemerals_count", "approximate_data_size", "open_file_descriptor_count",
	"max_file_descriptor_count", "global_sessions", "local_sessions", "uptime",
	"last_client_response_size", "max_client_response_size", "min_client_response_size",
	// counters
	"commit_count", "proposal_count", "looking_count", "diff_count", "snap_count",
	"connection_request_count", "connection_rejected", "connection_drop_count",
	"unrecoverable_error_count", "bytes_received_count", "response_bytes", "stale_requests",
	"dead_watchers_queued", "dead_watchers_cleared",
	// summaries: quantiles, _sum and _count
	"fsynctime", "fsynctime_sum", "fsynctime_count", "snapshottime", "snapshottime_sum",
	"snapshottime_count", "dbinittime", "election_time", "election_time_count",
	"readlatency", "readlatency_sum", "readlatency_count", "updatelatency",
	"updatelatency_sum", "updatelatency_count", "proposal_latency", "quorum_ack_latency",
	"commit_propagation_latency", "propagation_latency", "follower_sync_time",
	"jvm_pause_time_ms", "sync_processor_batch_size", "prep_processor_queue_time_ms",
	"requests_in_session_queue",
	// the JVM and process panels (exportJvmInfo)
	"jvm_memory_bytes_used", "jvm_memory_bytes_max", "jvm_memory_bytes_committed",
	"jvm_threads_current", "jvm_gc_collection_seconds_count", "jvm_gc_collection_seconds_sum",
	"process_cpu_seconds_total", "process_open_fds", "process_max_fds",
	"process_resident_memory_bytes", "process_start_time_seconds",
	// Grafana's own ZooKeeper library (github.com/grafana/jsonnet-libs, zookeeper-observ-lib:
	// signals/*.libsonnet and prometheus_rules_out/prometheus_alerts.yaml, read for this
	// list): its Prometheus queries on a standalone member (quorum_size and leader_uptime
	// are checked on an ensemble in TestMetricsEnsemble).
	"outstanding_requests", "num_alive_connections", "watch_count", "znode_count",
	"min_latency", "max_latency", "avg_latency", "jvm_memory_bytes_used", "jvm_memory_bytes_max",
	"jvm_threads_deadlocked",
}

// series is one scrape: every sample by the name PromQL sees (summary and histogram parts
// included), with its labels.
type series map[string][]sample

type sample struct {
	labels map[string]string
	value  float64
}

func scrapeMetrics(t *testing.T, url string) series {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape: parse: %v", err)
	}
	out := series{}
	add := func(name string, m *dto.Metric, v float64, extra ...string) {
		l := map[string]string{}
		for _, lp := range m.Label {
			l[lp.GetName()] = lp.GetValue()
		}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		out[name] = append(out[name], sample{l, v})
	}
	for name, f := range fams {
		for _, m := range f.Metric {
			switch f.GetType() {
			case dto.MetricType_GAUGE:
				add(name, m, m.GetGauge().GetValue())
			case dto.MetricType_COUNTER:
				add(name, m, m.GetCounter().GetValue())
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					add(name, m, q.GetValue(), "quantile", model.FloatString(q.GetQuantile()).String())
				}
				add(name+"_sum", m, s.GetSampleSum())
				add(name+"_count", m, float64(s.GetSampleCount()))
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					add(name+"_bucket", m, float64(b.GetCumulativeCount()), "le", model.FloatString(b.GetUpperBound()).String())
				}
				add(name+"_sum", m, h.GetSampleSum())
				add(name+"_count", m, float64(h.GetSampleCount()))
			default:
				add(name, m, m.GetUntyped().GetValue())
			}
		}
	}
	return out
}

// get is the value of name's series with the given labels (a subset); -1 when missing.
func (s series) get(name string, labels ...string) float64 {
	for _, smp := range s[name] {
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			if smp.labels[labels[i]] != labels[i+1] {
				ok = false
			}
		}
		if ok {
			return smp.value
		}
	}
	return -1
}

func startWithMetrics(t *testing.T) (*zktest.Server, string) {
	t.Helper()
	reg := metrics.New(metrics.Options{ExportJvmInfo: true})
	ep, err := reg.Serve("127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	srv := startStock(t, zktest.WithConfig(func(c *server.Config) { c.Metrics = reg }))
	return srv, "http://" + ep.Addr() + "/metrics"
}

func TestMetricsDashboardNames(t *testing.T) {
	srv, url := startWithMetrics(t)
	connect(t, srv.Addr(), 10*time.Second)
	m := scrapeMetrics(t, url)
	for _, n := range dashboardNames {
		if _, ok := m[n]; !ok {
			t.Errorf("dashboard metric %s missing", n)
		}
	}
	for _, q := range []string{"0.5", "0.9", "0.99"} {
		if m.get("readlatency", "quantile", q) == -1 {
			t.Errorf("readlatency{quantile=%q} missing", q)
		}
	}
	if m.get("fsynctime", "quantile", "0.5") == -1 || m.get("fsynctime", "quantile", "0.9") != -1 {
		t.Errorf("fsynctime quantiles %v, want the median only (BASIC)", m["fsynctime"])
	}
}

// TestMetricsMoveWithTraffic: after writes and reads the gauges, ZooKeeper's summaries and
// zkd's histograms have moved.
func TestMetricsMoveWithTraffic(t *testing.T) {
	srv, url := startWithMetrics(t)
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	before := scrapeMetrics(t, url)
	const n = 20
	for i := range n {
		if _, err := c.Create("/m"+string(rune('a'+i)), []byte("x"), 0, open); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Get("/m" + string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Create("/eph", nil, zk.FlagEphemeral, open); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.GetW("/eph"); err != nil {
		t.Fatal(err)
	}
	// Scrapes within StatsMaxAge share the numbers of one gathering: wait for a fresh one.
	var after series
	waitFor(t, "znode_count to count the new nodes", func() bool {
		after = scrapeMetrics(t, url)
		return after.get("znode_count") >= before.get("znode_count")+n+1
	})
	grew := func(name string, by float64, labels ...string) {
		t.Helper()
		b, a := max(before.get(name, labels...), 0), after.get(name, labels...)
		if a < b+by {
			t.Errorf("%s%v: %v -> %v, want +%v", name, labels, b, a, by)
		}
	}
	grew("packets_received", 2*n)
	grew("packets_sent", 2*n)
	grew("ephemerals_count", 1)
	grew("watch_count", 1)
	grew("approximate_data_size", n)
	grew("updatelatency_count", n+1)
	grew("readlatency_count", n)
	grew("fsynctime_count", 1)
	grew("sync_processor_batch_size_count", 1)
	grew("sync_processor_batch_size_sum", n+1)
	grew("zkd_fsync_duration_seconds_count", 1)
	grew("zkd_group_commit_batch_size_sum", n+1)
	grew("zkd_request_duration_seconds_count", n+1, "op", "create")
	grew("zkd_request_duration_seconds_count", n, "op", "getData")
	if v := after.get("num_alive_connections"); v < 1 {
		t.Errorf("num_alive_connections = %v", v)
	}
	if v := after.get("zkd_connection_send_queue_depth_count"); v < 1 {
		t.Errorf("zkd_connection_send_queue_depth counts %v connections", v)
	}
	ops := map[string]bool{}
	for _, s := range after["zkd_request_duration_seconds_count"] {
		ops[s.labels["op"]] = true
	}
	for op := range ops {
		if !slices.Contains([]string{"create", "getData", "exists", "ping", "setWatches", "setWatches2", "unknown"}, op) {
			t.Errorf("unexpected op label %q", op)
		}
	}
	if strings.Contains(url, "0.0.0.0") {
		t.Errorf("test endpoint not on loopback: %s", url)
	}
}

// gathered is one in-process gathering of reg as name -> first sample's value (a summary
// or histogram counts its observations).
func gathered(t *testing.T, reg *metrics.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		m := f.Metric[0]
		switch f.GetType() {
		case dto.MetricType_GAUGE:
			out[f.GetName()] = m.GetGauge().GetValue()
		case dto.MetricType_COUNTER:
			out[f.GetName()] = m.GetCounter().GetValue()
		case dto.MetricType_SUMMARY:
			out[f.GetName()] = float64(m.GetSummary().GetSampleCount())
		case dto.MetricType_HISTOGRAM:
			out[f.GetName()] = float64(m.GetHistogram().GetSampleCount())
		}
	}
	return out
}

// TestMetricsEnsemble: every member exports quorum_size, and a write is fsynced, and
// timed, on every member's log.
func TestMetricsEnsemble(t *testing.T) {
	var mu sync.Mutex
	regs := map[int64]*metrics.Registry{}
	e := startEnsembleConfig(t, 3, func(c *server.Config) {
		reg := metrics.New(metrics.Options{StatsMaxAge: time.Millisecond})
		mu.Lock()
		regs[c.ServerID] = reg
		mu.Unlock()
		c.Metrics = reg
	})
	e.waitServing()
	c, _ := connect(t, e.addrs()[0], 10*time.Second)
	if _, err := c.Create("/ens", []byte("x"), 0, open); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, reg := range regs {
		waitFor(t, fmt.Sprintf("server %d to report quorum_size and an fsync", id), func() bool {
			m := gathered(t, reg)
			return m["quorum_size"] == 3 && m["fsynctime"] >= 1 && m["zkd_group_commit_batch_size"] >= 1
		})
	}
	// The leader's role gauges reach /metrics too.
	l := int64(e.leaderIndex() + 1)
	waitFor(t, "the leader to export its synced followers", func() bool {
		m := gathered(t, regs[l])
		return m["learners"] == 2 && m["synced_followers"] == 2 && m["proposal_count"] >= 1 && m["commit_count"] >= 1
	})
	// Grafana's zookeeper-observ-lib tells the leader by leader_uptime (> 0 on the leader,
	// absent elsewhere).
	if _, ok := gathered(t, regs[l])["leader_uptime"]; !ok {
		t.Error("the leader exports no leader_uptime")
	}
	if m := gathered(t, regs[1]); m["updatelatency"] < 1 {
		t.Errorf("server 1 answered a create; updatelatency counts %v", m["updatelatency"])
	}
}

// TestMetricsQuotaSets: a quota's gauges are exported as ZooKeeper's provider exports a
// GaugeSet, one series per namespace labelled key.
func TestMetricsQuotaSets(t *testing.T) {
	srv, url := startWithMetrics(t)
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	for _, p := range []string{"/qm", "/qm/a", "/zookeeper/quota/qm"} {
		if _, err := c.Create(p, []byte("xy"), 0, open); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Create("/zookeeper/quota/qm/zookeeper_limits", []byte("count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=5"), 0, open); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/zookeeper/quota/qm/zookeeper_stats", []byte("count=0,bytes=0"), 0, open); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the quota gauges of namespace qm", func() bool {
		s := scrapeMetrics(t, url)
		return s.get("quota_count_limit_per_namespace", "key", "qm") == 5 &&
			s.get("quota_count_usage_per_namespace", "key", "qm") == 2 &&
			s.get("quota_bytes_usage_per_namespace", "key", "qm") == 4
	})
}

// TestMetricsPerNamespace: reads and writes are observed per top-level znode, with
// ZooKeeper's sizes (DataTree.updateReadStat and updateWriteStat), a closed session's
// ephemerals as deletes. TestPrometheusMatchesZooKeeper (cmd/zkd) compares them with
// ZooKeeper's own.
func TestMetricsPerNamespace(t *testing.T) {
	srv, url := startWithMetrics(t)
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	other, _ := connect(t, srv.Addr(), 10*time.Second)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.Create("/ns", []byte("abc"), 0, open) // write 3+3
	must(err)
	_, err = c.Create("/ns/x", nil, 0, open) // write 5
	must(err)
	_, err = c.Set("/ns/x", []byte("12345"), -1) // write 5+5
	must(err)
	_, _, err = c.Get("/ns") // read 3+3+68
	must(err)
	_, _, err = c.Children("/ns") // read 3+1+68
	must(err)
	_, _, err = c.Exists("/ns/x") // read 5+68
	must(err)
	_, _, err = c.Exists("/ns/absent") // not observed
	must(err)
	_, _, err = c.Get("/") // the root: not observed
	must(err)
	_, err = other.Create("/ns/e", []byte("z"), zk.FlagEphemeral, open) // write 5+1
	must(err)
	other.Close()               // deletes /ns/e: write 5
	must(c.Delete("/ns/x", -1)) // write 5

	wantCount := map[string]float64{"read_per_namespace": 3, "write_per_namespace": 6}
	wantSum := map[string]float64{"read_per_namespace": 74 + 72 + 73, "write_per_namespace": 6 + 5 + 10 + 6 + 5 + 5}
	var m series
	waitFor(t, "the closed session's ephemeral to be deleted", func() bool {
		m = scrapeMetrics(t, url)
		return m.get("write_per_namespace_count", "key", "ns") == wantCount["write_per_namespace"]
	})
	for name, want := range wantCount {
		if got := m.get(name+"_count", "key", "ns"); got != want {
			t.Errorf("%s_count{key=ns} = %v, want %v", name, got, want)
		}
		if got := m.get(name+"_sum", "key", "ns"); got != wantSum[name] {
			t.Errorf("%s_sum{key=ns} = %v, want %v", name, got, wantSum[name])
		}
		if m.get(name, "key", "ns", "quantile", "0.5") == -1 {
			t.Errorf("%s{key=ns,quantile=0.5} missing", name)
		}
	}
	if len(m["read_per_namespace_count"]) != 1 {
		t.Errorf("read_per_namespace keys %v, want ns alone (the root is not observed)", m["read_per_namespace_count"])
	}
}
