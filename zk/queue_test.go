package zk

import (
	"fmt"
	"sync"
	"testing"
)

// TestEventQueueOrder pushes far more events than the buffer holds, with nobody reading,
// then checks that all arrive in order, followed by the final one and the close.
func TestEventQueueOrder(t *testing.T) {
	q := newEventQueue(4)
	const n = 1000
	for i := range n {
		if !q.push(Event{Path: fmt.Sprint(i)}, false) {
			t.Fatal("push refused")
		}
	}
	q.push(Event{Type: EventNotWatching}, true)
	if q.push(Event{}, false) {
		t.Fatal("push accepted after the final event")
	}
	for i := range n {
		if ev := <-q.ch; ev.Path != fmt.Sprint(i) {
			t.Fatalf("event %d: %v", i, ev)
		}
	}
	if ev := <-q.ch; ev.Type != EventNotWatching {
		t.Fatalf("final event %v", ev)
	}
	if _, ok := <-q.ch; ok {
		t.Fatal("channel not closed")
	}
}

// TestEventQueueConcurrent interleaves a producer and a slow consumer.
func TestEventQueueConcurrent(t *testing.T) {
	q := newEventQueue(2)
	const n = 5000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			q.push(Event{Path: fmt.Sprint(i)}, i == n-1)
		}
	}()
	i := 0
	for ev := range q.ch {
		if ev.Path != fmt.Sprint(i) {
			t.Fatalf("got %s, want %d", ev.Path, i)
		}
		i++
	}
	wg.Wait()
	if i != n {
		t.Fatalf("%d events", i)
	}
}

func TestEventQueueStop(t *testing.T) {
	q := newEventQueue(1)
	for range 10 {
		q.push(Event{}, false) // one buffered, the rest with a pump blocked on the channel
	}
	q.stop()
	q.stop()
	n := 0
	for range q.ch {
		n++
	}
	if n > 2 {
		t.Fatalf("%d events delivered after stop", n)
	}
	if q.push(Event{}, true) {
		t.Fatal("push accepted after stop")
	}
	// A one-shot queue: the single event fits, the channel closes with it.
	one := newEventQueue(oneShotBuffer)
	one.push(Event{Type: EventNodeCreated}, true)
	if ev := <-one.ch; ev.Type != EventNodeCreated {
		t.Fatal(ev)
	}
	if _, ok := <-one.ch; ok {
		t.Fatal("one-shot channel not closed")
	}
}

func TestRegistryDispatch(t *testing.T) {
	var r registry
	mk := func(k watchKind, p string) *watchEntry {
		e := &watchEntry{kind: k, path: p, q: newEventQueue(16)}
		r.add(e)
		return e
	}
	data := mk(kindData, "/a")
	exist := mk(kindExist, "/b")
	child := mk(kindChild, "/a")
	pers := mk(kindPersistent, "/a")
	rec := mk(kindRecursive, "/")
	recA := mk(kindRecursive, "/a")

	r.dispatch(Event{Type: EventNodeChildrenChanged, Path: "/a"})
	r.dispatch(Event{Type: EventNodeDataChanged, Path: "/a"})
	r.dispatch(Event{Type: EventNodeCreated, Path: "/b"})
	r.dispatch(Event{Type: EventNodeDeleted, Path: "/a/x/y"})

	expect := func(e *watchEntry, types ...EventType) {
		t.Helper()
		for _, typ := range types {
			select {
			case ev := <-e.q.ch:
				if ev.Type != typ {
					t.Fatalf("%v %s: got %v, want %v", e.kind, e.path, ev, typ)
				}
			default:
				t.Fatalf("%v %s: no %v", e.kind, e.path, typ)
			}
		}
		select {
		case ev, ok := <-e.q.ch:
			if ok {
				t.Fatalf("%v %s: extra %v", e.kind, e.path, ev)
			}
		default:
		}
	}
	expect(child, EventNodeChildrenChanged)
	expect(data, EventNodeDataChanged)
	expect(exist, EventNodeCreated)
	expect(pers, EventNodeChildrenChanged, EventNodeDataChanged)
	// Recursive watches never see child-list changes, and see descendants' events.
	expect(rec, EventNodeDataChanged, EventNodeCreated, EventNodeDeleted)
	expect(recA, EventNodeDataChanged, EventNodeDeleted)

	lists, any := r.paths()
	if !any || len(lists[kindData]) != 0 || len(lists[kindPersistent]) != 1 || len(lists[kindRecursive]) != 2 {
		t.Fatalf("remaining watches %v", lists)
	}
	r.terminate(StateExpired, ErrSessionExpired)
	if ev := <-pers.q.ch; ev.Type != EventNotWatching || ev.Err != ErrSessionExpired {
		t.Fatalf("terminate: %v", ev)
	}
	if _, any := r.paths(); any {
		t.Fatal("watches left after terminate")
	}
}

func TestSetWatchesPackets(t *testing.T) {
	var lists [numKinds][]string
	lists[kindData] = []string{"/a"}
	lists[kindChild] = []string{"/c"}
	pk := setWatchesPackets(lists, 42, chroot("/r"))
	if len(pk) != 1 || pk[0].V2 || pk[0].RelativeZxid != 42 || pk[0].DataWatches[0] != "/r/a" ||
		pk[0].ChildWatches[0] != "/r/c" || pk[0].ExistWatches == nil {
		t.Fatalf("packet %+v", pk)
	}
	// Persistent watches need setWatches2; big lists are split.
	lists[kindRecursive] = []string{"/p"}
	for i := range 20000 {
		lists[kindExist] = append(lists[kindExist], fmt.Sprintf("/some/longish/path/%08d", i))
	}
	pk = setWatchesPackets(lists, 1, "")
	if len(pk) < 3 {
		t.Fatalf("%d packets for %d paths", len(pk), 20003)
	}
	total := 0
	for _, p := range pk {
		if !p.V2 {
			t.Fatal("persistent watches sent without setWatches2")
		}
		size := 0
		for _, l := range [][]string{p.DataWatches, p.ExistWatches, p.ChildWatches, p.PersistentWatches, p.PersistentRecursiveWatches} {
			total += len(l)
			for _, s := range l {
				size += len(s)
			}
		}
		if size > setWatchesLimit+100 {
			t.Fatalf("packet of %d bytes", size)
		}
	}
	if total != 20003 {
		t.Fatalf("%d paths in packets, want 20003", total)
	}
}
