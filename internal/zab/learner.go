package zab

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/zkd-io/zkd/jute"
)

// ErrProtocol wraps every protocol violation a peer commits.
var ErrProtocol = errors.New("zab: protocol error")

// ErrTimeout reports a peer that was silent too long.
var ErrTimeout = errors.New("zab: peer timed out")

// LearnerConfig configures a follower or observer.
type LearnerConfig struct {
	ID            int64
	Observer      bool
	ConfigVersion int64
	TickMs        int64
	InitLimit     int64 // ticks allowed for the sync with the leader
	SyncLimit     int64 // ticks of silence allowed once synced
	// Wide is ext.Wide on this server: LearnerInfo advertises it, and a leader that
	// advertised it back may roll the epoch over in place (rollover.go).
	Wide bool
}

// PersistentState is what a server keeps on disk across restarts.
type PersistentState struct {
	AcceptedEpoch int64
	CurrentEpoch  int64
	LastLogged    int64 // zxid of the last txn in the log
}

type learnerPhase int

const (
	lpRegister  learnerPhase = iota // FOLLOWERINFO sent, waiting for LEADERINFO
	lpSyncStart                     // ACKEPOCH sent, waiting for DIFF / TRUNC / SNAP
	lpSync                          // receiving the sync packets, waiting for NEWLEADER
	lpNewLeader                     // NEWLEADER acked, waiting for UPTODATE
	lpBroadcast
	lpFailed
)

// Learner is the follower (or observer) side of one connection to a leader, as ZooKeeper's
// Learner / Follower / Observer run it: registration, sync, then broadcast.
type Learner struct {
	cfg      LearnerConfig
	st       PersistentState
	phase    learnerPhase
	newEpoch int64
	lastRecv int64
	now      int64
	snapSync bool

	// Proposals received and not yet committed, in zxid order.
	pending []Committed
	// During sync: zxids committed before they may be applied (at UPTODATE).
	committedInSync []int64
	// Proposals appended to the log and not yet acked, in order. Kept apart from pending:
	// a COMMIT can arrive before this follower's own fsync (a quorum formed without it),
	// and the leader still needs every ACK (it times out on the oldest missing one).
	unacked []int64
	logged  int64
	acked   int64

	touches map[int64]int32
	touched []int64

	// activateInSync are the reconfigs committed during the sync (zxid -> designated
	// leader), activated as they are applied at UPTODATE.
	activateInSync map[int64]int64
	// leaderConfig is the configuration NEWLEADER carried, made current at UPTODATE.
	leaderConfig []byte

	// leaderWide: both ends run with wide (LEADERINFO advertised it), so an epoch bump
	// received in broadcast moves this learner's epochs; bumpZxid is the one logged and
	// not committed yet (0: none).
	leaderWide bool
	bumpZxid   int64
}

// ReconfigText is the configuration a reconfig txn sets, or false for any other txn (only
// the header is decoded for those).
func ReconfigText(data []byte) ([]byte, bool) {
	var h jute.TxnHeader
	if _, err := jute.UnmarshalPrefix(data, &h); err != nil || h.Type != jute.OpReconfig {
		return nil, false
	}
	t, err := jute.DecodeTxn(data)
	if err != nil || t.Header.Type != jute.OpReconfig {
		return nil, false
	}
	sd, ok := t.Body.(*jute.SetDataTxn)
	if !ok {
		return nil, false
	}
	return sd.Data, true
}

// activated reports the reconfig just applied (the last of r.Apply) as activated, with the
// leader the committing leader designated.
func (l *Learner) activated(r *Ready, designated int64) {
	c := r.Apply[len(r.Apply)-1]
	if text, ok := ReconfigText(c.Data); ok {
		r.Configs = append(r.Configs, ConfigEvent{Kind: ConfigActivated, Zxid: c.Zxid, Text: text, Designated: designated})
	}
}

func designatedLeader(data []byte) (int64, bool) {
	if len(data) < 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(data)), true
}

// NewLearner starts a learner that has just connected to the leader at nowMs. Its first
// Ready sends FOLLOWERINFO (or OBSERVERINFO).
func NewLearner(cfg LearnerConfig, st PersistentState, nowMs int64) (*Learner, Ready) {
	l := &Learner{cfg: cfg, st: st, lastRecv: nowMs, now: nowMs, touches: map[int64]int32{}}
	r := newReady()
	info := jute.Marshal(&jute.LearnerInfo{ServerID: cfg.ID, ProtocolVersion: ProtocolVersion, ConfigVersion: cfg.ConfigVersion})
	if cfg.Wide {
		info = append(info, wideAdvert()...)
	}
	typ := PktFollowerInfo
	if cfg.Observer {
		typ = PktObserverInfo
	}
	r.send(typ, MakeZxid(st.AcceptedEpoch, 0), info)
	return l, r
}

// State returns the persistent state as the learner knows it.
func (l *Learner) State() PersistentState { return l.st }

// Serving reports whether the sync is done.
func (l *Learner) Serving() bool { return l.phase == lpBroadcast }

// NewEpoch is the leader's epoch (0 before LEADERINFO).
func (l *Learner) NewEpoch() int64 { return l.newEpoch }

func (l *Learner) fail(r *Ready, err error) Ready {
	l.phase = lpFailed
	r.Err = err
	return *r
}

func protoErr(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, a...)...)
}

// Receive handles one packet from the leader.
func (l *Learner) Receive(nowMs int64, p jute.QuorumPacket) Ready {
	r := newReady()
	if l.phase == lpFailed {
		r.Err = protoErr("packet after failure")
		return r
	}
	l.now, l.lastRecv = nowMs, nowMs
	switch l.phase {
	case lpRegister:
		return l.onLeaderInfo(p, &r)
	case lpSyncStart:
		switch p.Type {
		case PktDiff:
		case PktTrunc:
			r.TruncateTo = p.Zxid
			l.st.LastLogged = p.Zxid
		case PktSnap:
			// The owner reads the database stream that follows and then calls SnapLoaded.
			l.snapSync = true
		default:
			return l.fail(&r, protoErr("expected DIFF, TRUNC or SNAP, got %s", PacketName(p.Type)))
		}
		l.phase = lpSync
		return r
	case lpSync, lpNewLeader:
		return l.onSyncPacket(p, &r)
	case lpBroadcast:
		return l.onBroadcast(p, &r)
	}
	return r
}

func (l *Learner) onLeaderInfo(p jute.QuorumPacket, r *Ready) Ready {
	if p.Type != PktLeaderInfo {
		return l.fail(r, protoErr("first packet from the leader is %s, want LEADERINFO", PacketName(p.Type)))
	}
	newEpoch := Epoch(p.Zxid)
	var ack [4]byte
	switch {
	case newEpoch > l.st.AcceptedEpoch:
		binary.BigEndian.PutUint32(ack[:], uint32(int32(l.st.CurrentEpoch)))
		l.st.AcceptedEpoch = newEpoch
		r.AcceptedEpoch = newEpoch
	case newEpoch == l.st.AcceptedEpoch:
		// Already accepted this epoch: the -1 says this is not a second vote for it.
		binary.BigEndian.PutUint32(ack[:], 0xffffffff)
	default:
		return l.fail(r, protoErr("leader's epoch %d is less than accepted epoch %d", newEpoch, l.st.AcceptedEpoch))
	}
	l.newEpoch = newEpoch
	l.leaderWide = l.cfg.Wide && len(p.Data) > 4 && advertisesWide(p.Data[4:])
	r.send(PktAckEpoch, l.st.LastLogged, ack[:])
	l.phase = lpSyncStart
	return *r
}

func (l *Learner) activateLater(zxid, designated int64) {
	if l.activateInSync == nil {
		l.activateInSync = map[int64]int64{}
	}
	l.activateInSync[zxid] = designated
}

// SnapLoaded tells the learner that the owner loaded the SNAP stream (state at zxid).
func (l *Learner) SnapLoaded(zxid int64) {
	l.st.LastLogged = zxid
}

func (l *Learner) onSyncPacket(p jute.QuorumPacket, r *Ready) Ready {
	switch p.Type {
	case PktProposal:
		return *l.addProposal(p, r)
	case PktCommit, PktCommitAndActivate:
		designated := NoLeader
		if p.Type == PktCommitAndActivate {
			var ok bool
			if designated, ok = designatedLeader(p.Data); !ok {
				return l.fail(r, protoErr("short COMMITANDACTIVATE"))
			}
		}
		if l.phase < lpBroadcast {
			// Applied in order once UPTODATE arrives.
			l.committedInSync = append(l.committedInSync, p.Zxid)
			if p.Type == PktCommitAndActivate {
				l.activateLater(p.Zxid, designated)
			}
			return *r
		}
		if l.commit(p.Zxid, r); r.Err == nil && p.Type == PktCommitAndActivate {
			l.activated(r, designated)
		}
		if r.Err == nil && p.Zxid == l.bumpZxid {
			l.enterBumpedEpoch(r)
		}
		return *r
	case PktInform, PktInformAndActivate:
		data := p.Data
		designated := NoLeader
		if p.Type == PktInformAndActivate {
			var ok bool
			if designated, ok = designatedLeader(data); !ok {
				return l.fail(r, protoErr("short INFORMANDACTIVATE"))
			}
			data = data[8:]
		}
		if l.phase == lpBroadcast && p.Type == PktInform && l.isBump(p.Zxid, data) {
			// An observer's bump comes committed: both epochs, before it is logged.
			l.st.AcceptedEpoch = l.newEpoch + 1
			r.AcceptedEpoch = l.newEpoch + 1
			l.bumpZxid = p.Zxid
		}
		if l.addProposal(jute.QuorumPacket{Type: PktProposal, Zxid: p.Zxid, Data: data}, r); r.Err != nil {
			return *r
		}
		if l.phase < lpBroadcast {
			// Applied in order once UPTODATE arrives.
			l.committedInSync = append(l.committedInSync, p.Zxid)
			if p.Type == PktInformAndActivate {
				l.activateLater(p.Zxid, designated)
			}
			return *r
		}
		if l.commit(p.Zxid, r); r.Err == nil && p.Type == PktInformAndActivate {
			l.activated(r, designated)
		}
		if r.Err == nil && p.Zxid == l.bumpZxid {
			l.enterBumpedEpoch(r)
		}
		return *r
	case PktNewLeader:
		if l.phase != lpSync {
			return l.fail(r, protoErr("second NEWLEADER"))
		}
		if Epoch(p.Zxid) != l.newEpoch {
			return l.fail(r, protoErr("NEWLEADER for epoch %d, registered for %d", Epoch(p.Zxid), l.newEpoch))
		}
		if len(p.Data) > 1 {
			// The leader's last seen configuration (Learner.syncWithLeader), current once
			// UPTODATE arrives.
			l.leaderConfig = p.Data
			r.Configs = append(r.Configs, ConfigEvent{Kind: ConfigFromLeader, Zxid: p.Zxid, Text: p.Data, Designated: NoLeader})
		}
		// Persist what the sync brought before acking: a snapshot after SNAP, every
		// proposal received so far (ZOOKEEPER-3911), then the new epoch (ZOOKEEPER-4643).
		r.TakeSnapshot = l.snapSync
		l.st.CurrentEpoch = l.newEpoch
		r.CurrentEpoch = l.newEpoch
		r.Append = append(r.Append, l.pending...)
		r.SyncLog = true
		if n := len(l.pending); n > 0 {
			l.st.LastLogged = l.pending[n-1].Zxid
		}
		l.logged = l.st.LastLogged
		r.send(PktAck, p.Zxid, nil)
		// The leader may need these acks to commit what it forwarded as outstanding.
		if !l.cfg.Observer {
			for _, c := range l.pending {
				r.send(PktAck, c.Zxid, nil)
			}
			l.acked = l.logged
		}
		l.phase = lpNewLeader
		return *r
	case PktUpToDate:
		if l.phase != lpNewLeader {
			return l.fail(r, protoErr("UPTODATE before NEWLEADER"))
		}
		r.send(PktAck, MakeZxid(l.newEpoch, 0), nil)
		for _, z := range l.committedInSync {
			if l.commit(z, r); r.Err != nil {
				return *r
			}
			if d, ok := l.activateInSync[z]; ok {
				l.activated(r, d)
			}
		}
		l.committedInSync = nil
		l.activateInSync = nil
		if l.leaderConfig != nil {
			r.Configs = append(r.Configs, ConfigEvent{Kind: ConfigLeaderActivated, Zxid: MakeZxid(l.newEpoch, 0), Text: l.leaderConfig, Designated: NoLeader})
			l.leaderConfig = nil
		}
		l.phase = lpBroadcast
		r.Serving = true
		return *r
	case PktPing:
		return l.ping(p, r)
	}
	return l.fail(r, protoErr("unexpected %s during sync", PacketName(p.Type)))
}

func (l *Learner) addProposal(p jute.QuorumPacket, r *Ready) *Ready {
	if len(p.Data) < jute.TxnHeaderSize {
		l.fail(r, protoErr("PROPOSAL %s without a txn", Hex(p.Zxid)))
		return r
	}
	var h jute.TxnHeader
	if _, err := jute.UnmarshalPrefix(p.Data, &h); err != nil || h.Zxid != p.Zxid {
		l.fail(r, protoErr("PROPOSAL %s carries txn %s", Hex(p.Zxid), Hex(h.Zxid)))
		return r
	}
	if n := len(l.pending); n > 0 && p.Zxid <= l.pending[n-1].Zxid {
		l.fail(r, protoErr("PROPOSAL %s after %s", Hex(p.Zxid), Hex(l.pending[n-1].Zxid)))
		return r
	}
	l.pending = append(l.pending, Committed{Zxid: p.Zxid, Data: p.Data})
	if h.Type == jute.OpReconfig {
		if text, ok := ReconfigText(p.Data); ok {
			r.Configs = append(r.Configs, ConfigEvent{Kind: ConfigSeen, Zxid: p.Zxid, Text: text, Designated: NoLeader})
		}
	}
	if l.phase == lpNewLeader || l.phase == lpBroadcast {
		r.Append = append(r.Append, Committed{Zxid: p.Zxid, Data: p.Data})
		l.st.LastLogged = p.Zxid
		if !l.cfg.Observer {
			l.unacked = append(l.unacked, p.Zxid)
		}
	}
	return r
}

// commit applies the oldest pending proposal, which must be zxid: a leader commits in order.
func (l *Learner) commit(zxid int64, r *Ready) *Ready {
	if len(l.pending) == 0 || l.pending[0].Zxid != zxid {
		next := "none"
		if len(l.pending) > 0 {
			next = Hex(l.pending[0].Zxid)
		}
		l.fail(r, protoErr("COMMIT %s but the next pending proposal is %s", Hex(zxid), next))
		return r
	}
	r.Apply = append(r.Apply, l.pending[0])
	l.pending[0] = Committed{}
	l.pending = l.pending[1:]
	return r
}

func (l *Learner) onBroadcast(p jute.QuorumPacket, r *Ready) Ready {
	switch p.Type {
	case PktProposal:
		if l.cfg.Observer {
			return l.fail(r, protoErr("PROPOSAL sent to an observer"))
		}
		if l.isBump(p.Zxid, p.Data) {
			if l.bumpZxid != 0 || l.st.AcceptedEpoch != l.newEpoch {
				return l.fail(r, protoErr("epoch bump %s with accepted epoch %d in epoch %d", Hex(p.Zxid), l.st.AcceptedEpoch, l.newEpoch))
			}
			// Accept the next epoch on disk before the bump is logged, hence acked: the
			// leader counts this ack as a promise that an election sees epoch+1 here.
			l.st.AcceptedEpoch = l.newEpoch + 1
			r.AcceptedEpoch = l.newEpoch + 1
			l.bumpZxid = p.Zxid
		}
		l.addProposal(p, r)
		return *r
	case PktCommit, PktCommitAndActivate, PktInform, PktInformAndActivate:
		return l.onSyncPacket(p, r)
	case PktPing:
		return l.ping(p, r)
	case PktSync:
		r.Synced++
		return *r
	case PktRevalidate:
		var sess int64
		var valid bool
		d := jute.NewDecoder(p.Data)
		sess = d.Long()
		valid = d.Bool()
		if d.Err() != nil {
			return l.fail(r, protoErr("bad REVALIDATE: %v", d.Err()))
		}
		r.Revalidated = append(r.Revalidated, Revalidation{Session: sess, Valid: valid})
		return *r
	case PktUpToDate:
		// ZooKeeper logs and ignores a late UPTODATE.
		return *r
	}
	return l.fail(r, protoErr("unexpected %s", PacketName(p.Type)))
}

// isBump reports whether a txn received in broadcast is the leader's epoch bump: both ends
// run with wide, and it closes the epoch this learner follows.
func (l *Learner) isBump(zxid int64, data []byte) bool {
	return l.leaderWide && Epoch(zxid) == l.newEpoch && IsBump(zxid, data)
}

// enterBumpedEpoch: the bump committed; from here the leader's zxids are the next
// epoch's, and currentEpoch says so on disk before any of them is logged (the next
// proposals come in later Readys).
func (l *Learner) enterBumpedEpoch(r *Ready) {
	l.newEpoch++
	l.bumpZxid = 0
	l.st.CurrentEpoch = l.newEpoch
	r.CurrentEpoch = l.newEpoch
	r.Rolled = l.newEpoch
}

// ping answers the leader's PING with the sessions touched since the last one.
func (l *Learner) ping(p jute.QuorumPacket, r *Ready) Ready {
	// Never null: ZooKeeper's leader reads the data without a null check.
	e := jute.Encoder{Buf: []byte{}}
	for _, id := range l.touched {
		e.Long(id)
		e.Int(l.touches[id])
	}
	clear(l.touches)
	l.touched = l.touched[:0]
	r.Out = append(r.Out, Out{Packet: jute.QuorumPacket{Type: PktPing, Zxid: p.Zxid, Data: e.Buf, AuthInfo: p.AuthInfo}})
	return *r
}

// Touch records client activity on a session, reported to the leader with the next PING
// (the leader owns session expiry).
func (l *Learner) Touch(session int64, timeoutMs int32) {
	if _, ok := l.touches[session]; !ok {
		l.touched = append(l.touched, session)
	}
	l.touches[session] = timeoutMs
}

// Logged reports that the log is durable up to zxid; a follower acks what it logged.
func (l *Learner) Logged(zxid int64) Ready {
	r := newReady()
	if l.cfg.Observer || l.phase < lpNewLeader || zxid <= l.acked {
		return r
	}
	// Ack every proposal logged up to zxid, one ACK each, as ZooKeeper's followers do.
	n := 0
	for ; n < len(l.unacked) && l.unacked[n] <= zxid; n++ {
		r.send(PktAck, l.unacked[n], nil)
	}
	l.unacked = append(l.unacked[:0], l.unacked[n:]...)
	l.acked = zxid
	return r
}

// Forward sends a client request that changes state to the leader.
func (l *Learner) Forward(session int64, cxid int32, op jute.OpCode, body []byte, auth []jute.ID) Ready {
	r := newReady()
	var e jute.Encoder
	e.Long(session)
	e.Int(cxid)
	e.Int(int32(op))
	e.Buf = append(e.Buf, body...)
	r.Out = append(r.Out, Out{Packet: jute.QuorumPacket{Type: PktRequest, Zxid: -1, Data: e.Buf, AuthInfo: auth}})
	return r
}

// Revalidate asks the leader whether a session a client reconnected with is still alive.
func (l *Learner) Revalidate(session int64, timeoutMs int32) Ready {
	r := newReady()
	var e jute.Encoder
	e.Long(session)
	e.Int(timeoutMs)
	r.send(PktRevalidate, -1, e.Buf)
	return r
}

// Tick checks the leader's liveness: silence past initLimit ticks while syncing, or
// syncLimit ticks once synced, ends the connection.
func (l *Learner) Tick(nowMs int64) Ready {
	r := newReady()
	l.now = nowMs
	limit := l.cfg.SyncLimit
	if l.phase < lpBroadcast {
		limit = l.cfg.InitLimit
	}
	if nowMs-l.lastRecv > limit*l.cfg.TickMs {
		return l.fail(&r, fmt.Errorf("%w: no packet from the leader for %d ms", ErrTimeout, nowMs-l.lastRecv))
	}
	return r
}
