package zk

import (
	"errors"
	"slices"
	"testing"
)

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

// Only watches the server accepted once are resumed by the client, one registration per
// kind and path; ending a failed resume ends those and leaves a watch whose own
// AddWatchSince is still in flight.
func TestResumableKeysAndEnd(t *testing.T) {
	var r registry
	armed := func(kind watchKind, path string) *watchEntry {
		e := &watchEntry{kind: kind, path: path, q: newEventQueue(persistentBuffer)}
		r.add(e)
		r.arm(e)
		return e
	}
	a1, a2 := armed(kindResumeRecursive, "/a"), armed(kindResumeRecursive, "/a")
	armed(kindResume, "/a")
	pending := &watchEntry{kind: kindResumeRecursive, path: "/a", q: newEventQueue(persistentBuffer)}
	r.add(pending)
	r.add(&watchEntry{kind: kindResume, path: "/b", q: newEventQueue(persistentBuffer)})
	r.add(&watchEntry{kind: kindPersistent, path: "/c", q: newEventQueue(persistentBuffer)})
	want := []resumeKey{{kindResume, "/a"}, {kindResumeRecursive, "/a"}}
	if got := r.resumable(); !slices.Equal(got, want) {
		t.Fatalf("resumable %v, want %v", got, want)
	}
	r.endResume(resumeKey{kindResumeRecursive, "/a"}, Event{Type: EventNotWatching, Path: "/a", Err: ErrWatchHistoryCompacted})
	for _, e := range []*watchEntry{a1, a2} {
		ev, ok := <-e.q.ch
		if !ok || ev.Type != EventNotWatching || !errors.Is(ev.Err, ErrWatchHistoryCompacted) {
			t.Errorf("an ended watch got %+v %v", ev, ok)
		}
		if _, ok := <-e.q.ch; ok {
			t.Error("an ended watch's channel stays open")
		}
	}
	if es := r.m[kindResumeRecursive]["/a"]; len(es) != 1 || es[0] != pending {
		t.Errorf("left %v, want only the watch still being added", es)
	}
	if got := r.resumable(); !slices.Equal(got, []resumeKey{{kindResume, "/a"}}) {
		t.Errorf("after the end: resumable %v", got)
	}
}
