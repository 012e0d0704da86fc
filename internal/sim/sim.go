// Package sim runs seeded, deterministic simulations of an ensemble: the production election
// and Zab state machines (internal/election, internal/zab) wired over a simulated network,
// disk and clock that lose, reorder and duplicate messages, crash servers (dropping what
// they had not fsynced), restart them and partition them. After every step it checks the
// invariants replication promises. A failing seed replays exactly.
package sim

import (
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
	// disk
	acceptedEpoch, currentEpoch int64
	log                         []zab.Committed
	durable                     int
	// memory
	role      role
	applied   []int64 // the tree: zxids applied in order
	elect     *election.Election
	leader    *zab.Leader
	learner   *zab.Learner
	leaderSid int64
	conn      int64 // learner's connection id
	serving   bool
	partition int
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
	leaders  map[int64]int64 // established epoch -> sid
	global   []int64         // the committed sequence
	acked    map[int64]bool  // zxids a leader committed (a client got an answer)
	proposed int
	step     int
}

// New sets up a simulation.
func New(opt Options) *Sim {
	if opt.Servers == 0 {
		opt.Servers = 3
	}
	s := &Sim{
		opt: opt, rng: rand.New(rand.NewPCG(opt.Seed, 0x51a)), now: 1000,
		servers: map[int64]*server{}, conns: map[int64]*qconn{}, leaders: map[int64]int64{}, acked: map[int64]bool{},
	}
	for i := 1; i <= opt.Servers; i++ {
		s.sids = append(s.sids, int64(i))
		s.voters = append(s.voters, int64(i))
	}
	for _, sid := range s.sids {
		sv := &server{sid: sid}
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
	sv.log = sv.log[:sv.durable]
	sv.applied = sv.applied[:0]
	for _, c := range sv.log {
		sv.applied = append(sv.applied, c.Zxid)
	}
	sv.elect = election.New(election.Config{ID: sv.sid, Voters: s.voters})
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
	sv.role = looking
	sv.leader, sv.learner, sv.serving = nil, nil, false
	// Logged but unapplied txns are applied before voting (ZooKeeper fast-forwards).
	sv.applied = sv.applied[:0]
	for _, c := range sv.log {
		sv.applied = append(sv.applied, c.Zxid)
	}
	s.sendElection(sv, sv.elect.Start(s.now, sv.lastLogged(), sv.currentEpoch))
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
		s.emsgs = append(s.emsgs, emsg{from: sv.sid, to: o.To, payload: o.N.Marshal()})
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
		cfg := zab.LeaderConfig{ID: sv.sid, QV: qv, TickMs: tickMs, InitLimit: initLimit, SyncLimit: syncLimit, CommitLogCount: 20}
		cfg.Older = func(from int64) []zab.Committed { return append([]zab.Committed(nil), hist...) }
		if s.opt.BrokenCommit {
			cfg.CommitQV = anyAck{qv}
		}
		var r zab.LeaderReady
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
	s.nextCon++
	c := &qconn{id: s.nextCon, leader: l.sid, learner: sv.sid, leaderConn: zab.ConnID(s.nextCon)}
	s.conns[c.id] = c
	sv.conn = c.id
	l.leader.Accept(c.leaderConn, s.now)
	st := zab.PersistentState{AcceptedEpoch: sv.acceptedEpoch, CurrentEpoch: sv.currentEpoch, LastLogged: sv.lastLogged()}
	var r zab.Ready
	sv.learner, r = zab.NewLearner(zab.LearnerConfig{ID: sv.sid, TickMs: tickMs, InitLimit: initLimit, SyncLimit: syncLimit}, st, s.now)
	s.learnerReady(sv, r)
}

// anyAck is a deliberately wrong quorum: one ack is enough.
type anyAck struct{ zab.Majority }

func (anyAck) IsQuorum(sids map[int64]bool) bool { return len(sids) > 0 }

func (s *Sim) leaderReady(sv *server, r zab.LeaderReady) {
	if r.AcceptedEpoch >= 0 {
		sv.acceptedEpoch = r.AcceptedEpoch
	}
	if r.CurrentEpoch >= 0 {
		sv.currentEpoch = r.CurrentEpoch
	}
	sv.log = append(sv.log, r.Append...)
	for _, o := range r.Out {
		c := s.connOf(sv.sid, o.Conn)
		if c == nil {
			continue
		}
		pk := packet{p: o.Packet, snap: o.SnapFollows}
		if o.SnapFollows {
			c.snapApplied = append([]int64(nil), sv.applied...)
		}
		c.toLearner = append(c.toLearner, pk)
	}
	for _, id := range r.Close {
		if c := s.connOf(sv.sid, id); c != nil {
			s.breakConn(c)
		}
	}
	if r.Established {
		if prev, ok := s.leaders[sv.leader.Epoch()]; ok && prev != sv.sid {
			panic(violation("two leaders established epoch %d: %d and %d", sv.leader.Epoch(), prev, sv.sid))
		}
		s.leaders[sv.leader.Epoch()] = sv.sid
		sv.serving = true
		sv.elect.UpdateElectionVote(sv.leader.Epoch())
		s.trace("sid %d established epoch %d", sv.sid, sv.leader.Epoch())
		// Everything it holds is now committed: it must extend what was committed before,
		// including every acknowledged write.
		s.extendGlobal(sv.sid, sv.applied, true)
	}
	for _, c := range r.Apply {
		sv.applied = append(sv.applied, c.Zxid)
		s.acked[c.Zxid] = true
		s.extendGlobal(sv.sid, sv.applied, false)
	}
	if len(r.Apply) > 0 {
		checkReplay(sv)
	}
	if r.StepDown != nil {
		s.startLooking(sv, r.StepDown.Error())
	}
}

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

func (s *Sim) learnerReady(sv *server, r zab.Ready) {
	if r.AcceptedEpoch >= 0 {
		sv.acceptedEpoch = r.AcceptedEpoch
	}
	if r.TruncateTo >= 0 {
		keep := 0
		for keep < len(sv.log) && sv.log[keep].Zxid <= r.TruncateTo {
			keep++
		}
		sv.log = sv.log[:keep]
		sv.durable = min(sv.durable, keep)
		sv.applied = sv.applied[:0]
		for _, c := range sv.log {
			sv.applied = append(sv.applied, c.Zxid)
		}
	}
	if r.TakeSnapshot {
		// The simulated snapshot is the applied list itself; the log becomes those txns.
		var log []zab.Committed
		for _, z := range sv.applied {
			log = append(log, zab.Committed{Zxid: z, Data: txnData(z)})
		}
		sv.log = log
		sv.durable = len(log)
	}
	if r.CurrentEpoch >= 0 {
		sv.currentEpoch = r.CurrentEpoch
	}
	sv.log = append(sv.log, r.Append...)
	if r.SyncLog {
		sv.durable = len(sv.log)
	}
	if c := s.conns[sv.conn]; c != nil {
		c.toLeader = append(c.toLeader, r.Send...)
	}
	sv.applied = append(sv.applied, applyZxids(r.Apply)...)
	if r.Serving {
		sv.serving = true
		sv.elect.UpdateElectionVote(sv.learner.NewEpoch())
	}
	if sv.serving {
		s.checkPrefix(sv)
	}
	if r.Err != nil {
		s.startLooking(sv, r.Err.Error())
	}
}

func applyZxids(cs []zab.Committed) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.Zxid
	}
	return out
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

// Run executes the simulation; it returns a Violation if an invariant broke.
func (s *Sim) Run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			if v, ok := r.(Violation); ok {
				err = v
				return
			}
			panic(r)
		}
	}()
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
		if sv.role != down && sv.durable < len(sv.log) {
			acts = append(acts, action{15, func() { s.fsync(sv) }})
		}
		if sv.role == leading && sv.serving {
			acts = append(acts, action{8, func() { s.propose(sv) }})
		}
	}
	acts = append(acts, action{10, s.tick})
	if s.opt.Faults {
		acts = append(acts, action{1, s.crash}, action{2, s.restart}, action{1, s.partition}, action{2, s.heal})
		if len(s.conns) > 0 {
			acts = append(acts, action{1, s.breakRandomConn})
		}
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
	outs, d := sv.elect.Receive(s.now, n)
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
	s.learnerReady(sv, r)
}

func (s *Sim) deliverToLeader(c *qconn) {
	p := c.toLeader[0]
	c.toLeader = c.toLeader[1:]
	sv := s.servers[c.leader]
	if sv.role != leading || sv.leader == nil {
		return
	}
	s.leaderReady(sv, sv.leader.Receive(c.leaderConn, s.now, p))
}

func (s *Sim) fsync(sv *server) {
	sv.durable = len(sv.log)
	z := sv.log[sv.durable-1].Zxid
	switch {
	case sv.role == leading && sv.leader != nil:
		s.leaderReady(sv, sv.leader.LocalLogged(z))
	case sv.role == following && sv.learner != nil:
		s.learnerReady(sv, sv.learner.Logged(z))
	}
}

func (s *Sim) propose(sv *server) {
	z, err := sv.leader.NextZxid()
	if err != nil {
		return
	}
	s.proposed++
	s.leaderReady(sv, sv.leader.Propose(z, txnData(z)))
}

func (s *Sim) tick() {
	s.now += int64(s.rng.IntN(tickMs)) + 1
	for _, sid := range s.sids {
		sv := s.servers[sid]
		switch sv.role {
		case looking:
			outs, d := sv.elect.Tick(s.now)
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
			s.learnerReady(sv, sv.learner.Tick(s.now))
		}
	}
}

func (s *Sim) crash() {
	sv := s.servers[s.sids[s.rng.IntN(len(s.sids))]]
	if sv.role == down {
		return
	}
	s.trace("sid %d crashes (losing %d unsynced txns)", sv.sid, len(sv.log)-sv.durable)
	s.closeConns(sv.sid)
	sv.role = down
	sv.leader, sv.learner, sv.serving = nil, nil, false
	sv.log = sv.log[:sv.durable]
}

func (s *Sim) restart() {
	sv := s.servers[s.sids[s.rng.IntN(len(s.sids))]]
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
}

func (s *Sim) Stats() Stats {
	return Stats{Epochs: len(s.leaders), Committed: len(s.global), Proposed: s.proposed}
}
