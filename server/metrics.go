package server

import (
	"github.com/zkd-io/zkd/internal/admin"
)

// metricsSource is what the Prometheus endpoint (internal/metrics) reads at scrape time:
// mntr's numbers, in the one short core step srvr and mntr take, and the connections'
// reply queues, read under the connections' own locks without the core.
type metricsSource struct{ s *Server }

func (m metricsSource) Stats() (admin.ServerStats, bool) { return m.s.gatherStats() }

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

// roleStats adds what an ensemble member's role reports to mntr, srvr and /metrics: its
// detailed peer state, QuorumZooKeeperServer's quorum_size, and the gauges ZooKeeper 3.9
// registers for the role (LeaderZooKeeperServer.registerMetrics,
// FollowerZooKeeperServer.registerMetrics), with the leader's proposal sizes for srvr. It
// runs on the core goroutine.
func (s *Server) roleStats(st *admin.ServerStats) {
	if !s.ensembleMode() {
		return
	}
	// QuorumPeer.getDetailedPeerState while serving: the Zab phase is broadcast and no
	// sync is running (a sync mode would be named otherwise).
	state := map[string]string{"leader": "leading", "follower": "following", "observer": "observing"}[st.Mode]
	if state == "" {
		state = "looking"
	} else if s.role.serving() {
		state += " - broadcast"
	}
	st.PeerState = state
	// The committed configuration's voters (a reconfig changes them).
	st.RoleGauges = append(st.RoleGauges, admin.Gauge{Name: "quorum_size", Value: int64(len(s.voters()))})
	rv := s.role.view()
	if rv.lead != nil {
		ls := rv.lead.stats
		uptime := rv.lead.uptime.Milliseconds()
		ps := rv.lead.proposalSizes
		st.ProposalSizes = &ps
		st.RoleGauges = append(st.RoleGauges,
			admin.Gauge{Name: "learners", Value: int64(ls.Learners)},
			admin.Gauge{Name: "synced_followers", Value: int64(ls.SyncedFollowers)},
			admin.Gauge{Name: "synced_non_voting_followers", Value: int64(ls.SyncedNonVotingFollowers)},
			admin.Gauge{Name: "synced_observers", Value: int64(ls.SyncedObservers)},
			admin.Gauge{Name: "pending_syncs", Value: int64(ls.PendingSyncs)},
			admin.Gauge{Name: "leader_uptime", Value: uptime},
			admin.Gauge{Name: "last_proposal_size", Value: ps.Last},
			admin.Gauge{Name: "max_proposal_size", Value: ps.Max},
			admin.Gauge{Name: "min_proposal_size", Value: ps.Min},
		)
	}
	// ObserverZooKeeperServer.dumpMonitorValues: the learner master, the leader without
	// observerMasterPort.
	st.ObserverMasterID = rv.masterSid
	// Follower.getSyncedObserverSize: its observer master's observers, null (and not
	// printed) without one.
	if rv.syncedObservers >= 0 {
		st.RoleGauges = append(st.RoleGauges, admin.Gauge{Name: "synced_observers", Value: int64(rv.syncedObservers)})
	}
}
