package zab

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/zkd-io/zkd/jute"
)

// ConnID names one learner connection at the leader.
type ConnID int64

// LeaderConfig configures a leader.
type LeaderConfig struct {
	ID         int64
	QV         QuorumVerifier
	TickMs     int64
	InitLimit  int64
	SyncLimit  int64
	ConfigText []byte // sent in NEWLEADER
	// CommitLogCount is how many committed txns stay in memory for DIFF syncs (500).
	CommitLogCount int
	// HistoryOnDisk: the owner can read committed txns older than the in-memory history
	// from its log. A learner behind the history then waits for them (Ready.LoadHistory,
	// answered with HistoryLoaded) instead of getting a SNAP.
	HistoryOnDisk bool
	// CommitQV decides when a proposal commits; nil means QV. Simulations weaken it to
	// show that their checks catch a wrong commit rule.
	CommitQV QuorumVerifier
	// FirstCounter is where the new epoch's zxid counter starts (0). Tests set it near the
	// end of the counter's range to reach the rollover that forces a new epoch.
	FirstCounter int64
	// Reconfig is reconfigEnabled: the leader takes reconfig proposals, completes one it
	// finds pending (LastSeen newer than Current), and gives a zoo.cfg configuration
	// (version 0) its epoch's version (ZOOKEEPER-1783). Current and LastSeen are then the
	// configuration (QV and ConfigText are not read); LastSeen with a nil Text means none.
	Reconfig          bool
	Current, LastSeen Config
	// ReconfigNewQuorumOnly is a deliberately wrong rule for simulations to show that their
	// checks catch it: a reconfig, and the proposals after it while it is pending, commit
	// with a quorum of the new configuration alone.
	ReconfigNewQuorumOnly bool
	// Wide is ext.Wide on this server: the leader advertises it in LEADERINFO to learners
	// that advertised it, and rolls the epoch over in place (rollover.go) while every member
	// did; without it the counter's end steps the leader down, as ZooKeeper's does.
	Wide bool
	// Members are every server of the configuration, voters and observers, which must all
	// be synced and wide for an in-place rollover; with Reconfig, the current
	// configuration's Addrs name them instead.
	Members []int64
	// AckSampleEvery is ZooKeeper's zookeeper.leader.ackLoggingFrequency (1000 there): acks
	// of proposals whose zxid is a multiple of it are reported in Ready.Acked, for the owner
	// to time (ack_latency). 0 or less reports none.
	AckSampleEvery int64
}

// Out is a packet for one learner connection. When SnapFollows is set the owner streams
// the database (the state at Packet.Zxid) right after this SNAP packet.
type Out struct {
	Conn        ConnID
	Packet      jute.QuorumPacket
	SnapFollows bool
}

// ForwardedRequest is a client write (or sync) a learner forwarded.
type ForwardedRequest struct {
	Conn     ConnID
	Sid      int64
	Session  int64
	Cxid     int32
	Type     jute.OpCode
	Body     []byte
	AuthInfo []jute.ID
}

// Touch is a session a learner saw activity on.
type Touch struct {
	Session int64
	Timeout int32
	Sid     int64
}

// RevalidateAsk is a learner asking whether a session is alive (a client reconnected).
type RevalidateAsk struct {
	Conn    ConnID
	Sid     int64
	Session int64
	Timeout int32
}

type lcPhase int

const (
	lcInfo       lcPhase = iota // waiting for FOLLOWERINFO / OBSERVERINFO
	lcEpoch                     // LEADERINFO pending or sent, waiting for ACKEPOCH
	lcAckedEpoch                // waiting for the epoch-ack quorum before syncing
	lcHistory                   // waiting for older history from the owner's log
	lcNewLeader                 // synced, NEWLEADER sent, waiting for its ACK
	lcStartup                   // NEWLEADER acked, waiting for the leader to be established
	lcServing                   // UPTODATE sent
)

type lconn struct {
	id  ConnID
	sid int64
	// observerInfo: it registered with OBSERVERINFO, and gets INFORM; a follower gets
	// PROPOSAL and COMMIT whether the configuration counts it as a voter or not (a server
	// a reconfig removed, or one joining), as ZooKeeper's forwardingFollowers do.
	observerInfo bool
	phase        lcPhase
	peerZxid     int64
	// older is the history read from the owner's log for this learner (lcHistory done).
	older       []Committed
	olderLoaded bool
	lastRecv    int64
	infoSent    bool // LEADERINFO sent
	// pings counts PINGs sent; pongs counts replies: a reply proves the learner
	// followed us when that ping was sent (TCP keeps them in order).
	pings, pongs int64
	// lastAck is the highest proposal the learner acked (0 before its first), for the
	// web console's lag.
	lastAck int64
	// wide: the learner advertised the wide extension after its LearnerInfo (read only
	// when this leader runs with it).
	wide bool
}

type ldPhase int

const (
	ldDiscovery ldPhase = iota
	ldEpochAck
	ldNewLeader
	ldBroadcast
	ldDown
)

// Leader runs Zab's leader side for one epoch.
type Leader struct {
	// selfAck is the highest proposal the leader's own log acked, for Ready.Acked.
	selfAck       int64
	cfg           LeaderConfig
	st            PersistentState
	phase         ldPhase
	startMs, now  int64
	epoch         int64 // proposed / established epoch
	lastProcessed int64

	conns       map[ConnID]*lconn
	connecting  map[int64]bool
	epochAcks   map[int64]bool
	newLdrAcks  map[int64]bool
	tracker     *Tracker
	history     []Committed
	outstanding map[int64][]byte
	// proposed is outstanding's zxids in the order proposed, which is zxid order: commits
	// take them from the front. Iterating the map instead cost its peak size on every
	// commit (a Go map does not shrink), a third of the leader's CPU under load.
	proposed     []int64
	counter      int64
	syncs        []pendingSync // oldest first
	lastPingTick int64

	// cur is the committed configuration; next the last seen one while it is newer (a
	// reconfig proposed and not committed, or one found pending at election): every quorum
	// is then a quorum of both.
	cur  Config
	next *Config
	// reconfigZxid is the pending reconfig's proposal (0 when next came from before the
	// election).
	reconfigZxid int64
	// noCommit: a reconfig handed leadership to another server (Leader.allowedToCommit),
	// so nothing more commits here.
	noCommit bool

	// The in-place rollover (rollover.go). zxidEpoch is the epoch NextZxid hands zxids out
	// in: epoch+1 from the moment the counter ran out until the bump commits. needBump is
	// the epoch whose bump the next Propose sends first (0: none); bumpZxid the bump
	// outstanding (0: none) and bumpConns the connections whose acks count for it (those
	// synced and wide when it was proposed); held the proposals (and bumps) waiting for it.
	zxidEpoch int64
	needBump  int64
	bumpZxid  int64
	bumpConns map[ConnID]bool
	held      []heldTxn
}

// pendingSync is a sync request. It is answered once every proposal before it committed
// and a quorum proved this server still leads: each voter answered a PING sent after the
// sync arrived (ZooKeeper 3.8 skips that proof, so a deposed leader that has not noticed
// yet answers sync and serves stale reads: ZOOKEEPER-1675).
type pendingSync struct {
	at     int64           // lastProposed when it arrived
	needed map[int64]int64 // sid -> ping number whose answer proves leadership
	local  bool
	conn   ConnID
}

// NewLeader starts leading after an election. st is this server's persistent state,
// lastProcessed its tree's last zxid, history the last committed txns from its log.
func NewLeader(cfg LeaderConfig, st PersistentState, lastProcessed int64, history []Committed, nowMs int64) (*Leader, Ready) {
	if cfg.CommitLogCount <= 0 {
		cfg.CommitLogCount = 500
	}
	l := &Leader{
		cfg: cfg, st: st, startMs: nowMs, now: nowMs, lastProcessed: lastProcessed,
		conns: map[ConnID]*lconn{}, connecting: map[int64]bool{cfg.ID: true},
		epochAcks: map[int64]bool{cfg.ID: true}, newLdrAcks: map[int64]bool{cfg.ID: true},
		outstanding: map[int64][]byte{},
	}
	l.history = append(l.history, history...)
	l.trimHistory()
	if cfg.Reconfig {
		l.cur = cfg.Current
		if ls := cfg.LastSeen; ls.Text != nil && ls.Version > l.cur.Version {
			l.next = &ls
		}
	} else {
		l.cur = Config{QV: cfg.QV, Text: cfg.ConfigText}
	}
	// The epoch to propose: one past every accepted epoch we hear of, ours included.
	l.epoch = st.AcceptedEpoch + 1
	r := newReady()
	l.advance(&r)
	return l, r
}

// Epoch is the leader's epoch (final once past discovery).
func (l *Leader) Epoch() int64 { return l.epoch }

// LeaderStats are the counts ZooKeeper's leader reports as the gauges learners,
// synced_followers, synced_non_voting_followers, synced_observers and pending_syncs.
type LeaderStats struct {
	// Learners are the open learner connections, synced or not (Leader.getLearners).
	Learners int
	// SyncedFollowers are the learners that registered as followers and were synced: they
	// get proposals (getForwardingFollowers); SyncedNonVotingFollowers are those of them
	// the configuration does not count as voters.
	SyncedFollowers, SyncedNonVotingFollowers int
	// SyncedObservers are the synced learners that registered as observers.
	SyncedObservers int
	// PendingSyncs counts the lastProposed zxids that learners' syncs wait on, as
	// ZooKeeper's pendingSyncs map has one key per zxid (syncs of this server's own clients
	// are not in it there either).
	PendingSyncs int
}

// Stats counts the learners by state and the syncs waiting.
func (l *Leader) Stats() LeaderStats {
	var st LeaderStats
	st.Learners = len(l.conns)
	for _, c := range l.conns {
		switch {
		case !l.forwarding(c):
		case c.observerInfo:
			st.SyncedObservers++
		default:
			st.SyncedFollowers++
			if !l.votes(c.sid) {
				st.SyncedNonVotingFollowers++
			}
		}
	}
	// Oldest first, so at never decreases: equal zxids are adjacent.
	last := int64(-1)
	for _, ps := range l.syncs {
		if !ps.local && ps.at != last {
			st.PendingSyncs++
			last = ps.at
		}
	}
	return st
}

// Established reports whether the leader is in broadcast.
func (l *Leader) Established() bool { return l.phase == ldBroadcast }

// LastCommitted is the highest committed zxid.
func (l *Leader) LastCommitted() int64 {
	if l.tracker == nil {
		return l.lastProcessed
	}
	return l.tracker.LastCommitted()
}

func (l *Leader) trimHistory() { l.history = keepLast(l.history, l.cfg.CommitLogCount) }

// keepLast keeps the newest n committed txns of a DIFF history, letting the older ones go.
func keepLast(h []Committed, n int) []Committed {
	if over := len(h) - n; over > 0 {
		clear(h[:over])
		h = h[over:]
	}
	return h
}

func (l *Leader) send(r *Ready, c *lconn, t int32, zxid int64, data []byte) {
	r.Out = append(r.Out, Out{Conn: c.id, Packet: jute.QuorumPacket{Type: t, Zxid: zxid, Data: data}})
}

func (l *Leader) drop(r *Ready, c *lconn) {
	delete(l.conns, c.id)
	delete(l.bumpConns, c.id)
	r.Close = append(r.Close, c.id)
}

// Accept registers a new learner connection.
func (l *Leader) Accept(id ConnID, nowMs int64) {
	l.conns[id] = &lconn{id: id, lastRecv: nowMs}
}

// Closed forgets a connection the owner saw close.
func (l *Leader) Closed(id ConnID) {
	delete(l.conns, id)
	delete(l.bumpConns, id) // an id used again is a new learner, which accepted nothing
}

// Receive handles one packet from a learner.
func (l *Leader) Receive(id ConnID, nowMs int64, p jute.QuorumPacket) Ready {
	r := newReady()
	l.now = nowMs
	c := l.conns[id]
	if c == nil || l.phase == ldDown {
		return r
	}
	c.lastRecv = nowMs
	switch c.phase {
	case lcInfo:
		if p.Type != PktFollowerInfo && p.Type != PktObserverInfo {
			l.drop(&r, c)
			return r
		}
		var li jute.LearnerInfo
		if err := jute.Unmarshal(p.Data, &li); err != nil && len(p.Data) < 8 {
			l.drop(&r, c)
			return r
		}
		if li.ProtocolVersion < ProtocolVersion {
			// Pre-3.4 learners are not supported.
			l.drop(&r, c)
			return r
		}
		if li.ConfigVersion > l.cur.Version {
			// LearnerHandler: "Follower is ahead of the leader (has a later activated
			// configuration)".
			l.drop(&r, c)
			return r
		}
		c.sid = li.ServerID
		c.observerInfo = p.Type == PktObserverInfo
		c.wide = l.cfg.Wide && len(p.Data) > learnerInfoSize && advertisesWide(p.Data[learnerInfoSize:])
		c.phase = lcEpoch
		if l.phase == ldDiscovery && l.voter(c) {
			l.connecting[c.sid] = true
			if e := Epoch(p.Zxid); e >= l.epoch {
				l.epoch = e + 1
			}
		}
		l.advance(&r)
	case lcEpoch:
		if p.Type != PktAckEpoch || len(p.Data) < 4 {
			l.drop(&r, c)
			return r
		}
		cur := int64(int32(binary.BigEndian.Uint32(p.Data)))
		c.peerZxid = p.Zxid
		// While the epoch is being established, a learner with a newer history than ours
		// means we must not lead; once it is, a late learner's extra tail is truncated.
		if cur != -1 && l.phase <= ldEpochAck {
			if cur > l.st.CurrentEpoch || (cur == l.st.CurrentEpoch && p.Zxid > l.lastProcessed) {
				l.drop(&r, c)
				return r
			}
			if l.voter(c) {
				l.epochAcks[c.sid] = true
			}
		}
		c.phase = lcAckedEpoch
		l.advance(&r)
	case lcNewLeader:
		if p.Type != PktAck || p.Zxid != MakeZxid(l.epoch, 0) {
			l.drop(&r, c)
			return r
		}
		if l.voter(c) {
			l.newLdrAcks[c.sid] = true
		}
		c.phase = lcStartup
		l.advance(&r)
	case lcAckedEpoch, lcHistory, lcStartup, lcServing:
		l.onBroadcastPacket(c, p, &r)
	}
	return r
}

// voter reports whether a learner registered as a follower and votes in the current or
// the pending configuration.
func (l *Leader) voter(c *lconn) bool { return !c.observerInfo && l.votes(c.sid) }

func (l *Leader) votes(sid int64) bool {
	return l.cur.QV.IsVoter(sid) || (l.next != nil && l.next.QV.IsVoter(sid))
}

// quorumAll is SyncedLearnerTracker.hasAllQuorums: a quorum of the current configuration
// and, while one is pending, of the next.
func (l *Leader) quorumAll(set map[int64]bool) bool {
	return l.cur.QV.IsQuorum(set) && (l.next == nil || l.next.QV.IsQuorum(set))
}

// advance moves the leader and its connections along as far as the current acks allow.
func (l *Leader) advance(r *Ready) {
	if l.phase == ldDiscovery && l.quorumAll(l.connecting) {
		// The epoch is decided: accept it ourselves before telling anyone.
		l.phase = ldEpochAck
		l.st.AcceptedEpoch = l.epoch
		r.AcceptedEpoch = l.epoch
		if l.cfg.Reconfig && l.cur.Version == 0 && l.next == nil {
			// ZOOKEEPER-1783: the zoo.cfg configuration gets this epoch's version, agreed
			// through NEWLEADER and made current once established.
			nv := l.cur.WithVersion(MakeZxid(l.epoch, 0))
			l.next = &nv
		}
	}
	if l.phase >= ldEpochAck {
		for _, c := range l.sortedConns() {
			if c.phase == lcEpoch && !c.infoSent {
				info := binary.BigEndian.AppendUint32(nil, uint32(ProtocolVersion))
				if c.wide {
					info = append(info, wideAdvert()...)
				}
				l.send(r, c, PktLeaderInfo, MakeZxid(l.epoch, 0), info)
				c.infoSent = true
			}
		}
	}
	if l.phase == ldEpochAck && l.quorumAll(l.epochAcks) {
		l.phase = ldNewLeader
		l.st.CurrentEpoch = l.epoch
		r.CurrentEpoch = l.epoch
		cqv := l.cfg.CommitQV
		if cqv == nil {
			cqv = l.cur.QV
		}
		l.tracker = NewTracker(cqv, l.lastProcessed)
		l.counter = l.cfg.FirstCounter
		l.zxidEpoch = l.epoch
	}
	if l.phase >= ldNewLeader {
		for _, c := range l.sortedConns() {
			if c.phase == lcAckedEpoch {
				l.syncLearner(r, c)
			}
		}
	}
	if l.phase == ldNewLeader && l.quorumAll(l.newLdrAcks) {
		l.phase = ldBroadcast
		r.Serving = true
		if l.cfg.Reconfig && l.next != nil {
			// Leader.startZkServer: the last seen configuration, sent with NEWLEADER and now
			// acked by a quorum of it, becomes current (completing a reconfig a previous
			// leader left pending).
			l.activate(r, MakeZxid(l.epoch, 0), l.newLdrAcks, ConfigLeaderActivated)
		}
	}
	if l.phase == ldBroadcast {
		for _, c := range l.sortedConns() {
			if c.phase == lcStartup {
				l.send(r, c, PktUpToDate, -1, nil)
				c.phase = lcServing
			}
		}
	}
}

func (l *Leader) sortedConns() []*lconn {
	out := make([]*lconn, 0, len(l.conns))
	for _, c := range l.conns {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// syncLearner queues what brings the learner up to date, the proposals still outstanding,
// and NEWLEADER; from then on the learner gets every proposal and commit.
func (l *Leader) syncLearner(r *Ready, c *lconn) {
	last := l.LastCommitted()
	var older func(int64) []Committed
	if c.olderLoaded {
		older = func(int64) []Committed { return c.older }
	} else if l.cfg.HistoryOnDisk && NeedsOlder(c.peerZxid, last, l.history) {
		// Reading the log is the owner's: it answers with HistoryLoaded.
		c.phase = lcHistory
		r.LoadHistory = append(r.LoadHistory, HistoryAsk{Conn: c.id, From: c.peerZxid, To: last})
		return
	}
	plan := PlanSync(c.peerZxid, last, l.history, older)
	if plan.Snap {
		r.Out = append(r.Out, Out{Conn: c.id, Packet: jute.QuorumPacket{Type: PktSnap, Zxid: last}, SnapFollows: true})
	} else {
		for _, p := range plan.Packets {
			r.Out = append(r.Out, Out{Conn: c.id, Packet: p})
		}
	}
	if !c.observerInfo {
		for _, z := range l.tracker.Outstanding() {
			if z > plan.LearnerZxid {
				l.send(r, c, PktProposal, z, l.outstanding[z])
			}
		}
	}
	l.send(r, c, PktNewLeader, MakeZxid(l.epoch, 0), l.lastSeen().Text)
	c.phase = lcNewLeader
}

func (l *Leader) forwarding(c *lconn) bool { return c.phase >= lcNewLeader }

func (l *Leader) onBroadcastPacket(c *lconn, p jute.QuorumPacket, r *Ready) {
	switch p.Type {
	case PktAck:
		if c.observerInfo || Counter(p.Zxid) == 0 || l.tracker == nil || l.noCommit {
			return
		}
		z := p.Zxid
		if l.bumpZxid != 0 && z >= l.bumpZxid && !l.bumpConns[c.id] {
			// A learner that joined while the bump was outstanding has not accepted the
			// next epoch: its ack must not make the bump's quorum (rollover.go).
			z = l.bumpZxid - 1
		}
		l.sampleAcks(r, c.sid, c.lastAck, z)
		c.lastAck = max(c.lastAck, z)
		if committed, moved := l.tracker.Ack(c.sid, z); moved {
			l.commitUpTo(committed, r)
		}
	case PktPing:
		c.pongs++
		d := jute.NewDecoder(p.Data)
		for d.Remaining() >= 12 {
			r.Touches = append(r.Touches, Touch{Session: d.Long(), Timeout: d.Int(), Sid: c.sid})
		}
		l.answerSyncs(r)
	case PktRevalidate:
		d := jute.NewDecoder(p.Data)
		ask := RevalidateAsk{Conn: c.id, Sid: c.sid, Session: d.Long(), Timeout: d.Int()}
		if d.Err() != nil {
			l.drop(r, c)
			return
		}
		r.Revalidate = append(r.Revalidate, ask)
	case PktRequest:
		d := jute.NewDecoder(p.Data)
		fr := ForwardedRequest{Conn: c.id, Sid: c.sid, Session: d.Long(), Cxid: d.Int(), Type: jute.OpCode(d.Int()), AuthInfo: p.AuthInfo}
		if d.Err() != nil {
			l.drop(r, c)
			return
		}
		fr.Body = d.Rest()
		if fr.Type == jute.OpSync {
			l.remoteSync(c, r)
			return
		}
		r.Requests = append(r.Requests, fr)
	default:
		l.drop(r, c)
	}
}

// NextZxid reserves the zxid for the next proposal. A counter that would wrap forces a new
// epoch (ZOOKEEPER-1277): the caller must step down; unless the ensemble rolls over in
// place (LeaderConfig.Wide, rollover.go), when the zxid is the next epoch's first and the
// next Propose sends the bump before it.
func (l *Leader) NextZxid() (int64, error) {
	if l.phase != ldBroadcast {
		return 0, fmt.Errorf("zab: not leading (phase %d)", l.phase)
	}
	if l.counter >= maxCounter {
		if !l.canRollInPlace() {
			return 0, fmt.Errorf("%w in epoch %d", ErrCounterExhausted, l.zxidEpoch)
		}
		if l.bumpZxid == 0 && l.needBump == 0 && len(l.held) == 0 {
			l.needBump = l.zxidEpoch
		} else {
			// The previous bump is still outstanding: this one waits behind it.
			l.held = append(l.held, heldTxn{Committed: Committed{Zxid: MakeZxid(l.zxidEpoch, BumpCounter)}, bump: true})
		}
		l.zxidEpoch++
		l.counter = l.cfg.FirstCounter
	}
	l.counter++
	return MakeZxid(l.zxidEpoch, l.counter), nil
}

// Propose broadcasts a txn with the zxid NextZxid gave. The owner appends it to its own
// log (Ready.Append) and reports LocalLogged when it is durable. A txn of an epoch whose
// bump has not committed yet waits for it inside the leader.
func (l *Leader) Propose(zxid int64, data []byte) Ready {
	r := newReady()
	if l.needBump != 0 {
		e := l.needBump
		l.needBump = 0
		l.proposeBump(&r, e)
	}
	if l.bumpZxid != 0 || len(l.held) > 0 {
		l.held = append(l.held, heldTxn{Committed: Committed{Zxid: zxid, Data: data}})
		return r
	}
	l.propose(&r, zxid, data)
	return r
}

func (l *Leader) propose(r *Ready, zxid int64, data []byte) {
	if err := l.tracker.Propose(zxid); err != nil {
		r.Err = err
		return
	}
	l.outstanding[zxid] = data
	l.proposed = append(l.proposed, zxid)
	r.Append = append(r.Append, Committed{Zxid: zxid, Data: data})
	for _, c := range l.sortedConns() {
		if l.forwarding(c) && !c.observerInfo {
			l.send(r, c, PktProposal, zxid, data)
		}
	}
}

// ProposeReconfig is Propose for a reconfig txn (its SetDataTxn holds next.Text): from it
// on, every proposal needs a quorum of both configurations until it commits, when next
// becomes current (ConfigActivated) and the learners are told to activate it.
func (l *Leader) ProposeReconfig(zxid int64, data []byte, next Config) Ready {
	if l.next != nil {
		r := newReady()
		r.Err = fmt.Errorf("zab: reconfig %s while configuration %s is pending", Hex(zxid), Hex(l.next.Version))
		return r
	}
	if l.needBump != 0 || l.bumpZxid != 0 || len(l.held) > 0 {
		// Its quorums would change under a bump in flight: step down instead (safe, and
		// rarer than a counter running out).
		r := newReady()
		r.Err = fmt.Errorf("zab: reconfig %s during an epoch rollover", Hex(zxid))
		return r
	}
	l.next = &next
	l.reconfigZxid = zxid
	if l.cfg.ReconfigNewQuorumOnly {
		l.tracker.SetQuorums(next.QV)
	} else {
		l.tracker.SetQuorums(l.cur.QV, next.QV)
	}
	l.tracker.PauseAfter(zxid)
	r := l.Propose(zxid, data)
	r.Configs = append(r.Configs, ConfigEvent{Kind: ConfigSeen, Zxid: zxid, Text: next.Text, Designated: NoLeader})
	return r
}

// ReconfigPending reports whether a configuration newer than the current one was seen
// (PrepRequestProcessor answers RECONFIGINPROGRESS then).
func (l *Leader) ReconfigPending() bool { return l.next != nil }

// CurrentConfig is the committed configuration; LastSeenConfig the last proposed one.
func (l *Leader) CurrentConfig() Config { return l.cur }

// LastSeenConfig is the newest configuration this leader knows, committed or not.
func (l *Leader) LastSeenConfig() Config { return l.lastSeen() }

func (l *Leader) lastSeen() Config {
	if l.next != nil {
		return *l.next
	}
	return l.cur
}

// IsQuorumSynced reports whether the voters of qv that are connected and synced (this
// server included) form a quorum of it (Leader.isQuorumSynced).
func (l *Leader) IsQuorumSynced(qv QuorumVerifier) bool {
	ids := map[int64]bool{}
	if qv.IsVoter(l.cfg.ID) {
		ids[l.cfg.ID] = true
	}
	for _, c := range l.conns {
		if !c.observerInfo && c.phase >= lcStartup && l.now-c.lastRecv <= l.cfg.SyncLimit*l.cfg.TickMs && qv.IsVoter(c.sid) {
			ids[c.sid] = true
		}
	}
	return qv.IsQuorum(ids)
}

// activate makes next current, after the reconfig at zxid committed (or, at zxid's
// epoch start, the configuration NEWLEADER carried was acked); acks are who acked it. It
// designates the next leader as Leader.getDesignatedLeader does: this one when it still
// votes at the same address, else the voter of the new configuration that acked the
// most of what follows.
func (l *Leader) activate(r *Ready, zxid int64, acks map[int64]bool, kind ConfigKind) int64 {
	next := *l.next
	designated := l.designate(next, acks, zxid)
	l.cur = next
	l.next = nil
	l.reconfigZxid = 0
	if l.cfg.CommitQV == nil {
		l.tracker.SetQuorums(next.QV)
	}
	r.Configs = append(r.Configs, ConfigEvent{Kind: kind, Zxid: zxid, Text: next.Text, Designated: designated})
	if designated != l.cfg.ID {
		l.noCommit = true
	}
	return designated
}

func (l *Leader) designate(next Config, acks map[int64]bool, zxid int64) int64 {
	if next.QV.IsVoter(l.cfg.ID) && next.Addrs[l.cfg.ID] == l.cur.Addrs[l.cfg.ID] {
		return l.cfg.ID
	}
	var cands []int64
	for sid, ok := range acks {
		if ok && sid != l.cfg.ID && next.QV.IsVoter(sid) {
			cands = append(cands, sid)
		}
	}
	if len(cands) == 0 {
		return l.cfg.ID // cannot happen: a quorum of next acked
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i] < cands[j] })
	best := cands[0]
	for _, p := range l.tracker.outstanding {
		if p.zxid <= zxid {
			continue
		}
		for _, qv := range p.qvs {
			kept := cands[:0]
			for _, sid := range cands {
				if p.acks[sid] && qv.IsVoter(sid) {
					kept = append(kept, sid)
				}
			}
			cands = kept
			if len(cands) == 0 {
				return best
			}
			best = cands[0]
			if len(cands) == 1 {
				return best
			}
		}
	}
	return best
}

// LocalLogged is the leader's own ack: its log is durable up to zxid.
func (l *Leader) LocalLogged(zxid int64) Ready {
	r := newReady()
	if l.tracker == nil || l.noCommit {
		return r
	}
	l.sampleAcks(&r, l.cfg.ID, l.selfAck, zxid)
	l.selfAck = max(l.selfAck, zxid)
	if committed, moved := l.tracker.Ack(l.cfg.ID, zxid); moved {
		l.commitUpTo(committed, &r)
	}
	return r
}

// sampleAcks reports in r.Acked the sampled proposals (zxid a multiple of AckSampleEvery)
// that sid acks for the first time with its ack up to zxid (prev: its previous ack), as
// ZooKeeper's Leader.processAck logs ack_latency: only for a proposal still waiting to
// commit. It runs before the ack is counted, so the ack that commits a proposal is
// reported too.
func (l *Leader) sampleAcks(r *Ready, sid, prev, zxid int64) {
	n := l.cfg.AckSampleEvery
	if n <= 0 {
		return
	}
	oldest, ok := l.tracker.OldestOutstanding()
	if !ok {
		return
	}
	// An ack of a zxid never proposed (a faulty peer's) acks nothing beyond the newest
	// proposal: the loop stays within the proposals waiting, and z += n cannot overflow.
	newest, _ := l.tracker.NewestOutstanding()
	zxid = min(zxid, newest)
	// The first multiple of n from the oldest proposal sid has not acked yet; the loop
	// visits only the multiples from there up to the newest proposal.
	from := max(prev+1, oldest)
	left := len(l.outstanding)
	for z := (from + n - 1) / n * n; z <= zxid && left > 0; z += n {
		if _, ok := l.outstanding[z]; ok {
			r.Acked = append(r.Acked, AckedProposal{Sid: sid, Zxid: z})
			left--
		}
	}
}

func (l *Leader) commitUpTo(zxid int64, r *Ready) {
	conns := l.sortedConns()
	resume := false
	for len(l.proposed) > 0 && l.proposed[0] <= zxid {
		z := l.proposed[0]
		l.proposed = l.proposed[1:]
		data := l.outstanding[z]
		delete(l.outstanding, z)
		c := Committed{Zxid: z, Data: data}
		r.Apply = append(r.Apply, c)
		l.history = append(l.history, c)
		l.lastProcessed = z
		if z == l.reconfigZxid && l.next != nil {
			// Leader.tryToCommit: the followers get COMMITANDACTIVATE and the observers
			// INFORMANDACTIVATE, both naming the designated leader; if that is another
			// server, nothing after the reconfig commits here.
			designated := l.activate(r, z, l.tracker.committedAcks(z), ConfigActivated)
			var lead [8]byte
			binary.BigEndian.PutUint64(lead[:], uint64(designated))
			for _, lc := range conns {
				if !l.forwarding(lc) {
					continue
				}
				if lc.observerInfo {
					l.send(r, lc, PktInformAndActivate, z, append(lead[:], data...))
				} else {
					l.send(r, lc, PktCommitAndActivate, z, lead[:])
				}
			}
			// The tracker paused after the reconfig: what follows commits now, unless
			// this leader handed over.
			resume = !l.noCommit
			break
		}
		for _, lc := range conns {
			if !l.forwarding(lc) {
				continue
			}
			if lc.observerInfo {
				l.send(r, lc, PktInform, z, data)
			} else {
				l.send(r, lc, PktCommit, z, nil)
			}
		}
		if z == l.bumpZxid {
			l.bumpCommitted(r) // nothing after the bump was proposed yet
			break
		}
	}
	if resume {
		if committed, moved := l.tracker.Settle(); moved {
			l.commitUpTo(committed, r)
			return
		}
	}
	l.trimHistory()
	l.answerSyncs(r)
}

// LocalSync registers a sync from a client of this server.
func (l *Leader) LocalSync() Ready {
	r := newReady()
	l.addSync(pendingSync{local: true}, &r)
	return r
}

func (l *Leader) remoteSync(c *lconn, r *Ready) {
	l.addSync(pendingSync{conn: c.id}, r)
}

func (l *Leader) addSync(ps pendingSync, r *Ready) {
	if l.tracker == nil {
		return // a sync before the leader is established: nothing to answer yet
	}
	ps.at = l.tracker.LastProposed()
	if n := len(l.held); n > 0 {
		// Writes waiting behind a bump came before this sync too.
		ps.at = l.held[n-1].Zxid
	}
	ps.needed = map[int64]int64{}
	for _, c := range l.sortedConns() {
		if c.phase == lcServing && l.voter(c) {
			l.send(r, c, PktPing, l.tracker.LastProposed(), nil)
			c.pings++
			ps.needed[c.sid] = c.pings
		}
	}
	l.syncs = append(l.syncs, ps)
	l.answerSyncs(r)
}

// leadershipProven reports whether a quorum answered the pings a sync is waiting for.
func (l *Leader) leadershipProven(ps pendingSync) bool {
	ok := map[int64]bool{l.cfg.ID: true}
	for _, c := range l.conns {
		if need, waiting := ps.needed[c.sid]; waiting && c.pongs >= need {
			ok[c.sid] = true
		}
	}
	return l.quorumAll(ok)
}

func (l *Leader) answerSyncs(r *Ready) {
	if l.tracker == nil {
		return
	}
	done := l.tracker.LastCommitted()
	n := 0
	for ; n < len(l.syncs); n++ {
		ps := l.syncs[n]
		if ps.at > done || !l.leadershipProven(ps) {
			break
		}
		if ps.local {
			r.Synced++
		} else if c := l.conns[ps.conn]; c != nil {
			l.send(r, c, PktSync, 0, nil)
		}
	}
	l.syncs = l.syncs[n:]
}

// HistoryLoaded hands over the committed txns from ask.From to ask.To the owner read from
// its log for a learner (nil when it cannot: the learner gets a SNAP), and syncs it.
func (l *Leader) HistoryLoaded(id ConnID, h []Committed) Ready {
	r := newReady()
	c := l.conns[id]
	if c == nil || c.phase != lcHistory || l.phase == ldDown {
		return r
	}
	c.older, c.olderLoaded = h, true
	l.syncLearner(&r, c)
	l.advance(&r)
	return r
}

// Revalidated answers a learner's REVALIDATE.
func (l *Leader) Revalidated(id ConnID, session int64, valid bool) Ready {
	r := newReady()
	if c := l.conns[id]; c != nil {
		var e jute.Encoder
		e.Long(session)
		e.Bool(valid)
		l.send(&r, c, PktRevalidate, -1, e.Buf)
	}
	return r
}

// Tick pings learners every half tick, drops silent ones, and steps down without a quorum.
func (l *Leader) Tick(nowMs int64) Ready {
	r := newReady()
	l.now = nowMs
	if l.phase == ldDown {
		return r
	}
	if l.phase < ldBroadcast {
		if nowMs-l.startMs > l.cfg.InitLimit*l.cfg.TickMs {
			l.phase = ldDown
			r.Err = fmt.Errorf("%w: no quorum within initLimit (phase %d)", ErrTimeout, l.phase)
			return r
		}
		return r
	}
	half := l.cfg.TickMs / 2
	if half <= 0 {
		half = 1
	}
	tick := nowMs / half
	if tick == l.lastPingTick {
		return r
	}
	l.lastPingTick = tick
	synced := map[int64]bool{l.cfg.ID: true}
	for _, c := range l.sortedConns() {
		limit := l.cfg.SyncLimit
		if c.phase < lcServing {
			limit = l.cfg.InitLimit + l.cfg.SyncLimit
		}
		if nowMs-c.lastRecv > limit*l.cfg.TickMs {
			l.drop(&r, c)
			continue
		}
		if c.phase >= lcNewLeader {
			l.send(&r, c, PktPing, l.tracker.LastProposed(), nil)
			c.pings++
		}
		if c.phase == lcServing && l.voter(c) {
			synced[c.sid] = true
		}
	}
	if !l.quorumAll(synced) {
		l.phase = ldDown
		r.Err = fmt.Errorf("%w: not enough followers synced", ErrTimeout)
	}
	return r
}
