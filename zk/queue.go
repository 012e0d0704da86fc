package zk

import "sync"

// eventQueue delivers events to a channel without ever blocking the producer (the
// connection's reader). Events go straight into the channel's buffer while it has room; the
// rest wait in an unbounded slice that a goroutine, started on demand and gone once the
// slice is drained, feeds into the channel. The channel is closed after the final event.
type eventQueue struct {
	ch chan Event

	mu       sync.Mutex
	overflow []Event
	pumping  bool
	ended    bool // the final event is queued; close ch once it is delivered
	closed   bool // ch is closed
	stopped  chan struct{}
}

func newEventQueue(buffer int) *eventQueue {
	return &eventQueue{ch: make(chan Event, buffer), stopped: make(chan struct{})}
}

// push queues ev; final ends the queue after it. It reports false if the queue had ended.
func (q *eventQueue) push(ev Event, final bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ended {
		return false
	}
	q.ended = final
	if !q.pumping && len(q.overflow) == 0 {
		select {
		case q.ch <- ev:
			if final {
				close(q.ch)
				q.closed = true
			}
			return true
		default:
		}
	}
	q.overflow = append(q.overflow, ev)
	if !q.pumping {
		q.pumping = true
		go q.pump()
	}
	return true
}

func (q *eventQueue) pump() {
	for {
		q.mu.Lock()
		if len(q.overflow) == 0 {
			q.pumping = false
			q.overflow = nil
			if q.ended && !q.closed {
				close(q.ch)
				q.closed = true
			}
			q.mu.Unlock()
			return
		}
		// Peek, do not pop: while an event is in flight the producer must keep queueing
		// behind it rather than send straight to the channel.
		ev := q.overflow[0]
		q.mu.Unlock()
		select {
		case q.ch <- ev:
		case <-q.stopped:
		}
		q.mu.Lock()
		if len(q.overflow) > 0 {
			q.overflow[0] = Event{}
			q.overflow = q.overflow[1:]
		}
		q.mu.Unlock()
	}
}

// stop discards undelivered events and closes the channel; the queue accepts nothing more.
func (q *eventQueue) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	select {
	case <-q.stopped:
		return
	default:
	}
	close(q.stopped)
	q.ended = true
	q.overflow = nil
	if !q.pumping && !q.closed {
		close(q.ch)
		q.closed = true
	}
}
