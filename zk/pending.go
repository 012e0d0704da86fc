package zk

import (
	"context"
	"sync"
)

// Pending is an operation started by Go.
type Pending[T any] struct {
	done chan struct{}
	val  T
	err  error
}

// Go runs f, a call of the Conn's methods such as
//
//	func(ctx context.Context) (*zk.Stat, error) { return c.Set(ctx, "/n", data, zk.AnyVersion) }
//
// on a new goroutine with a context derived from ctx, and returns once f's first request is
// queued for the connection (or f has returned without sending one). Requests started by
// successive Go calls therefore go out, and are answered, in the order of the calls, without
// waiting for each other: Go is how one goroutine pipelines requests, as the Java client's
// asynchronous calls do. Requests f sends after its first are not ordered that way.
func Go[T any](ctx context.Context, f func(context.Context) (T, error)) *Pending[T] {
	p := &Pending[T]{done: make(chan struct{})}
	sent := make(chan struct{})
	var once sync.Once
	mark := func() { once.Do(func() { close(sent) }) }
	go func() {
		defer close(p.done)
		p.val, p.err = f(context.WithValue(ctx, sentKey{}, mark))
	}()
	select {
	case <-sent:
	case <-p.done:
	}
	return p
}

// Done is closed when the operation has returned.
func (p *Pending[T]) Done() <-chan struct{} { return p.done }

// Wait returns the operation's results, or ctx's error if ctx ends first; the operation then
// goes on, and a later Wait can still collect its results.
func (p *Pending[T]) Wait(ctx context.Context) (T, error) {
	select {
	case <-p.done:
		return p.val, p.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// sentKey carries Go's mark function in the context it gives f.
type sentKey struct{}

// markSent tells Go, if ctx comes from it, that a request is queued in wire order.
func markSent(ctx context.Context) {
	if mark, ok := ctx.Value(sentKey{}).(func()); ok {
		mark()
	}
}
