package zk

import (
	"context"
	"sync/atomic"
)

// Pending is an operation started by Go.
type Pending[T any] struct {
	sent   chan struct{} // closed once f's first request is queued
	marked atomic.Bool
	done   chan struct{}
	val    T
	err    error
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
	p := &Pending[T]{sent: make(chan struct{}), done: make(chan struct{})}
	go p.run(context.WithValue(ctx, sentKey{}, sentMarker(p)), f)
	select {
	case <-p.sent:
	case <-p.done:
	}
	return p
}

func (p *Pending[T]) run(ctx context.Context, f func(context.Context) (T, error)) {
	defer close(p.done)
	p.val, p.err = f(ctx)
}

func (p *Pending[T]) markSent() {
	if p.marked.CompareAndSwap(false, true) {
		close(p.sent)
	}
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

// sentKey carries the Pending whose f runs with the context.
type sentKey struct{}

type sentMarker interface{ markSent() }

// markSent tells Go, if ctx comes from it, that a request is queued in wire order.
func markSent(ctx context.Context) {
	if m, ok := ctx.Value(sentKey{}).(sentMarker); ok {
		m.markSent()
	}
}
