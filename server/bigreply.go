package server

import (
	"cmp"
	"time"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/jute"
)

// bigReplyEvery is the least time between two warnings about replies over jute.maxbuffer,
// so a client retrying a huge read cannot flood the log.
const bigReplyEvery = 10 * time.Second

// bigReplyLog is the rate limit of warnBigReply.
type bigReplyLog struct {
	last       time.Time
	suppressed int // replies over the limit not logged since the last warning
}

// replyLimit is the longest frame c's client is known to read: what it negotiated with
// setMaxBuffer, else jute.maxbuffer.
func (s *Server) replyLimit(c *conn) int {
	return max(int(c.maxBuf.Load()), s.cfg.JuteMaxBuffer)
}

// refuseBigReply decides what becomes of a reply over the client's limit (m's estimated
// size is over it). It returns true when the reply is replaced by the large-replies
// extension's typed error: for a connection that negotiated a limit, whose client has
// opted in and knows the code, and for one of zkd's own opcodes, which no stock client
// sends.
// Otherwise the reply is sent as ZooKeeper sends it, with a warning.
func (s *Server) refuseBigReply(c *conn, m *outMsg) bool {
	var op jute.OpCode
	path := ""
	if r := s.reading; r != nil {
		op = r.hdr.Type
		if p, ok := r.body.(*jute.PathWatchRequest); ok {
			path = p.Path
		}
	}
	// zkd's own opcodes only: ClickHouse's client does not know the code, and ClickHouse
	// Keeper sends its extension ops' replies whatever their size.
	row := jute.LookupOp(op)
	zkdOp := row != nil && row.Ext != "" && row.Ext != ext.KeeperOps
	refusable := s.cfg.Extensions.Has(ext.LargeReplies) && (c.maxBuf.Load() > 0 || zkdOp)
	now := s.clk.Now()
	if !refusable && s.bigReplies.quiet(now) {
		// Neither refused nor logged: no exact size is needed. A stock client caught in
		// the reconnect loop costs no extra encoding of its reply per retry.
		s.bigReplies.suppressed++
		return false
	}
	limit := s.replyLimit(c)
	// The exact size costs an encoding, paid only for a reply near the limit.
	size := jute.ReplyHeaderSize + len(jute.Marshal(m.body))
	if size <= limit {
		return false
	}
	if refusable {
		s.log.Debug("reply over the client's limit refused (REPLYTOOLARGE)", "session", hex(c.sessionID()),
			"op", op.String(), "path", path, "size", size, "limit", limit)
		return true
	}
	s.warnBigReply(c, op, path, size, now)
	return false
}

// quiet reports whether a warning now would come too soon after the last.
func (b *bigReplyLog) quiet(now time.Time) bool {
	return !b.last.IsZero() && now.Sub(b.last) < bigReplyEvery
}

// warnBigReply logs a reply longer than jute.maxbuffer. The reply is sent all the same, as
// ZooKeeper sends it: a client whose own limit is larger reads it, and a stock Java client
// with the default limit fails to read it and reconnects, again and again if the
// application retries. This line is what tells the operator which session, request and node
// are caught in that loop. refuseBigReply has checked it is not too soon.
func (s *Server) warnBigReply(c *conn, op jute.OpCode, path string, size int, now time.Time) {
	b := &s.bigReplies
	b.last = now
	opName := ""
	if op != 0 {
		opName = op.String()
	}
	s.log.Warn("reply larger than jute.maxbuffer: a client with that limit cannot read it and will reconnect",
		"session", hex(c.sessionID()), "remote", c.remote, "op", opName, "path", path,
		"size", size, "jute.maxbuffer", s.cfg.JuteMaxBuffer, "suppressed", b.suppressed)
	b.suppressed = 0
}

// sessionID is the id of c's session, 0 before it has one.
func (c *conn) sessionID() int64 {
	if c.sess != nil {
		return c.sess.id
	}
	return 0
}

// setMaxBuffer grants c's client the limit it asks for, within [jute.maxbuffer,
// zkd.maxBufferLimit]: from now on the connection reads request frames up to it and sends
// replies up to it, and a reply over it is refused with REPLYTOOLARGE. It does not let a
// write grow: the reader still refuses a write frame over jute.maxbuffer (conn.go), because
// every ensemble member (Apache ZooKeeper followers included) and the log reader read txns
// with that limit.
// The grant is the connection's: a client asks again after a reconnect.
func (s *Server) setMaxBuffer(c *conn, xid int32, b *jute.SetMaxBufferRequest) {
	if b.Limit <= 0 {
		s.reply(c, xid, jute.ErrBadArguments, nil)
		return
	}
	top := max(cmp.Or(s.cfg.MaxBufferLimit, config.DefaultMaxBufferLimit), s.cfg.JuteMaxBuffer)
	granted := min(max(int(b.Limit), s.cfg.JuteMaxBuffer), top)
	c.maxBuf.Store(int32(granted))
	s.reply(c, xid, jute.OK, &jute.SetMaxBufferResponse{Limit: int32(granted)})
}
