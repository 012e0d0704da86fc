// Package clock owns the time the server's state sees: session expiry, ticks, election and
// container timers. Production uses the real clock; tests use Fake and move time by hand,
// so what depends on timeouts runs without waiting on the wall clock. Network deadlines
// are not its business: sockets need real time.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time and makes tickers and timers on it.
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
	NewTimer(d time.Duration) Timer
}

// Ticker delivers the time every period, dropping ticks its reader misses.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Timer delivers the time once, after its duration.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// Real is the wall clock.
type Real struct{}

func (Real) Now() time.Time                    { return time.Now() }
func (Real) NewTicker(d time.Duration) Ticker  { return realTicker{time.NewTicker(d)} }
func (Real) NewTimer(d time.Duration) Timer    { return realTimer{time.NewTimer(d)} }
func (t realTicker) C() <-chan time.Time       { return t.t.C }
func (t realTicker) Stop()                     { t.t.Stop() }
func (t realTimer) C() <-chan time.Time        { return t.t.C }
func (t realTimer) Stop() bool                 { return t.t.Stop() }
func (t realTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

type realTicker struct{ t *time.Ticker }
type realTimer struct{ t *time.Timer }

// Fake is a clock that moves only when Advance is called.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*fakeWaiter
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

type fakeWaiter struct {
	f      *Fake
	c      chan time.Time
	at     time.Time
	period time.Duration // 0 for a timer
	active bool
}

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive ticker period")
	}
	return fakeTicker{f.add(d, d)}
}

type fakeTicker struct{ w *fakeWaiter }

func (t fakeTicker) C() <-chan time.Time { return t.w.c }
func (t fakeTicker) Stop()               { t.w.Stop() }

func (f *Fake) NewTimer(d time.Duration) Timer { return f.add(d, 0) }

func (f *Fake) add(d, period time.Duration) *fakeWaiter {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &fakeWaiter{f: f, c: make(chan time.Time, 1), at: f.now.Add(d), period: period, active: true}
	f.waiters = append(f.waiters, w)
	return w
}

// Advance moves the time on by d, firing every timer and ticker that comes due, in order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	target := f.now.Add(d)
	for {
		var next *fakeWaiter
		for _, w := range f.waiters {
			if w.active && !w.at.After(target) && (next == nil || w.at.Before(next.at)) {
				next = w
			}
		}
		if next == nil {
			break
		}
		f.now = next.at
		select {
		case next.c <- next.at:
		default: // a reader behind: the tick is dropped, as a real ticker drops it
		}
		if next.period > 0 {
			next.at = next.at.Add(next.period)
		} else {
			next.active = false
		}
	}
	f.now = target
}

func (w *fakeWaiter) C() <-chan time.Time { return w.c }

func (w *fakeWaiter) Stop() bool {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	was := w.active
	w.active = false
	return was
}

func (w *fakeWaiter) Reset(d time.Duration) bool {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	was := w.active
	w.at, w.active = w.f.now.Add(d), true
	return was
}
