package metrics

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
)

// fastSummary is a Prometheus summary for values observed on every request (read and
// update latency, session queue length), where client_golang's Summary costs too much: its
// Observe takes a lock and feeds quantile streams. Observe here records into an HDR
// histogram (a lock nobody else holds but a scrape, and an array increment); the quantiles
// are computed at scrape time, over the current window and the one before (windows of
// fastSummaryWindow, turned over by scrapes), while _sum and _count are cumulative, as a
// summary's are.
type fastSummary struct {
	desc       *prometheus.Desc
	labels     []string // the values of desc's variable labels
	quantiles  []float64
	scale      float64 // values are recorded as value*scale integers
	mu         sync.Mutex
	cur, prev  *hdrhistogram.Histogram
	windowFrom time.Time
	window     time.Duration
	sum        float64
	count      uint64
}

// nan is a quantile with no observations, as client_golang's Summary reports it.
var nan = math.NaN()

// fastSummaryWindow is how long observations count towards the quantiles.
const fastSummaryWindow = time.Minute

// fastSummaryMax is the largest value recorded, in scaled units; larger ones are clamped.
const fastSummaryMax = 3_600_000_000

func newFastSummary(name string, objectives map[float64]float64, scale float64) *fastSummary {
	return newFastSummaryDesc(prometheus.NewDesc(name, name, nil, nil), nil, objectives, scale)
}

func newFastSummaryDesc(desc *prometheus.Desc, labels []string, objectives map[float64]float64, scale float64) *fastSummary {
	q := make([]float64, 0, len(objectives))
	for k := range objectives {
		q = append(q, k)
	}
	sort.Float64s(q)
	return &fastSummary{
		desc:       desc,
		labels:     labels,
		quantiles:  q,
		scale:      scale,
		cur:        hdrhistogram.New(0, fastSummaryMax, 2),
		prev:       hdrhistogram.New(0, fastSummaryMax, 2),
		windowFrom: time.Now(),
		window:     fastSummaryWindow,
	}
}

// Observe records v (prometheus.Observer).
func (s *fastSummary) Observe(v float64) {
	iv := int64(v * s.scale)
	iv = min(max(iv, 0), fastSummaryMax)
	s.mu.Lock()
	s.cur.RecordValue(iv) //nolint:errcheck // clamped into range above
	s.sum += v
	s.count++
	s.mu.Unlock()
}

func (s *fastSummary) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

func (s *fastSummary) Collect(ch chan<- prometheus.Metric) {
	count, sum, qs := s.read()
	ch <- prometheus.MustNewConstSummary(s.desc, count, sum, qs, s.labels...)
}

// read returns the count, the sum and the quantiles, turning the window over when it is
// due.
func (s *fastSummary) read() (count uint64, sum float64, qs map[float64]float64) {
	s.mu.Lock()
	if time.Since(s.windowFrom) >= s.window {
		s.prev, s.cur = s.cur, s.prev
		s.cur.Reset()
		s.windowFrom = time.Now()
	}
	h := hdrhistogram.Import(s.prev.Export())
	h.Merge(s.cur)
	sum, count = s.sum, s.count
	s.mu.Unlock()
	qs = make(map[float64]float64, len(s.quantiles))
	for _, q := range s.quantiles {
		if h.TotalCount() == 0 {
			qs[q] = nan
			continue
		}
		qs[q] = float64(h.ValueAtQuantile(q*100)) / s.scale
	}
	return count, sum, qs
}

// fastSummarySet is ZooKeeper's SummarySet (one summary per key, labelled "key") made of
// fastSummaries, for values observed per packet or per request: a key's summary is made on
// its first observation, and found again without a lock (read_per_namespace,
// write_per_namespace, learner_handler_qp_size, learner_handler_qp_time_ms).
type fastSummarySet struct {
	desc       *prometheus.Desc
	objectives map[float64]float64
	scale      float64
	members    sync.Map // key -> *fastSummary
}

func newFastSummarySet(name string, objectives map[float64]float64, scale float64) *fastSummarySet {
	return &fastSummarySet{
		desc:       prometheus.NewDesc(name, name, []string{setLabel}, nil),
		objectives: objectives,
		scale:      scale,
	}
}

// with returns key's summary, making it on first use.
func (s *fastSummarySet) with(key string) *fastSummary {
	if m, ok := s.members.Load(key); ok {
		return m.(*fastSummary)
	}
	m, _ := s.members.LoadOrStore(key, newFastSummaryDesc(s.desc, []string{key}, s.objectives, s.scale))
	return m.(*fastSummary)
}

// Observe records v for key.
func (s *fastSummarySet) Observe(key string, v float64) { s.with(key).Observe(v) }

func (s *fastSummarySet) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

func (s *fastSummarySet) Collect(ch chan<- prometheus.Metric) {
	s.members.Range(func(_, m any) bool {
		m.(*fastSummary).Collect(ch)
		return true
	})
}
