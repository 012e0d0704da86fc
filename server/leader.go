package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/peer"
	"github.com/zkd-io/zkd/internal/prep"
	"github.com/zkd-io/zkd/internal/session"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/internal/zab"
	"github.com/zkd-io/zkd/jute"
)

// leaderRole leads the ensemble: it prepares every write, its own clients' and those its
// learners forward, proposes them through Zab and owns session expiry.
type leaderRole struct {
	zabRole
	zl       *zab.Leader
	ln       net.Listener
	conns    map[zab.ConnID]*quorumConn
	nextConn zab.ConnID
	// established: a quorum acked NEWLEADER; clients are served.
	established bool
	// owners maps a session to the server whose client connection owns it. A session
	// that reconnected elsewhere has moved: writes still arriving through its old server
	// fail with SESSIONMOVED.
	owners map[int64]int64
	syncs  []*queued // this server's clients' syncs, oldest first
	// establishedAt is when a quorum acked NEWLEADER, for leader_uptime; proposalSizes
	// tracks the proposals' txn sizes for srvr and mntr. Both are this leadership's only,
	// as ZooKeeper's Leader object is.
	establishedAt time.Time
	proposalSizes admin.BufferStats
	local         *localSessions // nil without local sessions (localsess.go)
	// pendingConfig is the configuration the reconfig being prepared proposes
	// (prepReconfig), taken by its propose.
	pendingConfig *zab.Config
	// ackTimes holds the txn time (ms) of each sampled proposal waiting to commit, for
	// ack_latency (observeAcks).
	ackTimes map[int64]int64
	// txnBuf is where propose encodes a txn before copying it out at its size: encoding
	// straight into a new buffer grew it several times for a 1 KB value.
	txnBuf []byte
	// hold keeps learners' sessions from expiring while their learner is silent, and
	// holdSid names each learner connection's server for it (session-grace, grace.go);
	// nil when the extension is off.
	hold    *session.Hold
	holdSid map[zab.ConnID]int64
}

// defaultAckSampleEvery is ZooKeeper's zookeeper.leader.ackLoggingFrequency default: the
// leader times the acks of one proposal in 1000 (those whose zxid is a multiple of it).
const defaultAckSampleEvery = 1000

func (s *Server) ackSampleEvery() int64 {
	if s.cfg.Metrics == nil {
		return 0 // nothing to feed
	}
	if s.cfg.ackSampleEvery > 0 {
		return s.cfg.ackSampleEvery
	}
	return defaultAckSampleEvery
}

func newLeaderRole(s *Server) role {
	r := &leaderRole{conns: map[zab.ConnID]*quorumConn{}, owners: map[int64]int64{}, proposalSizes: admin.NewBufferStats(), local: s.newLocalSessions(), ackTimes: map[int64]int64{}}
	r.zabRole = newZabRole(s, r)
	if r.hold = s.newHold(); r.hold != nil {
		r.holdSid = map[zab.ConnID]int64{}
	}
	// A new leader owns session expiry: every session's clock starts afresh (followers
	// never saw the touches), and again when a quorum follows (rearmSessions), which is
	// when ZooKeeper's leader builds its session tracker.
	now := s.nowMs()
	for id, sess := range s.sessions {
		if sess.valid && !sess.closing {
			s.tracker.Add(id, sess.timeout, s.sessionMs(now))
		}
	}
	self := s.self()
	ln, err := peer.ListenAll(listenAddrs(self.QuorumAddrs(), s.cfg.QuorumListenOnAllIPs))
	if err != nil {
		s.log.Error("cannot listen on the quorum port", "addr", self.QuorumAddrs(), "err", err)
		s.stepDown = fmt.Errorf("quorum port unavailable: %w", err)
		return lookingRole{} // no state machine behind it: nothing may call into one
	}
	r.ln = ln
	cfg := zab.LeaderConfig{
		ID: s.cfg.ServerID, QV: s.ens.qv, TickMs: int64(s.cfg.TickTime),
		InitLimit: int64(s.cfg.InitLimit), SyncLimit: int64(s.cfg.SyncLimit), CommitLogCount: historyLen,
		HistoryOnDisk: true, FirstCounter: s.cfg.zxidCounterStart, AckSampleEvery: s.ackSampleEvery(),
		Wide: s.cfg.Extensions.Has(ext.Wide),
	}
	for _, p := range s.ens.peers {
		cfg.Members = append(cfg.Members, p.ID)
	}
	if s.cfg.ReconfigEnabled {
		cur, lastSeen, err := s.zabConfigs()
		if err != nil {
			s.stepDown = err
			ln.Close()
			return lookingRole{}
		}
		cfg.Reconfig, cfg.Current, cfg.LastSeen = true, cur, lastSeen
	}
	var rd zab.Ready
	r.zl, rd = zab.NewLeader(cfg, s.ens.st, s.tree.LastZxid(), s.history.list(), now)
	s.log.Info("leading", "sid", s.cfg.ServerID, "zxid", hex(s.tree.LastZxid()))
	s.wg.Add(1)
	go s.acceptLearners(ln)
	r.apply.Push(rd)
	return r
}

func (r *leaderRole) mode() string { return "leader" }

// refusesClients: under leaderServes=no Leader.lead does not hand the client port its
// ZooKeeperServer, so learners serve the ensemble's clients.
func (r *leaderRole) refusesClients() bool { return r.s.cfg.LeaderServesNo }
func (r *leaderRole) serving() bool        { return r.established }
func (r *leaderRole) ownsSessions() bool   { return r.established }
func (r *leaderRole) syncIsWrite() bool    { return true }

func (r *leaderRole) view() roleView {
	v := roleView{state: "leader", leader: r.s.cfg.ServerID, syncedObservers: -1}
	if r.zl == nil {
		return v
	}
	lv := &leaderView{stats: r.zl.Stats(), learners: r.zl.Learners(), lastProposed: r.zl.LastProposed(), proposalSizes: r.proposalSizes}
	if r.established {
		lv.uptime = time.Since(r.establishedAt)
	}
	v.lead = lv
	return v
}

// resetStats forgets this leadership's proposal sizes (srst).
func (r *leaderRole) resetStats() { r.proposalSizes = admin.NewBufferStats() }

// eachObserver is Leader.observingLearners: the learners registered with OBSERVERINFO and
// synced, which the leader forwards commits to.
func (r *leaderRole) eachObserver(f func(q *quorumConn, sid int64)) {
	if r.zl == nil {
		return
	}
	for _, ls := range r.zl.Learners() {
		if q := r.conns[ls.Conn]; q != nil && ls.ObserverInfo && ls.Synced {
			f(q, ls.Sid)
		}
	}
}

// keepsRoleOnActivate: a leader that designated another goes on pinging (committing
// nothing) until its followers, told by COMMITANDACTIVATE, leave it: closing at once could
// lose that packet on its way out (Leader.tryToCommit).
func (r *leaderRole) keepsRoleOnActivate() bool { return true }

func (r *leaderRole) createSession(sess *clientSession) {
	if r.local != nil {
		r.local.create(sess)
		return
	}
	r.owners[sess.id] = r.s.cfg.ServerID
	r.s.createSessionLocal(sess)
}

func (r *leaderRole) reconnect(c *conn, req *jute.ConnectRequest) {
	if r.local.reconnect(c, req) {
		return
	}
	if r.s.reconnectLocal(c, req) {
		r.owners[req.SessionID] = r.s.cfg.ServerID
	}
}

func (r *leaderRole) submit(q *queued) {
	if q.sync {
		r.syncs = append(r.syncs, q)
		r.apply.Push(r.zl.LocalSync())
		return
	}
	sess := q.c.sess
	if r.local.needsGlobal(q) {
		if r.local.upgrading {
			// LeaderRequestProcessor: the createSession goes into the pipeline first.
			r.local.upgrade(sess)
			r.owners[sess.id] = r.s.cfg.ServerID
			r.s.createSessionLocal(sess)
		} else {
			// As ZooKeeper's leader: the ephemeral create fails in prep (with the exception
			// LeaderRequestProcessor recorded), a multi holding one op by op.
			q.ephemeralErr = jute.ErrEphemeralOnLocalSession
		}
	}
	r.s.prepareLocal(q, !r.ownedBy(sess.id, r.s.cfg.ServerID))
}

func (r *leaderRole) nextZxid() (int64, bool) {
	z, err := r.zl.NextZxid()
	if err != nil {
		// Only a counter that ran out fails here; a new epoch fixes it (ZOOKEEPER-1277).
		if r.s.stepDown == nil {
			r.s.stepDown = err
		}
		return 0, false
	}
	r.s.lastProposed = z
	return z, true
}

func (r *leaderRole) propose(p *pendingTxn) {
	r.txnBuf = jute.EncodeTxn(r.txnBuf[:0], p.txn)
	// Its own copy: the proposal is kept (pending, the log's queue, the history) and sent.
	p.data = bytes.Clone(r.txnBuf)
	if cap(r.txnBuf) > 64<<10 {
		r.txnBuf = nil // not kept at the size of the biggest txn proposed
	}
	r.proposalSizes.Add(int64(len(p.data)))
	r.s.counters.add(cntProposal, 1)
	r.s.pending = append(r.s.pending, p)
	if n := r.s.ackSampleEvery(); n > 0 && p.txn.Header.Zxid%n == 0 {
		r.ackTimes[p.txn.Header.Zxid] = p.txn.Header.Time
	}
	next := r.pendingConfig
	r.pendingConfig = nil
	if next != nil && p.txn.Header.Type == jute.OpReconfig {
		r.apply.Push(r.zl.ProposeReconfig(p.txn.Header.Zxid, p.data, *next))
		return
	}
	r.apply.Push(r.zl.Propose(p.txn.Header.Zxid, p.data))
}

func (r *leaderRole) durable(zxid int64) { r.apply.Push(r.observeAcks(r.zl.LocalLogged(zxid))) }

// observeAcks feeds ack_latency with the sampled acks rd reports, as they arrive: the time
// since the proposal's txn was made, on the clock that stamped it (ZooKeeper's
// Request.logLatency against the txn header's time).
func (r *leaderRole) observeAcks(rd zab.Ready) zab.Ready {
	if len(rd.Acked) == 0 {
		return rd
	}
	now := r.s.nowMs()
	for _, a := range rd.Acked {
		if t, ok := r.ackTimes[a.Zxid]; ok {
			r.s.cfg.Metrics.AckLatency(a.Sid, now-t)
		}
	}
	return rd
}

func (r *leaderRole) tick(now time.Time) {
	r.apply.Push(r.zl.Tick(now.UnixMilli()))
	if r.established && r.current() && r.s.stepDown == nil {
		if r.hold != nil {
			r.s.expireSessions(now, r.holds)
		} else {
			r.s.expireSessions(now, nil)
		}
		r.local.expire(now)
	}
}

func (r *leaderRole) touch(sess *clientSession) {
	if !r.local.touch(sess) {
		r.s.tracker.Touch(sess.id, r.s.sessionMs(r.s.nowMs()))
	}
}

func (r *leaderRole) sessionClosed(id int64) {
	delete(r.owners, id)
	if r.hold != nil {
		r.hold.Touched(id)
	}
	r.local.forget(id)
}

func (r *leaderRole) quorumPacket(q *quorumConn, p jute.QuorumPacket, _ *snapState) {
	if r.conns[q.id] == q {
		started := q.st.started
		ping := p.Type == zab.PktPing
		r.s.learnerHello(q, &p)
		r.apply.Push(r.observeAcks(r.zl.Receive(q.id, r.s.nowMs(), p)))
		if r.hold != nil {
			r.learnerHeard(q, ping)
		}
		r.s.learnerReceived(q, &p, started, func() (zab.LearnerState, bool) { return r.zl.Learner(q.id) })
	}
}

func (r *leaderRole) quorumClosed(q *quorumConn) {
	if r.conns[q.id] == q {
		delete(r.conns, q.id)
		r.zl.Closed(q.id)
		if r.hold != nil {
			r.learnerGone(q.id)
		}
	}
}

// quorumAccepted takes a learner's new connection.
func (r *leaderRole) quorumAccepted(nc net.Conn, ln net.Listener) {
	if r.ln != ln || r.zl == nil {
		nc.Close()
		return
	}
	r.nextConn++
	q := newQuorumConn(r.s, r.nextConn, nc)
	r.conns[q.id] = q
	r.zl.Accept(q.id, r.s.nowMs())
	r.s.wg.Add(2)
	go q.readLoop(false)
	go q.writeLoop()
}

func (r *leaderRole) quorumDialed(nc net.Conn, _ int64, _ error) {
	if nc != nil {
		nc.Close()
	}
}

func (r *leaderRole) stop() {
	r.local.stop()
	if r.ln != nil {
		r.ln.Close()
	}
	for id, q := range r.conns {
		q.close()
		delete(r.conns, id)
	}
	r.apply.Reset()
}

func (s *Server) acceptLearners(ln net.Listener) {
	defer s.wg.Done()
	// Closing the listener (the role stops, or the server) ends the pending handshakes.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		if !s.cfg.QuorumTLS.Listens() {
			s.admitLearner(nc, ln) // quorum SASL, then the core
			continue
		}
		// The TLS handshake runs on the connection's own goroutine, bounded as ZooKeeper's
		// LearnerCnxAcceptor bounds it (tickTime * initLimit).
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			timeout := time.Duration(s.cfg.TickTime*s.cfg.InitLimit) * time.Millisecond
			c, err := s.cfg.QuorumTLS.Accepted(ctx, nc, timeout)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("learner connection rejected", "remote", nc.RemoteAddr(), "err", err)
				}
				return
			}
			s.admitLearner(c, ln) // quorum SASL, then the core
		}()
	}
}

// stopContext returns a context cancelled when the server stops or cancel is called.
func (s *Server) stopContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.stopping:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}

// ownedBy reports whether server sid owns a session, claiming it for sid when no server
// does yet (after a leader change owners are unknown, as in ZooKeeper).
func (r *leaderRole) ownedBy(session, sid int64) bool {
	owner, ok := r.owners[session]
	if !ok {
		r.owners[session] = sid
		return true
	}
	return owner == sid
}

// ---- zab.Host ----

// A leader is never asked to truncate, snapshot or sync its log before answering.
func (r *leaderRole) Truncate(int64) bool             { return true }
func (r *leaderRole) Snapshot() bool                  { return true }
func (r *leaderRole) SyncAppend([]zab.Committed) bool { return true }

func (r *leaderRole) Send(o zab.Out) {
	if q := r.conns[o.Conn]; q != nil {
		r.s.sendToLearner(q, o)
	}
}

// sendToLearner sends a packet to a learner a leader or an observer master syncs: a SNAP
// with the database stream after it, and the sync counted by its kind (LearnerHandler's
// metrics are the server's, whichever master runs it).
func (s *Server) sendToLearner(q *quorumConn, o zab.Out) {
	switch o.Packet.Type {
	case zab.PktDiff:
		s.ens.diffs++
	case zab.PktSnap:
		s.ens.snaps++
	case zab.PktTrunc:
		s.ens.truncs++
	}
	q.send(&o.Packet)
	if o.SnapFollows {
		q.sendStream(s.snapStream())
	}
}

func (r *leaderRole) Close(id zab.ConnID) {
	if q := r.conns[id]; q != nil {
		q.close()
		delete(r.conns, id)
		if r.hold != nil {
			r.learnerGone(id)
		}
	}
}

func (r *leaderRole) Apply(c zab.Committed) {
	s := r.s
	if zab.Counter(c.Zxid) == zab.BumpCounter && zab.IsBump(c.Zxid, c.Data) {
		// The epoch bump the leader made itself (ext.Wide): no client's request, so nothing
		// pending; it applies as the error txn it is, and stays in the history for DIFFs.
		t, err := jute.DecodeTxn(c.Data)
		if err != nil {
			s.failStop(fmt.Errorf("server: epoch bump %s does not decode: %w", hex(c.Zxid), err))
			return
		}
		s.applyTxn(&pendingTxn{kind: pkRemote, txn: &t, data: c.Data})
		return
	}
	if len(s.pending) == 0 || s.pending[0].txn.Header.Zxid != c.Zxid {
		s.failStop(fmt.Errorf("server: leader committed %s, which is not the next pending txn", hex(c.Zxid)))
		return
	}
	p := s.pending[0]
	s.pending[0] = nil
	s.pending = s.pending[1:]
	if len(r.ackTimes) > 0 {
		delete(r.ackTimes, c.Zxid)
	}
	s.counters.add(cntCommit, 1)
	s.counters.add(cntRequestCommitQueued, 1)
	s.applyTxn(p)
}

func (r *leaderRole) Notify(n *zab.Ready) {
	s := r.s
	if n.Serving {
		r.established = true
		r.establishedAt = time.Now()
		// Announce the new epoch in election answers, so servers that join later see a
		// quorum of matching votes (ZOOKEEPER-1732).
		s.ens.elect.UpdateElectionVote(r.zl.Epoch())
		s.lastProposed = zab.MakeZxid(r.zl.Epoch(), 0)
		s.log.Info("leader established", "epoch", r.zl.Epoch())
		s.rearmSessions(s.startServing())
	}
	if n.Rolled != 0 {
		s.ens.elect.UpdateElectionVote(n.Rolled)
		s.log.Info("zxid rolled over into a new epoch without an election", "epoch", n.Rolled)
	}
	for _, t := range n.Touches {
		s.tracker.TouchTimeout(t.Session, t.Timeout, s.sessionMs(s.nowMs()))
		if r.hold != nil {
			r.hold.Touched(t.Session)
		}
	}
	for _, a := range n.Revalidate {
		s.counters.add(cntRevalidate, 1)
		sess := s.sessions[a.Session]
		// The leader's own local sessions are unknown to the others, as anywhere else.
		valid := sess != nil && sess.valid && !sess.closing && !sess.local
		if valid {
			s.tracker.TouchTimeout(a.Session, a.Timeout, s.sessionMs(s.nowMs()))
			r.owners[a.Session] = a.Sid
			if r.hold != nil {
				r.hold.Touched(a.Session)
			}
			s.disownLocal(sess)
		}
		r.apply.Push(r.zl.Revalidated(a.Conn, a.Session, valid))
	}
	for _, fr := range n.Requests {
		r.remoteRequest(fr)
	}
	for ; n.Synced > 0; n.Synced-- {
		s.finishSync(&r.syncs)
	}
	for _, a := range n.LoadHistory {
		a := a
		// Queued on the storage goroutine, the read starts once everything up to a.To is
		// written; it runs on a goroutine of its own so appends (group commit) go on.
		s.storageOp(func() func() {
			// Not in s.wg: it may outlive a stop, reading files only, and its answer is
			// dropped then (Add here could race with Close's Wait).
			go func() {
				h := s.readHistory(a.From, a.To)
				s.postDone(func() {
					if r.current() {
						r.apply.Push(r.zl.HistoryLoaded(a.Conn, h))
					}
				})
			}()
			return nil
		})
	}
	for _, ev := range n.Configs {
		s.onConfigEvent(ev)
	}
	if n.Err != nil && s.stepDown == nil {
		s.stepDown = n.Err
	}
}

// remoteRequest prepares a write a learner forwarded.
func (r *leaderRole) remoteRequest(fr zab.ForwardedRequest) {
	s := r.s
	if !r.established {
		return
	}
	var to jute.CreateSessionTxn
	if fr.Type == jute.OpCreateSession && jute.Unmarshal(fr.Body, &to) != nil {
		return // before taking a zxid: zxids have no gaps
	}
	var rec jute.Record
	if fr.Type != jute.OpCreateSession && fr.Type != jute.OpCloseSession {
		// Decoded as the learner's clients' requests are, so a write answers alike wherever
		// it was sent; a body that does not decode fails in prep.
		var err error
		if rec, _, err = decodeBody(fr.Type, fr.Body, s.cfg.Extensions); err != nil {
			rec = nil
		}
	}
	zxid, ok := r.nextZxid()
	if !ok {
		return
	}
	now := s.nowMs()
	sess := s.sessions[fr.Session]
	// Another member's local session, which this leader never hears of: its writes are
	// taken without an owner check, but an ephemeral create fails as the session's expired,
	// as it needs one the quorum knows (LeaderSessionTracker.checkSession and
	// checkGlobalSession).
	foreignLocal := sess == nil && fr.Type != jute.OpCloseSession && r.local.foreign(fr.Session)
	if fr.Type != jute.OpCreateSession && !foreignLocal {
		// As ZooKeeper's checkSession: a request of a session that is gone or closing must
		// not reach the tree (an ephemeral would outlive its session). A session whose
		// createSession is proposed but not applied is live, as ZooKeeper's tracker has it
		// from prep on: an upgraded local session's create follows its createSession.
		if sess == nil || sess.closing {
			r.propose(&pendingTxn{kind: pkRemote, txn: sessionErrorTxn(fr.Session, fr.Cxid, jute.ErrSessionExpired, zxid, now)})
			return
		}
		if !r.ownedBy(fr.Session, fr.Sid) {
			r.propose(&pendingTxn{kind: pkRemote, txn: sessionErrorTxn(fr.Session, fr.Cxid, jute.ErrSessionMoved, zxid, now)})
			return
		}
	}
	var txn *jute.LoggedTxn
	switch fr.Type {
	case jute.OpCreateSession:
		r.owners[fr.Session] = fr.Sid
		sess := s.sessions[fr.Session]
		if sess == nil {
			sess = &clientSession{id: fr.Session, timeout: to.TimeOut}
			s.sessions[fr.Session] = sess
		}
		txn = s.prep.CreateSession(fr.Session, to.TimeOut, zxid, now)
	case jute.OpCloseSession:
		if sess := s.sessions[fr.Session]; sess != nil {
			sess.closing = true
		}
		s.tracker.SetClosing(fr.Session)
		txn = s.prep.CloseSession(fr.Session, fr.Cxid, zxid, now)
	default:
		pr := &prep.Request{SessionID: fr.Session, Cxid: fr.Cxid, Type: fr.Type, Body: rec, AuthIDs: fr.AuthInfo}
		if foreignLocal {
			pr.EphemeralErr = jute.ErrSessionExpired
		}
		txn = s.prep.Prepare(pr, zxid, now)
	}
	r.propose(&pendingTxn{kind: pkRemote, txn: txn})
}

// disownLocal drops this server's own client connection of a session that moved away.
func (s *Server) disownLocal(sess *clientSession) {
	if c := sess.conn; c != nil {
		s.detach(c)
		c.close()
	}
}

// snapStream captures the tree for a SNAP sync and returns what encodes it. The capture
// runs on the core, so the state is exact (no fuzziness to repair), and costs one pointer
// per page of nodes; the walk and encoding run on the connection's writer goroutine.
func (s *Server) snapStream() func(io.Writer) error {
	v, sessions := s.tree.Capture(), s.sessionList()
	return func(w io.Writer) error {
		if err := storage.WriteSnapStream(w, v, sessions); err != nil {
			return fmt.Errorf("server: SNAP stream: %w", err)
		}
		return nil
	}
}

// readHistory reads the committed txns from a learner's last zxid on, up to last, from the
// log files (written up to last when it starts). Like ZooKeeper's, it starts with the txn at from itself, so the sync
// planner can see where the learner's history meets ours; nil means only SNAP can help.
func (s *Server) readHistory(from, last int64) []zab.Committed {
	var out []zab.Committed
	var size int
	_, err := storage.ReadLog(s.cfg.FS, s.logDir(), from-1, func(zxid int64, b []byte) error {
		if zxid > last {
			return errStopRead
		}
		out = append(out, zab.Committed{Zxid: zxid, Data: append([]byte(nil), b...)})
		size += len(b)
		if size > 64<<20 {
			// Past this, a snapshot is cheaper than a diff.
			out = nil
			return errStopRead
		}
		return nil
	})
	if err != nil && err != errStopRead {
		return nil
	}
	// The log must reach back to the learner's own last txn (a new epoch's zxid names no
	// txn: then it must reach that epoch's first one).
	if len(out) == 0 {
		return nil
	}
	if zab.Counter(from) == 0 {
		if zab.Epoch(out[0].Zxid) > zab.Epoch(from) && zab.Counter(out[0].Zxid) != 1 {
			return nil
		}
	} else if out[0].Zxid != from {
		return nil
	}
	return out
}

var errStopRead = fmt.Errorf("stop")
