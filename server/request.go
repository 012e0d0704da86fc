package server

import (
	"fmt"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// request is one decoded client request.
type request struct {
	hdr  jute.RequestHeader
	body jute.Record // nil when the body did not decode (bodyErr says why) or there is none
	// bodyErr is set when the body could not be decoded; the request is answered with
	// MARSHALLINGERROR (writes still consume a zxid, as in ZooKeeper).
	bodyErr error
	known   bool // the opcode is one clients may send
	size    int
	raw     []byte // the body as received, forwarded as is to a leader
	recv    time.Time
}

// newBody returns an empty record for a client opcode's request body. ok is false for
// opcodes clients may not send (jute's opcode table: Internal); body is nil for requests
// without a body.
func newBody(op jute.OpCode) (body jute.Record, ok bool) {
	if r := jute.LookupOp(op); r == nil || r.Internal {
		return nil, false
	}
	return jute.NewRequestBody(op)
}

// decodeRequest decodes a frame after the handshake. Only a frame too short for its
// header is an error (the connection is closed); a bad body is reported per request.
func decodeRequest(frame []byte) (*request, error) {
	d := jute.Decoder{B: frame}
	r := &request{size: len(frame)}
	r.hdr.Decode(&d)
	if d.Err() != nil {
		return nil, fmt.Errorf("request of %d bytes has no header: %w", len(frame), d.Err())
	}
	r.raw = d.Rest()
	body, ok := newBody(r.hdr.Type)
	r.known = ok
	if !ok || body == nil {
		return r, nil
	}
	body.Decode(&d)
	if err := d.Err(); err != nil {
		r.bodyErr = err
		return r, nil
	}
	if m, isMulti := body.(*jute.MultiRequest); isMulti {
		if err := checkMultiKinds(r.hdr.Type, m); err != nil {
			r.bodyErr = err
			return r, nil
		}
	}
	r.body = body
	return r, nil
}

// checkMultiKinds refuses a multi holding reads or a multiRead holding writes.
func checkMultiKinds(op jute.OpCode, m *jute.MultiRequest) error {
	for _, o := range m.Ops {
		row := jute.LookupOp(o.Type)
		read := row != nil && row.Multi == jute.InMultiRead
		if read != (op == jute.OpMultiRead) {
			return fmt.Errorf("%v may not contain %v", op, o.Type)
		}
	}
	return nil
}
