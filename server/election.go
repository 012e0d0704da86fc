package server

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkd-io/zkd/internal/clock"
	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/election"
	"github.com/zkd-io/zkd/internal/peer"
	"github.com/zkd-io/zkd/internal/quorum"
	"github.com/zkd-io/zkd/internal/session"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/internal/zab"
	"github.com/zkd-io/zkd/jute"
)

// Peer is the ensemble member type of Config.Peers. It is config.Member (zkd has one
// membership type); the alias remains for the AdminServer's code, which is moving out of
// this package.
type Peer = config.Member

// listenAddrs is where a member's port listens: its addresses, or with quorumListenOnAllIPs
// every interface on each distinct port (QuorumCnxManager and Leader bind the wildcard
// address with the configured port).
func listenAddrs(addrs []string, allIPs bool) []string {
	if !allIPs {
		return addrs
	}
	var out []string
	for _, a := range addrs {
		_, port, _ := net.SplitHostPort(a)
		if w := net.JoinHostPort("0.0.0.0", port); !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
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

// ensemble is what an ensemble member keeps across roles; the core goroutine owns it.
type ensemble struct {
	// qv decides every quorum: election, NEWLEADER and commit acks, pings, step-down.
	qv quorum.Verifier
	// The committed configuration (reconfig.go): its members, quorum shape and version;
	// lastSeen is a newer one proposed, nil when none. observer is this server's learner
	// type (a server the configuration leaves out is a participant without a vote).
	peers    []config.Member
	hier     config.Hierarchy
	version  int64
	lastSeen *config.Dynamic
	observer bool
	// after is where a role a reconfig ended goes without an election; flushOnLeave lets
	// the clients' queued answers (the reconfig's among them) out before their connections
	// close.
	after        *afterReconfig
	flushOnLeave bool
	elect        *election.Election
	electTimer   clock.Timer
	transport    ElectionTransport
	st           zab.PersistentState
	// electing: an election round is running; its decision makes the next role.
	electing bool
	// gen counts role changes, so a completion of an older one is recognised.
	gen int
	// syncs of learners by the mode they got, for mntr (diff_count, snap_count)
	diffs, snaps, truncs int64
	// An observer's learner masters (observermaster.go): the voters it was drawn from, the
	// shuffled order and the next to try.
	omVoters, omOrder []int64
	omNext            int
	// peerStates carries the transport's reports of peers down and up to the core.
	peerStates peerStates
}

// peerStates hands the election transport's peer reports (peer.TCPConfig.PeerState) to the
// core without ever blocking the transport: only the latest state of each peer matters, so
// reports collapse in a map and a one-slot channel says there are some.
type peerStates struct {
	mu      sync.Mutex
	pending map[int64]bool // sid -> up
	signal  chan struct{}
}

func (p *peerStates) init() { p.signal = make(chan struct{}, 1) }

func (p *peerStates) report(sid int64, up bool) {
	p.mu.Lock()
	if p.pending == nil {
		p.pending = map[int64]bool{}
	}
	p.pending[sid] = up
	p.mu.Unlock()
	select {
	case p.signal <- struct{}{}:
	default:
	}
}

func (p *peerStates) take() map[int64]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.pending
	p.pending = nil
	return m
}

// onPeerStates feeds the election what the transport proved about peers: with
// zkd.fastElection a down report can end the round at once.
func (s *Server) onPeerStates() {
	states := s.ens.peerStates.take()
	for _, sid := range slices.Sorted(maps.Keys(states)) {
		if states[sid] {
			s.ens.elect.PeerUp(sid)
			continue
		}
		s.log.Debug("election peer down", "sid", sid, "electing", s.ens.electing)
		outs, d := s.ens.elect.PeerDown(s.nowMs(), sid)
		s.sendElection(outs)
		if d != nil {
			s.decided(*d)
		}
	}
	s.armElectionTimer()
}

func (s *Server) ensembleMode() bool { return len(s.cfg.Peers) > 0 }

func (s *Server) self() config.Member {
	p, _ := s.peer(s.cfg.ServerID)
	return p
}

func (s *Server) peer(id int64) (config.Member, bool) {
	for _, p := range s.ens.peers {
		if p.ID == id {
			return p, true
		}
	}
	return config.Member{}, false
}

func (s *Server) voters() []int64 {
	var v []int64
	for _, p := range s.ens.peers {
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

// writeEpoch runs on the storage goroutine.
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

// initEnsemble reads the epochs, before the core runs. An epoch file that does not parse,
// or says less than the log does (ZooKeeper refuses "the current epoch is older than the
// last zxid"), is damage: the member takes the log's epoch and stays out of elections until
// a leader has synced it, which writes both files again.
func (s *Server) initEnsemble() error {
	last := s.tree.LastZxid()
	cur, cerr := s.readEpoch("currentEpoch", zab.Epoch(last))
	acc, aerr := s.readEpoch("acceptedEpoch", cur)
	if err := errors.Join(cerr, aerr); err != nil || cur < zab.Epoch(last) || acc < cur {
		if err == nil {
			err = fmt.Errorf("server: acceptedEpoch %d, currentEpoch %d, last zxid %s", acc, cur, hex(last))
		}
		s.log.Warn("damaged epoch files: this member will not vote until it has synced with a leader", "err", err)
		if err := storage.WriteDamageMark(s.cfg.FS, s.logDir(), last); err != nil {
			return err
		}
		s.damaged = true
		cur = zab.Epoch(last)
		acc = max(acc, cur)
	}
	s.ens.st = zab.PersistentState{AcceptedEpoch: acc, CurrentEpoch: cur, LastLogged: last}
	s.ens.peerStates.init()
	s.ens.elect = election.New(s.electionConfig())
	return nil
}

// startLooking ends the current role and starts an election once the storage goroutine
// has written everything queued before: the vote names the last logged zxid. A tree behind
// its log (proposals logged but never committed here) is first rebuilt from disk, as
// ZooKeeper fast-forwards its database before voting.
func (s *Server) startLooking(reason string) {
	if s.role.serving() || s.ens.electing {
		s.log.Info("looking for a leader", "reason", reason, "was", s.role.mode())
	}
	s.leaveRole()
	s.stopServing()
	s.role = lookingRole{}
	s.counters.add(cntLooking, 1)
	s.ens.electing = false
	s.ens.gen++
	gen := s.ens.gen
	if s.cfg.ReadOnlyMode {
		s.armReadOnly(gen)
	}
	reload := s.lastQueued > s.tree.LastZxid()
	s.storageOp(func() func() {
		var ld *loaded
		if reload {
			var err error
			if ld, err = s.reloadOnStorage(); err != nil {
				s.failStop(err)
				return nil
			}
		}
		return func() {
			if ld != nil {
				s.install(ld)
			}
			if s.ens.gen != gen {
				return // a later role change starts its own election
			}
			s.ens.electing = true
			if d, ok := s.takeResync(); ok {
				s.log.Info("rejoining the leader to resync", "leader", d.Leader)
				s.ens.elect.Decided(d)
				s.decided(d)
				return
			}
			if d, ok := s.takeAfterReconfig(); ok {
				// QuorumPeer.updateServerState: a reconfig named the leader.
				s.log.Info("taking the role a reconfig named", "leader", d.Leader, "state", d.State)
				s.ens.elect.Decided(d)
				s.decided(d)
				return
			}
			s.ens.st.LastLogged = max(s.tree.LastZxid(), s.lastQueued)
			s.sendElection(s.ens.elect.Start(s.nowMs(), s.electionZxid(), s.ens.st.CurrentEpoch))
			s.armElectionTimer()
		}
	})
}

// leaveRole tears down the current role and everything that depended on it: clients are
// disconnected, pending writes are dropped (their clients see the disconnect).
func (s *Server) leaveRole() {
	s.role.stop()
	flush := s.ens.flushOnLeave
	s.ens.flushOnLeave = false
	for c := range s.conns {
		s.detach(c)
		if flush {
			// The reconfig that ended the role was answered: the answer goes out first.
			c.sendAndClose(nil)
		} else {
			c.close()
		}
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
		s.tracker.Add(sess.id, sess.timeout, s.sessionMs(now))
	}
	s.pending = nil
	s.prep.Reset()
	s.stepDown = nil
}

// reloadOnStorage rebuilds the tree and sessions from the snapshot and the whole log; it
// runs on the storage goroutine, which owns the log.
func (s *Server) reloadOnStorage() (*loaded, error) {
	if err := s.txlog.Close(); err != nil {
		return nil, err
	}
	return s.load()
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
		s.ens.electTimer = s.clk.NewTimer(d)
		return
	}
	s.ens.electTimer.Stop()
	select {
	case <-s.ens.electTimer.C():
	default:
	}
	s.ens.electTimer.Reset(d)
}

func (s *Server) electionTimerC() <-chan time.Time {
	if s.ens.electTimer == nil {
		return nil
	}
	return s.ens.electTimer.C()
}

func (s *Server) onElectionMessage(m ElectionMessage) {
	n, err := election.Unmarshal(m.From, m.Payload)
	if err != nil {
		s.log.Debug("dropping malformed election notification", "from", m.From, "err", err)
		return
	}
	if s.onElectionConfig(n.Config) {
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
	if !s.ens.electing {
		return
	}
	s.ens.electing = false
	if d.State == election.Leading && s.damaged {
		// The election never decides so (it votes with zxid -1); a guard all the same: a
		// member that lost txns must not lead.
		s.log.Error("refusing to lead while damaged: looking again")
		s.startLooking("damaged members do not lead")
		return
	}
	if s.isReadOnly() {
		// A quorum again: the read-only server shuts before the member takes its role.
		s.role.stop()
	}
	switch d.State {
	case election.Leading:
		s.role = newLeaderRole(s)
	case election.Following:
		s.role = newFollowerRole(s, d.Leader)
	case election.Observing:
		s.role = newObserverRole(s, d.Leader)
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

// damagedResendMs caps a damaged member's election resend interval (ZooKeeper's grows to 60 s).
const damagedResendMs = 1000

// electionZxid is the zxid this server votes with: its last logged one, or -1 while it is
// damaged. Every peer, ZooKeeper's included, ignores a vote with zxid -1, and a server
// voting so ignores its peers' votes and only joins a leader a quorum already follows
// (FastLeaderElection's "Ignoring notification as our zxid is -1"): a member that lost
// txns can neither elect a leader that lacks them nor lead, yet rejoins any leader the
// healthy members elect.
func (s *Server) electionZxid() int64 {
	if s.damaged {
		return -1
	}
	return s.ens.st.LastLogged
}

// refilled ends a damaged member's exile once a leader has synced it: everything it had
// logged is either back from the leader or was never committed. The mark goes on the
// storage goroutine, after the sync's own writes.
func (s *Server) refilled() {
	if !s.damaged {
		return
	}
	s.storageOp(func() func() {
		if err := storage.ClearDamageMark(s.cfg.FS, s.logDir()); err != nil {
			s.log.Error("cannot clear the damage mark; still not voting", "err", err)
			return nil
		}
		return func() {
			// Even if a new role began meanwhile: the refill is on disk.
			s.damaged = false
			s.ens.elect.SetConfig(s.electionConfig())
			s.log.Info("damaged member refilled by the leader: voting again", "zxid", hex(s.tree.LastZxid()))
		}
	})
}
