package learnerqueue

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func noProm(int64) (prometheus.Observer, prometheus.Observer) { return nil, nil }

// TestSet: summaries come by sid in order, the same Sid serves a sid's every connection,
// and Reset zeroes the numbers but keeps the sids (ZooKeeper's sets never forget a key).
func TestSet(t *testing.T) {
	var s Set
	a := s.Get(3, noProm)
	if s.Get(3, noProm) != a {
		t.Fatal("a sid's second connection got summaries of its own")
	}
	a.Observe(5, 0)
	a.Observe(1, 0)
	s.Get(1, noProm).Observe(2, 0)
	size, qtime := s.Summaries()
	if len(size) != 2 || size[0].Name != "1" || size[1].Name != "3" || len(qtime) != 2 {
		t.Fatalf("summaries %+v %+v", size, qtime)
	}
	if got := size[1].Summary; got.Count != 2 || got.Sum != 6 {
		t.Errorf("sid 3 queue size summary %+v", got)
	}
	if qtime[1].Summary.Count != 0 {
		t.Errorf("unsampled packets counted in the queue time: %+v", qtime[1].Summary)
	}
	s.Reset()
	size, _ = s.Summaries()
	if len(size) != 2 || size[1].Summary.Count != 0 {
		t.Errorf("after Reset: %+v", size)
	}
}

func TestPercentile(t *testing.T) {
	sorted := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		q    float64
		want int64
	}{{0.5, 5}, {0.95, 10}, {0.99, 10}, {0.1, 1}} {
		if got := percentile(sorted, tc.q); got != tc.want {
			t.Errorf("percentile(%v) = %d, want %d", tc.q, got, tc.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of nothing = %d", got)
	}
}
