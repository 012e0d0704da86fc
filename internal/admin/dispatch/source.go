package dispatch

import (
	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/metrics"
)

// Stats is srvr's numbers with the process's file descriptor counts: what the Prometheus
// endpoint and the console's charts read.
func Stats(b admin.Backend) (admin.ServerStats, bool) {
	st, ok := b.Stats()
	if !ok {
		return admin.ServerStats{}, false
	}
	return withFDs(st), true
}

// MetricsSource is what the Prometheus endpoint reads at scrape time: mntr's numbers, in
// the one short core step srvr and mntr take, and the connections' reply queues, read
// without the core.
func MetricsSource(b admin.Backend) metrics.Source { return source{b} }

type source struct{ b admin.Backend }

func (s source) Stats() (admin.ServerStats, bool)  { return Stats(s.b) }
func (s source) ConnQueueDepths(f func(depth int)) { s.b.ConnQueueDepths(f) }
