package server

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/admin/learnerqueue"
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
	qp                       atomic.Pointer[learnerqueue.Sid] // the sid's summaries, once known
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
		qp.Observe(left, o.at)
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
	q.st.qp.Store(s.learnerQPs.Get(int64(binary.BigEndian.Uint64(p.Data)), s.cfg.Metrics.LearnerQueue))
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
