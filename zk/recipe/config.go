package recipe

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkd-io/zkd/zk"
)

// Config is a node's value as a ConfigWatcher last read it. Stat is nil while the node does
// not exist.
type Config struct {
	Data []byte
	Stat *zk.Stat
}

// Exists reports whether the node existed.
func (c Config) Exists() bool { return c.Stat != nil }

// ConfigWatcher keeps the latest value of a node: ZooKeeper's name service and configuration
// recipe (Curator's NodeCache). It reads the node with a watch, and reads it again each time
// the watch fires, so it always converges on the node's last value: one-time watches survive
// reconnects (the client re-registers them and the server fires those whose node changed
// meanwhile), and a change between a notification and the re-read is caught by the re-read.
// Intermediate values may be skipped; the last one never is. A missing node is watched for
// its creation.
type ConfigWatcher struct {
	c    *zk.Conn
	path string

	changes chan struct{}
	done    chan struct{}
	stop    context.CancelFunc

	mu  sync.Mutex
	cur Config
	err error
}

// WatchConfig starts watching p and returns once its current value has been read. The
// watcher runs until Close, ctx ends, or the session ends (Err says why).
func WatchConfig(ctx context.Context, c *zk.Conn, p string) (*ConfigWatcher, error) {
	w := &ConfigWatcher{c: c, path: p, changes: make(chan struct{}, 1), done: make(chan struct{})}
	cur, events, err := w.read(ctx)
	if err != nil {
		return nil, err
	}
	w.cur = cur
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.stop = cancel
	stopWithCtx := context.AfterFunc(ctx, cancel)
	go func() {
		defer stopWithCtx()
		w.run(rctx, events)
	}()
	return w, nil
}

// read reads the node and sets a watch on it: a data watch if it exists, else an exists
// watch for its creation.
func (w *ConfigWatcher) read(ctx context.Context) (Config, <-chan zk.Event, error) {
	for {
		var data []byte
		var st *zk.Stat
		var events <-chan zk.Event
		err := retry(ctx, func() (err error) {
			data, st, events, err = w.c.GetW(ctx, w.path)
			return err
		})
		if err == nil {
			return Config{Data: data, Stat: st}, events, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return Config{}, nil, fmt.Errorf("recipe: watch %s: %w", w.path, err)
		}
		var exists bool
		err = retry(ctx, func() (err error) {
			exists, _, events, err = w.c.ExistsW(ctx, w.path)
			return err
		})
		if err != nil {
			return Config{}, nil, fmt.Errorf("recipe: watch %s: %w", w.path, err)
		}
		if !exists {
			return Config{}, events, nil
		}
		// Created in between: read it (the exists watch fires, unread, on its next change).
	}
}

func (w *ConfigWatcher) run(ctx context.Context, events <-chan zk.Event) {
	defer close(w.done)
	o := &options{}
	for {
		if _, err := waitEvent(ctx, o, w.path, events); err != nil {
			w.finish(err)
			return
		}
		cur, next, err := w.read(ctx)
		if err != nil {
			w.finish(err)
			return
		}
		events = next
		w.mu.Lock()
		changed := !sameConfig(w.cur, cur)
		w.cur = cur
		w.mu.Unlock()
		if changed {
			select {
			case w.changes <- struct{}{}:
			default: // a notification is already pending: the reader will see the latest
			}
		}
	}
}

func sameConfig(a, b Config) bool {
	if a.Stat == nil || b.Stat == nil {
		return a.Stat == nil && b.Stat == nil
	}
	return a.Stat.Mzxid == b.Stat.Mzxid && a.Stat.Czxid == b.Stat.Czxid
}

func (w *ConfigWatcher) finish(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

// Value returns the latest value read.
func (w *ConfigWatcher) Value() Config {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

// Changes receives a notification after the value changes. Notifications coalesce: one
// pending notification stands for any number of changes, and Value returns the latest.
func (w *ConfigWatcher) Changes() <-chan struct{} { return w.changes }

// Done is closed when the watcher has stopped.
func (w *ConfigWatcher) Done() <-chan struct{} { return w.done }

// Err says why the watcher stopped: context.Canceled after Close or the end of the
// WatchConfig context, or an error wrapping zk.ErrSessionExpired or zk.ErrClosed. It is nil
// while the watcher runs.
func (w *ConfigWatcher) Err() error {
	select {
	case <-w.done:
	default:
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close stops the watcher and waits for it to stop.
func (w *ConfigWatcher) Close() {
	w.stop()
	<-w.done
}
