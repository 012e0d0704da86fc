package server_test

import (
	"testing"

	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// TestMultiCreates39 checks the answers to creates inside a multi on the wire, as
// ZooKeeper 3.9 gives them (ZOOKEEPER-4026), and that the log they leave replays to the
// same nodes.
func TestMultiCreates39(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.ExtendedTypes = true }))
	c := rawzk.Connect(t, srv.Addr())
	open := jute.OpenACLUnsafe
	cr := func(typ jute.OpCode, path string, flags int32) jute.MultiOp {
		return jute.MultiOp{Type: typ, Body: &jute.CreateRequest{Path: path, ACL: open, Flags: flags}}
	}
	var mr jute.MultiResponse
	h := c.Call(jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
		cr(jute.OpCreate2, "/a", jute.FlagPersistent),
		cr(jute.OpCreateContainer, "/c", jute.FlagPersistent),
		cr(jute.OpCreateContainer, "/s-", jute.FlagEphemeralSequential),
		cr(jute.OpCreate, "/p", jute.FlagPersistent),
		cr(jute.OpCreate2, "/e", jute.FlagEphemeral),
	}}, &mr)
	if h.Err != jute.OK || len(mr.Results) != 5 {
		t.Fatalf("multi: %v %+v", h.Err, mr.Results)
	}
	wantPath := []string{"/a", "/c", "/s-0000000002", "/p", "/e"}
	wantType := []jute.OpCode{jute.OpCreate2, jute.OpCreate2, jute.OpCreate2, jute.OpCreate, jute.OpCreate2}
	for i, r := range mr.Results {
		if r.Type != wantType[i] {
			t.Errorf("result %d: type %v, want %v", i, r.Type, wantType[i])
			continue
		}
		switch b := r.Body.(type) {
		case *jute.Create2Response:
			if b.Path != wantPath[i] || b.Stat.Czxid != h.Zxid || b.Stat.Mzxid != h.Zxid {
				t.Errorf("result %d: %+v, want %s created at zxid %d", i, b, wantPath[i], h.Zxid)
			}
		case *jute.CreateResponse:
			if b.Path != wantPath[i] {
				t.Errorf("result %d: path %q, want %q", i, b.Path, wantPath[i])
			}
		default:
			t.Errorf("result %d: body %T", i, r.Body)
		}
	}
	// The ephemeral flag of a createContainer is not kept: the node is a container.
	var eph jute.GetEphemeralsResponse
	c.Call(jute.OpGetEphemerals, &jute.GetEphemeralsRequest{Path: "/"}, &eph)
	if len(eph.Strings) != 1 || eph.Strings[0] != "/e" {
		t.Errorf("ephemerals %q, want [/e]", eph.Strings)
	}

	// Flags 3.9 cannot decode in a multi: MARSHALLINGERROR for the whole request, a zxid
	// taken, nothing applied.
	before := h.Zxid
	h, err := c.Reply(c.Send(jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
		cr(jute.OpCreate, "/pre", jute.FlagPersistent), cr(jute.OpCreate2, "/bad", jute.FlagPersistentWithTTL),
	}}), nil)
	if err != nil || h.Err != jute.ErrMarshallingError || h.Zxid != before+1 {
		t.Fatalf("multi with TTL flags on create2: %+v %v (zxid before %d)", h, err, before)
	}
	if h := c.Call(jute.OpExists, &jute.ExistsRequest{Path: "/pre"}, &jute.ExistsResponse{}); h.Err != jute.ErrNoNode {
		t.Errorf("/pre of the failed multi: %v", h.Err)
	}
	// A top-level createTTL without a TTL flag and a negative ttl would log a txn ZooKeeper
	// cannot apply: refused.
	if h := c.Call(jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/t", ACL: open, TTL: -1}, nil); h.Err != jute.ErrBadArguments {
		t.Errorf("createTTL flags 0 ttl -1: %v", h.Err)
	}

	// The log replays to the same nodes and stats.
	stats := map[string]jute.Stat{}
	for _, p := range []string{"/a", "/c", "/s-0000000002", "/p"} {
		var r jute.ExistsResponse
		if h := c.Call(jute.OpExists, &jute.ExistsRequest{Path: p}, &r); h.Err != jute.OK {
			t.Fatalf("exists %s: %v", p, h.Err)
		}
		stats[p] = r.Stat
	}
	c.NC.Close()
	srv.Restart()
	c = rawzk.Connect(t, srv.Addr())
	for p, want := range stats {
		var r jute.ExistsResponse
		if h := c.Call(jute.OpExists, &jute.ExistsRequest{Path: p}, &r); h.Err != jute.OK || r.Stat != want {
			t.Errorf("after restart %s: %v %+v, want %+v", p, h.Err, r.Stat, want)
		}
	}
}
