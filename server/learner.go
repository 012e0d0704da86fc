package server

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/zab"
	"github.com/zkd-io/zkd/jute"
)

// learnerRole follows a leader: it serves reads from its own tree, forwards writes, syncs
// and session questions to the leader, and applies what the leader commits.
type learnerRole struct {
	zabRole
	leaderSid int64
	observer  bool // set by newObserverRole: zab's learner registers as an observer
	zl        *zab.Learner
	conn      *quorumConn
	dialing   bool
	synced    bool
	syncs     []*queued                 // forwarded syncs, oldest first
	reconns   map[int64][]pendingReconn // reconnects waiting for the leader's answer
	local     *localSessions            // nil without local sessions (localsess.go)
	// masterSid is the server this learner syncs from: the leader, or for an observer
	// with observerMasterPort a follower (mntr's observer_master_id).
	masterSid int64
	om        *observerMaster // a synced follower's, with observerMasterPort (observermaster.go)
}

// followerRole is a voting learner.
type followerRole struct{ *learnerRole }

// observerRole is a learner that does not vote: it is told what was committed.
type observerRole struct{ *learnerRole }

func (followerRole) mode() string { return "follower" }
func (observerRole) mode() string { return "observer" }

func (r *learnerRole) learner() *learnerRole { return r }

func (r followerRole) view() roleView {
	v := roleView{state: "follower", leader: r.leaderSid, syncedObservers: -1}
	if n, ok := r.syncedObservers(); ok {
		v.syncedObservers = n
	}
	return v
}

func (r observerRole) view() roleView {
	return roleView{state: "observer", leader: r.leaderSid, masterSid: r.masterSid, syncedObservers: -1}
}

type pendingReconn struct {
	c   *conn
	req *jute.ConnectRequest
}

func newFollowerRole(s *Server, leader int64) role {
	if _, ok := s.peer(leader); !ok {
		return unknownLeader(s, leader)
	}
	return followerRole{newLearnerRole(s, leader, false)}
}

func newObserverRole(s *Server, leader int64) role {
	if _, ok := s.peer(leader); !ok {
		return unknownLeader(s, leader)
	}
	if s.cfg.ObserverMasterPort > 0 {
		// Observer.findLearnerMaster: a follower's observer master, not the leader.
		if m, ok := s.nextObserverMaster(); ok {
			addr := net.JoinHostPort(m.Host, strconv.Itoa(s.cfg.ObserverMasterPort))
			s.log.Info("observing through a learner master", "leader", leader, "master", m.ID, "addr", addr)
			return observerRole{newLearnerRoleAt(s, leader, m.ID, []string{addr}, observerMasterTries, true)}
		}
	}
	return observerRole{newLearnerRole(s, leader, true)}
}

// observerMasterTries bounds the dials of an observer master, as Learner.connectToLeader
// tries five times (100 ms apart) before the observer looks for the next one; a follower
// that runs none (the leader among them) refuses at once.
const observerMasterTries = 5

// unknownLeader: an election named a leader this server's configuration lacks.
func unknownLeader(s *Server, leader int64) role {
	s.stepDown = fmt.Errorf("elected leader %d is not in the configuration", leader)
	return lookingRole{}
}

func newLearnerRole(s *Server, leader int64, observer bool) *learnerRole {
	p, _ := s.peer(leader)
	s.log.Info("following", "leader", leader, "addr", p.QuorumAddrs())
	return newLearnerRoleAt(s, leader, leader, p.QuorumAddrs(), 0, observer)
}

// learnerConnectTimeout is how long a learner may take to connect to its leader or learner
// master (Learner.connectToLeader): tickTime * connectToLearnerMasterLimit when that is
// set, else tickTime * initLimit.
func (s *Server) learnerConnectTimeout() time.Duration {
	limit := s.cfg.InitLimit
	if s.cfg.ConnectToLearnerMasterLimit > 0 {
		limit = s.cfg.ConnectToLearnerMasterLimit
	}
	return time.Duration(s.cfg.TickTime*limit) * time.Millisecond
}

// newLearnerRoleAt starts a learner that dials master at addrs: the leader, or an
// observer's learner master. tries > 0 bounds the dials (else initLimit does).
func newLearnerRoleAt(s *Server, leader, master int64, addrs []string, tries int, observer bool) *learnerRole {
	r := &learnerRole{leaderSid: leader, masterSid: master, observer: observer, reconns: map[int64][]pendingReconn{}, local: s.newLocalSessions()}
	r.zabRole = newZabRole(s, r)
	r.dialing = true
	deadline := s.learnerConnectTimeout()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := s.stopContext()
		defer cancel()
		start := time.Now()
		// The elected leader opens its quorum port as it decides, which is when we decide
		// too: the first dials often come too early. Retry soon, then back off.
		backoff := 5 * time.Millisecond
		if tries > 0 {
			backoff = 100 * time.Millisecond
		}
		for try := 1; ; try++ {
			wait := backoff
			// Learner.connectToLeader: the leader's addresses in turn, the first that answers.
			var nc net.Conn
			var err error
			var addr string
			for _, addr = range addrs {
				if nc, err = net.DialTimeout("tcp", addr, time.Duration(s.cfg.TickTime)*time.Millisecond); err == nil {
					break
				}
			}
			if err == nil && s.cfg.QuorumTLS.Dials() {
				// As Learner.connectToLeader: the handshake bounded by tickTime * initLimit
				// (or connectToLearnerMasterLimit), a failure retried (a second later) until
				// that runs out.
				nc, err = s.cfg.QuorumTLS.Dialed(ctx, nc, addr, deadline)
				if err != nil && ctx.Err() == nil {
					s.log.Warn("TLS connection to the leader failed", "leader", master, "addr", addr, "err", err)
					wait = time.Second
				}
			}
			if err == nil {
				nc, err = s.authToLeader(nc) // quorum SASL, before the first packet
				s.submit(event{kind: evQuorumDialed, nconn: nc, leaderSid: master, err: err})
				return
			}
			if time.Since(start) > deadline || (tries > 0 && try >= tries) {
				s.submit(event{kind: evQuorumDialed, leaderSid: master, err: err})
				return
			}
			select {
			case <-s.stopping:
				return
			case <-time.After(wait):
				backoff = min(2*backoff, 100*time.Millisecond)
			}
		}
	}()
	return r
}

func (r *learnerRole) serving() bool      { return r.synced }
func (r *learnerRole) ownsSessions() bool { return false }
func (r *learnerRole) syncIsWrite() bool  { return true }

func (r *learnerRole) createSession(sess *clientSession) {
	if r.local != nil {
		r.local.create(sess)
		return
	}
	r.forwardCreateSession(sess)
}

func (r *learnerRole) forwardCreateSession(sess *clientSession) {
	body := jute.Marshal(&jute.CreateSessionTxn{TimeOut: sess.timeout})
	r.apply.Push(r.zl.Forward(sess.id, 0, jute.OpCreateSession, body, nil))
}

// reconnect asks the leader, which owns sessions, whether the session is still alive; a
// local session of this member is checked here.
func (r *learnerRole) reconnect(c *conn, req *jute.ConnectRequest) {
	if r.local.reconnect(c, req) {
		return
	}
	r.reconns[req.SessionID] = append(r.reconns[req.SessionID], pendingReconn{c: c, req: req})
	r.apply.Push(r.zl.Revalidate(req.SessionID, req.TimeOut))
}

func (r *learnerRole) submit(q *queued) {
	req := q.req
	if q.sync {
		r.syncs = append(r.syncs, q)
		if r.om != nil {
			r.om.om.LocalSync()
		}
	}
	if r.local.needsGlobal(q) {
		if r.local.upgrading {
			// FollowerRequestProcessor: the createSession goes to the leader first.
			r.local.upgrade(q.c.sess)
			r.forwardCreateSession(q.c.sess)
		} else if q.req.hdr.Type != jute.OpMulti {
			// As ZooKeeper's learner, the request still goes to the leader (which fails an
			// ephemeral create of a session it does not know as expired), and the client is
			// told why. A multi is answered op by op from the leader's txn: ZooKeeper's
			// FinalRequestProcessor does not throw the exception for a multi.
			q.failWith = jute.ErrEphemeralOnLocalSession
		}
	}
	r.apply.Push(r.zl.Forward(q.c.sess.id, req.hdr.Xid, req.hdr.Type, req.raw, q.c.authIDs))
}

// A learner proposes nothing: writes go to the leader.
func (r *learnerRole) nextZxid() (int64, bool) { return 0, false }
func (r *learnerRole) propose(*pendingTxn)     {}

func (r *learnerRole) durable(zxid int64) {
	if r.zl != nil {
		r.apply.Push(r.zl.Logged(zxid))
	}
}

func (r *learnerRole) tick(now time.Time) {
	if r.zl != nil {
		r.apply.Push(r.zl.Tick(now.UnixMilli()))
	}
	if r.om != nil && r.current() {
		r.omDo(r.om.om.Tick(now.UnixMilli()))
	}
	if r.synced && r.current() && r.s.stepDown == nil {
		r.local.expire(now)
	}
}

// touch records a session's activity: a local session's here, a global one's for the
// leader, which hears of it with the next ping.
func (r *learnerRole) touch(sess *clientSession) {
	if !r.local.touch(sess) {
		r.zl.Touch(sess.id, sess.timeout)
	}
}

func (r *learnerRole) sessionClosed(id int64) { r.local.forget(id) }

func (r *learnerRole) quorumAccepted(nc net.Conn, ln net.Listener) {
	if !r.observerAccepted(nc, ln) {
		nc.Close()
	}
}

// quorumDialed starts the learner on the connection to the leader it dialed.
func (r *learnerRole) quorumDialed(nc net.Conn, sid int64, err error) {
	s := r.s
	if !r.dialing || sid != r.masterSid || !r.current() {
		closeConn(nc)
		return
	}
	r.dialing = false
	if err != nil {
		s.stepDown = fmt.Errorf("cannot connect to the leader (sid %d): %w", sid, err)
		return
	}
	r.conn = newQuorumConn(s, 0, nc)
	cfg := zab.LearnerConfig{
		ID: s.cfg.ServerID, Observer: r.observer, TickMs: int64(s.cfg.TickTime), ConfigVersion: s.ens.version,
		InitLimit: int64(s.cfg.InitLimit), SyncLimit: int64(s.cfg.SyncLimit),
		Wide: s.cfg.Extensions.Has(ext.Wide),
	}
	st := s.ens.st
	st.LastLogged = s.syncZxid()
	var rd zab.Ready
	r.zl, rd = zab.NewLearner(cfg, st, s.nowMs())
	s.wg.Add(2)
	go r.conn.readLoop(true)
	go r.conn.writeLoop()
	r.apply.Push(rd)
}

func (r *learnerRole) quorumPacket(q *quorumConn, p jute.QuorumPacket, snap *snapState) {
	if r.observerPacket(q, p) {
		return
	}
	if r.zl == nil || q != r.conn {
		return
	}
	if r.synced {
		// Counted as ZooKeeper's Follower and Observer count them: in broadcast only, not
		// the proposals and commits of the sync.
		switch p.Type {
		case zab.PktProposal:
			r.s.counters.add(cntLearnerProposalReceived, 1)
		case zab.PktCommit, zab.PktInform:
			r.s.counters.add(cntLearnerCommitReceived, 1)
		}
	}
	rd := r.zl.Receive(r.s.nowMs(), p)
	if snap != nil && rd.Err == nil {
		r.s.installSnap(snap)
		r.zl.SnapLoaded(snap.zxid)
		if cut := r.s.cfg.cutAfterSnap; cut != nil && cut.CompareAndSwap(true, false) {
			r.conn.close()
			return
		}
	}
	r.apply.Push(rd)
}

func (r *learnerRole) quorumClosed(q *quorumConn) {
	if r.observerClosed(q) {
		return
	}
	if q == r.conn && r.s.stepDown == nil {
		r.s.stepDown = fmt.Errorf("lost the connection to the leader")
	}
}

func (r *learnerRole) stop() {
	r.local.stop()
	r.stopObserverMaster()
	r.dialing = false
	if r.conn != nil {
		r.conn.close()
	}
	r.apply.Reset()
}

// ---- zab.Host ----

// Truncate cuts the log back to zxid (TRUNC) and reloads the tree, on the storage goroutine.
func (r *learnerRole) Truncate(zxid int64) bool {
	s := r.s
	s.lastQueued = zxid
	s.storageOp(func() func() {
		ld, err := s.truncateOnStorage(zxid)
		if err != nil {
			s.failStop(err)
			return nil
		}
		return func() {
			// The disk's state, whatever role this server has by now.
			s.install(ld)
			r.done()
		}
	})
	return false
}

// Snapshot: the tree a SNAP sync installed is already on its way to disk (installSnap
// queued its snapshot), ahead of anything logged or acknowledged after it.
func (r *learnerRole) Snapshot() bool { return true }

// SyncAppend logs txns and waits for them to be durable (a NEWLEADER ack promises they are).
func (r *learnerRole) SyncAppend(txns []zab.Committed) bool {
	s := r.s
	s.seeProposedConfigs(txns)
	for _, c := range txns {
		s.queueAppend(c.Zxid, c.Data)
	}
	// An operation runs once everything before it is written and synced.
	s.storageOp(func() func() {
		return r.done
	})
	return false
}

func (r *learnerRole) Send(o zab.Out) {
	if r.conn != nil {
		r.conn.send(&o.Packet)
	}
}

func (r *learnerRole) Close(zab.ConnID) {}

func (r *learnerRole) Apply(c zab.Committed) {
	t, err := jute.DecodeTxn(c.Data)
	if err != nil {
		r.s.failStop(fmt.Errorf("server: committed txn %s does not decode: %w", hex(c.Zxid), err))
		return
	}
	r.s.counters.add(cntRequestCommitQueued, 1)
	r.s.applyTxn(&pendingTxn{kind: pkRemote, txn: &t, data: c.Data})
	r.omApplied(c, t.Header.Type == jute.OpReconfig)
}

func (r *learnerRole) Notify(n *zab.Ready) {
	s := r.s
	if n.Serving {
		r.synced = true
		s.startServing()
		s.fillConfigNode()
		s.ens.elect.UpdateElectionVote(r.zl.NewEpoch())
		s.lastProposed = s.tree.LastZxid()
		s.log.Info("synced with the leader", "leader", r.leaderSid, "master", r.masterSid, "zxid", hex(s.tree.LastZxid()))
		s.refilled()
		r.startObserverMaster()
	}
	own, synced := r.omNotify(n)
	for ; synced > 0; synced-- {
		s.finishSync(&r.syncs)
	}
	for _, rv := range own {
		r.finishReconnect(rv.Session, rv.Valid)
	}
	if n.Rolled != 0 {
		// The leader rolled the epoch over in place (ext.Wide): elections hear the new one.
		s.ens.elect.UpdateElectionVote(n.Rolled)
		s.log.Info("zxid rolled over into a new epoch without an election", "epoch", n.Rolled, "leader", r.leaderSid)
	}
	for _, ev := range n.Configs {
		s.onConfigEvent(ev)
	}
	if len(n.Configs) > 0 && r.current() {
		r.omConfigChanged()
	}
	if n.Err != nil && s.stepDown == nil {
		s.stepDown = n.Err
	}
}

// finishReconnect answers a client that reconnected through this learner.
func (r *learnerRole) finishReconnect(id int64, valid bool) {
	s := r.s
	waiting := r.reconns[id]
	delete(r.reconns, id)
	for _, w := range waiting {
		if w.c.gone {
			continue
		}
		sess := s.sessions[id]
		if !valid || sess == nil {
			s.refuseSession(w.c, w.req)
			continue
		}
		s.attach(w.c, sess, w.req)
	}
}

// installSnap replaces the tree and sessions with a leader's SNAP and queues its snapshot
// at once: a tree no log holds must be on disk before anything is logged or acknowledged
// after it (ZooKeeper persists it before acknowledging NEWLEADER).
func (s *Server) installSnap(st *snapState) {
	s.install(&loaded{tree: st.tree, sessions: st.sessions, snapZxid: st.zxid})
	// The leader's tree now (see digestState.armed).
	s.digest.resync, s.digest.armed = false, false
	s.queueSnapshot()
}

// finishSync answers the oldest sync waiting in syncs.
func (s *Server) finishSync(syncs *[]*queued) {
	if len(*syncs) == 0 {
		return
	}
	q := (*syncs)[0]
	(*syncs)[0] = nil
	*syncs = (*syncs)[1:]
	if q.done {
		return // dropped with its session's queue
	}
	sess := q.c.sess
	if sess == nil || len(sess.queue) == 0 || sess.queue[0] != q {
		s.outOfOrder(sess, q, "sync")
		return
	}
	if !q.c.gone {
		s.reply(q.c, q.req.hdr.Xid, jute.OK, &jute.SyncResponse{Path: q.req.body.(*jute.PathRequest).Path})
	}
	s.popHead(sess, q)
}
