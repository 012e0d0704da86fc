package server

import (
	"math/rand/v2"
	"net"
	"slices"
	"strconv"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/peer"
	"github.com/zkd-io/zkd/internal/zab"
	"github.com/zkd-io/zkd/jute"
)

// Observers syncing from followers (observerMasterPort, ZooKeeper's ObserverMaster): a
// synced follower listens on the port and runs a zab.ObserverMaster, which syncs
// observers from the follower's committed history and sends their requests up the
// follower's own connection; an observer picks a follower from the voting members.

// observerMaster is a follower's side of its observers' connections.
type observerMaster struct {
	om    *zab.ObserverMaster
	ln    net.Listener
	conns map[zab.ConnID]*quorumConn
	next  zab.ConnID
	// held is a reconfig txn applied and not yet sent: INFORMANDACTIVATE needs the leader
	// its COMMITANDACTIVATE designated, which comes with the Ready's notices.
	held *zab.Committed
}

// startObserverMaster opens the observer master port once the follower is synced
// (Follower.followLeader starts its ObserverMaster after syncWithLeader).
func (r *learnerRole) startObserverMaster() {
	s := r.s
	if r.observer || s.cfg.ObserverMasterPort <= 0 || r.om != nil {
		return
	}
	if _, ok := s.peer(s.cfg.ServerID); !ok {
		return // a reconfig removed this server: no address to serve on, no observer picks it
	}
	// ObserverMaster.start: the quorum address's host (every interface with
	// quorumListenOnAllIPs).
	addr := net.JoinHostPort(s.self().Host, strconv.Itoa(s.cfg.ObserverMasterPort))
	ln, err := peer.ListenAll(listenAddrs([]string{addr}, s.cfg.QuorumListenOnAllIPs))
	if err != nil {
		// Followers serve clients without it; observers try another follower.
		s.log.Error("cannot listen on the observer master port", "addr", addr, "err", err)
		return
	}
	cfg := zab.ObserverMasterConfig{
		ID: s.cfg.ServerID, TickMs: int64(s.cfg.TickTime), InitLimit: int64(s.cfg.InitLimit), SyncLimit: int64(s.cfg.SyncLimit),
		Epoch: r.zl.NewEpoch(), ConfigVersion: s.ens.version, ConfigText: s.newLeaderConfigText(), CommitLogCount: historyLen,
	}
	r.om = &observerMaster{
		om:    zab.NewObserverMaster(cfg, s.tree.LastZxid(), s.history.list(), len(r.syncs)),
		ln:    ln,
		conns: map[zab.ConnID]*quorumConn{},
	}
	s.log.Info("observer master listening", "addr", ln.Addr().String())
	s.wg.Add(1)
	go s.acceptLearners(ln) // TLS and quorum SASL as at the leader's port
}

// newLeaderConfigText is what NEWLEADER carries: the last seen configuration
// (getQuorumVerifierBytes), as a zkd leader sends it (nothing without reconfig).
func (s *Server) newLeaderConfigText() []byte {
	if !s.cfg.ReconfigEnabled {
		return nil
	}
	cur, lastSeen, err := s.zabConfigs()
	if err != nil {
		return nil
	}
	if lastSeen.Text != nil && lastSeen.Version > cur.Version {
		return lastSeen.Text
	}
	return cur.Text
}

func (r *learnerRole) stopObserverMaster() {
	m := r.om
	if m == nil {
		return
	}
	r.om = nil
	m.ln.Close()
	for id, q := range m.conns {
		q.close()
		delete(m.conns, id)
	}
}

// observerAccepted takes an observer's new connection; false if ln is not the observer
// master's.
func (r *learnerRole) observerAccepted(nc net.Conn, ln net.Listener) bool {
	m := r.om
	if m == nil || m.ln != ln {
		return false
	}
	m.next++
	q := newQuorumConn(r.s, m.next, nc)
	m.conns[q.id] = q
	m.om.Accept(q.id, r.s.nowMs())
	r.s.wg.Add(2)
	go q.readLoop(false)
	go q.writeLoop()
	return true
}

// observerPacket hands an observer's packet to the observer master; false if q is not an
// observer's connection.
func (r *learnerRole) observerPacket(q *quorumConn, p jute.QuorumPacket) bool {
	m := r.om
	if m == nil || m.conns[q.id] != q {
		return false
	}
	started := q.st.started
	r.s.learnerHello(q, &p)
	r.omDo(m.om.Receive(q.id, r.s.nowMs(), p))
	if r.om == m {
		r.s.learnerReceived(q, &p, started, func() (zab.LearnerState, bool) { return m.om.Observer(q.id) })
	}
	return true
}

func (r *learnerRole) observerClosed(q *quorumConn) bool {
	m := r.om
	if m == nil || m.conns[q.id] != q {
		return false
	}
	delete(m.conns, q.id)
	m.om.Closed(q.id)
	return true
}

// omDo carries out an observer master's Ready. Packets to observers go at once: a SNAP's
// tree is the one the master planned from (the core applies nothing in between), and
// INFORMs follow in order. Packets up to the leader queue behind the follower's own, so
// the leader answers syncs in the order the master recorded them.
func (r *learnerRole) omDo(rd zab.Ready) {
	m := r.om
	if m == nil {
		return
	}
	var up []zab.Out
	for _, o := range rd.Out {
		if o.Conn == 0 {
			up = append(up, o)
			continue
		}
		if q := m.conns[o.Conn]; q != nil {
			r.s.sendToLearner(q, o)
		}
	}
	for _, id := range rd.Close {
		if q := m.conns[id]; q != nil {
			q.close()
			delete(m.conns, id)
		}
	}
	for _, a := range rd.LoadHistory {
		r.omLoadHistory(m, a)
	}
	for _, t := range rd.Touches {
		// The follower's session tracker: the leader hears with the next PING reply.
		r.zl.Touch(t.Session, t.Timeout)
	}
	if len(up) > 0 {
		r.apply.Push(zab.Ready{AcceptedEpoch: -1, CurrentEpoch: -1, TruncateTo: -1, Out: up})
	}
}

// omLoadHistory reads committed txns from the follower's log for an observer behind the
// in-memory history, as the leader does for its learners (leader.go).
func (r *learnerRole) omLoadHistory(m *observerMaster, a zab.HistoryAsk) {
	s := r.s
	s.storageOp(func() func() {
		// Not in s.wg: it may outlive a stop, reading files only, and its answer is
		// dropped then.
		go func() {
			h := s.readHistory(a.From, a.To)
			s.postDone(func() {
				if r.current() && r.om == m {
					r.omDo(m.om.HistoryLoaded(a.Conn, h))
				}
			})
		}()
		return nil
	})
}

// omApplied tells the observer master of a txn the follower applied.
func (r *learnerRole) omApplied(c zab.Committed, reconfig bool) {
	m := r.om
	if m == nil {
		return
	}
	r.omFlushHeld()
	if reconfig {
		m.held = &c
		return
	}
	r.omDo(m.om.Committed(c))
}

// omFlushHeld informs observers of a held reconfig committed without activation.
func (r *learnerRole) omFlushHeld() {
	if m := r.om; m != nil && m.held != nil {
		c := *m.held
		m.held = nil
		r.omDo(m.om.Committed(c))
	}
}

// omNotify routes what the leader answered and activated to the observer master, before
// the follower acts on it (Follower.processPacket: informAndActivate before a reconfig
// ends the role). It returns the revalidations and the count of syncs that are the
// follower's own.
func (r *learnerRole) omNotify(n *zab.Ready) (own []zab.Revalidation, synced int) {
	m := r.om
	if m == nil {
		return n.Revalidated, n.Synced
	}
	for _, ev := range n.Configs {
		if ev.Kind == zab.ConfigActivated && m.held != nil && m.held.Zxid == ev.Zxid {
			c := *m.held
			m.held = nil
			r.omDo(m.om.CommittedAndActivate(c, ev.Designated))
		}
	}
	r.omFlushHeld()
	for i := n.Synced; i > 0 && r.om != nil; i-- {
		local, rd := r.om.om.Synced()
		r.omDo(rd)
		if local {
			synced++
		}
	}
	for _, rv := range n.Revalidated {
		if r.om != nil {
			if handled, rd := r.om.om.Revalidated(rv.Session, rv.Valid); handled {
				r.omDo(rd)
				continue
			}
		}
		own = append(own, rv)
	}
	return own, synced
}

// omConfigChanged gives the observer master the configuration after a reconfig.
func (r *learnerRole) omConfigChanged() {
	if m := r.om; m != nil {
		m.om.SetConfig(r.s.ens.version, r.s.newLeaderConfigText())
	}
}

// nextObserverMaster picks the follower an observer syncs from: the voting members in a
// shuffled order, the next one each time (QuorumPeer.nextObserverMaster); the order is
// drawn again when the voters change (updateObserverMasterList).
func (s *Server) nextObserverMaster() (config.Member, bool) {
	voters := s.voters()
	slices.Sort(voters)
	if !slices.Equal(voters, s.ens.omVoters) {
		s.ens.omVoters = voters
		s.ens.omOrder = slices.Clone(voters)
		rand.Shuffle(len(s.ens.omOrder), func(i, j int) { s.ens.omOrder[i], s.ens.omOrder[j] = s.ens.omOrder[j], s.ens.omOrder[i] })
		s.ens.omNext = 0
	}
	if len(s.ens.omOrder) == 0 {
		return config.Member{}, false
	}
	if s.ens.omNext >= len(s.ens.omOrder) {
		// zookeeper.observer.reconnectDelayMs defaults to 0: no pause before starting over.
		s.ens.omNext = 0
	}
	id := s.ens.omOrder[s.ens.omNext]
	s.ens.omNext++
	return s.peer(id)
}

// eachObserver calls f with the observers this follower's observer master has started
// (counted as mntr's synced_observers).
func (r followerRole) eachObserver(f func(q *quorumConn, sid int64)) {
	if r.om == nil {
		return
	}
	for _, ls := range r.om.om.Observers() {
		if q := r.om.conns[ls.Conn]; q != nil && ls.Started {
			f(q, ls.Sid)
		}
	}
}

// synced observers of this follower's observer master, for mntr (nil without one).
func (r *learnerRole) syncedObservers() (int, bool) {
	if r.om == nil {
		return 0, false
	}
	return r.om.om.SyncedObservers(), true
}
