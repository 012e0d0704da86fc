package zk

import (
	"context"
	"errors"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/jute"
)

// AddWatchSince is AddWatch for zkd's watch-resume extension: before the watch starts, the
// server delivers, in zxid order, every event the watch would have fired for the changes
// after sinceZxid. Resuming with the LastZxid of a connection that held the watch (read
// after its last event was consumed or the connection was lost) gives each event once: no
// gap and no duplicate. sinceZxid -1 asks for no replay. It returns the watch and the zxid it
// was registered at (every event up to it was replayed).
//
// When the server's bounded history no longer reaches back to sinceZxid, the error wraps
// ErrWatchHistoryCompacted and nothing is registered: re-read the state, then watch afresh.
// A server without the extension gives ErrUnsupported. Replayed events also reach other
// persistent watches this connection holds on the same path and mode.
//
// The client resumes the watch by itself on every new connection of the session, from the
// LastZxid it had when the previous connection was lost: the events of the changes made
// while it was disconnected arrive on the same Events channel, in zxid order, before the
// live ones. When that resume fails (the new server's history no longer reaches back, it
// lacks the extension, or refuses the watch) the channel's last event is an
// EventNotWatching whose Err says why: errors.Is(ev.Err, ErrWatchHistoryCompacted) means
// events may have been missed; re-read the state, then watch afresh.
func (c *Conn) AddWatchSince(ctx context.Context, path string, mode AddWatchMode, sinceZxid int64) (*Watcher, int64, error) {
	if err := c.require(ctx, ext.WatchResume); err != nil {
		return nil, 0, err
	}
	kind := kindResume
	if mode == AddWatchPersistentRecursive {
		kind = kindResumeRecursive
	}
	w := &Watcher{c: c, mode: mode, entry: &watchEntry{kind: kind, path: path, q: newEventQueue(persistentBuffer)}}
	s := spec{op: jute.OpAddWatchSince, path: path, body: func(sp string) (jute.Record, error) {
		return &jute.AddWatchSinceRequest{Path: sp, Mode: int32(mode), SinceZxid: sinceZxid}, nil
	}}
	if mode != AddWatchPersistent && mode != AddWatchPersistentRecursive {
		s.err = badArgs("invalid watch mode %d", mode)
		return nil, 0, s.err
	}
	// The replayed events come before the reply: the entry must already be dispatched to.
	c.watches.add(w.entry)
	resp, err := do[jute.AddWatchSinceResponse](ctx, c, s)
	if err != nil {
		c.watches.remove(w.entry)
		w.entry.q.stop()
		return nil, 0, err
	}
	c.watches.arm(w.entry)
	return w, resp.Zxid, nil
}

// resumeWatches re-adds, on the new connection w, the registrations of AddWatchSince's
// watches, which the server dropped with the previous connection, replaying the changes
// after since. Every request goes on w only: if w is lost meanwhile, the next connection's
// activate resumes them again from its own resume point.
func (c *Conn) resumeWatches(w *wire, since int64, keys []resumeKey) {
	ctx := c.ctx
	caps, err := c.Capabilities(ctx)
	c.caps.mu.Lock()
	answeredByW := c.caps.w == w
	c.caps.mu.Unlock()
	if err != nil || !answeredByW {
		return // w is gone (or Close): the next connection resumes, from since again
	}
	var unsupported error
	if !caps.Has(ext.WatchResume) {
		unsupported = &UnsupportedError{Extension: ext.WatchResume, Server: w.addr}
	}
	sendOnW := func(r *request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.w != w {
			c.fail(r, ErrConnectionLoss)
			return
		}
		c.sendLocked(w, r)
	}
	for _, k := range keys {
		err := unsupported
		if err == nil {
			mode := AddWatchPersistent
			if k.kind == kindResumeRecursive {
				mode = AddWatchPersistentRecursive
			}
			s := spec{op: jute.OpAddWatchSince, path: k.path, body: func(sp string) (jute.Record, error) {
				return &jute.AddWatchSinceRequest{Path: sp, Mode: int32(mode), SinceZxid: since}, nil
			}}
			var r *request
			if r, err = c.encode(s, new(jute.AddWatchSinceResponse)); err == nil {
				err = c.await(ctx, r, sendOnW)
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, ErrConnectionLoss), errors.Is(err, ErrClosed), ctx.Err() != nil:
			return
		default:
			c.log.Warn("zk: resuming a watch failed", "server", w.addr, "path", k.path, "since", since, "err", err)
			c.watches.endResume(k, Event{Type: EventNotWatching, State: c.State(), Path: k.path, Err: err})
		}
	}
	c.mu.Lock()
	if c.w == w {
		c.resumePending = false // every watch resumed: the next resume point is the next loss's
	}
	c.mu.Unlock()
}
