package server

import (
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/datatree"
)

// quotaState is the core's record of quota checks (zookeeper.enforceQuota): the refusals per
// namespace that mntr prints, and the rate limit on the warnings.
type quotaState struct {
	exceeded map[string]int64
	log      rateLogger
}

// quotaExceeded is prep's OnQuotaExceeded, on the core goroutine. ZooKeeper logs every
// passed limit, soft or hard, through a RateLogger, and counts only the refusals.
func (s *Server) quotaExceeded(e datatree.QuotaExceeded) {
	s.quota.log.log(s.log, s.clk.Now(), e.String())
	if e.Hard && e.Namespace != "" {
		if s.quota.exceeded == nil {
			s.quota.exceeded = map[string]int64{}
		}
		s.quota.exceeded[e.Namespace]++
	}
}

// quotaMetrics are the quota lines of mntr, in the order ZooKeeper 3.8 and 3.9 print its
// four gauge sets (the hash order of their names in its registry); namespaces are sorted
// by name (ZooKeeper prints them in hash order too). It walks /zookeeper/quota on the core
// goroutine: that subtree holds two nodes per quota.
func (s *Server) quotaMetrics() (gauges, exceeded []admin.Gauge) {
	usage := s.tree.QuotaUsage()
	sets := []struct {
		name  string
		limit bool
		value func(datatree.QuotaNamespace) int64
	}{
		{"quota_bytes_limit_per_namespace", true, func(q datatree.QuotaNamespace) int64 { return q.BytesLimit }},
		{"quota_count_usage_per_namespace", false, func(q datatree.QuotaNamespace) int64 { return q.CountUsage }},
		{"quota_count_limit_per_namespace", true, func(q datatree.QuotaNamespace) int64 { return q.CountLimit }},
		{"quota_bytes_usage_per_namespace", false, func(q datatree.QuotaNamespace) int64 { return q.BytesUsage }},
	}
	for _, set := range sets {
		for _, q := range usage {
			if (set.limit && q.HasLimit) || (!set.limit && q.HasUsage) {
				gauges = append(gauges, admin.Gauge{Name: q.Namespace + "_" + set.name, Value: set.value(q)})
			}
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(s.quota.exceeded)) {
		exceeded = append(exceeded, admin.Gauge{Name: ns + "_quota_exceeded_error_per_namespace", Value: s.quota.exceeded[ns]})
	}
	return gauges, exceeded
}

// rateLogger is ZooKeeper's RateLogger: a message is logged when it differs from the last
// one; repeats are counted and logged with their count at most every rateLogInterval.
type rateLogger struct {
	msg   string
	count int
	at    time.Time
}

// rateLogInterval is RateLogger's LOG_INTERVAL default.
const rateLogInterval = 100 * time.Millisecond

func (r *rateLogger) log(l *slog.Logger, now time.Time, msg string) {
	if msg == r.msg {
		r.count++
		if now.Sub(r.at) >= rateLogInterval {
			r.flush(l)
			r.at = now
		}
		return
	}
	r.flush(l)
	r.msg, r.at = msg, now
	l.Warn(msg)
}

func (r *rateLogger) flush(l *slog.Logger) {
	if r.count > 0 {
		l.Warn(r.msg, "repeated", r.count)
		r.count = 0
	}
}
