package metrics

import (
	"math"
	"math/bits"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fastSummary is a Prometheus summary for values observed on every request (read and
// update latency, session queue length, the per-namespace sizes), where client_golang's
// Summary costs too much: its Observe takes a lock and feeds quantile streams. Observe here
// is lock-free and allocation-free: three uncontended atomic adds, one of them to a
// log-linear bucket (exact below 256 scaled units, then 128 buckets per power of two: under
// 0.8% error, as an HDR histogram with two significant digits). The quantiles are computed
// at scrape time over a ring of ageBuckets windows of fastSummaryWindow each, turned over
// at scrapes by the windows elapsed: the last 8 to 10 minutes, as client_java's Summary
// (maxAgeSeconds 600, ageBuckets 5) that ZooKeeper's provider uses gives; _sum and _count
// are cumulative, as a summary's are.
type fastSummary struct {
	desc      *prometheus.Desc
	labels    []string // the values of desc's variable labels
	quantiles []float64
	scale     float64 // values are recorded as value*scale integers

	cur     atomic.Pointer[sumWindow] // where observations go
	count   atomic.Uint64
	sumBits atomic.Uint64 // math.Float64bits of the sum

	// mm is mntr's AvgMinMax(Percentile)Counter without the Prometheus provider (nil with
	// it); count and sum are then not kept, nothing reading them.
	mm *avgMinMax

	// goneAt is when the set's key (a namespace) lost its last znode, in UnixNano; 0 while
	// it has znodes. Only the per-namespace sets set it (fastSummarySet.gone).
	goneAt atomic.Int64

	mu         sync.Mutex   // scrapes: the window turnover and ring
	ring       []*sumWindow // ageBuckets windows, cur among them; nil without windows
	next       int          // the ring's index of the window cur turns over to
	windowFrom time.Time
	window     time.Duration
}

// Bucket layout: values below linearBuckets have a bucket each; above, each power of two
// is split into subBuckets.
const (
	subBits       = 7
	subBuckets    = 1 << subBits
	linearBuckets = 2 * subBuckets
)

// bucketOf is the index of v's bucket.
func bucketOf(v uint64) int {
	if v < linearBuckets {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1 // v>>shift is in [subBuckets, 2*subBuckets)
	return linearBuckets + (shift-1)*subBuckets + int(v>>shift) - subBuckets
}

// bucketTop is the highest value bucket i holds (what an HDR histogram reports for a
// quantile that falls in it).
func bucketTop(i int) uint64 {
	if i < linearBuckets {
		return uint64(i)
	}
	j := i - linearBuckets
	shift := j/subBuckets + 1
	sub := uint64(j%subBuckets + subBuckets)
	return (sub+1)<<shift - 1
}

// fastSummaryMax is the largest value recorded, in scaled units; larger ones are clamped.
const fastSummaryMax = 3_600_000_000

var numBuckets = bucketOf(fastSummaryMax) + 1

// sumWindow is one window's bucket counts, in chunks made on a value's first landing in
// them: a summary's values span a few powers of two, so a window costs a few KB, not the
// 26 KB of every bucket, and ZooKeeper's five windows stay cheap for a summary per
// namespace.
type sumWindow struct {
	chunks []atomic.Pointer[sumChunk] // numChunks
}

func newSumWindow() *sumWindow {
	return &sumWindow{chunks: make([]atomic.Pointer[sumChunk], numChunks)}
}

const chunkBits = 7

// sumChunk is the counts of 1<<chunkBits consecutive buckets.
type sumChunk [1 << chunkBits]atomic.Uint64

var numChunks = (numBuckets + 1<<chunkBits - 1) >> chunkBits

func (w *sumWindow) add(i int) {
	p := &w.chunks[i>>chunkBits]
	c := p.Load()
	if c == nil {
		c = new(sumChunk)
		if !p.CompareAndSwap(nil, c) {
			c = p.Load()
		}
	}
	c[i&(1<<chunkBits-1)].Add(1)
}

// count is bucket i's count.
func (w *sumWindow) count(i int) uint64 {
	if c := w.chunks[i>>chunkBits].Load(); c != nil {
		return c[i&(1<<chunkBits-1)].Load()
	}
	return 0
}

// reset empties the window, keeping its chunks for the values that will land there again.
func (w *sumWindow) reset() {
	for i := range w.chunks {
		if c := w.chunks[i].Load(); c != nil {
			for j := range c {
				c[j].Store(0)
			}
		}
	}
}

// nan is a quantile with no observations, as client_golang's Summary reports it.
var nan = math.NaN()

// ageBuckets and fastSummaryWindow are client_java's Summary defaults (5 age buckets over a
// maxAge of 10 minutes), which ZooKeeper's PrometheusMetricsProvider keeps.
const (
	ageBuckets        = 5
	fastSummaryWindow = 2 * time.Minute
)

func newFastSummary(name string, objectives map[float64]float64, scale float64, mntrOnly bool) *fastSummary {
	return newFastSummaryDesc(prometheus.NewDesc(name, name, nil, nil), nil, objectives, scale, mntrOnly)
}

func newFastSummaryDesc(desc *prometheus.Desc, labels []string, objectives map[float64]float64, scale float64, mntrOnly bool) *fastSummary {
	q := make([]float64, 0, len(objectives))
	for k := range objectives {
		q = append(q, k)
	}
	sort.Float64s(q)
	s := &fastSummary{
		desc:       desc,
		labels:     labels,
		quantiles:  q,
		scale:      scale,
		windowFrom: time.Now(),
		window:     fastSummaryWindow,
	}
	if mntrOnly {
		s.mm = newAvgMinMax()
	}
	// The windows (26 KB each) hold what quantiles are computed from. Without the provider
	// only mntr's percentiles read them, which ZooKeeper's default provider keeps for its
	// ADVANCED summaries alone: a BASIC one, such as a namespace of read_per_namespace (one
	// per top-level znode), costs its avg/min/max/count/sum only, as ZooKeeper's does.
	if !mntrOnly || hasPercentiles(objectives) {
		s.ring = make([]*sumWindow, ageBuckets)
		for i := range s.ring {
			s.ring[i] = newSumWindow()
		}
		s.cur.Store(s.ring[0])
		s.next = 1
	}
	return s
}

// hasPercentiles reports whether a summary of these objectives is one of ZooKeeper's
// ADVANCED ones (advancedObjectives), whose mntr lines include percentiles.
func hasPercentiles(objectives map[float64]float64) bool {
	_, ok := objectives[0.99]
	return ok
}

// Observe records v (prometheus.Observer).
func (s *fastSummary) Observe(v float64) {
	if cur := s.cur.Load(); cur != nil {
		iv := min(max(int64(v*s.scale), 0), fastSummaryMax)
		cur.add(bucketOf(uint64(iv)))
	}
	if s.mm != nil {
		s.mm.add(int64(v))
		return
	}
	s.count.Add(1)
	for {
		old := s.sumBits.Load()
		if s.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

func (s *fastSummary) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

func (s *fastSummary) Collect(ch chan<- prometheus.Metric) {
	count, sum, qs := s.read()
	ch <- prometheus.MustNewConstSummary(s.desc, count, sum, qs, s.labels...)
}

// read returns the count, the sum and the quantiles, turning the window over when it is
// due. Observations that land while it reads are counted or not; the quantiles tolerate
// that.
func (s *fastSummary) read() (count uint64, sum float64, qs map[float64]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if elapsed := time.Since(s.windowFrom); s.ring != nil && elapsed >= s.window {
		// One turn per window elapsed, as client_java's TimeWindowQuantiles rotates: the
		// oldest window is emptied and takes the observations. After a scrape-less ring's
		// worth of time every window is emptied. An observer that loaded a window four
		// turns ago may still add to it: one stray count.
		turns := len(s.ring)
		if s.window > 0 {
			turns = int(min(elapsed/s.window, time.Duration(len(s.ring))))
		}
		for range turns {
			next := s.ring[s.next]
			next.reset()
			s.cur.Store(next)
			s.next = (s.next + 1) % len(s.ring)
		}
		if turns == len(s.ring) {
			s.windowFrom = time.Now()
		} else {
			s.windowFrom = s.windowFrom.Add(time.Duration(turns) * s.window)
		}
	}
	count, sum = s.count.Load(), math.Float64frombits(s.sumBits.Load())
	vs := s.walk(s.quantiles)
	qs = make(map[float64]float64, len(s.quantiles))
	for i, q := range s.quantiles {
		qs[q] = vs[i]
	}
	return count, sum, qs
}

// valuesAt returns the values at the sorted quantiles qs over the windows, without
// turning them over.
func (s *fastSummary) valuesAt(qs []float64) []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.walk(qs)
}

// walk returns the values at the sorted quantiles qs over the ring's windows (NaN when
// they are empty). s.mu is held.
func (s *fastSummary) walk(qs []float64) []float64 {
	out := make([]float64, len(qs))
	for i := range out {
		out[i] = nan
	}
	if s.ring == nil { // no windows: nothing reads this summary's quantiles
		return out
	}
	// The counts summed over the windows, chunk by chunk: most chunks are in no window.
	var counts [][]uint64 // by chunk; nil where no window has the chunk
	var total uint64
	for ci := range numChunks {
		var sum []uint64
		for _, w := range s.ring {
			c := w.chunks[ci].Load()
			if c == nil {
				continue
			}
			if sum == nil {
				sum = make([]uint64, len(c))
			}
			for j := range c {
				n := c[j].Load()
				sum[j] += n
				total += n
			}
		}
		counts = append(counts, sum)
	}
	if total == 0 {
		return out
	}
	// One walk finds every quantile (they are sorted), as HDR's ValueAtQuantile does:
	// the top of the bucket where the running count reaches q of the total.
	var seen uint64
	k, last := 0, 0
	for ci, sum := range counts {
		for j, n := range sum {
			if n == 0 {
				continue
			}
			i := ci<<chunkBits + j
			seen += n
			last = i
			for k < len(qs) && float64(seen) >= math.Ceil(qs[k]*float64(total)) {
				out[k] = float64(bucketTop(i)) / s.scale
				k++
			}
			if k == len(qs) {
				return out
			}
		}
	}
	// Counts are read once, so the running count reaches the total: only rounding leaves
	// a quantile unreached.
	for ; k < len(qs); k++ {
		out[k] = float64(bucketTop(last)) / s.scale
	}
	return out
}

// fastSummarySet is ZooKeeper's SummarySet (one summary per key, labelled "key") made of
// fastSummaries, for values observed per packet or per request: a key's summary is made on
// its first observation and found again under a read lock, two uncontended atomics (the
// write lock is taken only to add a key; a copy-on-write map would cost a copy per new
// key, quadratic with many top-level znodes) (read_per_namespace, write_per_namespace,
// learner_handler_qp_size, learner_handler_qp_time_ms, ack_latency).
type fastSummarySet struct {
	desc       *prometheus.Desc
	objectives map[float64]float64
	scale      float64
	mntrOnly   bool
	mu         sync.RWMutex
	members    map[string]*fastSummary

	// The per-namespace sets bound their keys, which clients choose (one per top-level
	// znode): limit keys at most (0 = no bound), those past it observed under
	// OverflowNamespace; a key marked gone (its namespace lost its last znode) and not
	// observed since is dropped retain after it was marked, at the next sweep.
	limit     int
	retain    time.Duration
	now       func() time.Time
	overflow  *fastSummary        // made on the first key past limit
	marked    map[string]struct{} // keys marked gone and not yet dropped or observed, under mu
	lastSweep time.Time           // under mu
}

func newFastSummarySet(name string, objectives map[float64]float64, scale float64, mntrOnly bool) *fastSummarySet {
	return &fastSummarySet{
		desc:       prometheus.NewDesc(name, name, []string{setLabel}, nil),
		objectives: objectives,
		scale:      scale,
		mntrOnly:   mntrOnly,
		members:    map[string]*fastSummary{},
	}
}

// bounded makes s a per-namespace set: see the limit, retain and now fields.
func (s *fastSummarySet) bounded(limit int, retain time.Duration, now func() time.Time) *fastSummarySet {
	s.limit, s.retain, s.now = limit, retain, now
	s.marked = map[string]struct{}{}
	return s
}

// with returns key's summary, making it on first use (or the overflow summary when the set
// is full). key may be a slice of a longer string: a new key is copied before it is kept.
func (s *fastSummarySet) with(key string) *fastSummary {
	s.mu.RLock()
	m := s.members[key]
	s.mu.RUnlock()
	if m != nil {
		if m.goneAt.Load() != 0 { // the namespace has a znode again
			m.goneAt.Store(0)
		}
		return m
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.members[key]; m != nil {
		return m
	}
	if s.limit > 0 && len(s.members) >= s.limit {
		s.maybeSweepLocked(s.now()) // room may be due, with no scrape to make it
	}
	if s.limit > 0 && len(s.members) >= s.limit {
		if s.overflow == nil {
			s.overflow = newFastSummaryDesc(s.desc, []string{OverflowNamespace}, s.objectives, s.scale, s.mntrOnly)
		}
		return s.overflow
	}
	key = strings.Clone(key)
	m = newFastSummaryDesc(s.desc, []string{key}, s.objectives, s.scale, s.mntrOnly)
	s.members[key] = m
	return m
}

// Observe records v for key.
func (s *fastSummarySet) Observe(key string, v float64) { s.with(key).Observe(v) }

// gone marks key's namespace as having lost its last znode: unless it is observed again, its
// summary is dropped by a sweep retain later.
func (s *fastSummarySet) gone(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.members[key]
	if m == nil {
		return
	}
	now := s.now()
	m.goneAt.Store(now.UnixNano())
	s.marked[strings.Clone(key)] = struct{}{}
	// Without scrapes (mntr only, or no scraper yet) the marks must still be swept, or the
	// summaries of deleted namespaces pile up in memory.
	s.maybeSweepLocked(now)
}

// maybeSweepLocked sweeps when an eighth of retain has passed since the last sweep: a key
// is dropped at most that late, and a churn of new or deleted namespaces does not sweep on
// every one of them.
func (s *fastSummarySet) maybeSweepLocked(now time.Time) {
	if len(s.marked) > 0 && now.Sub(s.lastSweep) >= s.retain/8 {
		s.sweepLocked(now)
	}
}

// sweep drops the keys marked gone retain ago or more and not observed since. It runs on
// scrapes and mntr (what shows the keys) and on marks (what adds to them), and costs the
// marked keys, not the whole set.
func (s *fastSummarySet) sweep() {
	if s.marked == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(s.now())
}

func (s *fastSummarySet) sweepLocked(now time.Time) {
	s.lastSweep = now
	cutoff := now.Add(-s.retain).UnixNano()
	for key := range s.marked {
		m := s.members[key]
		at := int64(0)
		if m != nil {
			at = m.goneAt.Load()
		}
		switch {
		case at == 0: // observed again, or already gone from the set
			delete(s.marked, key)
		case at <= cutoff:
			delete(s.members, key)
			delete(s.marked, key)
		}
	}
}

// all returns the set's summaries, the overflow one included, after a sweep.
func (s *fastSummarySet) all() []*fastSummary {
	s.sweep()
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*fastSummary, 0, len(s.members)+1)
	for _, m := range s.members {
		out = append(out, m)
	}
	if s.overflow != nil {
		out = append(out, s.overflow)
	}
	return out
}

func (s *fastSummarySet) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

func (s *fastSummarySet) Collect(ch chan<- prometheus.Metric) {
	for _, m := range s.all() {
		m.Collect(ch)
	}
}
