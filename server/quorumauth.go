package server

import (
	"bufio"
	"net"
	"time"

	"github.com/zkd-io/zkd/internal/peer"
)

// Quorum SASL on the quorum port (quorum.auth.enableSasl): the learner authenticates right
// after it connects to the leader, before its first packet (Learner.connectToLeader), and the
// leader authenticates a learner before it reads that packet (LearnerHandler). Both run on
// the connection's own goroutine, never the core's; the election port's side is in
// internal/peer.

// quorumSASL is the configured setting with its defaults filled in: an exchange is bounded by
// initLimit ticks (the timeout ZooKeeper gives the learner's socket while it connects), and
// logs to the server's logger. nil when quorum SASL is off.
func (s *Server) quorumSASL() *peer.QuorumSASL {
	q := s.cfg.QuorumSASL
	if q == nil {
		return nil
	}
	c := *q
	if c.Timeout <= 0 {
		c.Timeout = time.Duration(s.cfg.TickTime*s.cfg.InitLimit) * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = s.log
	}
	return &c
}

// closeOnStop closes nc if the server stops before release is called, so that an exchange
// in progress does not hold up Stop until its timeout.
func (s *Server) closeOnStop(nc net.Conn) (release func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-s.stopping:
			nc.Close()
		case <-done:
		}
	}()
	return func() { close(done) }
}

// authToLeader authenticates a new connection to the leader's quorum port. On failure nc is
// closed and the error returned, which ends the attempt to follow that leader as ZooKeeper's
// connectToLeader does.
func (s *Server) authToLeader(nc net.Conn) (net.Conn, error) {
	q := s.quorumSASL()
	if q == nil {
		return nc, nil
	}
	release := s.closeOnStop(nc)
	defer release()
	if err := q.Learn(nc); err != nil {
		nc.Close()
		s.log.Warn("cannot authenticate to the leader's quorum port", "remote", nc.RemoteAddr().String(), "err", err)
		// The next election names the same leader at once; pause, as ZooKeeper's election
		// does (finalizeWait), rather than knock on its door in a tight loop.
		t := time.NewTimer(max(time.Duration(s.cfg.TickTime)*time.Millisecond, 200*time.Millisecond))
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.stopping:
		}
		return nil, err
	}
	return nc, nil
}

// admitLearner hands a learner's new connection to the core, after authenticating it on a
// goroutine of its own when quorum SASL is on. A learner refused is logged and closed.
func (s *Server) admitLearner(nc net.Conn, ln net.Listener) {
	q := s.quorumSASL()
	if q == nil {
		s.submit(event{kind: evQuorumAccepted, nconn: nc, listener: ln})
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		release := s.closeOnStop(nc)
		r := bufio.NewReader(nc)
		err := q.Authenticate(nc, r)
		release()
		if err != nil {
			s.log.Warn("quorum learner refused", "remote", nc.RemoteAddr().String(), "err", err)
			nc.Close()
			return
		}
		s.submit(event{kind: evQuorumAccepted, nconn: &peekedConn{Conn: nc, r: r}, listener: ln})
	}()
}

// peekedConn is a connection whose first bytes were read ahead into r (the peek for the
// auth magic); reads drain r first.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(b []byte) (int, error) { return c.r.Read(b) }
