package metrics

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkd-io/zkd/internal/admin"
)

// statsCache shares one gathering of the server's numbers among the scrapes that come
// within maxAge of it, and never lets more than one gathering run: a scraper polling every
// second, or many at once, cost the core a few short steps per second at most. A scrape
// that finds the core slow to answer serves the previous numbers after wait rather than
// queueing behind it.
type statsCache struct {
	maxAge, wait time.Duration

	mu       sync.Mutex
	src      Source
	at       time.Time // when st was gathered; zero before the first
	st       admin.ServerStats
	ok       bool
	inflight chan struct{} // closed when the running gathering ends; nil when none runs
}

func (c *statsCache) setSource(src Source) {
	c.mu.Lock()
	c.src = src
	c.at = time.Time{}
	c.mu.Unlock()
}

func (c *statsCache) get() (admin.ServerStats, bool) {
	c.mu.Lock()
	if c.src == nil {
		c.mu.Unlock()
		return admin.ServerStats{}, false
	}
	if !c.at.IsZero() && time.Since(c.at) < c.maxAge {
		defer c.mu.Unlock()
		return c.st, c.ok
	}
	done := c.inflight
	if done == nil {
		done = make(chan struct{})
		c.inflight = done
		src := c.src
		go func() {
			st, ok := src.Stats()
			c.mu.Lock()
			c.st, c.ok, c.at = st, ok, time.Now()
			c.inflight = nil
			c.mu.Unlock()
			close(done)
		}()
	}
	c.mu.Unlock()
	t := time.NewTimer(c.wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st, c.ok
}

// serverCollector turns the server's numbers into ZooKeeper's gauges and counters, and the
// connections' reply queues into zkd's queue-depth metrics.
type serverCollector struct{ r *Registry }

// Describe sends nothing: which role gauges exist changes with the server's role, as in
// ZooKeeper, so the collector is unchecked.
func (serverCollector) Describe(chan<- *prometheus.Desc) {}

var (
	connQueueBuckets = append([]float64{0}, prometheus.ExponentialBuckets(1, 4, 8)...) // 0, 1 .. 16384
	connQueueDesc    = prometheus.NewDesc("zkd_connection_send_queue_depth",
		"Open client connections by the number of replies waiting to be written to them.", nil, nil)
	connQueueMaxDesc = prometheus.NewDesc("zkd_connection_send_queue_max",
		"The most replies waiting to be written to one client connection.", nil, nil)
)

func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	st, ok := c.r.stats.get()
	if ok {
		collectStats(ch, st)
	}
	c.r.stats.mu.Lock()
	src := c.r.stats.src
	c.r.stats.mu.Unlock()
	if src == nil {
		return
	}
	counts := make([]uint64, len(connQueueBuckets))
	var n uint64
	var sum float64
	maxDepth := 0
	src.ConnQueueDepths(func(d int) {
		n++
		sum += float64(d)
		maxDepth = max(maxDepth, d)
		for i, b := range connQueueBuckets {
			if float64(d) <= b {
				counts[i]++
			}
		}
	})
	buckets := make(map[float64]uint64, len(connQueueBuckets))
	for i, b := range connQueueBuckets {
		buckets[b] = counts[i]
	}
	ch <- prometheus.MustNewConstHistogram(connQueueDesc, n, sum, buckets)
	ch <- prometheus.MustNewConstMetric(connQueueMaxDesc, prometheus.GaugeValue, float64(maxDepth))
}

// descs keeps the Desc of each name the stats collector sends (a Desc costs a validation,
// hashes and allocations to make): the names are ZooKeeper's and the role's and the
// counters mntr prints, a bounded set.
var descs sync.Map // descKey -> *prometheus.Desc

type descKey struct {
	name     string
	labelled bool // the set label
}

func desc(name string, labelled bool) *prometheus.Desc {
	k := descKey{name, labelled}
	if d, ok := descs.Load(k); ok {
		return d.(*prometheus.Desc)
	}
	var labels []string
	if labelled {
		labels = []string{setLabel}
	}
	d, _ := descs.LoadOrStore(k, prometheus.NewDesc(name, name, labels, nil))
	return d.(*prometheus.Desc)
}

func gauge(ch chan<- prometheus.Metric, name string, v float64) {
	ch <- prometheus.MustNewConstMetric(desc(name, false), prometheus.GaugeValue, v)
}

// collectStats sends the gauges ZooKeeperServer.registerMetrics registers, the role
// gauges the server reports and the counters mntr prints, valued as mntr values them.
func collectStats(ch chan<- prometheus.Metric, st admin.ServerStats) {
	lat := st.Latency
	minLat, maxLat := lat.Min, lat.Max
	if lat.Count == 0 {
		minLat, maxLat = 0, 0
	}
	values := map[string]float64{
		"avg_latency":                 lat.Avg(),
		"max_latency":                 float64(maxLat),
		"min_latency":                 float64(minLat),
		"packets_received":            float64(st.PacketsReceived),
		"packets_sent":                float64(st.PacketsSent),
		"num_alive_connections":       float64(st.Connections),
		"outstanding_requests":        float64(st.Outstanding),
		"uptime":                      float64(st.Uptime),
		"znode_count":                 float64(st.NodeCount),
		"watch_count":                 float64(st.WatchCount),
		"ephemerals_count":            float64(st.EphemeralsCount),
		"approximate_data_size":       float64(st.ApproximateDataSize),
		"global_sessions":             float64(st.GlobalSessions),
		"local_sessions":              float64(st.LocalSessions),
		"open_file_descriptor_count":  float64(st.OpenFileDescriptors),
		"max_file_descriptor_count":   float64(st.MaxFileDescriptors),
		"connection_drop_probability": st.ConnectionDropProbability,
		"last_client_response_size":   float64(st.ResponseSize.Last),
		"max_client_response_size":    float64(st.ResponseSize.Max),
		"min_client_response_size":    float64(st.ResponseSize.Min),
		"outstanding_tls_handshake":   float64(st.OutstandingTLSHandshakes),
		"auth_failed_count":           float64(st.AuthFailed),
		"non_mtls_remote_conn_count":  float64(st.NonMTLSRemoteConns),
		"non_mtls_local_conn_count":   float64(st.NonMTLSLocalConns),
	}
	for _, name := range zkGauges {
		gauge(ch, name, values[name])
	}
	seen := make(map[string]bool, len(st.RoleGauges))
	for _, g := range st.RoleGauges {
		if !seen[g.Name] {
			seen[g.Name] = true
			gauge(ch, g.Name, float64(g.Value))
		}
	}
	// The quota sets: mntr's "<namespace>_<set>" lines as ZooKeeper's Prometheus provider
	// exports a GaugeSet or CounterSet, one series per namespace labelled key.
	sets := func(gs []admin.Gauge, names []string, vt prometheus.ValueType) {
		for _, g := range gs {
			for _, set := range names {
				if ns, ok := strings.CutSuffix(g.Name, "_"+set); ok {
					ch <- prometheus.MustNewConstMetric(desc(set, true), vt, float64(g.Value), ns)
					break
				}
			}
		}
	}
	sets(st.QuotaGauges, zkGaugeSets, prometheus.GaugeValue)
	sets(st.QuotaExceeded, zkCounterSets, prometheus.CounterValue)
	for _, name := range zkCounters {
		ch <- prometheus.MustNewConstMetric(desc(name, false), prometheus.CounterValue, float64(st.Counters[name]))
	}
	// Counters zkd adds to mntr (trunc_count, digest_resync_count) are exported under the
	// same names.
	for name, v := range st.Counters {
		if !isZooKeeperName(name) {
			ch <- prometheus.MustNewConstMetric(desc(name, false), prometheus.CounterValue, float64(v))
		}
	}
}

var zkNames = func() map[string]bool {
	m := make(map[string]bool)
	for _, l := range [][]string{zkGauges, zkRoleGauges, zkCounters, zkBasicSummaries, zkAdvancedSummaries,
		zkBasicSummarySets, zkAdvancedSummarySets, zkCounterSets, zkGaugeSets} {
		for _, n := range l {
			m[n] = true
		}
	}
	return m
}()

func isZooKeeperName(name string) bool { return zkNames[name] }

// gcPauseCollector exports the Go runtime's stop-the-world pause histogram as
// zkd_gc_pause_seconds. The runtime's buckets are finer than a dashboard needs; they are
// summed into fixed ones, and the sum is estimated from bucket midpoints (the runtime
// keeps none).
type gcPauseCollector struct{}

var (
	gcPauseDesc = prometheus.NewDesc("zkd_gc_pause_seconds",
		"Stop-the-world pauses of the Go garbage collector (sum estimated from the runtime's buckets).", nil, nil)
	gcPauseBuckets = prometheus.ExponentialBuckets(10e-6, 4, 9) // 10µs .. 655ms
)

func (gcPauseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- gcPauseDesc }

func (gcPauseCollector) Collect(ch chan<- prometheus.Metric) {
	count, sum, buckets := gcPauses()
	ch <- prometheus.MustNewConstHistogram(gcPauseDesc, count, sum, buckets)
}

// gcPauses reads the runtime's GC pause histogram: the pause count, an estimate of their
// total, and cumulative counts at gcPauseBuckets.
func gcPauses() (uint64, float64, map[float64]uint64) {
	s := []metrics.Sample{{Name: "/sched/pauses/total/gc:seconds"}}
	metrics.Read(s)
	buckets := make(map[float64]uint64, len(gcPauseBuckets))
	for _, b := range gcPauseBuckets {
		buckets[b] = 0
	}
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0, 0, buckets
	}
	h := s[0].Value.Float64Histogram()
	var count uint64
	var sum float64
	for i, n := range h.Counts {
		if n == 0 {
			continue
		}
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		count += n
		switch {
		case math.IsInf(lo, -1):
			sum += float64(n) * hi
		case math.IsInf(hi, 1):
			sum += float64(n) * lo
		default:
			sum += float64(n) * (lo + hi) / 2
		}
		for _, b := range gcPauseBuckets {
			if hi <= b {
				buckets[b] += n
			}
		}
	}
	return count, sum, buckets
}

// jvmCollector fills the JVM metric names that ZooKeeper dashboards chart (from the Java
// client's hotspot exports) with the Go runtime's nearest equivalents: the heap is the Go
// heap, non-heap the rest of the runtime's memory, threads are goroutines, and the one
// collector is gc="go". The max heap is the Go memory limit, or -1 (undefined, as the JVM
// reports it) when none is set.
type jvmCollector struct{}

var (
	jvmUsedDesc      = prometheus.NewDesc("jvm_memory_bytes_used", "Used bytes of a given JVM memory area (Go: heap objects; non-heap: the rest of the runtime's memory).", []string{"area"}, nil)
	jvmCommittedDesc = prometheus.NewDesc("jvm_memory_bytes_committed", "Committed (bytes) of a given JVM memory area (Go: mapped and not released).", []string{"area"}, nil)
	jvmMaxDesc       = prometheus.NewDesc("jvm_memory_bytes_max", "Max (bytes) of a given JVM memory area (Go: the memory limit, -1 when unset).", []string{"area"}, nil)
	jvmThreadsDesc   = prometheus.NewDesc("jvm_threads_current", "Current thread count of a JVM (Go: goroutines).", nil, nil)
	// Dashboards alert on it (grafana/jsonnet-libs zookeeper-observ-lib's JvmThreadsDeadlocked);
	// a Go process whose goroutines all block is stopped by the runtime instead, so it is 0.
	jvmDeadlockedDesc = prometheus.NewDesc("jvm_threads_deadlocked", "Threads in a deadlock cycle (Go: always 0; the runtime stops a process whose goroutines all block).", nil, nil)
	jvmGCDesc         = prometheus.NewDesc("jvm_gc_collection_seconds", "Time spent in a given JVM garbage collector in seconds (Go: stop-the-world pauses).", []string{"gc"}, nil)
)

func (jvmCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{jvmUsedDesc, jvmCommittedDesc, jvmMaxDesc, jvmThreadsDesc, jvmDeadlockedDesc, jvmGCDesc} {
		ch <- d
	}
}

func (jvmCollector) Collect(ch chan<- prometheus.Metric) {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/sched/goroutines:goroutines"},
	}
	metrics.Read(s)
	v := func(i int) float64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return float64(s[i].Value.Uint64())
	}
	objects, unused, free, released, total := v(0), v(1), v(2), v(3), v(4)
	heapMapped := objects + unused + free
	nonHeap := max(total-heapMapped-released, 0)
	heapMax := -1.0
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		heapMax = float64(limit)
	}
	ch <- prometheus.MustNewConstMetric(jvmUsedDesc, prometheus.GaugeValue, objects, "heap")
	ch <- prometheus.MustNewConstMetric(jvmUsedDesc, prometheus.GaugeValue, nonHeap, "nonheap")
	ch <- prometheus.MustNewConstMetric(jvmCommittedDesc, prometheus.GaugeValue, heapMapped, "heap")
	ch <- prometheus.MustNewConstMetric(jvmCommittedDesc, prometheus.GaugeValue, nonHeap, "nonheap")
	ch <- prometheus.MustNewConstMetric(jvmMaxDesc, prometheus.GaugeValue, heapMax, "heap")
	ch <- prometheus.MustNewConstMetric(jvmMaxDesc, prometheus.GaugeValue, -1, "nonheap")
	ch <- prometheus.MustNewConstMetric(jvmThreadsDesc, prometheus.GaugeValue, v(5))
	ch <- prometheus.MustNewConstMetric(jvmDeadlockedDesc, prometheus.GaugeValue, 0)
	count, sum, _ := gcPauses()
	ch <- prometheus.MustNewConstSummary(jvmGCDesc, count, sum, nil, "go")
}
