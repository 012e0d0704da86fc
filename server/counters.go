package server

import (
	"sync/atomic"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/jute"
)

// counter is one of ZooKeeper's ServerMetrics counters that zkd counts. Each is counted
// where ZooKeeper counts it, or at zkd's closest equivalent; the comments name ZooKeeper's
// place.
type counter int

const (
	cntProposal                      counter = iota // Leader.propose
	cntCommit                                       // Leader.commit: a proposal committed
	cntLearnerProposalReceived                      // Follower.processPacket: PROPOSAL
	cntLearnerCommitReceived                        // Follower: COMMIT, Observer: INFORM
	cntRevalidate                                   // LearnerHandler: a learner's REVALIDATE
	cntLooking                                      // QuorumPeer.run: a round of looking
	cntConnectionRequest                            // ZooKeeperServer.processConnectRequest
	cntConnectionRevalidate                         // processConnectRequest: a session id given
	cntConnectionRejected                           // NIOServerCnxnFactory: maxClientCnxns
	cntBytesReceived                                // ServerCnxn.packetReceived: frames, length included
	cntResponseBytes                                // FinalRequestProcessor: replies' serialized sizes
	cntWatchBytes                                   // NIOServerCnxn.process: notifications' sizes
	cntStaleSessionsExpired                         // SessionTrackerImpl: a session expired
	cntUnrecoverableError                           // ZooKeeperCriticalThread: zkd's fail-stop
	cntSessionlessConnectionsExpired                // NIOServerCnxnFactory: no ConnectRequest in time
	cntConnectionDrop                               // NIOServerCnxn.handleFailedRead: client hung up
	cntRequestCommitQueued                          // CommitProcessor.commit: a txn committed (ensemble)
	cntUnsuccessfulHandshake                        // NettyServerCnxnFactory.CertificateVerifier: a failed TLS handshake
	cntInsecureAdmin                                // UnifiedConnectionFactory: a plain-HTTP AdminServer connection on a unified port
	cntDigestMismatch                               // DataTree.reportDigestMismatch: a txn's digest is not the tree's after it
	cntDigestResync                                 // zkd's own: a learner left its role to resync after a digest mismatch
	numCounters
)

var counterNames = [numCounters]string{
	cntProposal:                      "proposal_count",
	cntCommit:                        "commit_count",
	cntLearnerProposalReceived:       "learner_proposal_received_count",
	cntLearnerCommitReceived:         "learner_commit_received_count",
	cntRevalidate:                    "revalidate_count",
	cntLooking:                       "looking_count",
	cntConnectionRequest:             "connection_request_count",
	cntConnectionRevalidate:          "connection_revalidate_count",
	cntConnectionRejected:            "connection_rejected",
	cntBytesReceived:                 "bytes_received_count",
	cntResponseBytes:                 "response_bytes",
	cntWatchBytes:                    "watch_bytes",
	cntStaleSessionsExpired:          "stale_sessions_expired",
	cntUnrecoverableError:            "unrecoverable_error_count",
	cntSessionlessConnectionsExpired: "sessionless_connections_expired",
	cntConnectionDrop:                "connection_drop_count",
	cntRequestCommitQueued:           "request_commit_queued",
	cntUnsuccessfulHandshake:         "unsuccessful_handshake",
	cntInsecureAdmin:                 "insecure_admin_count",
	cntDigestMismatch:                "digest_mismatches_count",
	cntDigestResync:                  "digest_resync_count",
}

// counters are atomics: most are counted on the core, some by the connections' reader
// and writer goroutines, and mntr reads them all. srst zeroes them, as ZooKeeper's
// ServerStats.reset resets every metric.
type counters [numCounters]atomic.Int64

func (c *counters) add(k counter, n int64) { c[k].Add(n) }

func (c *counters) reset() {
	for k := range c {
		c[k].Store(0)
	}
}

// fill puts every counter into m by its ZooKeeper name.
func (c *counters) fill(m map[string]int64) {
	for k := range c {
		m[counterNames[k]] = c[k].Load()
	}
}

// responseSizes is ZooKeeper's client response size tracker (ServerStats'
// clientResponseStats: last/min/max_client_response_size), kept in atomics so that the
// connections' writers update it without a lock. Last, min and max are updated one by one:
// a reader may see them from different moments, which the gauges tolerate.
type responseSizes struct{ last, min, max atomic.Int64 }

func (r *responseSizes) reset() {
	r.last.Store(-1)
	r.min.Store(-1)
	r.max.Store(-1)
}

// add records a batch of replies whose last was last bytes and whose smallest and biggest
// were lo and hi.
func (r *responseSizes) add(last, lo, hi int64) {
	r.last.Store(last)
	for {
		m := r.min.Load()
		if m != -1 && m <= lo || r.min.CompareAndSwap(m, lo) {
			break
		}
	}
	for {
		m := r.max.Load()
		if m >= hi || r.max.CompareAndSwap(m, hi) {
			break
		}
	}
}

func (r *responseSizes) stats() admin.BufferStats {
	return admin.BufferStats{Last: r.last.Load(), Min: r.min.Load(), Max: r.max.Load()}
}

// replySizes sums up one written batch for the counters and the response size tracker,
// so a batch costs a few atomic operations whatever its length.
type replySizes struct {
	n                         int
	last, lo, hi              int64
	responseBytes, watchBytes int64
}

// add notes a frame of frameLen bytes, its length prefix included. ZooKeeper counts the
// replies and notifications it serializes with a ReplyHeader, without the prefix; the
// connect response (raw) and four-letter answers (rawText) are not among them.
func (r *replySizes) add(m *outMsg, frameLen int) {
	if m.raw != nil || m.rawText != nil {
		return
	}
	size := int64(frameLen - 4)
	if m.hdr.Xid == jute.XidNotification {
		r.watchBytes += size
	} else {
		r.responseBytes += size
	}
	if r.n == 0 || size < r.lo {
		r.lo = size
	}
	if size > r.hi {
		r.hi = size
	}
	r.last = size
	r.n++
}

func (r *replySizes) record(s *Server) {
	if r.n == 0 {
		return
	}
	if r.responseBytes > 0 {
		s.counters.add(cntResponseBytes, r.responseBytes)
	}
	if r.watchBytes > 0 {
		s.counters.add(cntWatchBytes, r.watchBytes)
	}
	s.responseSizes.add(r.last, r.lo, r.hi)
}
