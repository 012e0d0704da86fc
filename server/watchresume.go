package server

import (
	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/watch"
	"github.com/zkd-io/zkd/jute"
)

// The watch-resume extension (docs/beyond.md, "watch-resume"): every server keeps a bounded
// history of the watch events of the txns it applies, and addWatchSince registers a
// persistent watch after first delivering the events it would have fired for every change
// after the client's zxid.
//
// Why no event is lost or doubled: the core applies a txn and notifies its watchers in one
// step, so when addWatchSince runs every txn up to the tree's zxid L has been notified and
// recorded, and none after it. The replay covers (since, L], the registration catches
// everything after L, and both go out on the connection in that order, before the reply
// that carries L. A client that resumes from the zxid of the last frame it read (a reply's
// or an event's header) therefore gets each event once.

// opEnabled reports whether a server answers an opcode: ZooKeeper's always, an extension's
// only when the extension is on (otherwise it is answered as any unknown opcode).
func (s *Server) opEnabled(op jute.OpCode) bool {
	row := jute.LookupOp(op)
	return row == nil || row.Ext == "" || s.cfg.Extensions.Has(ext.Name(row.Ext))
}

// resetWatchHistory starts the history afresh at the tree's zxid: at start-up and whenever
// the tree is replaced (a SNAP, a restore, a reload), since the changes it held are not a
// history of the new tree. A resume from before it then gets the typed error.
func (s *Server) resetWatchHistory() {
	if !s.cfg.Extensions.Has(ext.WatchResume) {
		return
	}
	if s.watchHistory == nil {
		s.watchHistory = watch.NewHistory(s.tree.LastZxid(),
			cmpPositive(s.cfg.WatchHistoryMaxChanges, config.DefaultWatchHistoryMaxChanges),
			cmpPositive(s.cfg.WatchHistoryMaxBytes, config.DefaultWatchHistoryMaxBytes))
		return
	}
	s.watchHistory.Reset(s.tree.LastZxid())
}

func cmpPositive(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// recordWatchHistory keeps an applied txn's events (paths and ACLs, no data).
func (s *Server) recordWatchHistory(zxid int64, evs []datatree.Event) {
	if s.watchHistory == nil {
		return
	}
	buf := s.watchHistBuf[:0]
	for _, ev := range evs {
		buf = append(buf, watch.Change{Type: ev.Type, Path: ev.Path, ACL: ev.ACL})
	}
	s.watchHistory.Record(zxid, buf)
	clear(buf)
	if cap(buf) <= 1024 {
		s.watchHistBuf = buf[:0]
	}
}

// addWatchSince answers the extension's opcode (a read, on the core, in the session's
// order).
func (s *Server) addWatchSince(c *conn, xid int32, b *jute.AddWatchSinceRequest) {
	kind, ok := persistentKind(b.Mode)
	if !ok {
		s.reply(c, xid, jute.ErrMarshallingError, nil)
		return
	}
	last := s.tree.LastZxid()
	if b.SinceZxid > last || b.SinceZxid < -1 {
		// A zxid this server has not reached: the connect handshake refuses a client that
		// saw one, so only a made-up zxid gets here.
		s.reply(c, xid, jute.ErrBadArguments, nil)
		return
	}
	var replay []watch.Change
	if b.SinceZxid >= 0 {
		cs, ok := s.watchHistory.Since(b.SinceZxid, b.Path, kind)
		if !ok {
			c.send(outMsg{
				hdr:  jute.ReplyHeader{Xid: xid, Zxid: last, Err: jute.ErrWatchHistoryCompacted},
				body: &jute.AddWatchSinceResponse{Zxid: s.watchHistory.Compacted()},
			})
			return
		}
		replay = cs
	}
	for _, ch := range replay {
		// The live rule (notify): no READ on the node, no event.
		if !s.cfg.SkipACL && !s.cfg.AuthProviders.Check(ch.ACL, jute.PermRead, c.authIDs) {
			continue
		}
		c.send(outMsg{
			hdr:  jute.ReplyHeader{Xid: jute.XidNotification, Zxid: ch.Zxid},
			body: &jute.WatcherEvent{Type: ch.Type, State: jute.StateSyncConnected, Path: ch.Path},
		})
	}
	s.watches.Add(s.watcherOf(c), b.Path, kind)
	s.reply(c, xid, jute.OK, &jute.AddWatchSinceResponse{Zxid: last})
}
