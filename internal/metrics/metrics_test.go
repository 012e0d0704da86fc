package metrics

import (
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/jute"
)

// fakeSource answers Stats from st, counting calls; while block is set, Stats waits on it.
type fakeSource struct {
	mu     sync.Mutex
	st     admin.ServerStats
	calls  atomic.Int64
	block  chan struct{}
	depths []int
}

func (f *fakeSource) Stats() (admin.ServerStats, bool) {
	f.calls.Add(1)
	f.mu.Lock()
	b := f.block
	st := f.st
	f.mu.Unlock()
	if b != nil {
		<-b
	}
	return st, true
}

func (f *fakeSource) ConnQueueDepths(fn func(int)) {
	for _, d := range f.depths {
		fn(d)
	}
}

// scrape fetches url and parses it as Prometheus's text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("scrape: Content-Type %q, want Prometheus text", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape: parse: %v", err)
	}
	return fams
}

func serve(t *testing.T, r *Registry) string {
	t.Helper()
	ep, err := r.Serve("127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return "http://" + ep.Addr() + "/metrics"
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok || len(f.Metric) == 0 {
		t.Fatalf("%s missing", name)
	}
	m := f.Metric[0]
	switch f.GetType() {
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_SUMMARY:
		return float64(m.GetSummary().GetSampleCount())
	case dto.MetricType_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	}
	t.Fatalf("%s has type %v", name, f.GetType())
	return 0
}

// TestExportedAsZooKeeper scrapes the endpoint and checks every ZooKeeper name is there
// with ZooKeeper's type, and the summaries with its quantile labels.
func TestExportedAsZooKeeper(t *testing.T) {
	r := New(Options{ExportJvmInfo: true})
	src := &fakeSource{st: admin.ServerStats{
		NodeCount: 7, Latency: admin.Summary{Count: 2, Sum: 3, Min: 1, Max: 2},
		Counters:     map[string]int64{"diff_count": 4, "trunc_count": 1},
		RoleGauges:   []admin.Gauge{{Name: "quorum_size", Value: 3}},
		ResponseSize: admin.NewBufferStats(),
	}, depths: []int{0, 3, 100}}
	r.SetSource(src)
	fams := scrape(t, serve(t, r))

	want := map[string]dto.MetricType{}
	for _, n := range zkGauges {
		want[n] = dto.MetricType_GAUGE
	}
	for _, n := range zkCounters {
		want[n] = dto.MetricType_COUNTER
	}
	for _, n := range append(append([]string{}, zkBasicSummaries...), zkAdvancedSummaries...) {
		want[n] = dto.MetricType_SUMMARY
	}
	for n, typ := range want {
		f, ok := fams[n]
		if !ok {
			t.Errorf("%s missing", n)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is a %v, ZooKeeper exports a %v", n, f.GetType(), typ)
		}
	}
	quantiles := func(name string) []float64 {
		var q []float64
		for _, x := range fams[name].Metric[0].GetSummary().GetQuantile() {
			q = append(q, x.GetQuantile())
		}
		return q
	}
	for _, n := range zkBasicSummaries {
		if q := quantiles(n); len(q) != 1 || q[0] != 0.5 {
			t.Errorf("%s quantiles %v, want [0.5] (DetailLevel.BASIC)", n, q)
		}
	}
	for _, n := range zkAdvancedSummaries {
		if q := quantiles(n); len(q) != 3 || q[0] != 0.5 || q[1] != 0.9 || q[2] != 0.99 {
			t.Errorf("%s quantiles %v, want [0.5 0.9 0.99] (DetailLevel.ADVANCED)", n, q)
		}
	}
	for name, v := range map[string]float64{
		"znode_count": 7, "avg_latency": 1.5, "min_latency": 1, "max_latency": 2,
		"diff_count": 4, "trunc_count": 1, "quorum_size": 3, "last_client_response_size": -1,
		"zkd_connection_send_queue_max": 100, "zkd_connection_send_queue_depth": 3,
	} {
		if got := value(t, fams, name); got != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	for _, n := range []string{"process_cpu_seconds_total", "process_open_fds", "go_goroutines",
		"jvm_memory_bytes_used", "jvm_memory_bytes_max", "jvm_threads_current", "jvm_gc_collection_seconds",
		"zkd_gc_pause_seconds", "zkd_fsync_duration_seconds", "zkd_group_commit_batch_size",
		"zkd_session_queue_depth", "zkd_request_duration_seconds"} {
		if _, ok := fams[n]; !ok && n != "zkd_request_duration_seconds" {
			t.Errorf("%s missing", n)
		}
	}
	if _, ok := fams["zkd_request_duration_seconds"]; ok {
		t.Errorf("zkd_request_duration_seconds has series before any request")
	}
}

func TestNoJvmInfo(t *testing.T) {
	r := New(Options{})
	fams := scrape(t, serve(t, r))
	for _, n := range []string{"process_cpu_seconds_total", "go_goroutines", "jvm_memory_bytes_used"} {
		if _, ok := fams[n]; ok {
			t.Errorf("%s exported with exportJvmInfo=false", n)
		}
	}
	// Without a source (or while the server does not serve) the gauges are absent, the
	// instruments are not.
	if _, ok := fams["znode_count"]; ok {
		t.Errorf("znode_count without a source")
	}
	if _, ok := fams["fsynctime"]; !ok {
		t.Errorf("fsynctime missing")
	}
}

// TestObservations checks that what the server reports moves the right series.
func TestObservations(t *testing.T) {
	r := New(Options{})
	url := serve(t, r)
	r.Fsync(3*time.Millisecond, 5)
	r.Fsync(time.Millisecond, 0)
	r.Request(jute.OpGetData, time.Millisecond)
	r.Request(jute.OpCreate, 2*time.Millisecond)
	r.Request(jute.OpCreate, 2*time.Millisecond)
	r.Request(jute.OpCode(9999), time.Millisecond)
	r.SessionQueued(2)
	r.Snapshot(time.Second)
	r.DBInit(time.Second)
	fams := scrape(t, url)
	for name, v := range map[string]float64{
		"fsynctime": 2, "zkd_fsync_duration_seconds": 2, "sync_processor_batch_size": 1,
		"zkd_group_commit_batch_size": 1, "readlatency": 2, "updatelatency": 2,
		"requests_in_session_queue": 1, "zkd_session_queue_depth": 1, "snapshottime": 1, "dbinittime": 1,
	} {
		if got := value(t, fams, name); got != v {
			t.Errorf("%s count = %v, want %v", name, got, v)
		}
	}
	if got := fams["fsynctime"].Metric[0].GetSummary().GetSampleSum(); got != 4 {
		t.Errorf("fsynctime sum = %v ms, want 4", got)
	}
	ops := map[string]uint64{}
	for _, m := range fams["zkd_request_duration_seconds"].Metric {
		ops[m.Label[0].GetValue()] = m.GetHistogram().GetSampleCount()
	}
	if want := map[string]uint64{"getData": 1, "create": 2, "unknown": 1}; !mapsEqual(ops, want) {
		t.Errorf("per-opcode counts %v, want %v", ops, want)
	}
}

func mapsEqual(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestScrapesShareOneGathering: back-to-back and concurrent scrapes within StatsMaxAge
// cost the server one gathering.
func TestScrapesShareOneGathering(t *testing.T) {
	r := New(Options{StatsMaxAge: time.Hour})
	src := &fakeSource{}
	r.SetSource(src)
	url := serve(t, r)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			resp, err := http.Get(url)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	scrape(t, url)
	if n := src.calls.Load(); n != 1 {
		t.Errorf("Stats called %d times for 9 scrapes, want 1", n)
	}
}

// TestSlowCoreDoesNotHoldScrapes: a scrape whose gathering the server does not answer in
// StatsWait is served without the server's numbers, and the next scrapes do not start a
// second gathering behind the first.
func TestSlowCoreDoesNotHoldScrapes(t *testing.T) {
	r := New(Options{StatsWait: 10 * time.Millisecond})
	block := make(chan struct{})
	src := &fakeSource{block: block, st: admin.ServerStats{NodeCount: 5}}
	r.SetSource(src)
	url := serve(t, r)
	for range 3 {
		fams := scrape(t, url)
		if _, ok := fams["znode_count"]; ok {
			t.Fatalf("znode_count served before the server answered")
		}
		if _, ok := fams["fsynctime"]; !ok {
			t.Fatalf("scrape lost the instruments while the server was slow")
		}
	}
	if n := src.calls.Load(); n != 1 {
		t.Errorf("Stats called %d times while one gathering was running, want 1", n)
	}
	close(block)
	deadline := time.Now().Add(30 * time.Second)
	for {
		fams := scrape(t, url)
		if _, ok := fams["znode_count"]; ok {
			if v := value(t, fams, "znode_count"); v != 5 {
				t.Fatalf("znode_count = %v, want 5", v)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server's numbers never appeared after it answered")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMethods(t *testing.T) {
	url := serve(t, New(Options{}))
	for _, m := range []string{http.MethodPost, "TRACE", http.MethodPut} {
		req, _ := http.NewRequest(m, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s /metrics: %s, want 405", m, resp.Status)
		}
	}
	resp, err := http.Get(strings.TrimSuffix(url, "/metrics") + "/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /other: %s, want 404", resp.Status)
	}
}

func TestNilRegistry(t *testing.T) {
	var r *Registry
	r.Fsync(time.Millisecond, 1)
	r.Request(jute.OpGetData, time.Millisecond)
	r.SessionQueued(1)
	r.Snapshot(time.Second)
	r.DBInit(time.Second)
	r.NamespaceRead("/a", 1)
	r.NamespaceWrite("/a", 1)
	r.SetSource(&fakeSource{})
}

// TestLearnerQueueSets: the learner queue sets have a series per sid, labelled key, once
// observed; the basic one with the median only, the advanced one with 0.5, 0.9 and 0.99.
func TestLearnerQueueSets(t *testing.T) {
	r := New(Options{})
	url := serve(t, r)
	size, qtime := r.LearnerQueue(2)
	size.Observe(0)
	size.Observe(4)
	qtime.Observe(7)
	size3, _ := r.LearnerQueue(3)
	size3.Observe(1)
	if again, _ := r.LearnerQueue(2); again != size {
		t.Error("LearnerQueue(2) made a second summary for the same sid")
	}
	fams := scrape(t, url)
	counts := map[string]uint64{}
	for _, name := range []string{"learner_handler_qp_size", "learner_handler_qp_time_ms"} {
		f := fams[name]
		if f == nil {
			t.Fatalf("no %s", name)
		}
		for _, m := range f.Metric {
			if len(m.Label) != 1 || m.Label[0].GetName() != "key" {
				t.Fatalf("%s labels %v", name, m.Label)
			}
			counts[name+"/"+m.Label[0].GetValue()] = m.GetSummary().GetSampleCount()
			wantQ := 1
			if name == "learner_handler_qp_time_ms" {
				wantQ = 3
			}
			if len(m.GetSummary().Quantile) != wantQ {
				t.Errorf("%s has %d quantiles, want %d", name, len(m.GetSummary().Quantile), wantQ)
			}
		}
	}
	// A sid's two series come together (ZooKeeper's first queued packet is always sampled
	// for its time, so its sets gain a key together too).
	want := map[string]uint64{"learner_handler_qp_size/2": 2, "learner_handler_qp_size/3": 1,
		"learner_handler_qp_time_ms/2": 1, "learner_handler_qp_time_ms/3": 0}
	if !mapsEqual(counts, want) {
		t.Errorf("series %v, want %v", counts, want)
	}
	var nilReg *Registry
	if s, q := nilReg.LearnerQueue(1); s != nil || q != nil {
		t.Error("a nil Registry hands out observers")
	}
}

// TestNamespaceSets: reads and writes are observed per top-level znode with ZooKeeper's
// sizes (DataTree.updateReadStat, updateWriteStat); the root is not observed.
func TestNamespaceSets(t *testing.T) {
	r := New(Options{})
	url := serve(t, r)
	r.NamespaceRead("/app/a", 10)             // 6 + 10 + 68
	r.NamespaceRead("/app", 0)                // 4 + 68
	r.NamespaceRead("/", 5)                   // not observed
	r.NamespaceWrite("/app/b", 3)             // 6 + 3
	r.NamespaceWrite("/other", 0)             // 6
	r.NamespaceWrite("/\u00e9t\U0001F600", 0) // Java's length: 1 + 2 + 2
	fams := scrape(t, url)
	type kv struct {
		count uint64
		sum   float64
	}
	got := func(name string) map[string]kv {
		out := map[string]kv{}
		for _, m := range fams[name].GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "key" {
				t.Errorf("%s labels %v, want key", name, m.GetLabel())
				continue
			}
			s := m.GetSummary()
			out[m.GetLabel()[0].GetValue()] = kv{s.GetSampleCount(), s.GetSampleSum()}
			if q := s.GetQuantile(); len(q) != 1 || q[0].GetQuantile() != 0.5 {
				t.Errorf("%s quantiles %v, want the median (BASIC)", name, q)
			}
		}
		return out
	}
	if g, want := got("read_per_namespace"), map[string]kv{"app": {2, 84 + 72}}; !maps.Equal(g, want) {
		t.Errorf("read_per_namespace = %v, want %v", g, want)
	}
	if g, want := got("write_per_namespace"), map[string]kv{"app": {1, 9}, "other": {1, 6}, "\u00e9t\U0001F600": {1, 5}}; !maps.Equal(g, want) {
		t.Errorf("write_per_namespace = %v, want %v", g, want)
	}
}
