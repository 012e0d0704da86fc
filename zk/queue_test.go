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
