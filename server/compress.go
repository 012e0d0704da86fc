package server

import (
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/jute"
)

// compressedSession reports whether a ConnectRequest asks for ClickHouse Keeper's
// compressed session and the server grants it (large-replies extension). Without the
// extension the version is ignored, as ZooKeeper ignores it: the answer says 0 and nothing
// is compressed. The decision is keyed on the version alone: a version-11 connection (wide's
// 64-bit xids) that asks for compression in the byte after the version is closed by the
// connection's reader before it gets here, and ClickHouse's client retries without it.
func (s *Server) compressedSession(req *jute.ConnectRequest) bool {
	return req.ProtocolVersion == jute.ProtocolVersionCompressed && s.cfg.Extensions.Has(ext.LargeReplies)
}

// connectReply queues the ConnectResponse that establishes c's session. For a compressed
// session it carries version 10, as ClickHouse Keeper's KeeperTCPHandler answers, and
// everything after it goes both ways in ClickHouse's compressed blocks (internal/chcompress):
// the writer switches after writing it, the reader after the core says the session is
// established (c.compressed is set before that answer is sent on c.established).
func (s *Server) connectReply(c *conn, req *jute.ConnectRequest, resp *jute.ConnectResponse) {
	m := outMsg{}
	resp.ProtocolVersion = c.protocolVersion() // 11 for a 64-bit-xid connection (wide)
	if s.compressedSession(req) {
		resp.ProtocolVersion = jute.ProtocolVersionCompressed
		c.compressed = true
		m.compressAfter = true
	}
	m.raw = jute.Marshal(resp)
	c.send(m)
}
