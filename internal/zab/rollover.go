package zab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/zkd-io/zkd/jute"
)

// The wide extension's in-place zxid rollover (doc.go, "Rolling the epoch over without an
// election"). Everything here is reached only when both ends run with ext.Wide: a server
// without it neither sends nor reads the advertisement, and Apache ZooKeeper never sends
// it.

// wideMagic ends LearnerInfo (after configVersion) and LEADERINFO's data (after the
// protocol version) when the sender rolls epochs over in place: the bytes "zkdW", then
// the features (wideRollover). ZooKeeper's LearnerHandler reads LearnerInfo with a
// ByteBuffer up to configVersion, and its Learner reads one int of LEADERINFO, so neither
// sees them; a zkd leader sends them only to a learner that sent them.
const (
	wideMagic    uint32 = 0x7a6b6457 // "zkdW"
	wideRollover uint32 = 1
)

// BumpCounter is the counter of an epoch-bump txn: the one value NextZxid never hands out
// (ZooKeeper's leader shuts down before proposing it), so no other txn carries it.
const BumpCounter int64 = 0xffffffff

// BumpErr is the error code an epoch-bump txn (an ErrorTxn) carries: none of ZooKeeper's
// codes, so that a txn that merely has the counter cannot be taken for one.
const BumpErr jute.Code = -0x7a6b

// ErrCounterExhausted: the zxid counter reached its end and the epoch cannot roll over in
// place; the leader must step down so that an election starts the next epoch
// (ZOOKEEPER-1277).
var ErrCounterExhausted = errors.New("zab: zxid counter exhausted")

// errRolloverLost ends a leadership whose next bump could not go out in place.
var errRolloverLost = fmt.Errorf("%w and a member is no longer synced with wide", ErrCounterExhausted)

// maxCounter is the last counter NextZxid hands out (ZOOKEEPER-1277 stops before the
// counter's last value).
const maxCounter int64 = 0xfffffffe

func wideAdvert() []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, wideMagic), wideRollover)
}

// advertisesWide reports whether tail (the bytes after a record ZooKeeper defines) is the
// wide advertisement with the rollover feature.
func advertisesWide(tail []byte) bool {
	if len(tail) < 8 || binary.BigEndian.Uint32(tail) != wideMagic {
		return false
	}
	return binary.BigEndian.Uint32(tail[4:])&wideRollover != 0
}

// learnerInfoSize is LearnerInfo's size: serverId long, protocol int, configVersion long.
const learnerInfoSize = 20

// BumpTxn is the txn that moves an ensemble from epoch to epoch+1 in place: an error txn
// (TxnHeader type -1, ErrorTxn{BumpErr}) at zxid (epoch, BumpCounter), which ZooKeeper's
// tree applies as nothing, so the log stays one ZooKeeper reads.
func BumpTxn(epoch, timeMs int64) []byte {
	t := jute.LoggedTxn{
		Header: jute.TxnHeader{Zxid: MakeZxid(epoch, BumpCounter), Time: timeMs, Type: jute.OpError},
		Body:   &jute.ErrorTxn{Err: BumpErr},
	}
	return jute.EncodeTxn(nil, &t)
}

// IsBump reports whether the txn data at zxid is an epoch bump.
func IsBump(zxid int64, data []byte) bool {
	if Counter(zxid) != BumpCounter {
		return false
	}
	t, err := jute.DecodeTxn(data)
	if err != nil || t.Header.Type != jute.OpError || t.Header.Zxid != zxid {
		return false
	}
	e, ok := t.Body.(*jute.ErrorTxn)
	return ok && e.Err == BumpErr
}

// heldTxn is a proposal of the next epoch waiting for its bump to commit, or (bump set) the
// next bump itself, when a whole epoch went by while one was outstanding.
type heldTxn struct {
	Committed
	bump bool
}

// canRollInPlace reports whether the leader may bump the epoch without an election: wide
// on, no reconfiguration pending or handed over, and every member of the configuration
// (voters and observers alike, listed in its text) connected, synced and advertising wide,
// with no learner connected that does not.
func (l *Leader) canRollInPlace() bool {
	if !l.cfg.Wide || l.phase != ldBroadcast || l.next != nil || l.noCommit {
		return false
	}
	ok := map[int64]bool{}
	for _, c := range l.conns {
		if !c.wide {
			if c.phase >= lcNewLeader {
				return false // a synced learner that would log txns it cannot read as a bump
			}
			continue
		}
		if c.phase == lcServing {
			ok[c.sid] = true
		}
	}
	members := l.cfg.Members
	if l.cfg.Reconfig {
		// The owner builds every configuration of a reconfig-enabled ensemble with each
		// member's address, observers' too.
		members = slices.Collect(maps.Keys(l.cur.Addrs))
	}
	if len(members) == 0 {
		return false // who must take part is unknown: keep the election
	}
	for _, sid := range members {
		if sid != l.cfg.ID && !ok[sid] {
			return false
		}
	}
	return true
}

// proposeBump proposes the bump of the epoch zxids are now taken in: the leader accepts
// epoch+1 (on disk before the bump is logged, so its own ack counts as a learner's), and
// only the learners synced and wide now may ack it.
func (l *Leader) proposeBump(r *Ready, epoch int64) {
	z := MakeZxid(epoch, BumpCounter)
	l.bumpZxid = z
	l.bumpConns = map[ConnID]bool{}
	for _, c := range l.conns {
		if c.wide && c.phase == lcServing {
			l.bumpConns[c.id] = true
		}
	}
	l.st.AcceptedEpoch = epoch + 1
	r.AcceptedEpoch = epoch + 1
	l.propose(r, z, BumpTxn(epoch, l.now))
}

// bumpCommitted finishes a rollover once a quorum logged the bump: the leader's epoch is
// the next one (currentEpoch persisted), learners that did not take part are dropped (they
// registered for the old epoch and sync again), and the held proposals go out in a Ready
// after this one, so that currentEpoch is on disk before any txn of the new epoch is logged.
func (l *Leader) bumpCommitted(r *Ready) {
	l.epoch = Epoch(l.bumpZxid) + 1
	l.st.CurrentEpoch = l.epoch
	r.CurrentEpoch = l.epoch
	r.Rolled = l.epoch
	for _, c := range l.sortedConns() {
		if !l.bumpConns[c.id] {
			l.drop(r, c)
		}
	}
	l.bumpZxid, l.bumpConns = 0, nil
	held := l.held
	l.held = nil
	if len(held) == 0 {
		return
	}
	next := newReady()
	for i, h := range held {
		if h.bump {
			if !l.canRollInPlace() {
				// A member left while the epoch was filling: the zxids handed out after
				// this bump cannot be proposed, so step down as ZooKeeper does.
				l.phase = ldDown
				next.Err = errRolloverLost
				break
			}
			l.proposeBump(&next, Epoch(h.Zxid))
			l.held = append(l.held, held[i+1:]...)
			break
		}
		l.propose(&next, h.Zxid, h.Data)
	}
	r.After = &next
}
