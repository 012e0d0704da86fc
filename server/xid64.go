package server

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/zkd-io/zkd/jute"
)

// 64-bit xids (the wide extension, docs/beyond.md): ClickHouse Keeper's protocol version 11,
// in which every header's xid is a long. The server inside the connection keeps ZooKeeper's
// 32-bit xids: the reader gives each 64-bit xid of a version-11 connection a 32-bit token
// and the writer puts the client's xid back in the reply, so the core, prep, the txn log's
// cxid and the forwarding to a leader are what they are for any session, and a stock
// client's connection is not touched at all.

// xidMap is one version-11 connection's tokens. A special xid (negative, in int32's range:
// notification, ping, auth, setWatches) is its own token; any other xid gets a positive
// token, unique among the connection's unanswered requests, released by its reply.
type xidMap struct {
	mu sync.Mutex
	m  map[int32]int64
}

// in is the token of a request's xid. Tokens come from the server's counter, not from one
// per connection: a txn committed for a request of a session's earlier connection (its
// queue dropped by an election, say) is matched to the session's head by cxid, and must not
// find a new connection's request under the same token, as a client's own xids, which keep
// growing across its connections, never do.
func (x *xidMap) in(xid int64, next *atomic.Int32) int32 {
	if xid < 0 && xid >= math.MinInt32 {
		return int32(xid)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil {
		x.m = make(map[int32]int64)
	}
	for {
		tok := next.Add(1) & math.MaxInt32
		if tok == 0 {
			continue
		}
		if _, used := x.m[tok]; !used {
			x.m[tok] = xid
			return tok
		}
	}
}

// out is the client's xid for a reply's token, which the reply releases.
func (x *xidMap) out(tok int32) int64 {
	if tok < 0 {
		return int64(tok)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	xid, ok := x.m[tok]
	if !ok {
		return int64(tok)
	}
	delete(x.m, tok)
	return xid
}

// readXID64Connect completes the first frame of a connection whose ConnectRequest asks for
// ProtocolVersionXID64, as ClickHouse's client sends it: its length (44 or 45) leaves out
// the compression byte (jute.XID64ConnectUndercount), which is read here. ok is false when
// the frame is not such a request.
func readXID64Connect(frame []byte, readMore func([]byte) error) (req *jute.ConnectRequest, ok bool, err error) {
	if (len(frame) != 44 && len(frame) != 45) || int32(binary.BigEndian.Uint32(frame)) != jute.ProtocolVersionXID64 {
		return nil, false, nil
	}
	full := make([]byte, len(frame)+jute.XID64ConnectUndercount)
	copy(full, frame)
	if err := readMore(full[len(frame):]); err != nil {
		return nil, true, err
	}
	req = new(jute.ConnectRequest)
	d := jute.Decoder{B: full}
	req.DecodeXID64(&d)
	if d.Err() != nil || d.Remaining() != 0 {
		return nil, true, fmt.Errorf("bad version-11 ConnectRequest: %w", errOr(d.Err(), "trailing bytes"))
	}
	return req, true, nil
}

// narrowXID64 turns a version-11 request frame (a RequestHeader64 first) into ZooKeeper's
// (a RequestHeader holding the xid's token), in place.
func (c *conn) narrowXID64(frame []byte) ([]byte, error) {
	if len(frame) < jute.RequestHeader64Size {
		return nil, fmt.Errorf("version-11 request of %d bytes has no header", len(frame))
	}
	xid := int64(binary.BigEndian.Uint64(frame))
	frame = frame[4:]
	binary.BigEndian.PutUint32(frame, uint32(c.xids.in(xid, &c.srv.xidTokens)))
	return frame, nil
}

// protocolVersion is what the connection's ConnectResponse says: ZooKeeper's 0, or 11 on a
// connection that negotiated 64-bit xids.
func (c *conn) protocolVersion() int32 {
	if c.xid64.Load() {
		return jute.ProtocolVersionXID64
	}
	return jute.ProtocolVersion
}

// encodeHeader encodes a reply's header as the connection speaks it.
func (c *conn) encodeHeader(e *jute.Encoder, h *jute.ReplyHeader) {
	if !c.xid64.Load() {
		h.Encode(e)
		return
	}
	h64 := jute.ReplyHeader64{Xid: c.xids.out(h.Xid), Zxid: h.Zxid, Err: h.Err}
	h64.Encode(e)
}
