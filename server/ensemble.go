package server

import (
	"bytes"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/election"
	"github.com/zkd-io/zkd/internal/peer"
	"github.com/zkd-io/zkd/internal/prep"
	"github.com/zkd-io/zkd/internal/session"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/internal/zab"
	"github.com/zkd-io/zkd/jute"
)

// Peer is one member of an ensemble (a server.N line).
type Peer struct {
	ID           int64
	Host         string
	QuorumPort   int
	ElectionPort int
	Observer     bool
}

func (p Peer) quorumAddr() string   { return net.JoinHostPort(p.Host, strconv.Itoa(p.QuorumPort)) }
func (p Peer) electionAddr() string { return net.JoinHostPort(p.Host, strconv.Itoa(p.ElectionPort)) }

type role int

const (
	roleStandalone role = iota
	roleLooking
	roleLeading
	roleFollowing
	roleObserving
)

func (r role) String() string {
	return [...]string{"standalone", "looking", "leader", "follower", "observer"}[r]
}

// ElectionMessage is one election-port payload from a peer.
type ElectionMessage = peer.Message

// ElectionTransport carries election notifications between servers (internal/peer's TCP
// transport in production, an in-memory one in tests).
type ElectionTransport interface {
	Send(to int64, payload []byte)
	Recv() <-chan ElectionMessage
	Close() error
}

// ensemble is the core's replication state; the core goroutine owns it.
type ensemble struct {
	role       role
	serving    bool
	elect      *election.Election
	electTimer *time.Timer
	transport  ElectionTransport
	st         zab.PersistentState
	leaderSid  int64

	leader    *zab.Leader
	qln       net.Listener
	qconns    map[zab.ConnID]*quorumConn
	nextQConn zab.ConnID

	learner     *zab.Learner
	leaderConn  *quorumConn
	dialing     bool
	syncs       []*queued                 // forwarded (or leader-local) syncs, oldest first
	revalidates map[int64][]pendingReconn // reconnects waiting for the leader's answer
	// owners maps a session to the server whose client connection owns it (leader only).
	// A session that reconnected elsewhere has moved: writes still arriving through its
	// old server fail with SESSIONMOVED.
	owners map[int64]int64
	// syncs of learners by the mode they got, for mntr (diff_count, snap_count)
	diffs, snaps, truncs int64
}

type pendingReconn struct {
	c   *conn
	req *jute.ConnectRequest
}

func (s *Server) ensembleMode() bool { return len(s.cfg.Peers) > 0 }

func (s *Server) self() Peer {
	for _, p := range s.cfg.Peers {
		if p.ID == s.cfg.ServerID {
			return p
		}
	}
	return Peer{}
}

func (s *Server) peer(id int64) (Peer, bool) {
	for _, p := range s.cfg.Peers {
		if p.ID == id {
			return p, true
		}
	}
	return Peer{}, false
}

func (s *Server) voters() []int64 {
	var v []int64
	for _, p := range s.cfg.Peers {
		if !p.Observer {
			v = append(v, p.ID)
		}
	}
	return v
}

// epochs are kept in version-2/acceptedEpoch and currentEpoch, as ZooKeeper keeps them.
func (s *Server) readEpoch(name string, def int64) (int64, error) {
	f, err := s.cfg.FS.OpenFile(filepath.Join(s.snapDir(), name), 0, 0)
	if err != nil {
		return def, nil
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return 0, fmt.Errorf("server: read %s: %w", name, err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(buf.String()), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("server: %s holds %q: %w", name, buf.String(), err)
	}
	return v, nil
}

func (s *Server) writeEpoch(name string, v int64) error {
	fs := s.cfg.FS
	tmp := filepath.Join(s.snapDir(), name+".tmp")
	f, err := fs.OpenFile(tmp, 0x241 /* O_WRONLY|O_CREATE|O_TRUNC */, 0o644)
	if err != nil {
		return fmt.Errorf("server: write %s: %w", name, err)
	}
	if _, err := f.Write([]byte(strconv.FormatInt(v, 10))); err != nil {
		f.Close()
		return fmt.Errorf("server: write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("server: write %s: %w", name, err)
	}
	f.Close()
	if err := fs.Rename(tmp, filepath.Join(s.snapDir(), name)); err != nil {
		return fmt.Errorf("server: write %s: %w", name, err)
	}
	return fs.SyncDir(s.snapDir())
}

// initEnsemble reads the epochs and starts looking for a leader.
func (s *Server) initEnsemble() error {
	last := s.tree.LastZxid()
	cur, err := s.readEpoch("currentEpoch", zab.Epoch(last))
	if err != nil {
		return err
	}
	acc, err := s.readEpoch("acceptedEpoch", cur)
	if err != nil {
		return err
	}
	s.ens.st = zab.PersistentState{AcceptedEpoch: acc, CurrentEpoch: cur, LastLogged: last}
	s.ens.revalidates = map[int64][]pendingReconn{}
	s.ens.qconns = map[zab.ConnID]*quorumConn{}
	s.ens.owners = map[int64]int64{}
	cfg := election.Config{ID: s.cfg.ServerID, Voters: s.voters()}
	for _, p := range s.cfg.Peers {
		if p.Observer {
			cfg.Observers = append(cfg.Observers, p.ID)
		}
	}
	s.ens.elect = election.New(cfg)
	return nil
}

// startLooking drops the current role and starts an election.
func (s *Server) startLooking(reason string) {
	if s.ens.role != roleLooking {
		s.log.Info("looking for a leader", "reason", reason, "was", s.ens.role.String())
	}
	s.stopRole()
	s.ens.role = roleLooking
	s.ens.serving = false
	now := s.nowMs()
	s.ens.st.LastLogged = s.lastLogged()
	s.sendElection(s.ens.elect.Start(now, s.ens.st.LastLogged, s.ens.st.CurrentEpoch))
	s.armElectionTimer()
}

func (s *Server) lastLogged() int64 {
	s.logFence()
	if z := s.txlog.LastZxid(); z > s.tree.LastZxid() {
		return z
	}
	return s.tree.LastZxid()
}

func (s *Server) sendElection(outs []election.Out) {
	for _, o := range outs {
		if o.To == s.cfg.ServerID {
			continue
		}
		s.ens.transport.Send(o.To, o.N.Marshal())
	}
}

func (s *Server) armElectionTimer() {
	at, ok := s.ens.elect.NextTick()
	if !ok {
		return
	}
	d := time.Duration(at-s.nowMs()) * time.Millisecond
	if d < time.Millisecond {
		d = time.Millisecond
	}
	if s.ens.electTimer == nil {
		s.ens.electTimer = time.NewTimer(d)
		return
	}
	s.ens.electTimer.Stop()
	select {
	case <-s.ens.electTimer.C:
	default:
	}
	s.ens.electTimer.Reset(d)
}

func (s *Server) electionTimerC() <-chan time.Time {
	if s.ens.electTimer == nil {
		return nil
	}
	return s.ens.electTimer.C
}

func (s *Server) onElectionMessage(m ElectionMessage) {
	n, err := election.Unmarshal(m.From, m.Payload)
	if err != nil {
		s.log.Debug("dropping malformed election notification", "from", m.From, "err", err)
		return
	}
	outs, d := s.ens.elect.Receive(s.nowMs(), n)
	s.sendElection(outs)
	if d != nil {
		s.decided(*d)
	}
	s.armElectionTimer()
}

func (s *Server) onElectionTimer() {
	outs, d := s.ens.elect.Tick(s.nowMs())
	s.sendElection(outs)
	if d != nil {
		s.decided(*d)
	}
	s.armElectionTimer()
}

func (s *Server) decided(d election.Decision) {
	if s.ens.role != roleLooking {
		return
	}
	s.ens.leaderSid = d.Leader
	switch d.State {
	case election.Leading:
		s.becomeLeader()
	case election.Following, election.Observing:
		s.becomeLearner(d.State == election.Observing)
	}
}

// stopRoleConns closes the quorum connections and listener.
func (s *Server) stopRoleConns() {
	if s.ens.qln != nil {
		s.ens.qln.Close()
		s.ens.qln = nil
	}
	for id, q := range s.ens.qconns {
		q.close()
		delete(s.ens.qconns, id)
	}
	if s.ens.leaderConn != nil {
		s.ens.leaderConn.close()
		s.ens.leaderConn = nil
	}
}

// stopRole tears down the leader or learner side and everything that depended on it:
// clients are disconnected, pending writes are dropped (their clients see the disconnect).
func (s *Server) stopRole() {
	s.ens.leader = nil
	s.ens.learner = nil
	s.ens.dialing = false
	s.stopRoleConns()
	for c := range s.conns {
		s.detach(c)
		c.close()
	}
	// The pipeline is thrown away: its requests give back their outstanding slots, and
	// closes that never committed are forgotten (the next leader decides about sessions).
	now := s.nowMs()
	s.tracker = session.NewTracker(int64(s.cfg.TickTime))
	for _, sess := range s.sessions {
		s.dropQueue(sess)
		sess.conn = nil
		sess.closing = false
		if !sess.valid {
			delete(s.sessions, sess.id)
			continue
		}
		s.tracker.Add(sess.id, sess.timeout, now)
	}
	s.pending = nil
	s.ens.syncs = nil
	clear(s.ens.revalidates)
	clear(s.ens.owners)
	s.prep.Reset()
	// A follower may have logged proposals that were never applied; ZooKeeper fast-forwards
	// its tree over them before the next election, so its vote names its last logged zxid.
	// Appends still queued for the log count: wait for them first.
	s.logFence()
	if s.txlog.LastZxid() > s.tree.LastZxid() {
		if err := s.reloadFromDisk(); err != nil {
			s.failStop(err)
		}
	}
}

// reloadFromDisk rebuilds the tree and sessions from the snapshot and the whole log.
func (s *Server) reloadFromDisk() error {
	s.logFence()
	s.sessions = map[int64]*clientSession{}
	s.tracker = session.NewTracker(int64(s.cfg.TickTime))
	if err := s.txlog.Close(); err != nil {
		return err
	}
	if err := s.recover(); err != nil {
		return err
	}
	s.prep = prep.New(s.tree)
	s.prep.ExtendedTypes = s.cfg.ExtendedTypes
	s.prep.SkipACL = s.cfg.SkipACL
	s.lastProposed = s.tree.LastZxid()
	return nil
}

// ---- leader ----

func (s *Server) becomeLeader() {
	s.ens.role = roleLeading
	// A new leader owns session expiry from now on: every session's clock starts afresh,
	// as ZooKeeper's leader builds its session tracker (followers never saw the touches).
	now := s.nowMs()
	for id, sess := range s.sessions {
		if sess.valid && !sess.closing {
			s.tracker.Add(id, sess.timeout, now)
		}
	}
	self := s.self()
	ln, err := net.Listen("tcp", self.quorumAddr())
	if err != nil {
		s.log.Error("cannot listen on the quorum port", "addr", self.quorumAddr(), "err", err)
		s.startLooking("quorum port unavailable")
		return
	}
	s.ens.qln = ln
	history := s.recentHistory(500)
	cfg := zab.LeaderConfig{
		ID: s.cfg.ServerID, QV: zab.NewMajority(s.voters()...), TickMs: int64(s.cfg.TickTime),
		InitLimit: int64(s.cfg.InitLimit), SyncLimit: int64(s.cfg.SyncLimit), CommitLogCount: 500,
		Older: s.olderHistory, FirstCounter: s.cfg.zxidCounterStart,
	}
	var r zab.LeaderReady
	s.ens.leader, r = zab.NewLeader(cfg, s.ens.st, s.tree.LastZxid(), history, s.nowMs())
	s.log.Info("leading", "sid", s.cfg.ServerID, "zxid", hex(s.tree.LastZxid()))
	s.wg.Add(1)
	go s.acceptLearners(ln)
	s.leaderReady(r)
}

func (s *Server) acceptLearners(ln net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		s.submit(event{kind: evQuorumAccepted, nconn: nc, listener: ln})
	}
}

func (s *Server) onQuorumAccepted(nc net.Conn, ln net.Listener) {
	if s.ens.leader == nil || s.ens.qln != ln {
		nc.Close()
		return
	}
	s.ens.nextQConn++
	q := newQuorumConn(s, s.ens.nextQConn, nc)
	s.ens.qconns[q.id] = q
	s.ens.leader.Accept(q.id, s.nowMs())
	s.wg.Add(2)
	go q.readLoop(false)
	go q.writeLoop()
}

// recentHistory reads the last n committed txns from the log, for DIFF syncs.
func (s *Server) recentHistory(n int) []zab.Committed {
	var ring []zab.Committed
	last := s.tree.LastZxid()
	// Zxids of an epoch are consecutive, so the last n of this epoch start at last-n: read
	// from the file holding it, not the whole log (a new leader does this before it leads).
	from := int64(0)
	if zab.Counter(last) > int64(n) {
		from = last - int64(n)
	}
	storage.ReadLog(s.cfg.FS, s.logDir(), from, func(zxid int64, b []byte) error {
		if zxid > last {
			return errStopRead
		}
		if len(ring) == n {
			copy(ring, ring[1:])
			ring = ring[:n-1]
		}
		ring = append(ring, zab.Committed{Zxid: zxid, Data: bytes.Clone(b)})
		return nil
	})
	return ring
}

// olderHistory reads the committed txns from a learner's last zxid on, up to the tree's last
// zxid. Like ZooKeeper's, it starts with the txn at from itself, so the sync planner can see
// where the learner's history meets ours; nil means only SNAP can help.
func (s *Server) olderHistory(from int64) []zab.Committed {
	var out []zab.Committed
	var size int
	last := s.tree.LastZxid()
	_, err := storage.ReadLog(s.cfg.FS, s.logDir(), from-1, func(zxid int64, b []byte) error {
		if zxid > last {
			return errStopRead
		}
		out = append(out, zab.Committed{Zxid: zxid, Data: bytes.Clone(b)})
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

func (s *Server) leaderReady(r zab.LeaderReady) {
	if r.AcceptedEpoch >= 0 {
		if err := s.writeEpoch("acceptedEpoch", r.AcceptedEpoch); err != nil {
			s.failStop(err)
			return
		}
		s.ens.st.AcceptedEpoch = r.AcceptedEpoch
	}
	if r.CurrentEpoch >= 0 {
		if err := s.writeEpoch("currentEpoch", r.CurrentEpoch); err != nil {
			s.failStop(err)
			return
		}
		s.ens.st.CurrentEpoch = r.CurrentEpoch
	}
	for _, c := range r.Append {
		s.logCh <- logItem{zxid: c.Zxid, data: c.Data}
	}
	for _, o := range r.Out {
		q := s.ens.qconns[o.Conn]
		if q == nil {
			continue
		}
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
			q.sendRaw(s.snapStream())
		}
	}
	for _, id := range r.Close {
		if q := s.ens.qconns[id]; q != nil {
			q.close()
			delete(s.ens.qconns, id)
		}
	}
	if r.Established {
		s.ens.serving = true
		// Announce the new epoch in election answers, so servers that join later see a
		// quorum of matching votes (ZOOKEEPER-1732).
		s.ens.elect.UpdateElectionVote(s.ens.leader.Epoch())
		s.lastProposed = zab.MakeZxid(s.ens.leader.Epoch(), 0)
		s.log.Info("leader established", "epoch", s.ens.leader.Epoch())
	}
	for _, c := range r.Apply {
		if len(s.pending) == 0 || s.pending[0].txn.Header.Zxid != c.Zxid {
			s.failStop(fmt.Errorf("server: leader committed %s, which is not the next pending txn", hex(c.Zxid)))
			return
		}
		p := s.pending[0]
		s.pending[0] = nil
		s.pending = s.pending[1:]
		s.applyTxn(p)
	}
	for _, t := range r.Touches {
		s.tracker.TouchTimeout(t.Session, t.Timeout, s.nowMs())
	}
	for _, a := range r.Revalidate {
		sess := s.sessions[a.Session]
		valid := sess != nil && sess.valid && !sess.closing
		if valid {
			s.tracker.TouchTimeout(a.Session, a.Timeout, s.nowMs())
			s.ens.owners[a.Session] = a.Sid
			s.disownLocal(sess)
		}
		s.leaderReady(s.ens.leader.Revalidated(a.Conn, a.Session, valid))
	}
	for _, fr := range r.Requests {
		s.leaderRemoteRequest(fr)
	}
	for ; r.LocalSynced > 0; r.LocalSynced-- {
		s.finishSync()
	}
	if r.StepDown != nil {
		s.startLooking(r.StepDown.Error())
	}
}

// leaderRemoteRequest prepares a write a learner forwarded.
func (s *Server) leaderRemoteRequest(fr zab.ForwardedRequest) {
	if !s.ens.serving {
		return
	}
	var to jute.CreateSessionTxn
	if fr.Type == jute.OpCreateSession && jute.Unmarshal(fr.Body, &to) != nil {
		return // before taking a zxid: zxids have no gaps
	}
	now := s.nowMs()
	zxid, ok := s.nextZxid()
	if !ok {
		return
	}
	var txn *jute.LoggedTxn
	if fr.Type != jute.OpCreateSession {
		// As ZooKeeper's checkSession: a request of a session that is gone or closing must
		// not reach the tree (an ephemeral would outlive its session).
		if sess := s.sessions[fr.Session]; sess == nil || !sess.valid || sess.closing {
			txn = sessionErrorTxn(fr.Session, fr.Cxid, jute.ErrSessionExpired, zxid, now)
			s.propose(&pendingTxn{kind: pkRemote, txn: txn})
			return
		}
		if !s.ownedBy(fr.Session, fr.Sid) {
			txn = sessionErrorTxn(fr.Session, fr.Cxid, jute.ErrSessionMoved, zxid, now)
			s.propose(&pendingTxn{kind: pkRemote, txn: txn})
			return
		}
	}
	switch fr.Type {
	case jute.OpCreateSession:
		s.ens.owners[fr.Session] = fr.Sid
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
		body, ok := newBody(fr.Type)
		var rec jute.Record
		if ok && body != nil && jute.Unmarshal(fr.Body, body) == nil {
			rec = body
		}
		txn = s.prep.Prepare(&prep.Request{SessionID: fr.Session, Cxid: fr.Cxid, Type: fr.Type, Body: rec, AuthIDs: fr.AuthInfo}, zxid, now)
	}
	s.propose(&pendingTxn{kind: pkRemote, txn: txn})
}

// ownedBy reports whether server sid owns a session, claiming it for sid when no server
// does yet (after a leader change owners are unknown, as in ZooKeeper).
func (s *Server) ownedBy(session, sid int64) bool {
	owner, ok := s.ens.owners[session]
	if !ok {
		s.ens.owners[session] = sid
		return true
	}
	return owner == sid
}

// disownLocal drops this server's own client connection of a session that moved away.
func (s *Server) disownLocal(sess *clientSession) {
	if c := sess.conn; c != nil {
		s.detach(c)
		c.close()
	}
}

// sessionErrorTxn is the error txn for a write refused because of its session: expired,
// or moved to another server.
func sessionErrorTxn(session int64, cxid int32, code jute.Code, zxid, now int64) *jute.LoggedTxn {
	return &jute.LoggedTxn{
		Header: jute.TxnHeader{ClientID: session, Cxid: cxid, Zxid: zxid, Time: now, Type: jute.OpError},
		Body:   &jute.ErrorTxn{Err: code},
	}
}

// snapStream serializes the tree as a SNAP sync streams it, at the tree's current zxid.
// It runs on the core, so the state is exact (no fuzziness to repair).
func (s *Server) snapStream() []byte {
	walker := s.tree.Walk()
	var nodes []datatree.SnapNode
	for done := false; !done; {
		nodes, done = walker.Next(4096, nodes)
	}
	acls := s.tree.ACLs()
	walker.Close()
	var buf bytes.Buffer
	w, err := storage.NewSnapStreamWriter(&buf, s.sessionList(), acls)
	if err == nil {
		err = w.WriteNodes(toStorage(nodes))
	}
	if err == nil {
		err = w.Finish()
	}
	if err != nil {
		s.log.Error("cannot serialize the database for a SNAP sync", "err", err)
		return nil
	}
	return buf.Bytes()
}

// ---- learner ----

func (s *Server) becomeLearner(observer bool) {
	if observer {
		s.ens.role = roleObserving
	} else {
		s.ens.role = roleFollowing
	}
	p, ok := s.peer(s.ens.leaderSid)
	if !ok {
		s.startLooking(fmt.Sprintf("elected leader %d is not in the configuration", s.ens.leaderSid))
		return
	}
	s.log.Info("following", "leader", s.ens.leaderSid, "addr", p.quorumAddr())
	s.ens.dialing = true
	addr := p.quorumAddr()
	deadline := time.Duration(s.cfg.TickTime*s.cfg.InitLimit) * time.Millisecond
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		start := time.Now()
		// The elected leader opens its quorum port as it decides, which is when we decide
		// too: the first dials often come too early. Retry soon, then back off.
		backoff := 5 * time.Millisecond
		for {
			nc, err := net.DialTimeout("tcp", addr, time.Duration(s.cfg.TickTime)*time.Millisecond)
			if err == nil {
				s.submit(event{kind: evQuorumDialed, nconn: nc, leaderSid: p.ID})
				return
			}
			if time.Since(start) > deadline {
				s.submit(event{kind: evQuorumDialed, leaderSid: p.ID, err: err})
				return
			}
			select {
			case <-s.stopping:
				return
			case <-time.After(backoff):
				backoff = min(2*backoff, 100*time.Millisecond)
			}
		}
	}()
}

func (s *Server) onQuorumDialed(nc net.Conn, sid int64, err error) {
	if !s.ens.dialing || (s.ens.role != roleFollowing && s.ens.role != roleObserving) || sid != s.ens.leaderSid {
		if nc != nil {
			nc.Close()
		}
		return
	}
	s.ens.dialing = false
	if err != nil {
		s.startLooking("cannot connect to the leader: " + err.Error())
		return
	}
	q := newQuorumConn(s, 0, nc)
	s.ens.leaderConn = q
	cfg := zab.LearnerConfig{
		ID: s.cfg.ServerID, Observer: s.ens.role == roleObserving, TickMs: int64(s.cfg.TickTime),
		InitLimit: int64(s.cfg.InitLimit), SyncLimit: int64(s.cfg.SyncLimit),
	}
	s.ens.st.LastLogged = s.lastLogged()
	var r zab.Ready
	s.ens.learner, r = zab.NewLearner(cfg, s.ens.st, s.nowMs())
	s.wg.Add(2)
	go q.readLoop(true)
	go q.writeLoop()
	s.learnerReady(r)
}

func (s *Server) onQuorumPacket(q *quorumConn, p jute.QuorumPacket, snap *snapState) {
	now := s.nowMs()
	if s.ens.leader != nil && s.ens.qconns[q.id] == q {
		s.leaderReady(s.ens.leader.Receive(q.id, now, p))
		return
	}
	if s.ens.learner != nil && s.ens.leaderConn == q {
		r := s.ens.learner.Receive(now, p)
		if snap != nil && r.Err == nil {
			s.installSnap(snap)
			s.ens.learner.SnapLoaded(snap.zxid)
		}
		s.learnerReady(r)
	}
}

func (s *Server) onQuorumClosed(q *quorumConn) {
	if s.ens.leader != nil && s.ens.qconns[q.id] == q {
		delete(s.ens.qconns, q.id)
		s.ens.leader.Closed(q.id)
		return
	}
	if s.ens.leaderConn == q {
		s.startLooking("lost the connection to the leader")
	}
}

// installSnap replaces the tree and sessions with a leader's SNAP.
func (s *Server) installSnap(st *snapState) {
	s.tree = st.tree
	s.prep = prep.New(s.tree)
	s.prep.ExtendedTypes = s.cfg.ExtendedTypes
	s.prep.SkipACL = s.cfg.SkipACL
	s.sessions = map[int64]*clientSession{}
	s.tracker = session.NewTracker(int64(s.cfg.TickTime))
	now := s.nowMs()
	for id, to := range st.sessions {
		s.addRecoveredSession(id, to, now)
	}
	s.lastProposed = st.zxid
}

func (s *Server) learnerReady(r zab.Ready) {
	if r.AcceptedEpoch >= 0 {
		if err := s.writeEpoch("acceptedEpoch", r.AcceptedEpoch); err != nil {
			s.failStop(err)
			return
		}
		s.ens.st.AcceptedEpoch = r.AcceptedEpoch
	}
	if r.TruncateTo >= 0 {
		if err := s.truncateTo(r.TruncateTo); err != nil {
			s.failStop(err)
			return
		}
	}
	if r.TakeSnapshot {
		if err := s.snapshotNow(); err != nil {
			s.failStop(err)
			return
		}
	}
	if r.CurrentEpoch >= 0 {
		if err := s.writeEpoch("currentEpoch", r.CurrentEpoch); err != nil {
			s.failStop(err)
			return
		}
		s.ens.st.CurrentEpoch = r.CurrentEpoch
	}
	if r.SyncLog {
		// A NEWLEADER ack promises these are durable: write them here, in order, before
		// the ack leaves, after anything still queued for the log.
		s.logFence()
		for _, c := range r.Append {
			if err := s.txlog.Append(c.Zxid, c.Data); err != nil {
				s.failStop(err)
				return
			}
		}
		if err := s.txlog.Sync(); err != nil {
			s.failStop(err)
			return
		}
		if n := len(r.Append); n > 0 {
			s.durable.Store(r.Append[n-1].Zxid)
		}
	} else {
		for _, c := range r.Append {
			s.logCh <- logItem{zxid: c.Zxid, data: c.Data}
		}
	}
	if q := s.ens.leaderConn; q != nil {
		for i := range r.Send {
			q.send(&r.Send[i])
		}
	}
	for _, c := range r.Apply {
		t, err := jute.DecodeTxn(c.Data)
		if err != nil {
			s.failStop(fmt.Errorf("server: committed txn %s does not decode: %w", hex(c.Zxid), err))
			return
		}
		s.applyTxn(&pendingTxn{kind: pkRemote, txn: &t})
	}
	if r.Serving {
		s.ens.serving = true
		s.ens.elect.UpdateElectionVote(s.ens.learner.NewEpoch())
		s.lastProposed = s.tree.LastZxid()
		s.log.Info("synced with the leader", "leader", s.ens.leaderSid, "zxid", hex(s.tree.LastZxid()))
	}
	for ; r.Synced > 0; r.Synced-- {
		s.finishSync()
	}
	for _, rv := range r.Revalidated {
		s.finishReconnect(rv.Session, rv.Valid)
	}
	if r.Err != nil {
		s.startLooking(r.Err.Error())
	}
}

// truncateTo cuts the log back to zxid (TRUNC) and reloads the tree.
func (s *Server) truncateTo(zxid int64) error {
	s.logFence()
	if err := s.txlog.TruncateAfter(zxid); err != nil {
		return err
	}
	// Snapshots newer than the truncation point hold txns that no longer exist.
	snaps, _ := storage.FindSnapshots(s.cfg.FS, s.snapDir())
	for _, sf := range snaps {
		if sf.Zxid > zxid {
			s.cfg.FS.Remove(filepath.Join(s.snapDir(), sf.Name))
		}
	}
	return s.reloadFromDisk()
}

// finishSync answers the oldest sync waiting for the leader.
func (s *Server) finishSync() {
	if len(s.ens.syncs) == 0 {
		return
	}
	q := s.ens.syncs[0]
	s.ens.syncs[0] = nil
	s.ens.syncs = s.ens.syncs[1:]
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

// finishReconnect answers a client that reconnected through this learner.
func (s *Server) finishReconnect(id int64, valid bool) {
	waiting := s.ens.revalidates[id]
	delete(s.ens.revalidates, id)
	for _, w := range waiting {
		if w.c.gone {
			continue
		}
		if !valid {
			s.refuseSession(w.c, w.req)
			continue
		}
		sess := s.sessions[id]
		if sess == nil {
			s.refuseSession(w.c, w.req)
			continue
		}
		s.attach(w.c, sess, w.req)
	}
}
