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
// may not appear in a multi or multiRead.
func newMultiOpBody(t OpCode) Record {
	if r := LookupOp(t); r != nil && r.Multi != NotInMulti {
		return r.Request()
	}
	return nil
}

func (r *MultiRequest) Decode(d *Decoder) { r.decode(d, newMultiOpBody) }

// DecodeKeeperRead decodes a multiRead as ClickHouse Keeper reads one: besides getData and
// getChildren it may hold exists and filteredList (ClickHouse's ZooKeeperMultiRequest, in
// src/Common/ZooKeeper/ZooKeeperCommon.cpp). Only the keeper-ops extension reads it so.
func (r *MultiRequest) DecodeKeeperRead(d *Decoder) {
	r.decode(d, func(t OpCode) Record {
		switch t {
		case OpGetData, OpExists, OpGetChildren:
			return &PathWatchRequest{}
		case OpFilteredList:
			return &FilteredListRequest{}
		}
		return nil
	})
}

func (r *MultiRequest) decode(d *Decoder, newBody func(OpCode) Record) {
	r.Ops = r.Ops[:0]
	for d.err == nil {
		var h MultiHeader
		h.Decode(d)
		if d.err != nil || h.Done {
			return
		}
		body := newBody(h.Type)
		if body == nil {
			d.Fail(fmt.Errorf("jute: op %v not allowed in multi", h.Type))
			return
		}
		body.Decode(d)
		r.Ops = append(r.Ops, MultiOp{Type: h.Type, Body: body})
	}
}

// MultiResult is one result of a multi or multiRead. For a failed op Type is -1 (OpError),
// Err is the code and Body is nil (an ErrorResponse is written); in ClickHouse Keeper's
// multiRead a failed op keeps its Type, with Err set and no body written. Otherwise Body is
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
		if res.Body != nil && res.Err == OK {
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
		if h.Type == OpError {
			res.Err = Code(d.Int())
		} else if body, ok := keeperReadResult(h.Type); ok {
			res.Body = body
		} else if op := LookupOp(h.Type); op != nil && op.Multi != NotInMulti {
			if op.Response != nil {
				res.Body = op.Response()
			}
		} else {
			d.Fail(fmt.Errorf("jute: unknown multi result type %v", h.Type))
			return
		}
		if res.Err != OK && h.Type != OpError {
			// ClickHouse Keeper's failed result: the op's own type and code, no body.
			res.Body = nil
		}
		if res.Body != nil {
			res.Body.Decode(d)
		}
		r.Results = append(r.Results, res)
	}
}

// keeperReadResult returns the body of the results only ClickHouse Keeper's multiRead has:
// exists (its Stat) and a filteredList's (type 12: names and the node's Stat).
func keeperReadResult(t OpCode) (Record, bool) {
	switch t {
	case OpExists:
		return &StatResponse{}, true
	case OpGetChildren2:
		return &GetChildren2Response{}, true
	}
	return nil, false
}
