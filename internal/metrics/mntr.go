package metrics

import (
	"math"
	"slices"
	"strings"
	"sync/atomic"

	dto "github.com/prometheus/client_model/go"

	"github.com/zkd-io/zkd/internal/admin"
)

// What mntr prints of the summaries depends on the provider, as in ZooKeeper. Without
// metricsProvider.className (a Registry made with Options.MntrOnly) ZooKeeper's
// DefaultMetricsProvider keeps each summary as an AvgMinMaxCounter (avg_, min_, max_,
// cnt_, sum_) or, for an ADVANCED one, an AvgMinMaxPercentileCounter (with p50_ .. p999_),
// and srst resets them: avgMinMax below, fed by the same Observe calls as the Prometheus
// instruments. With the Prometheus provider mntr prints the provider's samples instead
// (Dump), which srst does not reset.

// avgMinMax is ZooKeeper's AvgMinMaxCounter: lock-free, so the core can feed it per request.
type avgMinMax struct {
	count, total, min, max atomic.Int64
}

func newAvgMinMax() *avgMinMax {
	a := &avgMinMax{}
	a.reset()
	return a
}

func (a *avgMinMax) add(v int64) {
	a.total.Add(v)
	a.count.Add(1)
	for cur := a.min.Load(); v < cur && !a.min.CompareAndSwap(cur, v); cur = a.min.Load() {
	}
	for cur := a.max.Load(); v > cur && !a.max.CompareAndSwap(cur, v); cur = a.max.Load() {
	}
}

// read returns the counter as mntr prints it; min and max read 0 until set, as
// AvgMinMaxCounter's getMin and getMax.
func (a *avgMinMax) read() admin.Summary {
	s := admin.Summary{Count: a.count.Load(), Sum: a.total.Load(), Min: a.min.Load(), Max: a.max.Load()}
	if s.Min == math.MaxInt64 {
		s.Min = 0
	}
	if s.Max == math.MinInt64 {
		s.Max = 0
	}
	return s
}

func (a *avgMinMax) reset() {
	a.count.Store(0)
	a.total.Store(0)
	a.min.Store(math.MaxInt64)
	a.max.Store(math.MinInt64)
}

// mntrPercentiles are the quantiles AvgMinMaxPercentileCounter prints (p50, p95, p99, p999).
var mntrPercentiles = []float64{0.5, 0.95, 0.99, 0.999}

// mntrSummary is an instrument mntr reads without the Prometheus provider.
type mntrSummary interface {
	mntr(percentiles bool) admin.Summary
	resetMntr()
}

// basicSummary is a summary observed a few times per group commit or less (fsync time and
// batch size, snapshot and load times): client_golang's Summary with the Prometheus
// provider, an avgMinMax without it.
type basicSummary struct {
	prom interface{ Observe(float64) } // nil without the provider
	mm   *avgMinMax                    // nil with the provider
}

func (s *basicSummary) Observe(v float64) {
	if s.prom != nil {
		s.prom.Observe(v)
	}
	if s.mm != nil {
		s.mm.add(int64(v))
	}
}

func (s *basicSummary) mntr(bool) admin.Summary {
	if s.mm == nil {
		return admin.Summary{}
	}
	return s.mm.read()
}

func (s *basicSummary) resetMntr() {
	if s.mm != nil {
		s.mm.reset()
	}
}

// mntr reads a fastSummary as an AvgMinMax(Percentile)Counter. Its buckets are never
// turned over without the provider (nothing scrapes), so the percentiles are of every
// value since the last reset, as ZooKeeper's uniform reservoir's are.
func (s *fastSummary) mntr(percentiles bool) admin.Summary {
	if s.mm == nil {
		return admin.Summary{}
	}
	sum := s.mm.read()
	if percentiles {
		q := s.valuesAt(mntrPercentiles)
		sum.P50, sum.P95, sum.P99, sum.P999 = round(q[0]), round(q[1]), round(q[2]), round(q[3])
	}
	return sum
}

func round(v float64) int64 {
	if math.IsNaN(v) {
		return 0
	}
	return int64(math.Round(v))
}

func (s *fastSummary) resetMntr() {
	if s.mm == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.ring {
		w.reset()
	}
	s.mm.reset()
}

// mntr returns the set's members by key, sorted (ZooKeeper prints them in hash order).
func (s *fastSummarySet) mntr(percentiles bool) []admin.NamedSummary {
	members := s.all()
	out := make([]admin.NamedSummary, 0, len(members))
	for _, m := range members {
		out = append(out, admin.NamedSummary{Name: m.labels[0], Summary: m.mntr(percentiles)})
	}
	slices.SortFunc(out, func(a, b admin.NamedSummary) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (s *fastSummarySet) resetMntr() {
	for _, m := range s.all() {
		m.resetMntr()
	}
}

// MntrOnly reports whether r only backs mntr (no Prometheus provider).
func (r *Registry) MntrOnly() bool { return r != nil && r.mntrOnly }

// Mntr fills what mntr prints of r: without the provider, the summaries and summary sets
// (Summaries, ReadPerNamespace, WritePerNamespace); with it, every sample of the provider
// (Dump). It takes no step on the server's core beyond the cached one a scrape takes.
// The learner queue sets are the server's own (it keeps them in both modes).
func (r *Registry) Mntr(st *admin.ServerStats) {
	if r == nil {
		return
	}
	if !r.mntrOnly {
		st.Dump = r.Dump()
		return
	}
	st.Summaries = make(map[string]admin.Summary, len(r.mntrSums))
	for name, s := range r.mntrSums {
		st.Summaries[name] = s.mntr(advancedNames[name])
	}
	st.ReadPerNamespace = r.readPerNS.mntr(false)
	st.WritePerNamespace = r.writePerNS.mntr(false)
	st.AckLatency = r.ackLatency.mntr(true)
}

// ResetMntr is srst's reset of the summaries (ServerMetrics.resetAll). The Prometheus
// provider does not reset, as ZooKeeper's does not ("not supported on Prometheus").
func (r *Registry) ResetMntr() {
	if r == nil || !r.mntrOnly {
		return
	}
	for _, s := range r.mntrSums {
		s.resetMntr()
	}
	for _, set := range []*fastSummarySet{r.readPerNS, r.writePerNS, r.ackLatency} {
		set.resetMntr()
	}
}

var advancedNames = func() map[string]bool {
	m := make(map[string]bool, len(zkAdvancedSummaries))
	for _, n := range zkAdvancedSummaries {
		m[n] = true
	}
	return m
}()

// Dump is PrometheusMetricsProvider.dump: every sample the endpoint would serve, keyed by
// its name and labels as buildKeyForDump writes them (`fsynctime{quantile="0.5"}`,
// `fsynctime_count`), in the families' name order (ZooKeeper's is its registry's hash
// order). Summaries and histograms give their samples as the Java client does: the
// quantiles or buckets (le, with "+Inf"), then _count and _sum.
func (r *Registry) Dump() []admin.Sample {
	if r == nil || r.mntrOnly {
		return nil
	}
	// A collector that fails leaves out its families; the others are still dumped, as the
	// endpoint serves them (ContinueOnError).
	fams, _ := r.reg.Gather()
	var out []admin.Sample
	for _, f := range fams {
		name := f.GetName()
		for _, m := range f.GetMetric() {
			labels := m.GetLabel()
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out = append(out, admin.Sample{Key: dumpKey(name, labels, "", ""), Value: m.GetCounter().GetValue()})
			case dto.MetricType_GAUGE:
				out = append(out, admin.Sample{Key: dumpKey(name, labels, "", ""), Value: m.GetGauge().GetValue()})
			case dto.MetricType_UNTYPED:
				out = append(out, admin.Sample{Key: dumpKey(name, labels, "", ""), Value: m.GetUntyped().GetValue()})
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					out = append(out, admin.Sample{Key: dumpKey(name, labels, "quantile", goDouble(q.GetQuantile())), Value: q.GetValue()})
				}
				out = append(out,
					admin.Sample{Key: dumpKey(name+"_count", labels, "", ""), Value: float64(s.GetSampleCount())},
					admin.Sample{Key: dumpKey(name+"_sum", labels, "", ""), Value: s.GetSampleSum()})
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				infSeen := false
				for _, b := range h.GetBucket() {
					infSeen = infSeen || math.IsInf(b.GetUpperBound(), 1)
					out = append(out, admin.Sample{Key: dumpKey(name+"_bucket", labels, "le", goDouble(b.GetUpperBound())), Value: float64(b.GetCumulativeCount())})
				}
				if !infSeen {
					out = append(out, admin.Sample{Key: dumpKey(name+"_bucket", labels, "le", "+Inf"), Value: float64(h.GetSampleCount())})
				}
				out = append(out,
					admin.Sample{Key: dumpKey(name+"_count", labels, "", ""), Value: float64(h.GetSampleCount())},
					admin.Sample{Key: dumpKey(name+"_sum", labels, "", ""), Value: h.GetSampleSum()})
			}
		}
	}
	return out
}

// dumpKey is buildKeyForDump: the name, then the labels in braces (the series' own, then
// the quantile or le of the sample, as the Java client orders them).
func dumpKey(name string, labels []*dto.LabelPair, extra, extraValue string) string {
	if len(labels) == 0 && extra == "" {
		return name
	}
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	sep := false
	pair := func(k, v string) {
		if sep {
			b.WriteByte(',')
		}
		sep = true
		b.WriteString(k)
		b.WriteString(`="`)
		b.WriteString(v)
		b.WriteByte('"')
	}
	for _, l := range labels {
		pair(l.GetName(), l.GetValue())
	}
	if extra != "" {
		pair(extra, extraValue)
	}
	b.WriteByte('}')
	return b.String()
}

// goDouble is the Java client's Collector.doubleToGoString, how it writes a quantile or a
// bucket bound into a label: "+Inf", "-Inf", "NaN", else Java's Double.toString.
func goDouble(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return admin.JavaDouble(v)
}
