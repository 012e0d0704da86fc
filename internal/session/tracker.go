package session

import (
	"cmp"
	"maps"
	"slices"
)

// Tracker tracks live sessions and their expiry deadlines in tick-sized buckets, like
// ZooKeeper's SessionTrackerImpl over an ExpiryQueue: a touch moves a session to the bucket
// of its new deadline, and at each tick the whole due bucket expires at once. It is not safe
// for concurrent use.
type Tracker struct {
	tick     int64
	sessions map[int64]*entry
	buckets  map[int64]map[int64]struct{} // deadline -> session ids
}

type entry struct {
	timeout  int32
	deadline int64 // valid when queued
	queued   bool  // in the bucket of deadline
	closing  bool
}

// Info is one tracked session, as stored in a snapshot.
type Info struct {
	ID      int64
	Timeout int32
}

// Bucket is one expiry bucket, for the dump command.
type Bucket struct {
	Deadline int64   // milliseconds, on the caller's clock
	IDs      []int64 // sorted
}

// NewTracker returns an empty tracker whose buckets are tickMs apart (ZooKeeper uses
// tickTime). A tickMs below 1 is treated as 1.
func NewTracker(tickMs int64) *Tracker {
	return &Tracker{
		tick:     max(tickMs, 1),
		sessions: make(map[int64]*entry),
		buckets:  make(map[int64]map[int64]struct{}),
	}
}

// deadline is ExpiryQueue.roundToNextInterval(now + timeout): the first multiple of the tick
// strictly after now + timeout. (An exact multiple goes to the next bucket, so a session
// always gets at least its full timeout.)
func (t *Tracker) deadline(nowMs int64, timeoutMs int32) int64 {
	return ((nowMs+int64(timeoutMs))/t.tick + 1) * t.tick
}

func (t *Tracker) move(id int64, e *entry, to int64) {
	if e.queued && e.deadline == to {
		return
	}
	t.unbucket(id, e)
	b := t.buckets[to]
	if b == nil {
		b = make(map[int64]struct{})
		t.buckets[to] = b
	}
	b[id] = struct{}{}
	e.deadline, e.queued = to, true
}

func (t *Tracker) unbucket(id int64, e *entry) {
	if !e.queued {
		return
	}
	b := t.buckets[e.deadline]
	delete(b, id)
	// ZooKeeper keeps emptied buckets until their time passes (dump shows them as
	// "0 expire at"); we drop them so that a tracker nobody polls cannot grow without bound.
	if len(b) == 0 {
		delete(t.buckets, e.deadline)
	}
	e.queued = false
}

// Add starts tracking a session (createSession, or a session loaded from a snapshot) with
// deadline nowMs + timeoutMs. If the session is already tracked its timeout is replaced and
// its deadline refreshed. It reports whether the session is new.
func (t *Tracker) Add(id int64, timeoutMs int32, nowMs int64) bool {
	e, ok := t.sessions[id]
	if !ok {
		e = &entry{}
		t.sessions[id] = e
	}
	e.timeout = timeoutMs
	t.move(id, e, t.deadline(nowMs, timeoutMs))
	return !ok
}

// Touch refreshes a session's deadline with its own timeout because a packet arrived. It
// reports false when the session is unknown or closing; the caller then treats the
// session as expired. O(1).
func (t *Tracker) Touch(id int64, nowMs int64) bool {
	e, ok := t.sessions[id]
	if !ok || e.closing {
		return false
	}
	t.move(id, e, t.deadline(nowMs, e.timeout))
	return true
}

// TouchTimeout is Touch with the timeout of the current connection, which after a reconnect
// may differ from the one the session was created with (ZooKeeper's
// touchSession(id, cnxn.getSessionTimeout())). The stored timeout is not changed.
func (t *Tracker) TouchTimeout(id int64, timeoutMs int32, nowMs int64) bool {
	e, ok := t.sessions[id]
	if !ok || e.closing {
		return false
	}
	t.move(id, e, t.deadline(nowMs, timeoutMs))
	return true
}

// Expired returns the sessions whose bucket deadline is at or before nowMs, ordered by
// deadline and then id, marks them closing and drops those buckets, so each session is
// returned once. Sessions that were already closing are not returned again. The sessions
// stay tracked (Exists is true) until Remove, which the caller does when the closeSession
// transaction is applied.
func (t *Tracker) Expired(nowMs int64) []int64 {
	var due []int64
	for d := range t.buckets {
		if d <= nowMs {
			due = append(due, d)
		}
	}
	if len(due) == 0 {
		return nil
	}
	slices.Sort(due)
	var out []int64
	for _, d := range due {
		ids := slices.Sorted(maps.Keys(t.buckets[d]))
		delete(t.buckets, d)
		for _, id := range ids {
			e := t.sessions[id]
			e.queued = false
			if !e.closing {
				e.closing = true
				out = append(out, id)
			}
		}
	}
	return out
}

// Requeue puts back a session that Expired returned, undoing its closing mark, with the
// deadline of the first bucket after nowMs: the caller decided not to expire it yet and
// asks again at the next tick. It reports false when the session is not tracked.
func (t *Tracker) Requeue(id int64, nowMs int64) bool {
	e, ok := t.sessions[id]
	if !ok {
		return false
	}
	e.closing = false
	t.move(id, e, t.deadline(nowMs, 0))
	return true
}

// NextDeadline returns the earliest bucket deadline, for the caller's timer, and false when
// no session is waiting to expire.
func (t *Tracker) NextDeadline() (int64, bool) {
	if len(t.buckets) == 0 {
		return 0, false
	}
	return slices.Min(slices.Collect(maps.Keys(t.buckets))), true
}

// SetClosing marks a session as closing (a closeSession request is on its way), so touches
// fail and Expired does not report it. It reports whether the session is tracked.
func (t *Tracker) SetClosing(id int64) bool {
	e, ok := t.sessions[id]
	if ok {
		e.closing = true
	}
	return ok
}

// IsClosing reports whether a tracked session is closing.
func (t *Tracker) IsClosing(id int64) bool {
	e, ok := t.sessions[id]
	return ok && e.closing
}

// Remove stops tracking a session and reports whether it was tracked.
func (t *Tracker) Remove(id int64) bool {
	e, ok := t.sessions[id]
	if !ok {
		return false
	}
	t.unbucket(id, e)
	delete(t.sessions, id)
	return true
}

// Timeout returns the session's stored timeout.
func (t *Tracker) Timeout(id int64) (int32, bool) {
	e, ok := t.sessions[id]
	if !ok {
		return 0, false
	}
	return e.timeout, true
}

// Exists reports whether the session is tracked (closing sessions included).
func (t *Tracker) Exists(id int64) bool {
	_, ok := t.sessions[id]
	return ok
}

// Len returns the number of tracked sessions, closing ones included.
func (t *Tracker) Len() int { return len(t.sessions) }

// All returns every tracked session with its timeout, sorted by id, for snapshots.
func (t *Tracker) All() []Info {
	out := make([]Info, 0, len(t.sessions))
	for id, e := range t.sessions {
		out = append(out, Info{ID: id, Timeout: e.timeout})
	}
	slices.SortFunc(out, func(a, b Info) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Buckets returns the non-empty expiry buckets sorted by deadline, for the dump command
// (ZooKeeper prints "<n> expire at <date>:" and then one "\t0x<id>" line per session).
func (t *Tracker) Buckets() []Bucket {
	out := make([]Bucket, 0, len(t.buckets))
	for d, b := range t.buckets {
		out = append(out, Bucket{Deadline: d, IDs: slices.Sorted(maps.Keys(b))})
	}
	slices.SortFunc(out, func(a, b Bucket) int { return cmp.Compare(a.Deadline, b.Deadline) })
	return out
}
