package server

import (
	"time"

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

// warnBigReply logs a reply longer than jute.maxbuffer. The reply is sent all the same, as
// ZooKeeper sends it: a client whose own limit is larger reads it, and a stock Java client
// with the default limit fails to read it and reconnects, again and again if the
// application retries. This line is what tells the operator which session, request and node
// are caught in that loop.
func (s *Server) warnBigReply(c *conn, m *outMsg) {
	now := s.clk.Now()
	b := &s.bigReplies
	if !b.last.IsZero() && now.Sub(b.last) < bigReplyEvery {
		b.suppressed++
		return
	}
	// The exact size costs an encoding, paid only for a line that is logged.
	size := jute.ReplyHeaderSize + len(jute.Marshal(m.body))
	if size <= s.cfg.JuteMaxBuffer {
		return
	}
	b.last = now
	var sid int64
	if c.sess != nil {
		sid = c.sess.id
	}
	op, path := "", ""
	if r := s.reading; r != nil {
		op = r.hdr.Type.String()
		if p, ok := r.body.(*jute.PathWatchRequest); ok {
			path = p.Path
		}
	}
	s.log.Warn("reply larger than jute.maxbuffer: a client with that limit cannot read it and will reconnect",
		"session", hex(sid), "remote", c.remote, "op", op, "path", path,
		"size", size, "jute.maxbuffer", s.cfg.JuteMaxBuffer, "suppressed", b.suppressed)
	b.suppressed = 0
}
