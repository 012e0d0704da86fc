// Package learnerqueue keeps the learner_handler_qp_size and learner_handler_qp_time_ms
// summary sets, by learner sid, as ZooKeeper's LearnerHandler feeds them: a leader's (or an
// observer master's) connection writers record each packet they take off a learner's
// queue, and mntr and Prometheus read the sets. The writers and the readers run on
// different goroutines, so each sid's summaries sit behind their own lock.
package learnerqueue

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkd-io/zkd/internal/admin"
)

// timeWindow is how many of a sid's latest queue times its percentiles are taken over
// (ZooKeeper's AvgMinMaxPercentileCounter keeps a reservoir of about this size).
const timeWindow = 1024

// Sid is one learner sid's queue summaries. Every connection of that sid (a learner
// reconnects) records into it, as ZooKeeper's summary sets are keyed by the sid.
type Sid struct {
	mu    sync.Mutex
	size  admin.Summary
	time  admin.Summary
	times []int64 // the latest queue times, a ring of timeWindow
	next  int
	// The Prometheus side (nil without metricsProvider).
	promSize, promTime prometheus.Observer
}

// Observe records a packet taken off the queue with left still queued; at is when it was
// queued (UnixNano) if its time in the queue was sampled, else 0.
func (qp *Sid) Observe(left, at int64) {
	var ms int64 = -1
	if at != 0 {
		ms = max(0, (time.Now().UnixNano()-at)/int64(time.Millisecond))
	}
	qp.mu.Lock()
	qp.size.Add(left)
	if ms >= 0 {
		qp.time.Add(ms)
		if len(qp.times) < timeWindow {
			qp.times = append(qp.times, ms)
		} else {
			qp.times[qp.next] = ms
			qp.next = (qp.next + 1) % timeWindow
		}
	}
	qp.mu.Unlock()
	if qp.promSize != nil {
		qp.promSize.Observe(float64(left))
		if ms >= 0 {
			qp.promTime.Observe(float64(ms))
		}
	}
}

// Set holds the summaries of every sid seen (ZooKeeper's sets never forget a key). The zero
// value is empty.
type Set struct {
	mu    sync.Mutex
	bySid map[int64]*Sid
}

// Get is sid's summaries, made (with newProm's Prometheus side) on its first use.
func (l *Set) Get(sid int64, newProm func(sid int64) (size, timeMs prometheus.Observer)) *Sid {
	l.mu.Lock()
	defer l.mu.Unlock()
	if qp := l.bySid[sid]; qp != nil {
		return qp
	}
	if l.bySid == nil {
		l.bySid = make(map[int64]*Sid)
	}
	qp := &Sid{}
	qp.promSize, qp.promTime = newProm(sid)
	l.bySid[sid] = qp
	return qp
}

// Summaries returns mntr's learner_handler_qp_size and learner_handler_qp_time_ms sets,
// by sid.
func (l *Set) Summaries() (size, qtime []admin.NamedSummary) {
	l.mu.Lock()
	sids := make([]int64, 0, len(l.bySid))
	qps := make(map[int64]*Sid, len(l.bySid))
	for sid, qp := range l.bySid {
		sids = append(sids, sid)
		qps[sid] = qp
	}
	l.mu.Unlock()
	slices.Sort(sids)
	for _, sid := range sids {
		qp := qps[sid]
		qp.mu.Lock()
		sz, tm, times := qp.size, qp.time, slices.Clone(qp.times)
		qp.mu.Unlock()
		slices.Sort(times)
		tm.P50, tm.P95, tm.P99, tm.P999 = percentile(times, 0.5), percentile(times, 0.95), percentile(times, 0.99), percentile(times, 0.999)
		name := strconv.FormatInt(sid, 10)
		size = append(size, admin.NamedSummary{Name: name, Summary: sz})
		qtime = append(qtime, admin.NamedSummary{Name: name, Summary: tm})
	}
	return size, qtime
}

// percentile is the nearest-rank percentile of sorted values, 0 when empty.
func percentile(sorted []int64, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)) + 0.5)
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

// Reset zeroes every sid's summaries and keeps the sids, as ServerMetrics.resetAll resets
// each counter of a set.
func (l *Set) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, qp := range l.bySid {
		qp.mu.Lock()
		qp.size, qp.time, qp.times, qp.next = admin.Summary{}, admin.Summary{}, nil, 0
		qp.mu.Unlock()
	}
}
