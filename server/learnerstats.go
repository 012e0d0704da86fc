package server

import (
	"encoding/binary"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/zab"
	"github.com/zkd-io/zkd/jute"
)

// Per-learner statistics, as ZooKeeper's LearnerHandler keeps them: each connection a
// leader (or a follower's observer master) serves counts what it queued, sent and received
// (the observers command, reset by observer_connection_stat_reset), and its writer feeds
// the learner_handler_qp_size and learner_handler_qp_time_ms summary sets, keyed by the
// learner's sid (mntr and Prometheus). The writer goroutine and the core both update a
// connection's counts, so they are atomics; the admin view reads them in a core step that
// only loads them, and the summaries behind their own lock, off the core.

// qpMarkerInterval samples one packet in this many for its time in the queue (the first
// queued included), as LearnerHandler queues a MarkerQuorumPacket after every 1000th.
const qpMarkerInterval = 1000

// qpTimeWindow is how many of a sid's latest queue times its percentiles are taken over
// (ZooKeeper's AvgMinMaxPercentileCounter keeps a reservoir of about this size).
const qpTimeWindow = 1024

// learnerStats is one quorum connection's counts.
type learnerStats struct {
	established time.Time
	// queued and queuedSize are the packets queued and not yet taken by the writer, and
	// their LearnerHandler.packetSize estimate.
	queued, queuedSize atomic.Int64
	// received counts the learner's packets after it acked NEWLEADER (LearnerHandler's
	// main loop), requests the REQUESTs among them; sent counts packets written.
	received, requests, sent atomic.Int64
	lastZxid                 atomic.Int64 // last positive zxid written, -1 before one
	packets                  atomic.Uint64
	qp                       atomic.Pointer[learnerQP] // the sid's summaries, once known
	// started is the core's: the learner acked NEWLEADER, so its packets count.
	started bool
}

func (st *learnerStats) init() {
	st.established = time.Now()
	st.lastZxid.Store(-1)
}

// packetSize is LearnerHandler.packetSize: an approximate QuorumPacket (int, long, the
// data array and the auth list) plus its data.
func packetSize(p *jute.QuorumPacket) int64 { return 4 + 8 + 8 + 8 + int64(len(p.Data)) }

// queued records a packet joining the queue; it returns when it was queued if its time in
// the queue is to be sampled, else 0.
func (st *learnerStats) queuedPacket(size int64) (at int64) {
	st.queued.Add(1)
	st.queuedSize.Add(size)
	if st.packets.Add(1)%qpMarkerInterval == 1 {
		return time.Now().UnixNano()
	}
	return 0
}

// taken records the writer taking a queued packet, before it writes it.
func (st *learnerStats) taken(o *qout) {
	left := st.queued.Add(-1)
	st.queuedSize.Add(-o.size)
	if qp := st.qp.Load(); qp != nil {
		qp.observe(left, o.at)
	}
}

// written records a packet written to the learner.
func (st *learnerStats) written(o *qout) {
	st.sent.Add(1)
	if o.zxid > 0 {
		st.lastZxid.Store(o.zxid)
	}
}

// resetObserverStats is LearnerHandler.resetObserverConnectionStats.
func (st *learnerStats) resetObserverStats() {
	st.received.Store(0)
	st.sent.Store(0)
	st.requests.Store(0)
	st.lastZxid.Store(-1)
}

// info is the connection as getLearnerHandlerInfo reports it.
func (q *quorumConn) info(sid int64) admin.LearnerInfo {
	st := &q.st
	return admin.LearnerInfo{
		Remote:            javaRemote(q.nc.RemoteAddr()),
		Sid:               sid,
		Established:       st.established,
		QueuedPackets:     st.queued.Load(),
		QueuedPacketsSize: st.queuedSize.Load(),
		PacketsReceived:   st.received.Load(),
		PacketsSent:       st.sent.Load(),
		Requests:          st.requests.Load(),
		LastZxid:          st.lastZxid.Load(),
	}
}

func javaRemote(a net.Addr) string {
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return admin.FormatRemote(ap)
	}
	return "/" + a.String()
}

// learnerHello takes a learner's sid from its FOLLOWERINFO or OBSERVERINFO before the state
// machine answers it, so that the queue summaries are the connection's before LEADERINFO,
// the first packet queued for it (and the first sampled for its time in the queue), can be
// taken by the writer.
func (s *Server) learnerHello(q *quorumConn, p *jute.QuorumPacket) {
	if (p.Type != zab.PktFollowerInfo && p.Type != zab.PktObserverInfo) || len(p.Data) < 8 || q.st.qp.Load() != nil {
		return
	}
	q.st.qp.Store(s.learnerQPs.get(int64(binary.BigEndian.Uint64(p.Data)), s))
}

// learnerReceived counts a packet from a learner, on the core after the packet was handed
// to the state machine; started is whether the learner had acked NEWLEADER before it.
// Until then it takes the learner's sid and state from what the state machine made of the
// packet (look): only handshake packets need the look-up.
func (s *Server) learnerReceived(q *quorumConn, p *jute.QuorumPacket, started bool, look func() (zab.LearnerState, bool)) {
	st := &q.st
	if started {
		st.received.Add(1)
		if p.Type == zab.PktRequest {
			st.requests.Add(1)
		}
		return
	}
	ls, ok := look()
	if !ok {
		return
	}
	// The ACK of NEWLEADER itself is read before LearnerHandler's loop: not counted.
	st.started = ls.Started
}

// learnerQP is one learner sid's queue summaries. Every connection of that sid (a learner
// reconnects) records into it, as ZooKeeper's summary sets are keyed by the sid.
type learnerQP struct {
	mu    sync.Mutex
	size  admin.Summary
	time  admin.Summary
	times []int64 // the latest queue times, a ring of qpTimeWindow
	next  int
	// The Prometheus side (nil without metricsProvider).
	promSize, promTime prometheus.Observer
}

func (qp *learnerQP) observe(left, at int64) {
	var ms int64 = -1
	if at != 0 {
		ms = max(0, (time.Now().UnixNano()-at)/int64(time.Millisecond))
	}
	qp.mu.Lock()
	qp.size.Add(left)
	if ms >= 0 {
		qp.time.Add(ms)
		if len(qp.times) < qpTimeWindow {
			qp.times = append(qp.times, ms)
		} else {
			qp.times[qp.next] = ms
			qp.next = (qp.next + 1) % qpTimeWindow
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

// learnerQPs holds the summaries of every sid seen (ZooKeeper's sets never forget a key).
type learnerQPs struct {
	mu    sync.Mutex
	bySid map[int64]*learnerQP
}

func (l *learnerQPs) get(sid int64, s *Server) *learnerQP {
	l.mu.Lock()
	defer l.mu.Unlock()
	if qp := l.bySid[sid]; qp != nil {
		return qp
	}
	if l.bySid == nil {
		l.bySid = make(map[int64]*learnerQP)
	}
	qp := &learnerQP{}
	qp.promSize, qp.promTime = s.cfg.Metrics.LearnerQueue(sid)
	l.bySid[sid] = qp
	return qp
}

// summaries returns mntr's learner_handler_qp_size and learner_handler_qp_time_ms sets,
// by sid.
func (l *learnerQPs) summaries() (size, qtime []admin.NamedSummary) {
	l.mu.Lock()
	sids := make([]int64, 0, len(l.bySid))
	qps := make(map[int64]*learnerQP, len(l.bySid))
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

// reset zeroes every sid's summaries and keeps the sids, as ServerMetrics.resetAll resets
// each counter of a set.
func (l *learnerQPs) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, qp := range l.bySid {
		qp.mu.Lock()
		qp.size, qp.time, qp.times, qp.next = admin.Summary{}, admin.Summary{}, nil, 0
		qp.mu.Unlock()
	}
}
