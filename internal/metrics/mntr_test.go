package metrics

import (
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/jute"
)

// TestAvgMinMax: ZooKeeper's AvgMinMaxCounter, also under concurrent adds, and min and max
// reading 0 while empty.
func TestAvgMinMax(t *testing.T) {
	a := newAvgMinMax()
	if got := a.read(); got != (admin.Summary{}) {
		t.Fatalf("empty counter reads %+v", got)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				a.add(int64(g*1000 + i))
			}
		}()
	}
	wg.Wait()
	want := admin.Summary{Count: 4000, Sum: 3999 * 4000 / 2, Min: 0, Max: 3999}
	if got := a.read(); got != want {
		t.Errorf("read %+v, want %+v", got, want)
	}
	a.reset()
	a.add(-3)
	if got := a.read(); got != (admin.Summary{Count: 1, Sum: -3, Min: -3, Max: -3}) {
		t.Errorf("after reset and -3: %+v", got)
	}
}

// TestMntrOnlySummaries: a registry without the provider gives mntr every summary zkd
// observes, from the same calls the server makes with the provider, with percentiles for
// the ADVANCED ones, and srst (ResetMntr) empties them; it keeps no Prometheus series.
func TestMntrOnlySummaries(t *testing.T) {
	r := New(Options{MntrOnly: true})
	for i := range 100 {
		r.Request(jute.OpSetData, time.Duration(i+1)*time.Millisecond) // 1 .. 100 ms
	}
	r.Request(jute.OpGetData, 7*time.Millisecond)
	r.Fsync(3*time.Millisecond, 5)
	r.Fsync(9*time.Millisecond, 1)
	r.SessionQueued(2)
	r.NamespaceWrite("/app/x", 4)
	r.NamespaceRead("/app/x", 4)
	r.NamespaceRead("/", 4) // the root is no namespace
	r.AckLatency(2, 12)
	var st admin.ServerStats
	r.Mntr(&st)
	if st.Dump != nil {
		t.Errorf("a mntr-only registry dumps %d samples", len(st.Dump))
	}
	up := st.Summaries["updatelatency"]
	if up.Count != 100 || up.Sum != 5050 || up.Min != 1 || up.Max != 100 {
		t.Errorf("updatelatency %+v", up)
	}
	// The buckets are exact below 256 scaled units and within 0.8% above.
	for _, p := range []struct {
		got, want int64
	}{{up.P50, 50}, {up.P95, 95}, {up.P99, 99}, {up.P999, 100}} {
		if math.Abs(float64(p.got-p.want)) > 1 {
			t.Errorf("updatelatency percentiles %+v", up)
			break
		}
	}
	for name, want := range map[string]admin.Summary{
		"readlatency":               {Count: 1, Sum: 7, Min: 7, Max: 7, P50: 7, P95: 7, P99: 7, P999: 7},
		"fsynctime":                 {Count: 2, Sum: 12, Min: 3, Max: 9},
		"sync_processor_batch_size": {Count: 2, Sum: 6, Min: 1, Max: 5},
		"requests_in_session_queue": {Count: 1, Sum: 3, Min: 3, Max: 3},
	} {
		if got := st.Summaries[name]; got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	wantNS := func(what string, got []admin.NamedSummary, want admin.Summary) {
		t.Helper()
		if len(got) != 1 || got[0].Name != "app" || got[0].Summary != want {
			t.Errorf("%s: %+v, want app %+v", what, got, want)
		}
	}
	wantNS("write_per_namespace", st.WritePerNamespace, admin.Summary{Count: 1, Sum: 10, Min: 10, Max: 10})
	wantNS("read_per_namespace", st.ReadPerNamespace, admin.Summary{Count: 1, Sum: 6 + 4 + statOverheadBytes, Min: 78, Max: 78})
	if len(st.AckLatency) != 1 || st.AckLatency[0].Name != "2" || st.AckLatency[0].Count != 1 || st.AckLatency[0].P99 != 12 {
		t.Errorf("ack_latency %+v", st.AckLatency)
	}
	if fams, err := r.Gatherer().Gather(); err != nil {
		t.Fatal(err)
	} else {
		for _, f := range fams {
			for _, m := range f.GetMetric() {
				if s := m.GetSummary(); s != nil && s.GetSampleCount() > 0 {
					t.Errorf("a mntr-only registry keeps Prometheus series: %s", f.GetName())
				}
			}
		}
	}

	r.ResetMntr()
	st = admin.ServerStats{}
	r.Mntr(&st)
	for name, s := range st.Summaries {
		if s != (admin.Summary{}) {
			t.Errorf("after ResetMntr %s: %+v", name, s)
		}
	}
	// The sets keep their keys, as ZooKeeper's do.
	if len(st.ReadPerNamespace) != 1 || st.ReadPerNamespace[0].Summary != (admin.Summary{}) {
		t.Errorf("after ResetMntr read_per_namespace: %+v", st.ReadPerNamespace)
	}
}

// TestDumpKeys: with the provider, mntr's samples are keyed as buildKeyForDump keys them:
// labels in braces with the quantile or le last, bounds as the Java client writes them.
func TestDumpKeys(t *testing.T) {
	r := New(Options{})
	r.Request(jute.OpGetData, 2*time.Millisecond)
	r.Fsync(time.Millisecond, 1)
	r.NamespaceRead("/app/x", 1)
	var st admin.ServerStats
	r.Mntr(&st)
	if st.Summaries != nil {
		t.Errorf("with the provider Mntr fills Summaries: %v", st.Summaries)
	}
	keys := map[string]float64{}
	for _, s := range st.Dump {
		if _, dup := keys[s.Key]; dup {
			t.Errorf("%s dumped twice", s.Key)
		}
		keys[s.Key] = s.Value
	}
	for k, want := range map[string]float64{
		`readlatency_count`:                                                   1,
		`readlatency_sum`:                                                     2,
		`readlatency{quantile="0.99"}`:                                        math.NaN(), // any value
		`fsynctime{quantile="0.5"}`:                                           math.NaN(),
		`read_per_namespace_count{key="app"}`:                                 1,
		`read_per_namespace{key="app",quantile="0.5"}`:                        math.NaN(),
		`zkd_request_duration_seconds_bucket{op="getData",le="5.0E-5"}`:       0,
		`zkd_request_duration_seconds_bucket{op="getData",le="+Inf"}`:         1,
		`zkd_request_duration_seconds_count{op="getData"}`:                    1,
		`zkd_group_commit_batch_size_bucket{le="1.0"}`:                        1,
		`updatelatency{quantile="0.5"}`:                                       math.NaN(),
		`zkd_request_duration_seconds_bucket{le="+Inf",op="getData"}`:         -1,
		`zkd_request_duration_seconds_bucket{op="getData",le="Infinity"}`:     -1,
		`zkd_request_duration_seconds_bucket{op="getData",le="5.0E-5",x="y"}`: -1,
	} {
		got, ok := keys[k]
		switch {
		case want == -1:
			if ok {
				t.Errorf("dump has %s", k)
			}
		case !ok:
			t.Errorf("dump lacks %s (of %d)", k, len(keys))
		case !math.IsNaN(want) && got != want:
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	if i := slices.IndexFunc(st.Dump, func(s admin.Sample) bool { return s.Key == "readlatency_count" }); i < 1 ||
		st.Dump[i-1].Key != `readlatency{quantile="0.99"}` || st.Dump[i+1].Key != "readlatency_sum" {
		t.Errorf("readlatency's samples are not the quantiles, _count, _sum in order")
	}
}

// TestMntrOnlyPerRequestDoesNotAllocate: without the provider, what the server calls on
// every request allocates nothing either.
func TestMntrOnlyPerRequestDoesNotAllocate(t *testing.T) {
	r := New(Options{MntrOnly: true})
	path := "/app/some/node"
	r.NamespaceRead(path, 10)
	r.NamespaceWrite(path, 10)
	if n := testing.AllocsPerRun(1000, func() {
		r.NamespaceRead(path, 10)
		r.NamespaceWrite(path, 10)
		r.SessionQueued(1)
		r.Request(jute.OpSetData, time.Millisecond)
		r.Request(jute.OpGetData, time.Millisecond)
	}); n != 0 {
		t.Errorf("a request's observations allocate %.1f times", n)
	}
}

// Without the provider a BASIC summary keeps no quantile windows: read_per_namespace has a
// member per top-level znode, and ZooKeeper's default provider keeps five longs for each.
func TestMntrOnlyBasicSummariesHoldNoWindows(t *testing.T) {
	r := New(Options{MntrOnly: true})
	r.NamespaceRead("/a/b", 10)
	r.NamespaceWrite("/a/b", 10)
	for _, set := range []*fastSummarySet{r.readPerNS, r.writePerNS} {
		m := set.with("a")
		if m.cur.Load() != nil || m.ring != nil {
			t.Errorf("%v: a BASIC member keeps quantile windows without the provider", m.desc)
		}
	}
	r.AckLatency(2, 5)
	if m := r.ackLatency.with("2"); m.cur.Load() == nil {
		t.Error("ack_latency (ADVANCED) lost the windows mntr's percentiles come from")
	}
	// With the provider every summary has them (Prometheus quantiles).
	p := New(Options{})
	p.NamespaceRead("/a/b", 10)
	if m := p.readPerNS.with("a"); m.cur.Load() == nil {
		t.Error("with the provider, read_per_namespace has no quantile windows")
	}
}
