package metrics

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func collectSummary(t *testing.T, s *fastSummary) *dto.Summary {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	s.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetSummary()
}

func TestFastSummary(t *testing.T) {
	s := newFastSummary("readlatency", advancedObjectives, 1000, false)
	if got := collectSummary(t, s); got.GetSampleCount() != 0 || !math.IsNaN(got.GetQuantile()[0].GetValue()) {
		t.Fatalf("empty summary: %v", got)
	}
	for i := 1; i <= 1000; i++ {
		s.Observe(float64(i) / 10) // 0.1 .. 100 ms
	}
	got := collectSummary(t, s)
	if got.GetSampleCount() != 1000 || math.Abs(got.GetSampleSum()-50050) > 1e-6 {
		t.Fatalf("count %d sum %v, want 1000, 50050", got.GetSampleCount(), got.GetSampleSum())
	}
	want := map[float64]float64{0.5: 50, 0.9: 90, 0.99: 99}
	if len(got.GetQuantile()) != len(want) {
		t.Fatalf("quantiles %v", got.GetQuantile())
	}
	for _, q := range got.GetQuantile() {
		if w := want[q.GetQuantile()]; math.Abs(q.GetValue()-w) > w*0.02 {
			t.Errorf("quantile %v = %v, want %v within 2%%", q.GetQuantile(), q.GetValue(), w)
		}
	}
	// The observations count towards the quantiles for ageBuckets windows (client_java's
	// maxAge, ten minutes), then no longer; the sum and count stay cumulative.
	for range ageBuckets - 1 {
		turnOne(s)
		collectSummary(t, s)
	}
	s.Observe(7)
	turnOne(s)
	got = collectSummary(t, s) // the last turn: the first window is emptied before the walk
	if got.GetSampleCount() != 1001 {
		t.Fatalf("count %d, want 1001", got.GetSampleCount())
	}
	for _, q := range got.GetQuantile() {
		if v := q.GetValue(); math.IsNaN(v) || math.Abs(v-7) > 0.1 {
			t.Errorf("quantile %v = %v after the windows turned, want 7", q.GetQuantile(), q.GetValue())
		}
	}
}

// turnOne makes the next scrape of s find one window elapsed.
func turnOne(s *fastSummary) { s.windowFrom = time.Now().Add(-s.window - time.Millisecond) }

// TestFastSummaryMaxAge: an observation counts towards the quantiles until ageBuckets
// windows have turned over, as client_java's Summary keeps one for maxAgeSeconds.
func TestFastSummaryMaxAge(t *testing.T) {
	s := newFastSummary("readlatency", advancedObjectives, 1000, false)
	s.Observe(100)
	for turn := 1; turn <= ageBuckets; turn++ {
		s.Observe(1) // in the window that turn leaves
		turnOne(s)
		got := collectSummary(t, s)
		top := got.GetQuantile()[len(got.GetQuantile())-1].GetValue()
		if math.IsNaN(top) {
			t.Fatalf("after %d turns no quantile: the observations of the last window were lost", turn)
		}
		if turn < ageBuckets && math.Abs(top-100) > 1 {
			t.Fatalf("after %d turns the p99 is %v: the first observation (100) was forgotten early", turn, top)
		}
		if turn == ageBuckets && top > 1.1 {
			t.Fatalf("after %d turns the p99 is %v: the first observation (100) is still counted", turn, top)
		}
	}
}

// TestBuckets: every value lands in a bucket whose top is at least the value and within
// 1% of it, and buckets are contiguous up to fastSummaryMax.
func TestBuckets(t *testing.T) {
	prev := -1
	check := func(v uint64, dense bool) {
		i := bucketOf(v)
		if i < prev || dense && i > prev+1 {
			t.Fatalf("value %d in bucket %d after bucket %d", v, i, prev)
		}
		prev = i
		top := bucketTop(i)
		if top < v || float64(top-v) > 0.01*float64(v) {
			t.Fatalf("value %d in bucket %d whose top is %d", v, i, top)
		}
		if bucketOf(top) != i {
			t.Fatalf("bucket %d's top %d lands in bucket %d", i, top, bucketOf(top))
		}
	}
	for v := uint64(0); v < 100_000; v++ {
		check(v, true)
	}
	for v := uint64(100_000); v <= fastSummaryMax; v += v / 300 {
		check(v, false)
	}
	check(fastSummaryMax, false)
	if n := bucketOf(fastSummaryMax); n != numBuckets-1 {
		t.Fatalf("the largest value's bucket is %d of %d", n, numBuckets)
	}
}

// TestNamespace: the one-pass namespace and length agree with the plain definitions.
func TestNamespace(t *testing.T) {
	for _, p := range []string{"/", "/a", "/app", "/app/", "/app/b/c", "//x", "", "x/y", "/\u00e9t\U0001F600/z", "/a/\u00e9"} {
		ns, n := namespace(p)
		wantNS, wantN := namespaceSlow(p)
		if ns != wantNS || n != wantN {
			t.Errorf("namespace(%q) = %q, %d, want %q, %d", p, ns, n, wantNS, wantN)
		}
	}
}

// TestFastSummaryConcurrent: observers on several goroutines and scrapes turning the
// windows over meanwhile lose no count and no sum.
func TestFastSummaryConcurrent(t *testing.T) {
	s := newFastSummary("updatelatency", advancedObjectives, 1000, false)
	s.window = 0 // every scrape turns the window over
	const goroutines, each = 4, 5000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				s.Observe(float64(i % 10))
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			s.read()
		}
	}()
	wg.Wait()
	<-done
	got := collectSummary(t, s)
	if got.GetSampleCount() != goroutines*each || got.GetSampleSum() != goroutines*each/10*45 {
		t.Fatalf("count %d sum %v, want %d, %d", got.GetSampleCount(), got.GetSampleSum(), goroutines*each, goroutines*each/10*45)
	}
}

// TestFastSummaryElapsedWindows: a scrape after a long gap turns the ring by the windows
// elapsed, not by one: observations older than the ring's span no longer count.
func TestFastSummaryElapsedWindows(t *testing.T) {
	s := newFastSummary("readlatency", advancedObjectives, 1000, false)
	s.Observe(100)
	s.windowFrom = s.windowFrom.Add(-3 * s.window) // three windows ago: still within the ring
	s.Observe(1)
	got := collectSummary(t, s)
	if top := got.GetQuantile()[2].GetValue(); math.Abs(top-100) > 1 {
		t.Fatalf("after 3 windows the p99 is %v, want 100 still counted", top)
	}
	s.windowFrom = s.windowFrom.Add(-time.Duration(ageBuckets) * s.window) // a whole ring since
	got = collectSummary(t, s)
	for _, q := range got.GetQuantile() {
		if !math.IsNaN(q.GetValue()) {
			t.Fatalf("after a ring's worth of windows quantile %v = %v, want none (NaN)", q.GetQuantile(), q.GetValue())
		}
	}
	s.Observe(7)
	got = collectSummary(t, s)
	for _, q := range got.GetQuantile() {
		if v := q.GetValue(); math.IsNaN(v) || math.Abs(v-7) > 0.1 {
			t.Fatalf("after a ring's worth of windows quantile %v = %v, want only the new 7", q.GetQuantile(), q.GetValue())
		}
	}
}
