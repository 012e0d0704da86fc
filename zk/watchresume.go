package zk

import (
	"context"

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
// The watch is not re-registered after a reconnect (the server drops it with the
// connection): on the disconnect event, Stop it and call AddWatchSince again with LastZxid.
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
	return w, resp.Zxid, nil
}
