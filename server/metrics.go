package server

import "github.com/zkd-io/zkd/internal/admin"

// metricsSource is what the Prometheus endpoint (internal/metrics) reads at scrape time:
// mntr's numbers, in the one short core step srvr and mntr take, and the connections'
// reply queues, read under the connections' own locks without the core.
type metricsSource struct{ s *Server }

func (m metricsSource) Stats() (admin.ServerStats, bool) {
	s := m.s
	st, ok := s.gatherStats()
	if !ok {
		return st, false
	}
	if s.ensembleMode() {
		// QuorumZooKeeperServer's gauge: the voting members (cfg.Peers never changes).
		st.RoleGauges = append(st.RoleGauges, admin.Gauge{Name: "quorum_size", Value: int64(len(s.voters()))})
	}
	return st, true
}

func (m metricsSource) ConnQueueDepths(f func(depth int)) {
	s := m.s
	s.connsMu.Lock()
	conns := make([]*conn, 0, len(s.allConns))
	for c := range s.allConns {
		conns = append(conns, c)
	}
	s.connsMu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		d, closed := len(c.queue), c.closed
		c.mu.Unlock()
		if !closed {
			f(d)
		}
	}
}
