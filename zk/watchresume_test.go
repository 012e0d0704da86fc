package zk

import "testing"

// A resumable watch is dispatched like a persistent one but never re-registered by
// setWatches: the server dropped it with the connection, and a plain re-registration would
// deliver live the events the application's resume replays (duplicates).
func TestResumableWatchNotInSetWatches(t *testing.T) {
	var r registry
	q := newEventQueue(persistentBuffer)
	r.add(&watchEntry{kind: kindResumeRecursive, path: "/a", q: q})
	if _, any := r.paths(); any {
		t.Error("a resumable watch is in the setWatches lists")
	}
	r.dispatch(Event{Type: EventNodeCreated, Path: "/a/x"})
	r.dispatch(Event{Type: EventNodeChildrenChanged, Path: "/a"})
	select {
	case ev := <-q.ch:
		if ev.Type != EventNodeCreated || ev.Path != "/a/x" {
			t.Errorf("got %v %s", ev.Type, ev.Path)
		}
	default:
		t.Fatal("a recursive resumable watch did not see a descendant's creation")
	}
	select {
	case ev := <-q.ch:
		t.Errorf("a recursive watch saw %v", ev.Type)
	default:
	}
}
