package zab

import "github.com/zkd-io/zkd/jute"

// Ready is what a state machine asks its owner to do after an input. The owner must carry
// it out in field order: persist epochs, truncate, take a snapshot, append (and fsync when
// SyncLog is set), send, then apply. Persisting before sending is what makes an
// acknowledgement a promise.
type Ready struct {
	// PersistEpochs asks to write acceptedEpoch / currentEpoch (the non-negative ones).
	AcceptedEpoch, CurrentEpoch int64
	// TruncateTo, when >= 0, asks to drop every logged txn after that zxid and to reload
	// the tree from disk (TRUNC).
	TruncateTo int64
	// TakeSnapshot asks to snapshot the tree (after a SNAP sync, whose history no log holds).
	TakeSnapshot bool
	// Append lists txns to add to the log, in order.
	Append []Committed
	// SyncLog asks to fsync the log before sending (a NEWLEADER ack).
	SyncLog bool
	// Send lists packets for the peer (a learner's leader) in order.
	Send []jute.QuorumPacket
	// Apply lists committed txns to apply to the tree, in order.
	Apply []Committed
	// Serving reports that the learner is synced: it may serve clients.
	Serving bool
	// Synced lists sync requests the leader has answered (SYNC packets), one per packet.
	Synced int
	// Revalidated carries the leader's answers to session revalidations.
	Revalidated []Revalidation
	// Err, when set, ends the connection: the owner goes back to leader election.
	Err error
}

// Revalidation is a leader's answer about a session a client reconnected with.
type Revalidation struct {
	Session int64
	Valid   bool
}

func (r *Ready) send(t int32, zxid int64, data []byte) {
	r.Send = append(r.Send, jute.QuorumPacket{Type: t, Zxid: zxid, Data: data})
}

func newReady() Ready { return Ready{AcceptedEpoch: -1, CurrentEpoch: -1, TruncateTo: -1} }

// Empty reports whether the Ready asks for nothing.
func (r *Ready) Empty() bool {
	return r.AcceptedEpoch < 0 && r.CurrentEpoch < 0 && r.TruncateTo < 0 && !r.TakeSnapshot &&
		len(r.Append) == 0 && !r.SyncLog && len(r.Send) == 0 && len(r.Apply) == 0 && !r.Serving &&
		r.Synced == 0 && len(r.Revalidated) == 0 && r.Err == nil
}
