package server

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/prep"
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
	sasl    *saslResult // a sasl request's step, taken by the reader when SASL is configured
	// keeperRead: a multiRead only ClickHouse Keeper's semantics accept (body is set, and
	// bodyErr says why ZooKeeper's would refuse it).
	keeperRead bool
	// getResp holds a getData's reply, which then costs no allocation of its own: a reply
	// is immutable once queued, and a request is answered once.
	getResp jute.GetDataResponse
}

// newBody returns an empty record for a client opcode's request body. ok is false for
// opcodes clients may not send (jute's opcode table: Internal) and for those of an
// extension the server does not enable, which are answered as ZooKeeper answers an opcode
// it does not know; body is nil for requests without a body.
func newBody(op jute.OpCode, exts ext.Set) (body jute.Record, ok bool) {
	if r := jute.LookupOp(op); r == nil || r.Internal || r.Ext != "" && !exts.Has(r.Ext) {
		return nil, false
	}
	return jute.NewRequestBody(op)
}

// decodeRequest decodes a frame after the handshake. Only a frame too short for its
// header is an error (the connection is closed); a bad body is reported per request.
func decodeRequest(frame []byte, exts ext.Set) (*request, error) {
	d := jute.Decoder{B: frame}
	r := &request{size: len(frame)}
	r.hdr.Decode(&d)
	if d.Err() != nil {
		return nil, fmt.Errorf("request of %d bytes has no header: %w", len(frame), d.Err())
	}
	r.raw = d.Rest()
	r.body, r.known, r.bodyErr = decodeBody(r.hdr.Type, r.raw, exts)
	if r.bodyErr != nil && r.hdr.Type == jute.OpMultiRead && exts.Has(ext.KeeperOps) {
		// Perhaps ClickHouse Keeper's multiRead, with exists and filteredList; the core
		// serves it so only to a session that negotiated ClickHouse's semantics.
		var m jute.MultiRequest
		d := jute.Decoder{B: r.raw}
		m.DecodeKeeperRead(&d)
		if d.Err() == nil {
			r.body, r.keeperRead = &m, true
		}
	}
	return r, nil
}

// decodeBody decodes a client request's body as ZooKeeper's server reads it: trailing bytes
// are ignored, and a body ZooKeeper would fail on (see derefsPath, prep.CheckMultiCreates,
// checkMultiKinds) is an error, answered with MARSHALLINGERROR. known is false for opcodes
// clients may not send; body is nil when there is none or err is set.
func decodeBody(op jute.OpCode, raw []byte, exts ext.Set) (body jute.Record, known bool, err error) {
	body, known = newBody(op, exts)
	if !known || body == nil {
		return nil, known, nil
	}
	if derefsPath(op) && bytes.HasPrefix(raw, nullLength) {
		return nil, true, errNullPath
	}
	d := jute.Decoder{B: raw}
	body.Decode(&d)
	if err := d.Err(); err != nil {
		return nil, true, err
	}
	if m, isMulti := body.(*jute.MultiRequest); isMulti {
		// First: ZooKeeper 3.9 fails these while decoding, so even a multiRead holding
		// only such creates gets no body (see errMultiReadOfWrites).
		if err := prep.CheckMultiCreates(m, exts.Has(ext.Wide)); err != nil {
			return nil, true, err
		}
		if err := checkMultiKinds(op, m); err != nil {
			return nil, true, err
		}
		if err := checkMultiExts(m, exts); err != nil {
			return nil, true, err
		}
	}
	return body, true, nil
}

var (
	// nullLength is a string's length field when the string is null.
	nullLength = []byte{0xff, 0xff, 0xff, 0xff}

	errNullPath = errors.New("null path")
	// errMultiReadOfWrites is a multiRead holding only writes. ZooKeeper decodes it and
	// fails at its first op, after it started a reply: it answers MARSHALLINGERROR with an
	// empty MultiResponse, where a multiRead mixing reads and writes does not decode and
	// gets no body.
	errMultiReadOfWrites = errors.New("multiRead holds only writes")
)

// derefsPath reports whether ZooKeeper 3.8 uses the request's path (the first field of its
// body) without a null check, so that a null path fails with a NullPointerException, which
// it answers with MARSHALLINGERROR (a write still takes a zxid). Elsewhere a null path reads
// as "", as in zkd's decoder: setData and setACL answer BADARGUMENTS from path validation,
// sync, getEphemerals, addWatch and removeWatches do not fail on it.
func derefsPath(op jute.OpCode) bool {
	switch op {
	case jute.OpGetData, jute.OpExists, jute.OpGetChildren, jute.OpGetChildren2, jute.OpGetACL,
		jute.OpGetAllChildrenNumber, jute.OpCheckWatches,
		jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL, jute.OpDelete:
		return true
	}
	return false
}

// checkMultiKinds refuses a multi holding reads or a multiRead holding writes.
func checkMultiKinds(op jute.OpCode, m *jute.MultiRequest) error {
	reads := 0
	for _, o := range m.Ops {
		if row := jute.LookupOp(o.Type); row != nil && row.Multi == jute.InMultiRead {
			reads++
		}
	}
	switch {
	case op == jute.OpMultiRead && reads == 0 && len(m.Ops) > 0:
		return errMultiReadOfWrites
	case op == jute.OpMultiRead && reads < len(m.Ops), op == jute.OpMulti && reads > 0:
		return fmt.Errorf("%v may not mix reads and writes", op)
	}
	return nil
}

// checkMultiExts fails a multi holding an op of an extension the server does not enable,
// as the decoder fails one holding an op it does not know.
func checkMultiExts(m *jute.MultiRequest, exts ext.Set) error {
	for _, o := range m.Ops {
		if row := jute.LookupOp(o.Type); row != nil && row.Ext != "" && !exts.Has(row.Ext) {
			return fmt.Errorf("op %v not allowed in multi: %w", o.Type, errExtDisabled)
		}
	}
	return nil
}

var errExtDisabled = errors.New("its extension is not enabled")
