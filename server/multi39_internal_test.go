package server

import (
	"errors"
	"testing"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/jute"
)

// TestMultiResponseAnswersSentOpcode: a create result of a create2 or createContainer sent
// in a multi is answered as create2 with the Stat (ZooKeeper 3.9, ZOOKEEPER-4026), also
// when the txn logs it as a plain create (zkd's own log, or a leader that decays the
// opcode as 3.8 does); a create sent as create keeps the path-only answer.
func TestMultiResponseAnswersSentOpcode(t *testing.T) {
	stat := jute.Stat{Czxid: 9, Mzxid: 9, Pzxid: 9}
	res := &applyResult{Multi: []datatree.OpResult{
		{Type: jute.OpCreate, Path: "/a", Stat: stat},
		{Type: jute.OpCreate, Path: "/b", Stat: stat},
		{Type: jute.OpCreate, Path: "/c", Stat: stat},
		{Type: jute.OpCreateContainer, Path: "/d", Stat: stat},
		{Type: jute.OpSetData, Path: "/e", Stat: stat},
	}}
	cr := func(typ jute.OpCode, path string) jute.MultiOp {
		return jute.MultiOp{Type: typ, Body: &jute.CreateRequest{Path: path}}
	}
	req := &jute.MultiRequest{Ops: []jute.MultiOp{
		cr(jute.OpCreate, "/a"), cr(jute.OpCreate2, "/b"), cr(jute.OpCreateContainer, "/c"), cr(jute.OpCreate, "/d"),
		{Type: jute.OpSetData, Body: &jute.SetDataRequest{Path: "/e", Version: -1}},
	}}
	got := multiResponse(res, req).Results
	want := []jute.OpCode{jute.OpCreate, jute.OpCreate2, jute.OpCreate2, jute.OpCreate2, jute.OpSetData}
	for i, r := range got {
		if r.Type != want[i] {
			t.Errorf("result %d: type %v, want %v", i, r.Type, want[i])
		}
		switch b := r.Body.(type) {
		case *jute.CreateResponse:
			if r.Type != jute.OpCreate {
				t.Errorf("result %d: %v with a path-only body", i, r.Type)
			}
		case *jute.Create2Response:
			if b.Stat != stat || b.Path != res.Multi[i].Path {
				t.Errorf("result %d: %+v", i, b)
			}
		}
	}
	// Without the request (or with one that does not match) the txn's types are answered.
	for _, r := range []jute.Record{nil, &jute.MultiRequest{Ops: req.Ops[:2]}} {
		if got := multiResponse(res, r).Results[1].Type; got != jute.OpCreate {
			t.Errorf("request %v: result 1 type %v, want create", r, got)
		}
	}
}

// TestDecodeBodyBadMultiCreates: a multi or multiRead holding a create whose flags
// ZooKeeper 3.9 cannot decode does not decode; for a multiRead this comes before the
// check for writes, so it gets no body (not errMultiReadOfWrites).
func TestDecodeBodyBadMultiCreates(t *testing.T) {
	for _, flags := range []int32{5, 6, 7, -1} {
		for _, typ := range []jute.OpCode{jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer} {
			m := &jute.MultiRequest{Ops: []jute.MultiOp{{Type: typ, Body: &jute.CreateRequest{Path: "/a", Flags: flags}}}}
			for _, op := range []jute.OpCode{jute.OpMulti, jute.OpMultiRead} {
				body, known, err := decodeBody(op, jute.Marshal(m), ext.Set{})
				if body != nil || !known || err == nil || errors.Is(err, errMultiReadOfWrites) {
					t.Errorf("%v of %v flags %d: body %v known %v err %v", op, typ, flags, body, known, err)
				}
			}
		}
	}
	m := &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpCreateContainer, Body: &jute.CreateRequest{Path: "/a", Flags: jute.FlagEphemeralSequential}},
		{Type: jute.OpCreateTTL, Body: &jute.CreateTTLRequest{Path: "/b", Flags: 7, TTL: 1}},
	}}
	if body, _, err := decodeBody(jute.OpMulti, jute.Marshal(m), ext.Set{}); body == nil || err != nil {
		t.Errorf("valid multi: %v", err)
	}
}
