package zab

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/zkd-io/zkd/jute"
)

// ObserverMasterConfig configures the observer master a synced follower runs when zoo.cfg
// sets observerMasterPort (ZooKeeper's ObserverMaster, ZOOKEEPER-3140).
type ObserverMasterConfig struct {
	// ID is the follower's sid.
	ID                           int64
	TickMs, InitLimit, SyncLimit int64
	// Epoch is the follower's current epoch (the leader's): LEADERINFO and NEWLEADER carry
	// it, as ObserverMaster.getEpochToPropose answers with it.
	Epoch int64
	// ConfigVersion is the follower's committed configuration's version: an observer with
	// a later one is refused, as a leader refuses it.
	ConfigVersion int64
	// ConfigText is NEWLEADER's data: the follower's last seen configuration.
	ConfigText []byte
	// CommitLogCount bounds the committed history kept for DIFF syncs.
	CommitLogCount int
}

type omPhase int

const (
	omInfo      omPhase = iota // waiting for OBSERVERINFO
	omEpoch                    // LEADERINFO sent, waiting for ACKEPOCH
	omHistory                  // waiting for older history from the follower's log
	omNewLeader                // synced, NEWLEADER sent, waiting for its ACK
	omServing                  // UPTODATE sent
)

type omConn struct {
	id       ConnID
	sid      int64
	phase    omPhase
	peerZxid int64
	lastRecv int64
	// older is what the owner read from the log for a learner behind the history.
	older       []Committed
	olderLoaded bool
}

// omAsk is an observer's REVALIDATE or SYNC on its way to the leader through the
// follower's connection: the leader answers in order, so the answer is the oldest ask's.
type omAsk struct {
	conn    ConnID // 0: the follower's own client (a sync)
	session int64
	timeout int32
}

// ObserverMaster is a follower's side of its observers' connections, as ZooKeeper's
// ObserverMaster and LearnerHandler run it: it syncs an observer from the follower's
// committed history (DIFF, TRUNC or SNAP, then NEWLEADER and UPTODATE), informs it of what
// the follower commits, pings it, and sends its writes, syncs and revalidations up to the
// leader through the follower's own connection, routing the answers back.
//
// Out packets with Conn 0 go to the leader on the follower's connection (after what the
// follower queued before them); others go to observers. The owner calls Committed (or
// CommittedAndActivate) as the follower applies each txn, so the history here always
// matches the follower's tree: a SNAP streams that tree as it is when the Ready is sent.
type ObserverMaster struct {
	cfg           ObserverMasterConfig
	lastCommitted int64
	history       []Committed
	conns         map[ConnID]*omConn
	syncs         []ConnID // forwarded syncs, oldest first; 0 is the follower's own
	revals        []omAsk  // forwarded revalidations, oldest first
	lastPingTick  int64
}

// NewObserverMaster starts an observer master at the follower's last applied zxid, with
// its recent committed history (ascending) and the number of its own clients' syncs
// already forwarded and unanswered (their answers come first).
func NewObserverMaster(cfg ObserverMasterConfig, lastCommitted int64, history []Committed, localSyncs int) *ObserverMaster {
	if cfg.CommitLogCount <= 0 {
		cfg.CommitLogCount = 500
	}
	m := &ObserverMaster{cfg: cfg, lastCommitted: lastCommitted, conns: map[ConnID]*omConn{}}
	m.history = append(m.history, history...)
	m.trim()
	m.syncs = make([]ConnID, localSyncs)
	return m
}

func (m *ObserverMaster) trim() { m.history = keepLast(m.history, m.cfg.CommitLogCount) }

func (m *ObserverMaster) send(r *Ready, id ConnID, t int32, zxid int64, data []byte) {
	r.Out = append(r.Out, Out{Conn: id, Packet: jute.QuorumPacket{Type: t, Zxid: zxid, Data: data}})
}

func (m *ObserverMaster) drop(r *Ready, c *omConn) {
	delete(m.conns, c.id)
	r.Close = append(r.Close, c.id)
}

// Accept registers an observer's new connection (never ConnID 0).
func (m *ObserverMaster) Accept(id ConnID, nowMs int64) {
	m.conns[id] = &omConn{id: id, lastRecv: nowMs}
}

// Closed forgets a connection the owner saw close. Its asks stay queued: the leader still
// answers them, in order, and the answers are dropped.
func (m *ObserverMaster) Closed(id ConnID) { delete(m.conns, id) }

// Receive handles one packet from an observer.
func (m *ObserverMaster) Receive(id ConnID, nowMs int64, p jute.QuorumPacket) Ready {
	r := newReady()
	c := m.conns[id]
	if c == nil {
		return r
	}
	c.lastRecv = nowMs
	switch c.phase {
	case omInfo:
		// LearnerHandler: "Non observer attempting to connect to ObserverMaster".
		if p.Type != PktObserverInfo {
			m.drop(&r, c)
			return r
		}
		var li jute.LearnerInfo
		if err := jute.Unmarshal(p.Data, &li); err != nil && len(p.Data) < 8 {
			m.drop(&r, c)
			return r
		}
		if li.ProtocolVersion < ProtocolVersion || li.ConfigVersion > m.cfg.ConfigVersion {
			m.drop(&r, c)
			return r
		}
		c.sid = li.ServerID
		c.phase = omEpoch
		m.send(&r, c.id, PktLeaderInfo, MakeZxid(m.cfg.Epoch, 0), binary.BigEndian.AppendUint32(nil, uint32(ProtocolVersion)))
	case omEpoch:
		if p.Type != PktAckEpoch || len(p.Data) < 4 {
			m.drop(&r, c)
			return r
		}
		c.peerZxid = p.Zxid
		m.sync(&r, c)
	case omNewLeader:
		if p.Type != PktAck || p.Zxid != MakeZxid(m.cfg.Epoch, 0) {
			m.drop(&r, c)
			return r
		}
		// A follower is established already: nothing to wait for (waitForStartup).
		m.send(&r, c.id, PktUpToDate, -1, nil)
		c.phase = omServing
	case omServing:
		m.onServing(c, p, &r)
	}
	return r
}

// sync queues what brings the observer up to date and NEWLEADER; from then on it is
// informed of every commit.
func (m *ObserverMaster) sync(r *Ready, c *omConn) {
	var older func(int64) []Committed
	if c.olderLoaded {
		older = func(int64) []Committed { return c.older }
	} else if NeedsOlder(c.peerZxid, m.lastCommitted, m.history) {
		// As a leader: the follower's log is read (LearnerHandler.syncFollower reads the
		// txn log), and HistoryLoaded resumes. Commits meanwhile extend the history the
		// plan then continues with.
		c.phase = omHistory
		r.LoadHistory = append(r.LoadHistory, HistoryAsk{Conn: c.id, From: c.peerZxid, To: m.lastCommitted})
		return
	}
	plan := PlanSync(c.peerZxid, m.lastCommitted, m.history, older)
	c.older = nil
	if plan.Snap {
		r.Out = append(r.Out, Out{Conn: c.id, Packet: jute.QuorumPacket{Type: PktSnap, Zxid: m.lastCommitted}, SnapFollows: true})
	} else {
		for _, p := range plan.Packets {
			r.Out = append(r.Out, Out{Conn: c.id, Packet: p})
		}
	}
	m.send(r, c.id, PktNewLeader, MakeZxid(m.cfg.Epoch, 0), m.cfg.ConfigText)
	c.phase = omNewLeader
}

func (m *ObserverMaster) onServing(c *omConn, p jute.QuorumPacket, r *Ready) {
	switch p.Type {
	case PktAck:
		// The ACK after UPTODATE; observers ack nothing else.
	case PktPing:
		// The follower's session tracker is touched; the leader hears of it with the
		// follower's own next PING reply.
		d := jute.NewDecoder(p.Data)
		for d.Remaining() >= 12 {
			r.Touches = append(r.Touches, Touch{Session: d.Long(), Timeout: d.Int(), Sid: c.sid})
		}
	case PktRevalidate:
		d := jute.NewDecoder(p.Data)
		ask := omAsk{conn: c.id, session: d.Long(), timeout: d.Int()}
		if d.Err() != nil {
			m.drop(r, c)
			return
		}
		m.revals = append(m.revals, ask)
		r.Out = append(r.Out, Out{Packet: jute.QuorumPacket{Type: PktRevalidate, Zxid: p.Zxid, Data: p.Data}})
	case PktRequest:
		d := jute.NewDecoder(p.Data)
		d.Long()
		d.Int()
		typ := jute.OpCode(d.Int())
		if d.Err() != nil {
			m.drop(r, c)
			return
		}
		if typ == jute.OpSync {
			m.syncs = append(m.syncs, c.id)
		}
		// Passed up as it came (FollowerRequestProcessor forwards an observer's request
		// unchanged): the leader counts the session as the follower's.
		r.Out = append(r.Out, Out{Packet: jute.QuorumPacket{Type: PktRequest, Zxid: p.Zxid, Data: p.Data, AuthInfo: p.AuthInfo}})
	default:
		m.drop(r, c)
	}
}

// HistoryLoaded hands over the committed txns the owner read from the follower's log for
// an observer behind the history (nil when it could not: the observer gets a SNAP), and
// syncs it.
func (m *ObserverMaster) HistoryLoaded(id ConnID, h []Committed) Ready {
	r := newReady()
	c := m.conns[id]
	if c == nil || c.phase != omHistory {
		return r
	}
	c.older, c.olderLoaded = h, true
	m.sync(&r, c)
	return r
}

// LocalSync records a sync of the follower's own client, forwarded to the leader.
func (m *ObserverMaster) LocalSync() { m.syncs = append(m.syncs, 0) }

// Synced routes the leader's answer to the oldest forwarded sync: local reports that it
// was the follower's own client's (or that none is known), otherwise the Ready answers
// the observer that asked.
func (m *ObserverMaster) Synced() (local bool, r Ready) {
	r = newReady()
	if len(m.syncs) == 0 {
		return true, r
	}
	id := m.syncs[0]
	m.syncs = m.syncs[1:]
	if id == 0 {
		return true, r
	}
	if c := m.conns[id]; c != nil {
		m.send(&r, id, PktSync, 0, nil)
	}
	return false, r
}

// Revalidated routes the leader's answer to a revalidation: when the oldest one an
// observer asked is for session, the answer is that observer's (handled), and a valid
// session is touched, as ZooKeeper's leader touches it; otherwise it is the follower's.
func (m *ObserverMaster) Revalidated(session int64, valid bool) (handled bool, r Ready) {
	r = newReady()
	if len(m.revals) == 0 || m.revals[0].session != session {
		return false, r
	}
	a := m.revals[0]
	m.revals = m.revals[1:]
	if c := m.conns[a.conn]; c != nil {
		var e jute.Encoder
		e.Long(session)
		e.Bool(valid)
		m.send(&r, a.conn, PktRevalidate, -1, e.Buf)
	}
	if valid {
		r.Touches = append(r.Touches, Touch{Session: session, Timeout: a.timeout, Sid: m.cfg.ID})
	}
	return true, r
}

// Committed reports a txn the follower applied: observers that are synced (or syncing
// past NEWLEADER) are informed of it.
func (m *ObserverMaster) Committed(c Committed) Ready {
	return m.inform(c, PktInform, c.Data)
}

// CommittedAndActivate reports a reconfig the follower applied from COMMITANDACTIVATE:
// observers get INFORMANDACTIVATE with the leader the committing leader designated.
func (m *ObserverMaster) CommittedAndActivate(c Committed, designated int64) Ready {
	data := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(c.Data)), uint64(designated))
	return m.inform(c, PktInformAndActivate, append(data, c.Data...))
}

func (m *ObserverMaster) inform(c Committed, typ int32, data []byte) Ready {
	r := newReady()
	if c.Zxid <= m.lastCommitted {
		return r
	}
	m.lastCommitted = c.Zxid
	m.history = append(m.history, c)
	m.trim()
	for _, oc := range m.sorted() {
		if oc.phase >= omNewLeader {
			m.send(&r, oc.id, typ, c.Zxid, data)
		}
	}
	return r
}

// SetConfig changes what NEWLEADER carries and the configuration version observers are
// checked against (a reconfig seen or activated).
func (m *ObserverMaster) SetConfig(version int64, text []byte) {
	m.cfg.ConfigVersion = version
	m.cfg.ConfigText = text
}

// Tick pings observers every half tick and drops silent ones: past syncLimit ticks once
// synced, initLimit + syncLimit before.
func (m *ObserverMaster) Tick(nowMs int64) Ready {
	r := newReady()
	half := max(m.cfg.TickMs/2, 1)
	tick := nowMs / half
	if tick == m.lastPingTick {
		return r
	}
	m.lastPingTick = tick
	for _, c := range m.sorted() {
		limit := m.cfg.SyncLimit
		if c.phase < omServing {
			limit = m.cfg.InitLimit + m.cfg.SyncLimit
		}
		if nowMs-c.lastRecv > limit*m.cfg.TickMs {
			m.drop(&r, c)
			continue
		}
		if c.phase >= omNewLeader {
			m.send(&r, c.id, PktPing, m.lastCommitted, nil)
		}
	}
	return r
}

// Stop drops every observer (the follower stopped following).
func (m *ObserverMaster) Stop() Ready {
	r := newReady()
	for _, c := range m.sorted() {
		m.drop(&r, c)
	}
	return r
}

// Observers lists the connected observers, for mntr and the admin views.
func (m *ObserverMaster) Observers() []LearnerState {
	out := make([]LearnerState, 0, len(m.conns))
	for _, c := range m.conns {
		out = append(out, c.state())
	}
	slices.SortFunc(out, func(a, b LearnerState) int { return cmp.Compare(a.Sid, b.Sid) })
	return out
}

// SyncedObservers counts the observers synced (UPTODATE sent), ZooKeeper's
// getNumActiveObservers.
func (m *ObserverMaster) SyncedObservers() int {
	n := 0
	for _, c := range m.conns {
		if c.phase == omServing {
			n++
		}
	}
	return n
}

func (m *ObserverMaster) sorted() []*omConn {
	out := make([]*omConn, 0, len(m.conns))
	for _, c := range m.conns {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *omConn) int { return cmp.Compare(a.id, b.id) })
	return out
}
