// Package sim runs seeded, deterministic simulations of an ensemble: the production election
// and Zab state machines (internal/election, internal/zab) wired over a simulated network,
// disk and clock that lose, reorder and duplicate messages, crash servers (dropping what
// they had not made durable), restart them and partition them. Each server carries out its
// Readys through the same zab.Applier the server uses, against a simulated Host whose disk
// steps finish at once or at a random later step, in order, as the server's storage
// goroutine runs them. After every step it checks the invariants replication promises. A
// failing seed replays exactly. With Options.Reconfig the servers also keep a membership and
// leaders reconfigure the ensemble (reconfig.go), and the checks cover the quorums across
// configuration changes.
package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/zkd-io/zkd/internal/election"
	"github.com/zkd-io/zkd/internal/zab"
	"github.com/zkd-io/zkd/jute"
)

// Options configure one simulation.
type Options struct {
	Seed    uint64
	Servers int
	Steps   int
	// Faults turns on message loss, crashes, restarts and partitions.
	Faults bool
	// BrokenCommit makes leaders commit a proposal on any single ack (their own) instead of
	// a quorum's: a deliberately wrong protocol, which the checks must catch.
	BrokenCommit bool
	// Reconfig turns on dynamic reconfiguration: Spares more servers start outside the
	// configuration, and leaders propose reconfigs among the writes (see reconfig.go).
	Reconfig bool
	// Spares is how many servers start outside the configuration (2 when 0).
	Spares int
	// BrokenReconfig makes leaders commit a reconfig, and the proposals after it, with a
	// quorum of the new configuration alone (zab.LeaderConfig.ReconfigNewQuorumOnly): a
	// deliberately wrong protocol, which the checks must catch.
	BrokenReconfig bool
	// intersectionOnly leaves out the check that each quorum is one of its configurations,
	// to show that the intersection check alone catches BrokenReconfig.
	intersectionOnly bool
	// FastElection turns on the election's fast decision (zkd.fastElection).
	FastElection bool
	// DownReports tells servers' elections that peers are down, as the transport does on a
	// refused connection: truthfully when a server crashes, and at random, often wrongly
	// (a peer reported down that is up); a message from a peer reports it up again.
	DownReports bool
	// BrokenElectionQuorum makes elections take any set of votes for a quorum: a
	// deliberately wrong election (deciding on a non-quorum), which the checks must catch.
	BrokenElectionQuorum bool
	// Damage turns on disk damage (with Faults): a server goes down and its durable log
	// loses everything from a random entry on, as recovery keeps a log damaged there, and it
	// comes back as a damaged member, which votes with zxid -1 until a leader has synced
	// it (server's electionZxid). At most MaxDamaged servers (1 when 0) are damaged at a
	// time.
	Damage     bool
	MaxDamaged int
	// BrokenDamagedVote makes a damaged member vote with its cut log: the bug the damage
	// rule prevents, which the checks must catch.
	BrokenDamagedVote bool
	// Wide runs the servers with the wide extension (zab.LeaderConfig.Wide): a leader rolls
	// the epoch over in place when its zxid counter ends, unless a server is NarrowSid
	// (runs without wide). ZxidCounterStart is where each epoch's counter starts
	// (zab.LeaderConfig.FirstCounter), to reach the end in a few proposals.
	Wide             bool
	NarrowSid        int64
	ZxidCounterStart int64
	// ProposeWeight is how often a leader proposes, against the other actions' weights (8
	// when 0): below the rate its learners' queues drain at, a long run without faults
	// keeps its followers synced, as a rollover in place needs.
	ProposeWeight int
	// Trace, when set, receives a line per step.
	Trace func(string)
}

const (
	tickMs    = 100
	initLimit = 10
	syncLimit = 5
)

type role int

const (
	looking role = iota
	leading
	following
	down
)

type server struct {
	sid int64
	// disk: what survives a crash
	disk durableState
	// running are the disk steps started and not finished, oldest first: they finish in
	// order, and a crash loses them.
	running []diskStep
	// diskHistory is the committed history a leader read from its log when elected.
	diskHistory []zab.Committed
	// memory: the server's view of its state, disk steps included as soon as they start
	acceptedEpoch, currentEpoch int64
	log                         []zab.Committed // what the log holds once every write started is done
	apply                       *zab.Applier
	// gen counts roles: a disk step started in an earlier role finishes without telling
	// the Applier, which was Reset when that role ended.
	gen       int
	role      role
	applied   []int64 // the tree: zxids applied in order
	elect     *election.Election
	leader    *zab.Leader
	learner   *zab.Learner
	leaderSid int64
	conn      int64 // learner's connection id
	serving   bool
	partition int
	// membership (Options.Reconfig): the committed configuration, a newer one seen,
	// whether this server observes, and where a role a reconfig ended goes.
	cur      simConfig
	lastSeen *simConfig
	observer bool
	after    *afterReconfig
	// track follows a leader's quorums for the checks.
	track *leaderTrack
	// damaged: the disk's damage mark, as read at boot and cleared once synced.
	damaged bool
}

type packet struct {
	p    jute.QuorumPacket
	snap bool
}

type qconn struct {
	id          int64
	leader      int64 // sid
	learner     int64 // sid
	toLearner   []packet
	toLeader    []jute.QuorumPacket
	leaderConn  zab.ConnID
	broken      bool
	snapApplied []int64 // the leader's tree when it sent SNAP, for the learner
	observer    bool    // the learner registered as an observer
}

type emsg struct {
	from, to int64
	payload  []byte
}

// Sim is one running simulation.
type Sim struct {
	opt     Options
	rng     *rand.Rand
	now     int64
	servers map[int64]*server
	sids    []int64
	emsgs   []emsg
	conns   map[int64]*qconn
	nextCon int64
	voters  []int64

	// checks
	leaders map[int64]int64 // established epoch -> sid
	// established and rollovers count leaders established and epochs rolled over in place.
	established, rollovers int
	global                 []int64        // the committed sequence
	acked                  map[int64]bool // zxids a leader committed (a client got an answer)
	proposed               int
	step                   int
	disk                   DiskStats

	// reconfig checks: the quorums leaders used (establishments and reconfig commits are
	// pivots, checked against every other; ordinary commits, one per epoch, configurations
	// and ack set), and the configurations committed.
	pivots      []quorumRecord
	commits     []quorumRecord
	commitKinds map[string]bool
	activations []activation
	reconfigs   int
	// reconfigsCommitted counts reconfig txns committed; handovers the roles taken
	// without an election after one.
	reconfigsCommitted, handovers int
	// txns are the txns' bytes by zxid (a reconfig's carry its configuration).
	txns map[int64][]byte

	fast int // decisions made before a finalize wait ran out
	// damaged counts logs damaged; refilled, damaged members a leader synced.
	damaged, refilled int
	// votes are the proposals each server sent in each round, for the election check.
	votes map[voteKey]map[voteVal]bool
}

type voteKey struct{ sid, round int64 }
type voteVal struct{ leader, zxid, peerEpoch int64 }

// New sets up a simulation.
func New(opt Options) *Sim {
	if opt.Servers == 0 {
		opt.Servers = 3
	}
	s := &Sim{
		opt: opt, rng: rand.New(rand.NewPCG(opt.Seed, 0x51a)), now: 1000,
		servers: map[int64]*server{}, conns: map[int64]*qconn{}, leaders: map[int64]int64{}, acked: map[int64]bool{},
		commitKinds: map[string]bool{}, txns: map[int64][]byte{},
		votes: map[voteKey]map[voteVal]bool{},
	}
	for i := 1; i <= opt.Servers; i++ {
		s.sids = append(s.sids, int64(i))
		s.voters = append(s.voters, int64(i))
	}
	if opt.Reconfig {
		if opt.Spares == 0 {
			opt.Spares = 2
			s.opt.Spares = 2
		}
		for i := 1; i <= opt.Spares; i++ {
			s.sids = append(s.sids, int64(opt.Servers+i))
		}
	}
	for _, sid := range s.sids {
		sv := &server{sid: sid}
		sv.disk.cur = simConfig{voters: slices.Clone(s.voters)}
		sv.apply = zab.NewApplier(&host{s: s, sv: sv})
		s.servers[sid] = sv
		s.boot(sv)
	}
	return s
}

func (s *Sim) trace(format string, a ...any) {
	if s.opt.Trace != nil {
		s.opt.Trace(fmt.Sprintf("[%d t=%d] ", s.step, s.now) + fmt.Sprintf(format, a...))
	}
}

// boot (re)starts a server from its disk: the tree is the replay of its whole log, as
// ZooKeeper loads it.
func (s *Sim) boot(sv *server) {
	sv.acceptedEpoch, sv.currentEpoch = sv.disk.acceptedEpoch, sv.disk.currentEpoch
	sv.log = slices.Clone(sv.disk.log)
	sv.damaged = sv.disk.damaged
	sv.cur, sv.lastSeen, sv.after = sv.disk.cur, sv.disk.lastSeen, nil
	sv.observer = sv.cur.isObserver(sv.sid)
	sv.elect = election.New(s.electionConfig(sv))
	s.startLooking(sv, "boot")
}

func (sv *server) lastLogged() int64 {
	if len(sv.log) == 0 {
		return 0
	}
	return sv.log[len(sv.log)-1].Zxid
}

func (s *Sim) startLooking(sv *server, why string) {
	s.trace("sid %d looking: %s", sv.sid, why)
	s.closeConns(sv.sid)
	s.endRole(sv)
	sv.role = looking
	// Logged but unapplied txns are applied before voting (ZooKeeper fast-forwards).
	sv.reload()
	if s.takeAfterReconfig(sv) {
		return
	}
	zxid := sv.lastLogged()
	if sv.damaged && !s.opt.BrokenDamagedVote {
		zxid = -1
	}
	s.sendElection(sv, sv.elect.Start(s.now, zxid, sv.currentEpoch))
}

// endRole forgets the role's Readys not yet carried out. Disk steps it started keep running
// (the storage goroutine does not stop) but their completions no longer reach the Applier.
func (s *Sim) endRole(sv *server) {
	sv.leader, sv.learner, sv.serving, sv.track = nil, nil, false, nil
	sv.apply.Reset()
	sv.gen++
}

// reload makes the tree the replay of the log, as loading from disk does.
func (sv *server) reload() {
	sv.applied = sv.applied[:0]
	for _, c := range sv.log {
		sv.applied = append(sv.applied, c.Zxid)
	}
}

func (s *Sim) closeConns(sid int64) {
	for _, id := range sortedKeys(s.conns) {
		c := s.conns[id]
		if c.leader == sid || c.learner == sid {
			c.broken = true
			delete(s.conns, id)
			if l := s.servers[c.leader]; l.leader != nil && l.role == leading {
				l.leader.Closed(c.leaderConn)
			}
			if f := s.servers[c.learner]; f.conn == id && f.role == following && f.sid != sid {
				s.startLooking(f, "lost the leader")
			}
		}
	}
}

func (s *Sim) sendElection(sv *server, outs []election.Out) {
	for _, o := range outs {
		if o.To == sv.sid {
			continue
		}
		k := voteKey{sv.sid, o.N.ElectionEpoch}
		if s.votes[k] == nil {
			s.votes[k] = map[voteVal]bool{}
		}
		s.votes[k][voteVal{o.N.Leader, o.N.Zxid, o.N.PeerEpoch}] = true
		s.emsgs = append(s.emsgs, emsg{from: sv.sid, to: o.To, payload: o.N.Marshal()})
	}
}

// checkTally: an election round decided by its own votes (not by joining servers out of
// the election) was backed by a quorum of voters that proposed the decided vote in that
// round. Zab's epoch establishment would still refuse most such leaders, so this checks the
// election's own promise, which the fast decision must keep.
func (s *Sim) checkTally(sv *server, d *election.Decision) {
	if d == nil || sv.role != looking {
		return
	}
	acks := map[int64]bool{sv.sid: true}
	voters := s.electionConfig(sv).Voters // the deciding server's configuration
	for _, v := range voters {
		if s.votes[voteKey{v, d.ElectionEpoch}][voteVal{d.Leader, d.Zxid, d.PeerEpoch}] {
			acks[v] = true
		}
	}
	if !zab.NewMajority(voters...).IsQuorum(acks) {
		panic(violation("server %d decided leader %d in round %d on the votes of %v only", sv.sid, d.Leader, d.ElectionEpoch, sortedKeys(acks)))
	}
}

func (s *Sim) reachable(a, b int64) bool {
	return s.servers[a].role != down && s.servers[b].role != down && s.servers[a].partition == s.servers[b].partition
}

func (s *Sim) decided(sv *server, d *election.Decision) {
	if d == nil || sv.role != looking {
		return
	}
	sv.leaderSid = d.Leader
	s.trace("sid %d decided %v leader %d", sv.sid, d.State, d.Leader)
	if d.State == election.Leading {
		sv.role = leading
		qv := zab.NewMajority(s.voters...)
		var hist []zab.Committed
		for _, c := range sv.log {
			if slices.Contains(sv.applied, c.Zxid) {
				hist = append(hist, c)
			}
		}
		st := zab.PersistentState{AcceptedEpoch: sv.acceptedEpoch, CurrentEpoch: sv.currentEpoch, LastLogged: sv.lastLogged()}
		cfg := zab.LeaderConfig{ID: sv.sid, QV: qv, TickMs: tickMs, InitLimit: initLimit, SyncLimit: syncLimit, CommitLogCount: 20,
			Wide: s.wide(sv), FirstCounter: s.opt.ZxidCounterStart, Members: s.sids}
		cfg.HistoryOnDisk = true
		sv.diskHistory = hist
		if s.opt.BrokenCommit {
			cfg.CommitQV = anyAck{qv}
		}
		if s.opt.Reconfig {
			cfg.Reconfig = true
			cfg.Current = sv.cur.zab()
			if sv.lastSeen != nil {
				cfg.LastSeen = sv.lastSeen.zab()
			}
			cfg.ReconfigNewQuorumOnly = s.opt.BrokenReconfig
			sv.track = newLeaderTrack(sv)
		}
		var r zab.Ready
		sv.leader, r = zab.NewLeader(cfg, st, sv.lastApplied(), hist, s.now)
		s.leaderReady(sv, r)
		return
	}
	sv.role = following
	s.connect(sv)
}

func (sv *server) lastApplied() int64 {
	if len(sv.applied) == 0 {
		return 0
	}
	return sv.applied[len(sv.applied)-1]
}

// connect opens a learner connection to the elected leader, if it is leading and reachable.
func (s *Sim) connect(sv *server) {
	l := s.servers[sv.leaderSid]
	if l.role != leading || !s.reachable(sv.sid, l.sid) {
		// The learner gives up after a while and looks again (Tick handles it).
		sv.learner = nil
		return
	}
	s.endRole(sv)
	s.nextCon++
	c := &qconn{id: s.nextCon, leader: l.sid, learner: sv.sid, leaderConn: zab.ConnID(s.nextCon), observer: sv.observer}
	s.conns[c.id] = c
	sv.conn = c.id
	l.leader.Accept(c.leaderConn, s.now)
	st := zab.PersistentState{AcceptedEpoch: sv.acceptedEpoch, CurrentEpoch: sv.currentEpoch, LastLogged: sv.lastLogged()}
	var r zab.Ready
	sv.learner, r = zab.NewLearner(zab.LearnerConfig{ID: sv.sid, Observer: sv.observer, ConfigVersion: sv.cur.version, TickMs: tickMs, InitLimit: initLimit, SyncLimit: syncLimit, Wide: s.wide(sv)}, st, s.now)
	sv.apply.Push(r)
}

// anyQuorum is a deliberately wrong election quorum: any set of votes is enough.
type anyQuorum struct{ zab.Majority }

func (anyQuorum) IsQuorum(map[int64]bool) bool { return true }

// anyAck is a deliberately wrong quorum: one ack is enough.
type anyAck struct{ zab.Majority }

func (anyAck) IsQuorum(sids map[int64]bool) bool { return len(sids) > 0 }

func (s *Sim) connOf(leaderSid int64, id zab.ConnID) *qconn {
	c := s.conns[int64(id)]
	if c == nil || c.leader != leaderSid {
		return nil
	}
	return c
}

func (s *Sim) breakConn(c *qconn) {
	delete(s.conns, c.id)
	c.broken = true
	if l := s.servers[c.leader]; l.role == leading && l.leader != nil {
		l.leader.Closed(c.leaderConn)
	}
	if f := s.servers[c.learner]; f.role == following && f.conn == c.id {
		s.startLooking(f, "connection to the leader broke")
	}
}

func applyZxids(cs []zab.Committed) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.Zxid
	}
	return out
}

// data is a txn's bytes: a reconfig's as proposed, any other a setData.
func (s *Sim) data(zxid int64) []byte {
	if d, ok := s.txns[zxid]; ok {
		return d
	}
	return txnData(zxid)
}

func txnData(zxid int64) []byte {
	return jute.EncodeTxn(nil, &jute.LoggedTxn{
		Header: jute.TxnHeader{ClientID: 1, Cxid: int32(zxid), Zxid: zxid, Time: 1, Type: jute.OpSetData},
		Body:   &jute.SetDataTxn{Path: "/x", Data: nil, Version: int32(zab.Counter(zxid))},
	})
}

// Violation is a broken invariant.
type Violation struct{ Msg string }

func (v Violation) Error() string { return "sim: invariant violated: " + v.Msg }

func violation(format string, a ...any) Violation { return Violation{fmt.Sprintf(format, a...)} }

// extendGlobal checks a leader's applied sequence against the committed one: it must extend
// it (every committed txn, in order, acknowledged ones included) and then becomes it.
func (s *Sim) extendGlobal(sid int64, applied []int64, establishing bool) {
	n := min(len(applied), len(s.global))
	if !slices.Equal(applied[:n], s.global[:n]) || (len(applied) < len(s.global) && establishing) {
		missing := []string{}
		for _, z := range s.global {
			if !slices.Contains(applied, z) && s.acked[z] {
				missing = append(missing, zab.Hex(z))
			}
		}
		panic(violation("leader %d's history diverges from the committed one (acknowledged writes missing: %v)\n leader:    %v\n committed: %v",
			sid, missing, hexes(applied), hexes(s.global)))
	}
	if len(applied) > len(s.global) {
		s.global = append(s.global[:0:0], applied...)
	}
}

// checkPrefix: a serving learner's tree is a prefix of the committed sequence, and equals
// the replay of (a prefix of) its log.
func (s *Sim) checkPrefix(sv *server) {
	n := len(sv.applied)
	if n > len(s.global) || !slices.Equal(sv.applied, s.global[:n]) {
		panic(violation("server %d applied %v, not a prefix of the committed %v", sv.sid, hexes(sv.applied), hexes(s.global)))
	}
	checkReplay(sv)
}

func checkReplay(sv *server) {
	logged := applyZxids(sv.log)
	if len(sv.applied) > len(logged) || !slices.Equal(sv.applied, logged[:len(sv.applied)]) {
		panic(violation("server %d's tree %v is not the replay of its log %v", sv.sid, hexes(sv.applied), hexes(logged)))
	}
}

func hexes(zs []int64) string {
	var b strings.Builder
	for i, z := range zs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%d", zab.Epoch(z), zab.Counter(z))
	}
	return b.String()
}

// catchViolation, deferred, turns a check's panic into the returned error; any other panic
// goes on.
func catchViolation(err *error) {
	if r := recover(); r != nil {
		if v, ok := r.(Violation); ok {
			*err = v
			return
		}
		panic(r)
	}
}

// Run executes the simulation; it returns a Violation if an invariant broke.
func (s *Sim) Run() (err error) {
	defer catchViolation(&err)
	for s.step = 0; s.step < s.opt.Steps; s.step++ {
		s.doStep()
	}
	return nil
}

type action struct {
	weight int
	do     func()
}

func (s *Sim) doStep() {
	var acts []action
	if len(s.emsgs) > 0 {
		acts = append(acts, action{30, s.deliverElection})
	}
	for _, id := range sortedKeys(s.conns) {
		c := s.conns[id]
		if len(c.toLearner) > 0 {
			acts = append(acts, action{20, func() { s.deliverToLearner(c) }})
		}
		if len(c.toLeader) > 0 {
			acts = append(acts, action{20, func() { s.deliverToLeader(c) }})
		}
	}
	for _, sid := range s.sids {
		sv := s.servers[sid]
		if sv.role != down && len(sv.running) == 0 && len(sv.disk.log) < len(sv.log) {
			acts = append(acts, action{15, func() { s.fsync(sv) }})
		}
		if sv.role != down && len(sv.running) > 0 {
			acts = append(acts, action{15, func() { s.finishDisk(sv) }})
		}
		if sv.role == leading && sv.serving {
			acts = append(acts, action{cmp.Or(s.opt.ProposeWeight, 8), func() { s.propose(sv) }})
			if s.opt.Reconfig {
				acts = append(acts, action{3, func() { s.proposeReconfig(sv) }})
			}
		}
	}
	acts = append(acts, action{10, s.tick})
	// With reconfigs, faults come half as often: a reconfig needs a synced quorum of its
	// new configuration, which the full rate rarely leaves standing.
	if s.opt.Faults && (!s.opt.Reconfig || s.rng.IntN(2) == 0) {
		acts = append(acts, action{1, s.crash}, action{2, s.restart}, action{1, s.partition}, action{2, s.heal})
		if s.opt.Damage {
			acts = append(acts, action{1, s.damage})
		}
		if len(s.conns) > 0 {
			acts = append(acts, action{1, s.breakRandomConn})
		}
	}
	if s.opt.DownReports {
		acts = append(acts, action{3, s.reportRandomDown})
	}
	total := 0
	for _, a := range acts {
		total += a.weight
	}
	x := s.rng.IntN(total)
	for _, a := range acts {
		if x < a.weight {
			a.do()
			return
		}
		x -= a.weight
	}
}

func sortedKeys[V any](m map[int64]V) []int64 {
	ks := make([]int64, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

func (s *Sim) deliverElection() {
	i := s.rng.IntN(len(s.emsgs))
	m := s.emsgs[i]
	s.emsgs = append(s.emsgs[:i], s.emsgs[i+1:]...)
	if !s.reachable(m.from, m.to) || (s.opt.Faults && s.rng.IntN(20) == 0) {
		return // lost
	}
	if s.opt.Faults && s.rng.IntN(30) == 0 {
		s.emsgs = append(s.emsgs, m) // duplicated
	}
	sv := s.servers[m.to]
	n, err := election.Unmarshal(m.from, m.payload)
	if err != nil {
		panic(err)
	}
	if s.opt.DownReports {
		sv.elect.PeerUp(m.from) // the transport had a connection to deliver it
	}
	if s.onElectionConfig(sv, n.Config) {
		return
	}
	outs, d := sv.elect.Receive(s.now, n)
	if d != nil && n.State == election.Looking && sv.role == looking {
		s.fast++ // a LOOKING vote ended the round: only the fast decision does that
		s.checkTally(sv, d)
	}
	s.sendElection(sv, outs)
	s.decided(sv, d)
	if sv.role == following && sv.learner == nil && sv.leaderSid != 0 {
		s.connect(sv)
	}
}

func (s *Sim) deliverToLearner(c *qconn) {
	pk := c.toLearner[0]
	c.toLearner = c.toLearner[1:]
	sv := s.servers[c.learner]
	if sv.learner == nil || sv.conn != c.id {
		return
	}
	r := sv.learner.Receive(s.now, pk.p)
	if pk.snap && r.Err == nil {
		sv.applied = append(sv.applied[:0], c.snapApplied...)
		sv.learner.SnapLoaded(pk.p.Zxid)
	}
	sv.apply.Push(r)
}

func (s *Sim) deliverToLeader(c *qconn) {
	p := c.toLeader[0]
	c.toLeader = c.toLeader[1:]
	sv := s.servers[c.leader]
	if sv.role != leading || sv.leader == nil {
		return
	}
	s.observeAck(sv, c, p)
	s.leaderReady(sv, sv.leader.Receive(c.leaderConn, s.now, p))
}

// fsync makes the txns appended since the last one durable. It waits for the disk steps
// running before it, as the storage goroutine would.
func (s *Sim) fsync(sv *server) {
	sv.disk.log = slices.Clone(sv.log)
	z := sv.log[len(sv.log)-1].Zxid
	switch {
	case sv.role == leading && sv.leader != nil:
		if sv.track != nil {
			sv.track.acked[sv.sid] = z
		}
		s.leaderReady(sv, sv.leader.LocalLogged(z))
	case sv.role == following && sv.learner != nil:
		sv.apply.Push(sv.learner.Logged(z))
	}
}

// allSyncedWide reports whether every other server runs with wide and follows leader,
// synced (a learner serves only after the leader sent it UPTODATE): the leader must then
// roll over in place.
func (s *Sim) allSyncedWide(leader *server) bool {
	if !s.wide(leader) {
		return false
	}
	for _, sid := range s.sids {
		f := s.servers[sid]
		if sid == leader.sid {
			continue
		}
		if !s.wide(f) || f.role != following || f.leaderSid != leader.sid || !f.serving || f.learner == nil || !f.learner.Serving() {
			return false
		}
		if c := s.conns[f.conn]; c == nil || c.leader != leader.sid {
			return false
		}
	}
	return true
}

// wide reports whether sv runs with the wide extension.
func (s *Sim) wide(sv *server) bool { return s.opt.Wide && sv.sid != s.opt.NarrowSid }

func (s *Sim) propose(sv *server) {
	z, err := sv.leader.NextZxid()
	if errors.Is(err, zab.ErrCounterExhausted) {
		if s.allSyncedWide(sv) {
			panic(violation("leader %d stepped down at the counter's end with every member synced and wide: %v", sv.sid, err))
		}
		// As the server: the leader steps down and an election starts the next epoch.
		s.startLooking(sv, err.Error())
		return
	}
	if err != nil {
		return
	}
	s.proposed++
	if sv.track != nil {
		sv.track.claims[z] = sv.track.configs()
	}
	s.leaderReady(sv, sv.leader.Propose(z, txnData(z)))
}

func (s *Sim) tick() {
	s.now += int64(s.rng.IntN(tickMs)) + 1
	for _, sid := range s.sids {
		sv := s.servers[sid]
		switch sv.role {
		case looking:
			outs, d := sv.elect.Tick(s.now)
			s.checkTally(sv, d)
			s.sendElection(sv, outs)
			s.decided(sv, d)
		case leading:
			s.leaderReady(sv, sv.leader.Tick(s.now))
		case following:
			if sv.learner == nil {
				// The leader it chose is not reachable: ZooKeeper retries, then looks again.
				s.connect(sv)
				if sv.learner == nil && s.rng.IntN(5) == 0 {
					s.startLooking(sv, "cannot reach the leader")
				}
				continue
			}
			sv.apply.Push(sv.learner.Tick(s.now))
		}
	}
}

func (s *Sim) crash() {
	s.crashServer(s.servers[s.sids[s.rng.IntN(len(s.sids))]])
}

// damage damages a random server's log, unless MaxDamaged others are: it goes down (the
// damage is found at its next start) and its log keeps only the entries before a random
// one, with the damage mark.
func (s *Sim) damage() {
	sv := s.servers[s.sids[s.rng.IntN(len(s.sids))]]
	others := 0
	for _, o := range s.servers {
		if o.disk.damaged && o != sv {
			others++
		}
	}
	if others >= max(s.opt.MaxDamaged, 1) {
		return
	}
	s.crashServer(sv)
	if len(sv.disk.log) == 0 {
		return
	}
	k := s.rng.IntN(len(sv.disk.log))
	s.trace("sid %d's log damaged at %s: keeps %d of %d txns", sv.sid, zab.Hex(sv.disk.log[k].Zxid), k, len(sv.disk.log))
	sv.disk.log = sv.disk.log[:k:k]
	sv.disk.damaged = true
	s.damaged++
}

func (s *Sim) crashServer(sv *server) {
	if sv.role == down {
		return
	}
	s.trace("sid %d crashes (log %d txns in memory, %d durable; losing %d running disk steps %v)",
		sv.sid, len(sv.log), len(sv.disk.log), len(sv.running), runningNames(sv.running))
	s.closeConns(sv.sid)
	s.endRole(sv)
	sv.role = down
	if s.opt.DownReports {
		// Its election port now refuses: the others' transports find out.
		for _, sid := range s.sids {
			if o := s.servers[sid]; o.role != down && sid != sv.sid {
				s.peerDown(o, sv.sid)
			}
		}
	}
	// What a disk step had not finished is lost with the memory; boot reads the disk.
	s.disk.Lost += len(sv.running)
	clear(sv.running)
	sv.running = sv.running[:0]
}

// reportRandomDown tells a random server that a random other one is down, whether it is or
// not: a transport's report may be wrong (or stale by the time it is read).
func (s *Sim) reportRandomDown() {
	sv := s.servers[s.sids[s.rng.IntN(len(s.sids))]]
	other := s.sids[s.rng.IntN(len(s.sids))]
	if sv.role == down || other == sv.sid {
		return
	}
	s.peerDown(sv, other)
}

func (s *Sim) peerDown(sv *server, sid int64) {
	wrong := s.servers[sid].role != down
	s.trace("sid %d told sid %d is down (wrongly: %v)", sv.sid, sid, wrong)
	outs, d := sv.elect.PeerDown(s.now, sid)
	if d != nil && sv.role == looking {
		s.fast++
		s.checkTally(sv, d)
	}
	s.sendElection(sv, outs)
	s.decided(sv, d)
}

func (s *Sim) restart() {
	sv := s.servers[s.sids[s.rng.IntN(len(s.sids))]]
	if s.opt.Reconfig {
		// With spares, a random pick leaves too many servers down: pick a down one.
		var downs []int64
		for _, sid := range s.sids {
			if s.servers[sid].role == down {
				downs = append(downs, sid)
			}
		}
		if len(downs) == 0 {
			return
		}
		sv = s.servers[downs[s.rng.IntN(len(downs))]]
	}
	if sv.role != down {
		return
	}
	s.trace("sid %d restarts", sv.sid)
	s.boot(sv)
}

func (s *Sim) partition() {
	sv := s.servers[s.sids[s.rng.IntN(len(s.sids))]]
	sv.partition = 1 + s.rng.IntN(2)
	s.trace("sid %d partitioned into %d", sv.sid, sv.partition)
	for _, id := range sortedKeys(s.conns) {
		if c := s.conns[id]; c != nil && !s.reachable(c.leader, c.learner) {
			s.breakConn(c)
		}
	}
}

// Settle ends the faults: partitions heal, every server down restarts, and the run goes on
// until every server serves undamaged (a damaged member refilled) or maxSteps pass. It
// reports whether the ensemble got there, and a Violation if a check broke meanwhile.
// Without reconfigs every server is a voter, so with the faults over a quorum of healthy
// members exists and the ensemble must get there.
func (s *Sim) Settle(maxSteps int) (ok bool, err error) {
	defer catchViolation(&err)
	s.opt.Faults, s.opt.DownReports = false, false
	s.heal()
	for _, sid := range s.sids {
		if sv := s.servers[sid]; sv.role == down {
			s.boot(sv)
		}
	}
	settled := func() bool {
		for _, sid := range s.sids {
			sv := s.servers[sid]
			if sv.role == down || !sv.serving || sv.damaged {
				return false
			}
		}
		return true
	}
	for i := 0; i < maxSteps; i++ {
		if settled() {
			return true, nil
		}
		s.step++
		s.doStep()
	}
	return settled(), nil
}

func (s *Sim) heal() {
	for _, sid := range s.sids {
		s.servers[sid].partition = 0
	}
}

func (s *Sim) breakRandomConn() {
	ids := sortedKeys(s.conns)
	s.breakConn(s.conns[ids[s.rng.IntN(len(ids))]])
}

// Stats summarizes a run.
type Stats struct {
	Epochs, Committed, Proposed int
	// Reconfigs counts the configurations leaders activated (commits and establishments).
	Reconfigs int
	// ReconfigsCommitted counts the reconfig txns committed; Handovers the roles servers
	// took without an election, as a reconfig named them (takeAfterReconfig).
	ReconfigsCommitted, Handovers int
	Disk                          DiskStats
	// FastDecisions counts elections decided before their finalize wait ran out.
	FastDecisions int
	// Damaged counts logs damaged (Options.Damage); Refilled, damaged members a leader
	// synced, after which they vote again.
	Damaged, Refilled int
	// Established counts leaders established (each after an election); Rollovers the
	// epochs leaders moved to in place (Options.Wide).
	Established, Rollovers int
}

// DiskStats counts what the asynchronous disk steps did, to show a run exercised them.
type DiskStats struct {
	// Later counts disk steps that finished at a later step than they started.
	Later int
	// Stale counts those that finished after their role had ended.
	Stale int
	// Lost counts those a crash cut short.
	Lost int
}

// Committed is the committed sequence of zxids the run checked every server against.
func (s *Sim) Committed() []int64 { return slices.Clone(s.global) }

func (s *Sim) Stats() Stats {
	return Stats{Epochs: len(s.leaders), Established: s.established, Rollovers: s.rollovers, Committed: len(s.global), Proposed: s.proposed, Disk: s.disk, Reconfigs: s.reconfigs, ReconfigsCommitted: s.reconfigsCommitted, Handovers: s.handovers, FastDecisions: s.fast, Damaged: s.damaged, Refilled: s.refilled}
}
