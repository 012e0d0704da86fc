package server

import (
	"github.com/zkd-io/zkd/internal/prep"
	"github.com/zkd-io/zkd/jute"
)

// A session's queue keeps ZooKeeper's FIFO client order: every request that cannot be
// answered at once waits in it, and replies leave only from its head, in request order.
//
// Writes (and, in an ensemble, syncs) go into the pipeline as soon as they are queued and
// complete in order, because the leader commits one session's writes in the order it
// received them. A sync is the exception: the leader answers it once a quorum acknowledged
// a ping sent after it (ReadIndex), which may come after the commit of a write sent behind
// it. So a submitted, unanswered sync holds back everything the session sends after it
// until it is answered: its writes are queued but not submitted.

// queued is a request waiting in its session's queue.
type queued struct {
	c   *conn
	req *request
	// write: it goes through the pipeline (a write, or a sync in an ensemble), and the
	// reads behind it wait for it.
	write bool
	sync  bool // a quorum sync (write is set too)
	// submitted: the write is in the pipeline (prepared here, or forwarded).
	submitted bool
	// expired: the session was closing when it arrived: it is answered SESSIONEXPIRED when
	// it reaches the head.
	expired bool
	// done: its outstanding-request slot is given back; it is answered or dropped.
	done bool
	txn  *pendingTxn // its txn, when this server prepared it
	// pr and pt are what prepareLocal makes of the request, kept here rather than allocated
	// on their own: they live no longer than the request.
	pr prep.Request
	pt pendingTxn
	// statResp holds a setData's or setACL's reply (as request.getResp a getData's).
	statResp jute.StatResponse
	// failWith, when set, is the answer whatever txn the leader made of the request: an
	// ephemeral create of a local session that may not be upgraded, sent to the leader
	// from a learner (localsess.go).
	failWith jute.Code
	// ephemeralErr, when set, fails the request's ephemeral creates as it is prepared here
	// (prep.Request.EphemeralErr): the same, on the leader.
	ephemeralErr jute.Code
}

// enqueue puts a request that cannot be answered now at the tail of its session's queue
// and submits it when it is a write nothing holds back.
func (s *Server) enqueue(sess *clientSession, q *queued) {
	s.cfg.Metrics.SessionQueued(len(sess.queue))
	sess.queue = append(sess.queue, q)
	if q.write && !sess.held {
		s.submitQueued(sess, q)
	}
}

// submitQueued sends a queued write into the pipeline; a sync holds back what follows it.
func (s *Server) submitQueued(sess *clientSession, q *queued) {
	q.submitted = true
	if q.sync {
		sess.held = true
	}
	s.submitWrite(q)
}

// finish gives back a request's outstanding slot, once.
func (s *Server) finish(q *queued) {
	if !q.done {
		q.done = true
		s.release()
	}
}

// popHead removes the answered head of a session's queue, then answers the reads now at
// the head and submits the writes a sync held back.
func (s *Server) popHead(sess *clientSession, q *queued) {
	sess.queue[0] = nil
	sess.queue = sess.queue[1:]
	if q.sync {
		sess.held = false
	}
	s.finish(q)
	s.advance(sess)
}

// advance answers the reads at the head of a session's queue up to its next write, and
// submits the writes that wait behind it up to and including the next sync.
func (s *Server) advance(sess *clientSession) {
	for {
		for len(sess.queue) > 0 && !sess.queue[0].write {
			q := sess.queue[0]
			sess.queue[0] = nil
			sess.queue = sess.queue[1:]
			if !q.c.gone {
				if q.expired {
					s.reply(q.c, q.req.hdr.Xid, jute.ErrSessionExpired, nil)
				} else {
					s.doRead(q.c, q.req)
				}
			}
			s.finish(q)
		}
		if len(sess.queue) == 0 {
			sess.queue = nil
			sess.held = false
			return
		}
		headExpired := false
		for i, q := range sess.queue {
			if sess.held {
				break
			}
			if q.write && !q.submitted {
				if sess.closing {
					// Sent after a close (or an expiry) a sync held back: answered
					// SESSIONEXPIRED in turn, as when it arrives after it. Submitted, it
					// would reach the tree after the session's close (an ephemeral nothing
					// ever removes), and on a learner its answer would find the session gone
					// and never come.
					q.write, q.sync, q.expired = false, false, true
					headExpired = headExpired || i == 0
					continue
				}
				s.submitQueued(sess, q)
			}
		}
		if !headExpired {
			return // the head is a write in the pipeline: its completion advances again
		}
	}
}

// dropQueue discards a session's waiting requests, giving back their outstanding slots.
// Their txns may still apply: a dropped request is never answered.
func (s *Server) dropQueue(sess *clientSession) {
	for _, q := range sess.queue {
		s.finish(q)
	}
	sess.queue = nil
	sess.held = false
}

// outOfOrder handles a completion that is not its session's head, which the queue's rules
// exclude: rather than answer out of order, the connection is closed (the client
// reconnects and its session goes on) and the session's waiting requests are dropped.
func (s *Server) outOfOrder(sess *clientSession, q *queued, what string) {
	s.log.Error("session queue out of order: closing the connection", "xid", q.req.hdr.Xid, "completed", what)
	s.finish(q)
	if sess != nil {
		s.dropQueue(sess)
	}
	s.detach(q.c)
	q.c.close()
}
