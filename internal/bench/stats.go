package bench

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/zkd-io/zkd/internal/bench/benchstat"
	"github.com/zkd-io/zkd/jute"
)

// Result is one run of one workload (internal/bench/benchstat's, which etcdbench writes too), as a
// type of zkbench's own so that it can carry zkbench's methods; the conversion to
// *benchstat.Result costs nothing and leaves the JSON as it is.
type Result benchstat.Result

type (
	Latency    = benchstat.Latency
	Point      = benchstat.Point
	procSample = benchstat.ProcSample
)

// stats is res as internal/bench/benchstat's Result, for its Fill methods.
func (res *Result) stats() *benchstat.Result { return (*benchstat.Result)(res) }

// fill sets the counts and latency fields from a merged recorder measured over elapsed.
func (res *Result) fill(r *recorder, elapsed time.Duration) { res.stats().Fill(r.Recorder, elapsed) }

// base is the workload that ran: Workload, unless it was recorded under another name.
func (res *Result) base() string {
	if res.Of != "" {
		return res.Of
	}
	return res.Workload
}

// recorder is a benchstat.Recorder that names errors by their ZooKeeper code (errKind).
// With a snapWatch it also records each operation in one of two more: during a snapshot or
// outside one.
type recorder struct {
	*benchstat.Recorder
	snaps           *snapWatch
	during, outside *benchstat.Recorder
}

func newRecorder() *recorder { return &recorder{Recorder: benchstat.NewRecorder(errKind)} }

// watching makes r record snapshot windows as s sees them (nil: none).
func (r *recorder) watching(s *snapWatch) *recorder {
	if s != nil {
		r.snaps = s
		r.during, r.outside = benchstat.NewRecorder(errKind), benchstat.NewRecorder(errKind)
	}
	return r
}

// record counts one completed operation: a success with its latency, or an error.
func (r *recorder) record(d time.Duration, err error) {
	r.Record(d, err)
	if r.snaps != nil {
		if r.snaps.during(d) {
			r.during.Record(d, err)
		} else {
			r.outside.Record(d, err)
		}
	}
}

// merge adds o's counts to r.
func (r *recorder) merge(o *recorder) {
	r.Merge(o.Recorder)
	if o.snaps != nil {
		if r.snaps == nil {
			r.watching(o.snaps)
		}
		r.during.Merge(o.during)
		r.outside.Merge(o.outside)
	}
}

func round3(v float64) float64 { return benchstat.Round3(v) }

func sampleProcs(pids []int) (procSample, error) { return benchstat.SampleProcs(pids) }

// errKind names an error for counting: the ZooKeeper code when there is one, so that
// addresses and ports in network errors do not make every error a kind of its own.
func errKind(err error) string {
	var code jute.Code
	if errors.As(err, &code) {
		return code.Error()
	}
	return benchstat.ErrKind(err)
}

// errorSummary renders error kinds, most frequent first.
func errorSummary(kinds map[string]int64) string {
	keys := slices.Collect(maps.Keys(kinds))
	slices.SortFunc(keys, func(a, b string) int {
		if kinds[a] != kinds[b] {
			if kinds[a] > kinds[b] {
				return -1
			}
			return 1
		}
		if a < b {
			return -1
		}
		return 1
	})
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += "; "
		}
		s += fmt.Sprintf("%s: %d", k, kinds[k])
	}
	return s
}
