package jute

import "fmt"

// MultiOp is one operation of a multi or multiRead request. Body is one of *CreateRequest
// (create, create2, createContainer), *CreateTTLRequest, *DeleteRequest, *SetDataRequest,
// *CheckVersionRequest, *GetDataRequest or *GetChildrenRequest.
type MultiOp struct {
	Type OpCode
	Body Record
}

// MultiRequest is the body of multi (14) and multiRead (22).
type MultiRequest struct {
	Ops []MultiOp
}

var multiEnd = MultiHeader{Type: -1, Done: true, Err: -1}

func (r *MultiRequest) Encode(e *Encoder) {
	for _, op := range r.Ops {
		h := MultiHeader{Type: op.Type, Done: false, Err: -1}
		h.Encode(e)
		op.Body.Encode(e)
	}
	multiEnd.Encode(e)
}

// newMultiOpBody returns an empty request record for a multi op type, or nil if the type
// may not appear in a multi.
func newMultiOpBody(t OpCode) Record {
	switch t {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete, OpCheck, OpSetData,
		OpGetData, OpGetChildren:
		b, _ := NewRequestBody(t)
		return b
	}
	return nil
}

// NewRequestBody returns an empty record for the body of a client request with opcode op.
// ok is false for opcodes with no client request layout; body is nil for requests without a
// body (ping, closeSession, whoAmI).
func NewRequestBody(op OpCode) (body Record, ok bool) {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}, true
	case OpCreateTTL:
		return &CreateTTLRequest{}, true
	case OpDelete, OpCheck:
		return &PathVersionRequest{}, true
	case OpExists, OpGetData, OpGetChildren, OpGetChildren2:
		return &PathWatchRequest{}, true
	case OpSetData:
		return &SetDataRequest{}, true
	case OpGetACL, OpSync, OpGetAllChildrenNumber, OpGetEphemerals, OpDeleteContainer:
		return &PathRequest{}, true
	case OpSetACL:
		return &SetACLRequest{}, true
	case OpReconfig:
		return &ReconfigRequest{}, true
	case OpMulti, OpMultiRead:
		return &MultiRequest{}, true
	case OpAuth:
		return &AuthPacket{}, true
	case OpSetWatches:
		return &SetWatches{}, true
	case OpSetWatches2:
		return &SetWatches{V2: true}, true
	case OpAddWatch:
		return &AddWatchRequest{}, true
	case OpCheckWatches, OpRemoveWatches:
		return &WatchesRequest{}, true
	case OpSASL:
		return &SASLToken{}, true
	case OpPing, OpCloseSession, OpWhoAmI:
		return nil, true
	}
	return nil, false
}

func (r *MultiRequest) Decode(d *Decoder) {
	r.Ops = r.Ops[:0]
	for d.err == nil {
		var h MultiHeader
		h.Decode(d)
		if d.err != nil || h.Done {
			return
		}
		body := newMultiOpBody(h.Type)
		if body == nil {
			d.Fail(fmt.Errorf("jute: op %v not allowed in multi", h.Type))
			return
		}
		body.Decode(d)
		r.Ops = append(r.Ops, MultiOp{Type: h.Type, Body: body})
	}
}

// MultiResult is one result of a multi or multiRead. For a failed op Type is -1 (OpError),
// Err is the code and Body is nil (an ErrorResponse is written). Otherwise Body is
// *CreateResponse (type 1), *Create2Response (15), *SetDataResponse (5), *GetDataResponse (4),
// *GetChildrenResponse (8), or nil (2 delete, 13 check).
type MultiResult struct {
	Type OpCode
	Err  Code
	Body Record
}

type MultiResponse struct {
	Results []MultiResult
}

func (r *MultiResponse) Encode(e *Encoder) {
	for _, res := range r.Results {
		h := MultiHeader{Type: res.Type, Done: false, Err: res.Err}
		h.Encode(e)
		if res.Type == OpError {
			e.Int(int32(res.Err))
			continue
		}
		if res.Body != nil {
			res.Body.Encode(e)
		}
	}
	multiEnd.Encode(e)
}

func (r *MultiResponse) Decode(d *Decoder) {
	r.Results = r.Results[:0]
	for d.err == nil {
		var h MultiHeader
		h.Decode(d)
		if d.err != nil || h.Done {
			return
		}
		res := MultiResult{Type: h.Type, Err: h.Err}
		switch h.Type {
		case OpError:
			res.Err = Code(d.Int())
		case OpCreate:
			res.Body = &CreateResponse{}
		case OpCreate2, OpCreateContainer, OpCreateTTL:
			res.Body = &Create2Response{}
		case OpSetData:
			res.Body = &SetDataResponse{}
		case OpGetData:
			res.Body = &GetDataResponse{}
		case OpGetChildren:
			res.Body = &GetChildrenResponse{}
		case OpDelete, OpCheck:
		default:
			d.Fail(fmt.Errorf("jute: unknown multi result type %v", h.Type))
			return
		}
		if res.Body != nil {
			res.Body.Decode(d)
		}
		r.Results = append(r.Results, res)
	}
}
