// Package metrics owns zkd's metrics providers. The Prometheus endpoint (zoo.cfg's
// metricsProvider.* keys): the metrics Apache ZooKeeper's PrometheusMetricsProvider
// exports, under the same names, types and quantile labels, so that dashboards (Grafana
// 10465) and alert rules written for ZooKeeper work unchanged; zkd's own metrics, prefixed
// zkd_; and the HTTP server that serves them on /metrics. Without it, a mntr-only registry
// (Options.MntrOnly) is ZooKeeper's DefaultMetricsProvider: the summaries mntr prints.
// Either way mntr's summaries come from here (Registry.Mntr).
//
// What the server measures as it happens (fsync and request latencies, group-commit batch
// sizes, session queue depths) is observed into the instruments directly, lock-free or
// behind the instrument's own short lock. What it counts as state (the mntr numbers) is
// gathered at scrape time through a Source, in one short step on the server's core that
// concurrent and back-to-back scrapes share.
package metrics

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/jute"
)

// Source is the server the gauges and counters are read from.
type Source interface {
	// Stats returns mntr's numbers, or false when the server is not serving clients. It
	// may run one short step on the server's core goroutine.
	Stats() (admin.ServerStats, bool)
	// ConnQueueDepths calls f with the number of replies each open connection has waiting
	// to be written. It must not need the core.
	ConnQueueDepths(f func(depth int))
}

// Options configure a Registry.
type Options struct {
	// MntrOnly makes a Registry for a server without metricsProvider.className: it keeps
	// what mntr prints of the summaries, as ZooKeeper's DefaultMetricsProvider, and none of
	// the Prometheus instruments (quantile streams, zkd's histograms); it is not served.
	MntrOnly bool
	// ExportJvmInfo is metricsProvider.exportJvmInfo: the process metrics (process_*, the
	// same names the Java client's hotspot exports use), the Go runtime's (go_*), and the
	// JVM names dashboards chart (jvm_memory_bytes_*, jvm_threads_current,
	// jvm_gc_collection_seconds) filled from the Go runtime.
	ExportJvmInfo bool
	// StatsMaxAge is how long one gathering of the server's numbers serves later scrapes;
	// 0 means DefaultStatsMaxAge.
	StatsMaxAge time.Duration
	// StatsWait bounds how long a scrape waits for the server's core to answer before it
	// serves the previous numbers; 0 means DefaultStatsWait.
	StatsWait time.Duration
	// NamespaceLimit bounds the namespaces read_per_namespace and write_per_namespace keep
	// a series for; 0 means DefaultNamespaceLimit, < 0 no bound.
	NamespaceLimit int
	// NamespaceRetention is how long the series of a namespace whose last znode was deleted
	// are kept; 0 means DefaultNamespaceRetention.
	NamespaceRetention time.Duration
	// Now is the clock that ages those series (nil = time.Now); tests replace it.
	Now func() time.Time
}

const (
	// DefaultStatsMaxAge keeps the core steps of scraping to a few per second however
	// many scrapers there are.
	DefaultStatsMaxAge = 250 * time.Millisecond
	DefaultStatsWait   = 2 * time.Second
)

// Per-namespace series (read_per_namespace, write_per_namespace: one summary, three series,
// per top-level znode) are bounded, where ZooKeeper keeps one for every namespace ever
// touched: clients choose the names, so a client creating and deleting many top-level
// znodes would otherwise grow a scraper's series, and the server's memory, without end.
const (
	// DefaultNamespaceLimit is more top-level znodes than a deployment normally has; past
	// it, new namespaces share the OverflowNamespace series.
	DefaultNamespaceLimit = 1000
	// DefaultNamespaceRetention is the summaries' own window (fastSummaryWindow x
	// ageBuckets): by then a deleted namespace's quantiles are empty anyway.
	DefaultNamespaceRetention = ageBuckets * fastSummaryWindow
	// OverflowNamespace is the key of the namespaces past the limit. No top-level znode has
	// this name: a name cannot hold "/".
	OverflowNamespace = "/overflow"
)

// opSlots covers every opcode (-11 .. 107) after opBias is added.
const (
	opBias  = 16
	opSlots = 128
)

// Registry holds the instruments. A nil *Registry is valid: every observation on it is a
// no-op, so a server without metrics pays one nil check.
type Registry struct {
	reg      *prometheus.Registry
	mntrOnly bool // Options.MntrOnly

	summaries     map[string]*basicSummary
	mntrSums      map[string]mntrSummary // every ZooKeeper summary zkd observes, by name
	fsyncTime     prometheus.Observer    // ms
	snapshotTime  prometheus.Observer    // ms
	dbInitTime    prometheus.Observer    // ms
	readLatency   prometheus.Observer    // ms, a fastSummary
	updateLatency prometheus.Observer    // ms, a fastSummary
	batchSize     prometheus.Observer    // txns per fsync
	sessionQueue  prometheus.Observer    // requests_in_session_queue, a fastSummary
	learnerQPSize *fastSummarySet        // learner_handler_qp_size, by learner sid
	learnerQPTime *fastSummarySet        // learner_handler_qp_time_ms, by learner sid
	readPerNS     *fastSummarySet        // read_per_namespace, bytes
	writePerNS    *fastSummarySet        // write_per_namespace, bytes
	ackLatency    *fastSummarySet        // ack_latency, ms, by acking sid

	fsyncSeconds      prometheus.Histogram
	groupCommit       prometheus.Histogram
	sessionQueueDepth prometheus.Histogram
	opLatency         *prometheus.HistogramVec
	ops               [opSlots]atomic.Pointer[prometheus.Observer]

	stats statsCache
}

// perRequestSummaries are the summaries observed on every request, kept as fastSummary
// (client_golang's Summary would cost the core a lock and a quantile stream per request),
// with the scale their values are recorded at: latencies in ms to the microsecond, queue
// lengths as they are.
var perRequestSummaries = map[string]float64{
	"readlatency": 1000, "updatelatency": 1000, "requests_in_session_queue": 1,
}

// New returns a Registry with every ZooKeeper and zkd metric registered, or, with
// Options.MntrOnly, the summaries mntr prints.
func New(opts Options) *Registry {
	if opts.StatsMaxAge <= 0 {
		opts.StatsMaxAge = DefaultStatsMaxAge
	}
	if opts.StatsWait <= 0 {
		opts.StatsWait = DefaultStatsWait
	}
	r := &Registry{
		reg:       prometheus.NewRegistry(),
		mntrOnly:  opts.MntrOnly,
		summaries: make(map[string]*basicSummary),
		mntrSums:  make(map[string]mntrSummary),
	}
	r.stats.maxAge, r.stats.wait = opts.StatsMaxAge, opts.StatsWait
	fast := map[string]prometheus.Observer{}
	summary := func(name string, objectives map[float64]float64) {
		if scale, ok := perRequestSummaries[name]; ok {
			f := newFastSummary(name, objectives, scale, r.mntrOnly)
			r.reg.MustRegister(f)
			fast[name] = f
			r.mntrSums[name] = f
			return
		}
		s := &basicSummary{}
		if r.mntrOnly {
			s.mm = newAvgMinMax()
		} else {
			p := prometheus.NewSummary(prometheus.SummaryOpts{Name: name, Help: name, Objectives: objectives})
			r.reg.MustRegister(p)
			s.prom = p
		}
		r.summaries[name] = s
	}
	for _, n := range zkBasicSummaries {
		summary(n, basicObjectives)
	}
	for _, n := range zkAdvancedSummaries {
		summary(n, advancedObjectives)
	}
	// The labelled sets observed per packet or per request are fastSummarySets (as the
	// per-request summaries); the others are registered as ZooKeeper registers them.
	r.learnerQPSize = newFastSummarySet("learner_handler_qp_size", basicObjectives, 1, r.mntrOnly)
	r.learnerQPTime = newFastSummarySet("learner_handler_qp_time_ms", advancedObjectives, 1, r.mntrOnly)
	nsLimit, nsRetain, now := opts.NamespaceLimit, opts.NamespaceRetention, opts.Now
	if nsLimit == 0 {
		nsLimit = DefaultNamespaceLimit
	}
	if nsRetain <= 0 {
		nsRetain = DefaultNamespaceRetention
	}
	if now == nil {
		now = time.Now
	}
	r.readPerNS = newFastSummarySet("read_per_namespace", basicObjectives, 1, r.mntrOnly).bounded(nsLimit, nsRetain, now)
	r.writePerNS = newFastSummarySet("write_per_namespace", basicObjectives, 1, r.mntrOnly).bounded(nsLimit, nsRetain, now)
	r.ackLatency = newFastSummarySet("ack_latency", advancedObjectives, 1, r.mntrOnly)
	r.reg.MustRegister(r.learnerQPSize, r.learnerQPTime, r.readPerNS, r.writePerNS, r.ackLatency)
	for _, n := range zkBasicSummarySets {
		if n == "learner_handler_qp_size" || n == "read_per_namespace" || n == "write_per_namespace" {
			continue
		}
		r.reg.MustRegister(prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: n, Help: n, Objectives: basicObjectives}, []string{setLabel}))
	}
	for _, n := range zkAdvancedSummarySets {
		if n != "learner_handler_qp_time_ms" && n != "ack_latency" {
			r.reg.MustRegister(prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: n, Help: n, Objectives: advancedObjectives}, []string{setLabel}))
		}
	}
	// zkCounterSets and zkGaugeSets (the quota sets) are sent by the stats collector, one
	// series per namespace, from what mntr prints.
	r.fsyncTime = r.summaries["fsynctime"]
	r.snapshotTime = r.summaries["snapshottime"]
	r.dbInitTime = r.summaries["dbinittime"]
	r.readLatency = fast["readlatency"]
	r.updateLatency = fast["updatelatency"]
	r.batchSize = r.summaries["sync_processor_batch_size"]
	r.sessionQueue = fast["requests_in_session_queue"]
	// Of the client_golang summaries, mntr reads those zkd observes; the others print 0.
	for _, n := range []string{"fsynctime", "snapshottime", "dbinittime", "sync_processor_batch_size"} {
		r.mntrSums[n] = r.summaries[n]
	}
	if r.mntrOnly {
		return r
	}

	r.fsyncSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "zkd_fsync_duration_seconds",
		Help:    "Time of each txn log fsync (one per group commit).",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16), // 50µs .. 1.6s
	})
	r.groupCommit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "zkd_group_commit_batch_size",
		Help:    "Txns made durable by one fsync of the txn log.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 13), // 1 .. 4096, the batch limit
	})
	r.sessionQueueDepth = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "zkd_session_queue_depth",
		Help:    "Requests a request found ahead of it in its session's FIFO queue when it had to wait there.",
		Buckets: append([]float64{0}, prometheus.ExponentialBuckets(1, 2, 11)...), // 0, 1 .. 1024
	})
	r.opLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "zkd_request_duration_seconds",
		Help:    "Time from reading a request to queueing its reply, by opcode.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18), // 50µs .. 6.5s
	}, []string{"op"})
	r.reg.MustRegister(r.fsyncSeconds, r.groupCommit, r.sessionQueueDepth, r.opLatency)
	r.reg.MustRegister(&serverCollector{r: r}, gcPauseCollector{})
	if opts.ExportJvmInfo {
		r.reg.MustRegister(
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
			collectors.NewGoCollector(),
			jvmCollector{},
		)
	}
	return r
}

// Gatherer is what the endpoint serves (tests gather it directly).
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// SetSource attaches the server the gauges and counters are read from.
func (r *Registry) SetSource(src Source) {
	if r == nil {
		return
	}
	r.stats.setSource(src)
}

func ms(d time.Duration) float64 { return float64(d.Milliseconds()) }

// Fsync records one fsync of the txn log that made batch txns durable.
func (r *Registry) Fsync(d time.Duration, batch int) {
	if r == nil {
		return
	}
	r.fsyncTime.Observe(ms(d))
	if batch > 0 {
		r.batchSize.Observe(float64(batch))
	}
	if r.mntrOnly {
		return
	}
	r.fsyncSeconds.Observe(d.Seconds())
	if batch > 0 {
		r.groupCommit.Observe(float64(batch))
	}
}

// Snapshot records the time taken to write a snapshot.
func (r *Registry) Snapshot(d time.Duration) {
	if r == nil {
		return
	}
	r.snapshotTime.Observe(ms(d))
}

// DBInit records the time taken to load the data directory at start-up.
func (r *Registry) DBInit(d time.Duration) {
	if r == nil {
		return
	}
	r.dbInitTime.Observe(ms(d))
}

// Request records a request's latency, from being read to its reply being queued: as
// ZooKeeper's updatelatency for writes and readlatency for the rest (in ms), and in zkd's
// per-opcode histogram.
func (r *Registry) Request(op jute.OpCode, d time.Duration) {
	if r == nil {
		return
	}
	info := jute.LookupOp(op)
	if info != nil && info.Write {
		r.updateLatency.Observe(ms(d))
	} else {
		r.readLatency.Observe(ms(d))
	}
	if !r.mntrOnly {
		r.opObserver(op, info).Observe(d.Seconds())
	}
}

// opObserver returns op's child of the per-opcode histogram, made on first use so that
// opcodes never sent add no series. Opcodes outside the table share "unknown", which keeps
// the label's values bounded whatever clients send.
func (r *Registry) opObserver(op jute.OpCode, info *jute.OpInfo) prometheus.Observer {
	slot := uint32(int32(op) + opBias)
	switch {
	case info == nil:
		return r.opLatency.WithLabelValues("unknown")
	case slot >= opSlots:
		// An extension's opcode (jute's table, so still a bounded set), not cached.
		return r.opLatency.WithLabelValues(info.Name)
	}
	if o := r.ops[slot].Load(); o != nil {
		return *o
	}
	o := r.opLatency.WithLabelValues(info.Name)
	r.ops[slot].Store(&o)
	return o
}

// SessionQueued records that a request joined its session's FIFO queue behind ahead
// others.
func (r *Registry) SessionQueued(ahead int) {
	if r == nil {
		return
	}
	r.sessionQueue.Observe(float64(ahead + 1))
	if !r.mntrOnly {
		r.sessionQueueDepth.Observe(float64(ahead))
	}
}

// LearnerQueue returns where the writer of learner sid's connection records ZooKeeper's
// learner_handler_qp_size (the packets still queued as it takes each one) and
// learner_handler_qp_time_ms (a sampled packet's time in the queue); both nil on a nil
// Registry. The observers are the sid's for good: keep them for the connection's life.
func (r *Registry) LearnerQueue(sid int64) (size, timeMs prometheus.Observer) {
	if r == nil || r.mntrOnly {
		// The server keeps mntr's learner queue sets itself.
		return nil, nil
	}
	key := strconv.FormatInt(sid, 10)
	return r.learnerQPSize.with(key), r.learnerQPTime.with(key)
}

// AckLatency records, on the leader, that sid acked a sampled proposal ms milliseconds
// after its txn's time, as ZooKeeper's Leader.processAck feeds ack_latency (keyed by the
// sid; negative times, from a clock stepping back, are dropped as ZooKeeper drops them).
func (r *Registry) AckLatency(sid, ms int64) {
	if r == nil || ms < 0 {
		return
	}
	r.ackLatency.Observe(strconv.FormatInt(sid, 10), float64(ms))
}

// statOverheadBytes is what ZooKeeper adds to a read's size for the Stat it returns
// (DataTree.STAT_OVERHEAD_BYTES: six longs and five ints).
const statOverheadBytes = 6*8 + 5*4

// namespace is the first component of a path, ZooKeeper's PathUtils.getTopNamespace ("" for
// the root, which ZooKeeper does not observe), and the path's Java String.length: UTF-16
// code units, the bytes of an ASCII path. One pass over the path, as this runs for every
// read and write.
func namespace(path string) (ns string, javaLen int) {
	end := -1
	for i := 1; i < len(path); i++ {
		c := path[i]
		if c >= utf8.RuneSelf {
			return namespaceSlow(path)
		}
		if c == '/' && end < 0 {
			end = i
		}
	}
	if end < 0 {
		end = len(path)
	}
	if len(path) == 0 || path[0] != '/' {
		return namespaceSlow(path)
	}
	return path[1:end], len(path)
}

func namespaceSlow(path string) (string, int) {
	ns, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	n := 0
	for _, r := range path {
		n += utf16.RuneLen(r)
	}
	return ns, n
}

// NamespaceRead records a successful getData, exists or getChildren of path that returned
// bytes of data (getChildren: the children's names), as ZooKeeper's DataTree does in
// read_per_namespace: the path's length, the bytes and a Stat's size.
func (r *Registry) NamespaceRead(path string, bytes int) {
	if r == nil {
		return
	}
	if ns, n := namespace(path); ns != "" {
		r.readPerNS.Observe(ns, float64(n+bytes+statOverheadBytes))
	}
}

// NamespaceWrite records a create or setData of path applied to the tree, with the bytes
// of data it wrote, as ZooKeeper's DataTree does in write_per_namespace: the path's length
// plus the bytes.
func (r *Registry) NamespaceWrite(path string, bytes int) {
	if r == nil {
		return
	}
	if ns, n := namespace(path); ns != "" {
		r.writePerNS.Observe(ns, float64(n+bytes))
	}
}

// NamespaceDelete records a delete of path applied to the tree in write_per_namespace, as
// ZooKeeper's DataTree does (the path's length). A top-level path is its namespace's last
// znode: the namespace's series are dropped NamespaceRetention later unless it is used again.
func (r *Registry) NamespaceDelete(path string) {
	if r == nil {
		return
	}
	ns, n := namespace(path)
	if ns == "" {
		return
	}
	r.writePerNS.Observe(ns, float64(n))
	if len(ns) == len(path)-1 {
		r.readPerNS.gone(ns)
		r.writePerNS.gone(ns)
	}
}
