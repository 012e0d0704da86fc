package election

import (
	"math"
	"slices"

	"github.com/zkd-io/zkd/internal/quorum"
)

// ZooKeeper's defaults (FastLeaderElection.finalizeWait and maxNotificationInterval).
const (
	DefaultFinalizeWaitMs            = 200
	DefaultMaxNotificationIntervalMs = 60000
)

// Config describes the ensemble as this server sees it.
type Config struct {
	// ID is this server's sid.
	ID int64
	// Voters are the participants' sids, this server's included when it is a participant.
	Voters []int64
	// Observers are the observers' sids. Any sid not in Voters is treated as a non-voter; the
	// list is kept for the caller's benefit.
	Observers []int64
	// QV decides which sets of voters are a quorum and weighs each voter (a vote for a
	// server of weight 0 never wins, as in ZooKeeper); nil means a majority of Voters.
	QV quorum.Verifier
	// FinalizeWaitMs is how long a tally that reached a quorum must stay unchallenged;
	// 0 means 200.
	FinalizeWaitMs int64
	// MinNotificationIntervalMs is the first resend interval; 0 means FinalizeWaitMs
	// (zookeeper.fastleader.minNotificationInterval).
	MinNotificationIntervalMs int64
	// MaxNotificationIntervalMs caps the doubling resend interval; 0 means 60000
	// (zookeeper.fastleader.maxNotificationInterval).
	MaxNotificationIntervalMs int64
	// ConfigText is sent verbatim in every notification. ZooKeeper parses it and adopts it
	// (reconfiguring itself) when its "version=" is higher than its own, so it must be the
	// ensemble's dynamic config as ZooKeeper prints it (QuorumMaj.toString), or empty.
	ConfigText []byte
	// ParticipantWithoutVote: this server is a participant the configuration gives no vote
	// (a reconfig removed it, or it is joining). It follows the leader an election finds,
	// where a non-voter that is an observer observes (FastLeaderElection.learningState).
	ParticipantWithoutVote bool
	// FastDecision (zkd.fastElection, for ensembles of zkd servers only) ends a finalize
	// wait at once when every voter not known to be down (PeerDown) has sent a vote equal
	// to the proposal: no better vote can still come, so waiting only delays failover.
	// Off, the timing is ZooKeeper's exactly.
	FastDecision bool
}

// Out is a notification to send to server To.
type Out struct {
	To int64
	N  Notification
}

// Decision is the outcome of an election, and afterwards the vote this server answers with.
type Decision struct {
	State         ServerState // Leading, Following or Observing
	Leader        int64
	Zxid          int64
	ElectionEpoch int64
	PeerEpoch     int64
}

// vote mirrors ZooKeeper's Vote, including the two fields its equals looks at besides the
// proposal: the sender's state and the notification version.
type vote struct {
	leader, zxid, electionEpoch, peerEpoch int64
	state                                  ServerState
	version                                int32
}

// equal is Vote.equals: LOOKING votes must match entirely; votes of servers out of the
// election match on the leader and, unless exactly one of them predates version 1, on its
// epoch.
func (a vote) equal(b vote) bool {
	if a.state == Looking || b.state == Looking {
		return a.leader == b.leader && a.zxid == b.zxid && a.electionEpoch == b.electionEpoch && a.peerEpoch == b.peerEpoch
	}
	if (a.version > 0) != (b.version > 0) {
		return a.leader == b.leader
	}
	return a.leader == b.leader && a.peerEpoch == b.peerEpoch
}

// Election is one server's FLE instance. It is not safe for concurrent use.
type Election struct {
	cfg    Config
	voters []int64 // sorted, deduplicated; sends go out in this order
	isVote map[int64]bool
	voter  bool // this server is a participant

	state   ServerState
	started bool // Start was called since the last decision (lookForLeader is running)
	clock   int64

	// The proposal (proposedLeader, proposedZxid, proposedEpoch).
	propLeader, propZxid, propEpoch int64
	// This server's own vote, from Start (getInitId, getInitLastLoggedZxid, getPeerEpoch).
	initLeader, initZxid, initEpoch int64

	// current is QuorumPeer.currentVote: the last decided vote (or the initial self vote
	// before the first decision). Non-voters and, once decided, LOOKING voters get it.
	current     vote
	haveCurrent bool

	recvset       map[int64]vote
	outofelection map[int64]vote

	notTimeout int64 // current resend interval
	resendAt   int64
	finalizing bool
	finalizeAt int64

	// loopback holds notifications to self: ZooKeeper's QuorumCnxManager queues them for its
	// own receiver; here they are handled before the call that produced them returns.
	loopback []Notification
	out      []Out
	decision *Decision

	// starting: Start is running, which never decides (see Start).
	starting bool
	// down holds the voters the transport found down (PeerDown) and not up since.
	down map[int64]bool
}

// New returns an election for cfg. The server is LOOKING but idle until Start.
func New(cfg Config) *Election {
	e := &Election{state: Looking, down: map[int64]bool{}}
	e.SetConfig(cfg)
	return e
}

// SetConfig replaces the configuration (a reconfig): the voters, the quorum rule and the
// text sent with every notification. The state and the current vote are kept; an election
// running on the old voters should be started again.
func (e *Election) SetConfig(cfg Config) {
	if cfg.FinalizeWaitMs <= 0 {
		cfg.FinalizeWaitMs = DefaultFinalizeWaitMs
	}
	if cfg.MinNotificationIntervalMs <= 0 {
		cfg.MinNotificationIntervalMs = cfg.FinalizeWaitMs
	}
	if cfg.MaxNotificationIntervalMs <= 0 {
		cfg.MaxNotificationIntervalMs = DefaultMaxNotificationIntervalMs
	}
	voters := slices.Clone(cfg.Voters)
	slices.Sort(voters)
	voters = slices.Compact(voters)
	if cfg.QV == nil {
		cfg.QV = quorum.NewMajority(voters...)
	}
	e.cfg, e.voters, e.isVote = cfg, voters, make(map[int64]bool, len(voters))
	for _, v := range voters {
		e.isVote[v] = true
	}
	e.voter = e.isVote[cfg.ID]
}

// Start begins a new election (lookForLeader): the round advances, the server votes for
// itself and tells every voter. lastZxid and currentEpoch are this server's last logged zxid
// and accepted epoch. An observer votes for nobody (Long.MIN_VALUE in every field), as
// ZooKeeper's do. Start never decides: the earliest decision comes from Tick after the
// finalize wait.
func (e *Election) Start(nowMs, lastZxid, currentEpoch int64) []Out {
	e.begin()
	if !e.haveCurrent {
		// QuorumPeer.startLeaderElection: the vote answered until the first decision.
		e.current = vote{leader: e.cfg.ID, zxid: lastZxid, electionEpoch: -1, peerEpoch: currentEpoch, state: Looking}
		e.haveCurrent = true
	}
	if e.voter {
		e.initLeader, e.initZxid, e.initEpoch = e.cfg.ID, lastZxid, currentEpoch
	} else {
		e.initLeader, e.initZxid, e.initEpoch = math.MinInt64, math.MinInt64, math.MinInt64
	}
	e.state = Looking
	e.started = true
	e.finalizing = false
	e.recvset = make(map[int64]vote)
	e.outofelection = make(map[int64]vote)
	e.notTimeout = e.cfg.MinNotificationIntervalMs
	e.clock++
	e.propLeader, e.propZxid, e.propEpoch = e.initLeader, e.initZxid, e.initEpoch
	e.sendNotifications()
	e.resendAt = nowMs + e.notTimeout
	e.starting = true
	e.drain(nowMs)
	e.starting = false
	out, _ := e.end()
	return out
}

// Receive handles a notification from n.From. It returns the notifications to send and, when
// this notification ended the election, the decision; the server then answers as the decided
// state until the next Start.
func (e *Election) Receive(nowMs int64, n Notification) ([]Out, *Decision) {
	e.begin()
	e.handle(nowMs, n)
	e.drain(nowMs)
	return e.end()
}

// Tick advances time: it ends a finalize wait that ran out (deciding) and resends the vote
// when nothing arrived for the current interval, doubling the interval up to the maximum.
func (e *Election) Tick(nowMs int64) ([]Out, *Decision) {
	e.begin()
	if e.state == Looking && e.started {
		switch {
		case e.finalizing:
			if nowMs >= e.finalizeAt {
				e.decide(e.propLeader, e.propZxid, e.clock, e.propEpoch)
			}
		case nowMs >= e.resendAt:
			// ZooKeeper only resends when some peer queue is empty (haveDelivered) and
			// otherwise just reconnects; the transport reconnects on its own, so always resend.
			e.sendNotifications()
			e.notTimeout = min(2*e.notTimeout, e.cfg.MaxNotificationIntervalMs)
			e.resendAt = nowMs + e.notTimeout
		}
	}
	e.drain(nowMs)
	return e.end()
}

// PeerDown records that the transport found server sid down: its election port refused a
// connection or reset one. A timeout is no such proof and must not be reported. With
// FastDecision, a finalize wait that waited only for sid's vote ends here with a decision.
// Without it, nothing changes.
func (e *Election) PeerDown(nowMs, sid int64) ([]Out, *Decision) {
	e.begin()
	if sid != e.cfg.ID && e.isVote[sid] {
		e.down[sid] = true
		if e.state == Looking && e.started && e.finalizing && e.fastDecidable() {
			e.decide(e.propLeader, e.propZxid, e.clock, e.propEpoch)
		}
	}
	e.drain(nowMs)
	return e.end()
}

// PeerUp records that server sid is reachable again (a connection to it, or a message).
func (e *Election) PeerUp(sid int64) { delete(e.down, sid) }

// fastDecidable: the tally for the proposal is a quorum (the caller checked), fast
// decisions are on, and every voter not known down agrees. A proposal for a server known
// down is left to the finalize wait: following a dead leader only costs another election.
func (e *Election) fastDecidable() bool {
	if !e.cfg.FastDecision || e.starting || e.down[e.propLeader] {
		return false
	}
	prop := vote{leader: e.propLeader, zxid: e.propZxid, electionEpoch: e.clock, peerEpoch: e.propEpoch, state: Looking}
	for _, sid := range e.voters {
		if e.down[sid] {
			continue
		}
		if v, ok := e.recvset[sid]; !ok || !v.equal(prop) {
			return false
		}
	}
	return true
}

// NextTick is when Tick next has something to do, if anything: the end of the finalize wait
// or the next resend.
func (e *Election) NextTick() (atMs int64, ok bool) {
	if e.state != Looking || !e.started {
		return 0, false
	}
	if e.finalizing {
		return e.finalizeAt, true
	}
	return e.resendAt, true
}

// Decided sets the server's state and the vote it answers with, outside an election: for a
// role the server takes by other means. A decision made by Receive or Tick is already applied.
// A State of Looking is ignored (use Start).
func (e *Election) Decided(d Decision) {
	if d.State == Looking || !d.State.Valid() {
		return
	}
	e.state = d.State
	e.started = false
	e.finalizing = false
	e.loopback = nil
	e.current = vote{leader: d.Leader, zxid: d.Zxid, electionEpoch: d.ElectionEpoch, peerEpoch: d.PeerEpoch, state: Looking}
	e.haveCurrent = true
}

// UpdateElectionVote replaces the epoch of the vote this server answers with
// (QuorumPeer.updateElectionVote). Leaders and followers call it once the new epoch is
// established, so that late joiners comparing out-of-election votes see one epoch.
func (e *Election) UpdateElectionVote(peerEpoch int64) {
	e.current.peerEpoch = peerEpoch
}

// State is the server's state: Looking until a decision, then the decided state.
func (e *Election) State() ServerState { return e.state }

// Vote is the current proposal while looking, and the decided vote afterwards.
func (e *Election) Vote() Decision {
	if e.state == Looking {
		return Decision{State: Looking, Leader: e.propLeader, Zxid: e.propZxid, ElectionEpoch: e.clock, PeerEpoch: e.propEpoch}
	}
	return Decision{State: e.state, Leader: e.current.leader, Zxid: e.current.zxid, ElectionEpoch: e.current.electionEpoch, PeerEpoch: e.current.peerEpoch}
}

// Round is the logical clock: the number of the current (or last) election round.
func (e *Election) Round() int64 { return e.clock }

func (e *Election) begin() { e.out, e.decision = nil, nil }

func (e *Election) end() ([]Out, *Decision) {
	out, d := e.out, e.decision
	e.out, e.decision = nil, nil
	return out, d
}

func (e *Election) drain(nowMs int64) {
	for len(e.loopback) > 0 {
		n := e.loopback[0]
		e.loopback = e.loopback[1:]
		e.handle(nowMs, n)
	}
}

func (e *Election) notification(state ServerState, leader, zxid, round, peerEpoch int64) Notification {
	return Notification{State: state, Leader: leader, Zxid: zxid, ElectionEpoch: round, PeerEpoch: peerEpoch,
		Version: CurrentVersion, Config: e.cfg.ConfigText, From: e.cfg.ID}
}

func (e *Election) send(to int64, n Notification) {
	if to == e.cfg.ID {
		e.loopback = append(e.loopback, n)
		return
	}
	e.out = append(e.out, Out{To: to, N: n})
}

// sendNotifications tells every voter (this server included) the proposal.
func (e *Election) sendNotifications() {
	for _, sid := range e.voters {
		e.send(sid, e.notification(Looking, e.propLeader, e.propZxid, e.clock, e.propEpoch))
	}
}

// handle is WorkerReceiver (the answers) followed by lookForLeader's processing.
func (e *Election) handle(nowMs int64, n Notification) {
	if !e.isVote[n.From] {
		// Observers and other non-voters always get the current vote at once.
		c := e.current
		e.send(n.From, e.notification(e.state, c.leader, c.zxid, e.clock, c.peerEpoch))
		return
	}
	if !n.State.Valid() {
		return
	}
	if e.state != Looking {
		if n.State == Looking {
			c := e.current
			e.send(n.From, e.notification(e.state, c.leader, c.zxid, c.electionEpoch, c.peerEpoch))
		}
		return
	}
	if n.State == Looking && n.ElectionEpoch < e.clock {
		// A peer whose round is behind learns ours and our proposal.
		e.send(n.From, e.notification(Looking, e.propLeader, e.propZxid, e.clock, e.propEpoch))
	}
	if e.started {
		e.process(nowMs, n)
	}
}

// totalOrderPredicate: does the new vote beat the current one? Higher peerEpoch, then higher
// zxid, then higher sid; a vote for a non-voter or a voter of weight 0 never wins.
func (e *Election) totalOrderPredicate(newID, newZxid, newEpoch, curID, curZxid, curEpoch int64) bool {
	if !e.isVote[newID] || e.cfg.QV.Weight(newID) == 0 {
		return false
	}
	return newEpoch > curEpoch ||
		(newEpoch == curEpoch && (newZxid > curZxid || (newZxid == curZxid && newID > curID)))
}

// process is one iteration of lookForLeader's loop for a notification from a voter.
func (e *Election) process(nowMs int64, n Notification) {
	if e.finalizing {
		// The finalize wait drops everything that does not beat the proposal and starts
		// over; a better vote ends the wait and is handled as usual.
		if !e.totalOrderPredicate(n.Leader, n.Zxid, n.PeerEpoch, e.propLeader, e.propZxid, e.propEpoch) {
			e.finalizeAt = nowMs + e.cfg.FinalizeWaitMs
			if e.cfg.FastDecision && n.State == Looking && n.ElectionEpoch == e.clock {
				// ZooKeeper drops it; the fast path counts an agreeing vote of this round,
				// which may be the last one it waits for.
				e.recvset[n.From] = vote{leader: n.Leader, zxid: n.Zxid, electionEpoch: n.ElectionEpoch, peerEpoch: n.PeerEpoch, state: Looking}
				if e.fastDecidable() {
					e.decide(e.propLeader, e.propZxid, e.clock, e.propEpoch)
				}
			}
			return
		}
		e.finalizing = false
	}
	// recvqueue.poll(notTimeout) starts over after every notification.
	e.resendAt = nowMs + e.notTimeout
	if !e.isVote[n.Leader] {
		return
	}
	switch n.State {
	case Looking:
		if e.initZxid == -1 || n.Zxid == -1 {
			return
		}
		switch {
		case n.ElectionEpoch > e.clock:
			e.clock = n.ElectionEpoch
			clear(e.recvset)
			if e.totalOrderPredicate(n.Leader, n.Zxid, n.PeerEpoch, e.initLeader, e.initZxid, e.initEpoch) {
				e.propLeader, e.propZxid, e.propEpoch = n.Leader, n.Zxid, n.PeerEpoch
			} else {
				e.propLeader, e.propZxid, e.propEpoch = e.initLeader, e.initZxid, e.initEpoch
			}
			e.sendNotifications()
		case n.ElectionEpoch < e.clock:
			return
		case e.totalOrderPredicate(n.Leader, n.Zxid, n.PeerEpoch, e.propLeader, e.propZxid, e.propEpoch):
			e.propLeader, e.propZxid, e.propEpoch = n.Leader, n.Zxid, n.PeerEpoch
			e.sendNotifications()
		case n.From != e.cfg.ID && e.totalOrderPredicate(e.propLeader, e.propZxid, e.propEpoch, n.Leader, n.Zxid, n.PeerEpoch):
			// Beyond ZooKeeper: the sender proposes a worse leader than we do. It would learn
			// ours only when one of us resends (200 ms on, doubling), typically because our
			// notification reached it while it still followed the old leader. Tell it now;
			// it adopts ours and tells everyone, and an equal vote gets no answer. Only a
			// vote that wins is told: with weights neither of two votes may beat the other
			// (each side proposing a server of weight 0, say), and telling would never end.
			e.send(n.From, e.notification(Looking, e.propLeader, e.propZxid, e.clock, e.propEpoch))
		}
		e.recvset[n.From] = vote{leader: n.Leader, zxid: n.Zxid, electionEpoch: n.ElectionEpoch, peerEpoch: n.PeerEpoch, state: Looking}
		prop := vote{leader: e.propLeader, zxid: e.propZxid, electionEpoch: e.clock, peerEpoch: e.propEpoch, state: Looking}
		if e.hasQuorum(e.recvset, prop) {
			e.finalizing = true
			e.finalizeAt = nowMs + e.cfg.FinalizeWaitMs
			if e.fastDecidable() {
				e.decide(e.propLeader, e.propZxid, e.clock, e.propEpoch)
			}
		}
	case Observing:
		// Observers' notifications never count.
	case Following, Leading:
		nv := vote{leader: n.Leader, zxid: n.Zxid, electionEpoch: n.ElectionEpoch, peerEpoch: n.PeerEpoch, state: n.State, version: n.Version}
		if n.ElectionEpoch == e.clock {
			// Stored without the version, as ZooKeeper does, so that the comparison with nv
			// looks at the leader only.
			rv := nv
			rv.version = 0
			e.recvset[n.From] = rv
			if e.hasQuorum(e.recvset, nv) && e.checkLeader(e.recvset, n.Leader, n.ElectionEpoch) {
				e.decide(n.Leader, n.Zxid, n.ElectionEpoch, n.PeerEpoch)
				return
			}
		}
		// Before joining an established ensemble, a quorum must follow the same leader, and
		// the leader must say it leads (ZOOKEEPER-1732: this map also holds current-round
		// votes).
		e.outofelection[n.From] = nv
		if e.hasQuorum(e.outofelection, nv) && e.checkLeader(e.outofelection, n.Leader, n.ElectionEpoch) {
			e.clock = n.ElectionEpoch
			e.decide(n.Leader, n.Zxid, n.ElectionEpoch, n.PeerEpoch)
		}
	}
}

// hasQuorum: do the voters holding a vote equal to target form a quorum?
func (e *Election) hasQuorum(votes map[int64]vote, target vote) bool {
	acks := make(map[int64]bool, len(votes))
	for sid, v := range votes {
		if e.isVote[sid] && v.equal(target) {
			acks[sid] = true
		}
	}
	return e.cfg.QV.IsQuorum(acks)
}

// checkLeader: a leader other than this server must have said it is LEADING; this server may
// only lead in the round it is in, so that peers do not re-elect a leader that crashed, and
// never while it votes with zxid -1 (a damaged server: peers' stale answers naming it must
// not make it lead what it no longer holds).
func (e *Election) checkLeader(votes map[int64]vote, leader, round int64) bool {
	if leader != e.cfg.ID {
		v, ok := votes[leader]
		return ok && v.state == Leading
	}
	return e.initZxid != -1 && e.clock == round
}

func (e *Election) decide(leader, zxid, round, peerEpoch int64) {
	switch {
	case leader == e.cfg.ID:
		e.state = Leading
	case e.voter, e.cfg.ParticipantWithoutVote:
		e.state = Following
	default:
		e.state = Observing
	}
	e.started = false
	e.finalizing = false
	e.loopback = nil // leaveInstance clears the receive queue
	e.recvset, e.outofelection = nil, nil
	e.current = vote{leader: leader, zxid: zxid, electionEpoch: round, peerEpoch: peerEpoch, state: Looking}
	e.haveCurrent = true
	e.decision = &Decision{State: e.state, Leader: leader, Zxid: zxid, ElectionEpoch: round, PeerEpoch: peerEpoch}
}
