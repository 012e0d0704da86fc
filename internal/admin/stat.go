package admin

import (
	"strconv"
	"strings"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// ServerStats holds the numbers srvr, stat and mntr print. Everything a standalone zkd can
// measure has a field; the many ZooKeeper-internal metrics without one (commit-processor
// queues, JVM pauses, Netty buffers, quorum timings, ...) go in Counters and Summaries by
// their ZooKeeper name, and print as zero when absent, so that mntr always lists the full
// 3.8.0 key set that monitoring tools look for.
type ServerStats struct {
	// Version is everything after "Zookeeper version: ", e.g.
	// "3.8.0-zkd-0.1, built on 2025-01-01 00:00 UTC". Tools read the leading x.y.z.
	Version string
	// Mode is "standalone", "leader", "follower", "observer" or "read-only"; "read-only"
	// also adds ZooKeeper's "READ-ONLY mode" line to srvr and stat.
	Mode string
	// PeerState is mntr's zk_peer_state ("following - broadcast", ...); quorum members only.
	PeerState string
	// ObserverMasterID is mntr's zk_observer_master_id, the sid of the server an observer
	// follows; printed when Mode is "observer".
	ObserverMasterID int64

	Latency         Summary // request latency in ms, from receipt to reply (min/avg/max)
	PacketsReceived int64
	PacketsSent     int64
	// FsyncThresholdExceeded counts txn log fsyncs over fsync.warningthresholdms
	// (ServerStats.fsyncThresholdExceedCount): server_stats reports it, mntr does not (3.8).
	FsyncThresholdExceeded int64
	Connections            int   // live client connections, including the one asking
	Outstanding            int64 // requests received and not yet answered
	Zxid                   int64 // last processed zxid
	NodeCount              int
	// ProposalSizes is the leader's proposal size tracker, printed by srvr/stat when Mode is
	// "leader" (nil prints -1/-1/-1).
	ProposalSizes *BufferStats

	EphemeralsCount     int
	WatchCount          int         // data + child watches
	GlobalSessions      int64       // sessions the session tracker holds
	LocalSessions       int64       // 0: zkd has no local sessions
	ApproximateDataSize int64       // sum of path lengths and data lengths
	OpenFileDescriptors int64       // -1 where the OS cannot tell
	MaxFileDescriptors  int64       // -1 where the OS cannot tell
	Uptime              int64       // ms since the server started serving
	ResponseSize        BufferStats // client response sizes; start from NewBufferStats
	AuthFailed          int64
	// ConnectionDropProbability is the connection throttle's current drop chance (0 unless
	// a throttle is configured).
	ConnectionDropProbability float64
	// Always zero for zkd, which has no TLS listener.
	NonMTLSRemoteConns, NonMTLSLocalConns, OutstandingTLSHandshakes int64

	// RoleGauges are extra gauges of a quorum role, printed after the standard gauges in
	// the given order: every member's quorum_size, then a leader's learners,
	// synced_followers, synced_non_voting_followers, synced_observers, pending_syncs,
	// leader_uptime, last/max/min_proposal_size. (ZooKeeper prints them in hash order
	// among the gauges.)
	RoleGauges []Gauge
	// QuotaGauges are the lines of ZooKeeper's quota gauge sets ("<namespace>_" then
	// quota_bytes_limit_per_namespace and the others), printed after the gauges;
	// QuotaExceeded those of its counter set quota_exceeded_error_per_namespace, printed
	// after the counters. Namespaces without quotas (or refusals) have none, as in ZooKeeper.
	QuotaGauges, QuotaExceeded []Gauge

	// Counters and Summaries are the remaining mntr metrics by ZooKeeper name (no "zk_"
	// prefix). Known names print in ZooKeeper's order; unknown names follow, sorted.
	Counters  map[string]int64
	Summaries map[string]Summary
	// ReadPerNamespace and WritePerNamespace are the per-top-level-path request size
	// summaries ("golden" for /golden/...), printed in the given order.
	ReadPerNamespace, WritePerNamespace []NamedSummary
	// LearnerQueueSize and LearnerQueueTime are ZooKeeper's summary sets
	// learner_handler_qp_size and learner_handler_qp_time_ms, one entry per learner sid
	// (Name) that ever had a connection's writer observe them: printed as
	// "<sid>_learner_handler_qp_size" (avg/min/max/cnt/sum) and
	// "<sid>_learner_handler_qp_time_ms" (with the percentiles too).
	LearnerQueueSize, LearnerQueueTime []NamedSummary
	// AckLatency is ZooKeeper's summary set ack_latency, a leader's per-follower ack times
	// (ms) by sid, printed as "<sid>_ack_latency" with the percentiles.
	AckLatency []NamedSummary
	// Dump, when not nil, is what the Prometheus metrics provider holds (metricsProvider.className
	// set): mntr then prints, as ZooKeeper does, the version and state lines and then these
	// samples (PrometheusMetricsProvider.dump) instead of the fields above.
	Dump []Sample
}

// Sample is one Prometheus sample as mntr prints it: Key is its name and labels
// (`fsynctime{quantile="0.5"}`), the value a double.
type Sample struct {
	Key   string
	Value float64
}

// Gauge is one named integer gauge.
type Gauge struct {
	Name  string
	Value int64
}

// NamedSummary is a Summary of one namespace.
type NamedSummary struct {
	Name string
	Summary
}

// ConnInfo describes one client connection for stat and cons.
type ConnInfo struct {
	Remote   string // Java's text of the peer address; see FormatRemote
	Interest int    // selector interest ops: 1 read, 4 write, 5 both, 0 while throttled
	Queued   int64  // outstanding requests
	Received int64  // packets received
	Sent     int64  // packets sent
	// SessionID is 0 until the handshake completes; such connections print only the brief
	// form in cons, as in ZooKeeper.
	SessionID   int64
	LastOp      string    // see LastOp; "NA" before the first request
	Established time.Time // when the connection was accepted (printed as epoch ms)
	Timeout     int32     // negotiated session timeout, ms
	// LastCxid is printed only when >= 0; ZooKeeper starts it at -1.
	LastCxid int64
	LastZxid int64
	// LastResponse is the time of the last reply in ms on the server's monotonic clock
	// (ZooKeeper's Time.currentElapsedTime, not wall time); 0 before the first reply.
	LastResponse int64
	// Latencies in ms; AvgLatency is ZooKeeper's integer mean (total/count, 0 when empty),
	// MinLatency is 0 when empty.
	LastLatency, MinLatency, AvgLatency, MaxLatency int64
}

// brief writes ServerCnxn.dumpConnectionInfo(pw, true).
func (c ConnInfo) brief(b *strings.Builder) {
	b.WriteByte(' ')
	b.WriteString(c.Remote)
	b.WriteByte('[')
	if c.Interest == 0 {
		b.WriteByte('0')
	} else {
		b.WriteString(strconv.FormatUint(uint64(uint32(c.Interest)), 16))
	}
	b.WriteString("](queued=")
	b.WriteString(strconv.FormatInt(c.Queued, 10))
	b.WriteString(",recved=")
	b.WriteString(strconv.FormatInt(c.Received, 10))
	b.WriteString(",sent=")
	b.WriteString(strconv.FormatInt(c.Sent, 10))
}

// full writes ServerCnxn.dumpConnectionInfo(pw, false).
func (c ConnInfo) full(b *strings.Builder) {
	c.brief(b)
	if c.SessionID != 0 {
		b.WriteString(",sid=0x")
		b.WriteString(hex(c.SessionID))
		b.WriteString(",lop=")
		b.WriteString(c.LastOp)
		b.WriteString(",est=")
		b.WriteString(strconv.FormatInt(c.Established.UnixMilli(), 10))
		b.WriteString(",to=")
		b.WriteString(strconv.FormatInt(int64(c.Timeout), 10))
		if c.LastCxid >= 0 {
			b.WriteString(",lcxid=0x")
			b.WriteString(hex(c.LastCxid))
		}
		b.WriteString(",lzxid=0x")
		b.WriteString(hex(c.LastZxid))
		b.WriteString(",lresp=")
		b.WriteString(strconv.FormatInt(c.LastResponse, 10))
		b.WriteString(",llat=")
		b.WriteString(strconv.FormatInt(c.LastLatency, 10))
		b.WriteString(",minlat=")
		b.WriteString(strconv.FormatInt(c.MinLatency, 10))
		b.WriteString(",avglat=")
		b.WriteString(strconv.FormatInt(c.AvgLatency, 10))
		b.WriteString(",maxlat=")
		b.WriteString(strconv.FormatInt(c.MaxLatency, 10))
	}
	b.WriteByte(')')
}

// Srvr is the answer of srvr.
func Srvr(s ServerStats) string { return stat(s, nil, false) }

// Stat is the answer of stat: srvr plus a "Clients:" block listing conns in brief form.
func Stat(s ServerStats, conns []ConnInfo) string { return stat(s, conns, true) }

func stat(s ServerStats, conns []ConnInfo, clients bool) string {
	var b strings.Builder
	b.WriteString("Zookeeper version: ")
	b.WriteString(s.Version)
	b.WriteByte('\n')
	if s.Mode == "read-only" {
		b.WriteString("READ-ONLY mode; serving only read-only clients\n")
	}
	if clients {
		b.WriteString("Clients:\n")
		for _, c := range conns {
			c.brief(&b)
			b.WriteString(")\n")
		}
		b.WriteByte('\n')
	}
	line := func(k, v string) {
		b.WriteString(k)
		b.WriteString(v)
		b.WriteByte('\n')
	}
	itoa := func(v int64) string { return strconv.FormatInt(v, 10) }
	line("Latency min/avg/max: ", itoa(s.Latency.min())+"/"+javaDouble(s.Latency.Avg())+"/"+itoa(s.Latency.max()))
	line("Received: ", itoa(s.PacketsReceived))
	line("Sent: ", itoa(s.PacketsSent))
	line("Connections: ", strconv.Itoa(s.Connections))
	line("Outstanding: ", itoa(s.Outstanding))
	line("Zxid: 0x", hex(s.Zxid))
	line("Mode: ", s.Mode)
	line("Node count: ", strconv.Itoa(s.NodeCount))
	if s.Mode == "leader" {
		ps := NewBufferStats()
		if s.ProposalSizes != nil {
			ps = *s.ProposalSizes
		}
		line("Proposal sizes last/min/max: ", ps.String())
	}
	return b.String()
}

// Cons is the answer of cons: every connection in full form, then an empty line.
func Cons(conns []ConnInfo) string {
	var b strings.Builder
	for _, c := range conns {
		c.full(&b)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.String()
}

// LastOp is the short operation name cons shows as lop= for a request of the given opcode
// (FinalRequestProcessor's, from jute's opcode table). Opcodes without a name there,
// including errors, leave "NA".
func LastOp(op jute.OpCode) string {
	if r := jute.LookupOp(op); r != nil && r.LastOp != "" {
		return r.LastOp
	}
	return "NA"
}
