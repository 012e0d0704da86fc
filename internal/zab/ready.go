package zab

import "github.com/zkd-io/zkd/jute"

// Ready is what a leader or a learner asks its owner to do after an input. It is carried
// out by an Applier in this order: persist acceptedEpoch, truncate, take a snapshot, append
// (and fsync when SyncLog is set), persist currentEpoch, send and close, apply, then the
// notices. Persisting before sending is what makes an acknowledgement a promise.
//
// currentEpoch goes to disk only after the txns a NEWLEADER brought are durable
// (ZOOKEEPER-4643): a learner whose new currentEpoch is durable and whose log is not wins
// elections with a log that lacks committed txns, and a crash or a role change between the
// two steps leaves it so.
type Ready struct {
	// AcceptedEpoch and CurrentEpoch, when >= 0, ask to persist that epoch.
	AcceptedEpoch, CurrentEpoch int64
	// TruncateTo, when >= 0, asks to drop every logged txn after that zxid and to reload
	// the tree from disk (TRUNC).
	TruncateTo int64
	// TakeSnapshot asks to snapshot the tree (after a SNAP sync, whose history no log holds).
	TakeSnapshot bool
	// Append lists txns to add to the log, in order.
	Append []Committed
	// SyncLog asks that Append be durable before anything after it (a NEWLEADER ack).
	SyncLog bool
	// Out lists packets, in order: a leader's to its learners' connections, a learner's to
	// its leader (Conn 0).
	Out []Out
	// Close lists learner connections the leader drops.
	Close []ConnID
	// Apply lists committed txns to apply to the tree, in order.
	Apply []Committed
	// Serving: a leader is established (a quorum acked NEWLEADER), or a learner is synced.
	Serving bool
	// Synced counts sync requests now answered, oldest first: a leader's own clients', or
	// those a learner forwarded (one per SYNC packet).
	Synced int
	// Requests are client writes learners forwarded to the leader.
	Requests []ForwardedRequest
	// Touches are sessions learners saw activity on.
	Touches []Touch
	// Revalidate lists learners' questions about sessions whose clients reconnected.
	Revalidate []RevalidateAsk
	// Revalidated carries the leader's answers to a learner's revalidations.
	Revalidated []Revalidation
	// LoadHistory asks the leader's owner to read committed txns from its log for a
	// learner behind the in-memory history, and to answer with Leader.HistoryLoaded.
	LoadHistory []HistoryAsk
	// Configs are configuration changes (reconfig), in order, for the owner to carry out
	// after Apply.
	Configs []ConfigEvent
	// Acked lists a leader's sampled proposals acked before they committed
	// (LeaderConfig.AckSampleEvery). The owner reads them from the Ready that Receive or
	// LocalLogged returns, when the ack arrives, to time them; the Applier ignores them.
	Acked []AckedProposal
	// Rolled is the epoch an in-place rollover (ext.Wide) just moved to (0: none): the
	// owner answers elections with it, as after an election.
	Rolled int64
	// After is carried out once this Ready is, as if pushed right after it: a leader's
	// proposals of a new epoch, which must reach the log only after currentEpoch does.
	After *Ready
	// Err, when set, ends the role (a leader without a quorum, a learner whose connection
	// failed): the owner goes back to leader election.
	Err error
}

// HistoryAsk asks for the committed txns from From (included, as ZooKeeper's reader starts
// at the learner's own last txn) to To, read from the log.
type HistoryAsk struct {
	Conn     ConnID
	From, To int64
}

// AckedProposal is sid's ack of the proposal zxid.
type AckedProposal struct{ Sid, Zxid int64 }

// Revalidation is a leader's answer about a session a client reconnected with.
type Revalidation struct {
	Session int64
	Valid   bool
}

func (r *Ready) send(t int32, zxid int64, data []byte) {
	r.Out = append(r.Out, Out{Packet: jute.QuorumPacket{Type: t, Zxid: zxid, Data: data}})
}

func newReady() Ready { return Ready{AcceptedEpoch: -1, CurrentEpoch: -1, TruncateTo: -1} }

// Empty reports whether the Ready asks for nothing.
func (r *Ready) Empty() bool {
	return r.AcceptedEpoch < 0 && r.CurrentEpoch < 0 && r.TruncateTo < 0 && !r.TakeSnapshot &&
		len(r.Append) == 0 && !r.SyncLog && len(r.Out) == 0 && len(r.Close) == 0 &&
		len(r.Apply) == 0 && !r.Serving && r.Synced == 0 && len(r.Requests) == 0 &&
		len(r.Touches) == 0 && len(r.Revalidate) == 0 && len(r.Revalidated) == 0 &&
		len(r.LoadHistory) == 0 && len(r.Configs) == 0 && r.Rolled == 0 && r.After == nil && r.Err == nil
}

// Host is what an Applier carries a Ready out against: the owner's storage, network and
// state machine. The server and the simulation are hosts; both use the same Applier.
//
// The disk steps (PersistEpoch, Truncate, Snapshot, SyncAppend) may finish later, so the
// owner's event loop never waits on a disk: a host returns false when the step is still
// running, and calls the Applier's Done when it ends. Until then the rest of that Ready and
// every later one wait, in order.
type Host interface {
	// PersistEpoch writes acceptedEpoch (accepted) or currentEpoch durably.
	PersistEpoch(accepted bool, epoch int64) (done bool)
	// Truncate drops the logged txns after zxid and reloads the tree from disk.
	Truncate(zxid int64) (done bool)
	// Snapshot writes the tree as it is now as a snapshot.
	Snapshot() (done bool)
	// SyncAppend appends txns to the log and makes them durable.
	SyncAppend(txns []Committed) (done bool)
	// Append queues txns for the log; the owner reports durability to the state machine
	// (Leader.LocalLogged, Learner.Logged) when they are.
	Append(txns []Committed)
	// Send sends a packet on a connection (a learner's Conn 0 is its leader).
	Send(o Out)
	// Close drops a learner connection.
	Close(id ConnID)
	// Apply applies a committed txn.
	Apply(c Committed)
	// Notify hands over the rest of a Ready: Serving, Synced, Requests, Touches, Revalidate,
	// Revalidated, LoadHistory, Configs, Rolled and Err, which are the owner's to act on (r holds only those).
	Notify(r *Ready)
}

// Applier carries out Readys in order against a Host. It does no I/O itself.
type Applier struct {
	h     Host
	queue []Ready // queue[0] is being carried out
	step  int     // the next step of queue[0]
	busy  bool    // a disk step of queue[0] is running
	gen   int     // counts Resets: a host call may end the role under the Applier's feet
}

// NewApplier returns an Applier for h.
func NewApplier(h Host) *Applier { return &Applier{h: h} }

// Push carries out r as far as it can: at once, unless a disk step of an earlier Ready is
// still running.
func (a *Applier) Push(r Ready) {
	idle := len(a.queue) == 0
	// r.After goes into the queue with r, before a host call can push anything else.
	for rr := &r; rr != nil; {
		next := rr.After
		rr.After = nil
		if !rr.Empty() {
			a.queue = append(a.queue, *rr)
		}
		rr = next
	}
	if idle && len(a.queue) > 0 {
		a.step = 0
		a.run()
	}
}

// Done reports that the running disk step finished. A host calls it only after the step's
// method returned false.
func (a *Applier) Done() {
	if !a.busy {
		return
	}
	a.busy = false
	a.run()
}

// Busy reports whether a disk step is running.
func (a *Applier) Busy() bool { return a.busy }

// Reset forgets every Ready not yet carried out (the role ended); a disk step still running
// is not waited for.
func (a *Applier) Reset() {
	clear(a.queue)
	a.queue = a.queue[:0]
	a.step = 0
	a.busy = false
	a.gen++
}

const (
	stepAcceptedEpoch = iota
	stepTruncate
	stepSnapshot
	stepAppend
	stepCurrentEpoch
	stepRest
)

func (a *Applier) run() {
	gen := a.gen
	for len(a.queue) > 0 && !a.busy {
		// A copy: host calls may Push, which can move the queue.
		r := a.queue[0]
		for a.step <= stepRest && !a.busy {
			st := a.step
			a.step++
			done := true
			switch st {
			case stepAcceptedEpoch:
				if r.AcceptedEpoch >= 0 {
					done = a.h.PersistEpoch(true, r.AcceptedEpoch)
				}
			case stepTruncate:
				if r.TruncateTo >= 0 {
					done = a.h.Truncate(r.TruncateTo)
				}
			case stepSnapshot:
				if r.TakeSnapshot {
					done = a.h.Snapshot()
				}
			case stepCurrentEpoch:
				if r.CurrentEpoch >= 0 {
					done = a.h.PersistEpoch(false, r.CurrentEpoch)
				}
			case stepAppend:
				if r.SyncLog {
					done = a.h.SyncAppend(r.Append)
				} else if len(r.Append) > 0 {
					a.h.Append(r.Append)
				}
			case stepRest:
				a.rest(&r, gen)
			}
			if a.gen != gen {
				return // Reset by a host call: what was queued is gone
			}
			a.busy = !done
		}
		if a.busy {
			return
		}
		a.queue[0] = Ready{}
		if len(a.queue) == 1 {
			// Usually the only one: its slot is the next Push's, where [1:] would shrink
			// the slice to nothing and make every Push allocate.
			a.queue = a.queue[:0]
		} else {
			a.queue = a.queue[1:]
		}
		a.step = 0
	}
}

func (a *Applier) rest(r *Ready, gen int) {
	for _, o := range r.Out {
		a.h.Send(o)
	}
	for _, id := range r.Close {
		a.h.Close(id)
	}
	for _, c := range r.Apply {
		if a.gen != gen {
			return
		}
		a.h.Apply(c)
	}
	if a.gen != gen {
		return
	}
	n := Ready{
		AcceptedEpoch: -1, CurrentEpoch: -1, TruncateTo: -1,
		Serving: r.Serving, Synced: r.Synced, Requests: r.Requests, Touches: r.Touches,
		Revalidate: r.Revalidate, Revalidated: r.Revalidated, LoadHistory: r.LoadHistory, Configs: r.Configs, Rolled: r.Rolled, Err: r.Err,
	}
	if !n.Empty() {
		a.h.Notify(&n)
	}
}
