package metrics

import (
	"io"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/jute"
)

// BenchmarkPerWrite is what an enabled provider costs the core for one client setData:
// its latency, its wait in the session queue and its write_per_namespace observation.
func BenchmarkPerWrite(b *testing.B) {
	r := New(Options{ExportJvmInfo: true})
	path := "/bench/key-000123"
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.SessionQueued(i & 3)
		r.NamespaceWrite(path, 1024)
		r.Request(jute.OpSetData, time.Duration(i&1023)*time.Microsecond)
	}
}

// BenchmarkPerRead is the same for one getData.
func BenchmarkPerRead(b *testing.B) {
	r := New(Options{ExportJvmInfo: true})
	path := "/bench/key-000123"
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.NamespaceRead(path, 1024)
		r.Request(jute.OpGetData, time.Duration(i&1023)*time.Microsecond)
	}
}

// benchRegistry is a registry as a loaded ensemble leader's looks at scrape time: every
// per-request summary fed, a few namespaces and learners, quota sets, per-op histograms.
func benchRegistry(b *testing.B) *Registry {
	b.Helper()
	r := New(Options{ExportJvmInfo: true, StatsMaxAge: time.Hour})
	ops := []jute.OpCode{jute.OpGetData, jute.OpSetData, jute.OpCreate, jute.OpDelete, jute.OpExists, jute.OpGetChildren2, jute.OpPing, jute.OpMulti}
	for i := range 10000 {
		ns := "/ns" + strconv.Itoa(i%8) + "/x"
		r.NamespaceRead(ns, i%2000)
		r.NamespaceWrite(ns, i%2000)
		r.Request(ops[i%len(ops)], time.Duration(i)*time.Microsecond)
		r.SessionQueued(i % 10)
		r.Fsync(time.Duration(i)*time.Microsecond, i%100)
	}
	for sid := range int64(4) {
		size, qt := r.LearnerQueue(sid + 2)
		size.Observe(3)
		qt.Observe(1)
	}
	st := admin.ServerStats{
		NodeCount: 100000, Latency: admin.Summary{Count: 10, Sum: 30, Min: 1, Max: 5},
		Counters:     map[string]int64{"diff_count": 4, "trunc_count": 1, "commit_count": 100},
		RoleGauges:   []admin.Gauge{{Name: "quorum_size", Value: 3}, {Name: "learners", Value: 2}},
		ResponseSize: admin.NewBufferStats(),
	}
	for i := range 4 {
		ns := "app" + strconv.Itoa(i)
		st.QuotaGauges = append(st.QuotaGauges,
			admin.Gauge{Name: ns + "_quota_count_limit_per_namespace", Value: 10},
			admin.Gauge{Name: ns + "_quota_count_usage_per_namespace", Value: 5})
	}
	depths := make([]int, 64)
	r.SetSource(&fakeSource{st: st, depths: depths})
	return r
}

// BenchmarkScrape is one scrape of /metrics in the text format, off the core (the stats
// are cached, as between the core steps scrapes share).
func BenchmarkScrape(b *testing.B) {
	r := benchRegistry(b)
	h := r.Handler()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/metrics", nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
		io.Copy(io.Discard, w.Body)
	}
}
