package nemesis

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zkd-io/zkd/internal/testing/linearize"
	"github.com/zkd-io/zkd/jute"
)

func sent(xid int32) WireEvent { return WireEvent{Dir: Sent, Xid: xid, Op: jute.OpGetData} }
func recv(xid int32, zxid int64) WireEvent {
	return WireEvent{Dir: Received, Xid: xid, Zxid: zxid}
}

func TestCheckFIFO(t *testing.T) {
	good := &ConnLog{ID: 1, Session: 0x10, Events: []WireEvent{
		sent(1), sent(2), sent(jute.XidPing), sent(3), recv(1, 5), recv(jute.XidPing, 5), recv(jute.XidNotification, -1),
		recv(2, 6), sent(4), recv(3, 6), recv(4, 7),
	}}
	// After a reconnect the new connection answers only its own requests: the first
	// connection's xid 6 stays unanswered forever, and that is not a violation.
	first := &ConnLog{ID: 2, Session: 0x20, Events: []WireEvent{sent(5), sent(6), recv(5, 8)}}
	second := &ConnLog{ID: 3, Session: 0x20, Events: []WireEvent{sent(7), sent(8), recv(7, 9), recv(8, 9)}}
	if v := CheckFIFO([]*ConnLog{good, first, second}); len(v) != 0 {
		t.Fatalf("FIFO histories rejected: %v", v)
	}

	swapped := &ConnLog{ID: 3, Client: 2, Session: 0xabc, Events: []WireEvent{
		sent(1518), recv(1518, 1), sent(1519), sent(1520), recv(1520, 2), recv(1519, 2),
	}}
	v := CheckFIFO([]*ConnLog{good, swapped})
	if len(v) != 1 || v[0].Check != "fifo" {
		t.Fatalf("swapped replies: got %v", v)
	}
	for _, want := range []string{"conn 3", "session 0xabc", "reply #2 is for xid 1520, but the oldest unanswered is xid 1519"} {
		if !strings.Contains(v[0].Msg, want) {
			t.Errorf("message %q lacks %q", v[0].Msg, want)
		}
	}

	// A reply for a request of the session's previous connection is out of order on this one.
	stray := &ConnLog{ID: 4, Session: 0x20, Events: []WireEvent{sent(7), recv(6, 9), recv(7, 9)}}
	if v := CheckFIFO([]*ConnLog{stray}); len(v) != 1 || !strings.Contains(v[0].Msg, "not an unanswered request") {
		t.Fatalf("stray reply: got %v", v)
	}
	dup := &ConnLog{ID: 5, Events: []WireEvent{sent(1), recv(1, 1), recv(1, 1)}}
	if v := CheckFIFO([]*ConnLog{dup}); len(v) != 1 || !strings.Contains(v[0].Msg, "no request is unanswered") {
		t.Fatalf("duplicate reply: got %v", v)
	}
}

func TestCheckZxid(t *testing.T) {
	a1 := &ConnLog{ID: 1, Session: 1, Events: []WireEvent{sent(1), recv(1, 10), sent(2), recv(2, 12), recv(jute.XidPing, 12)}}
	// Another session may be behind: sessions are independent.
	b1 := &ConnLog{ID: 2, Session: 2, Events: []WireEvent{sent(1), recv(1, 3)}}
	// The same session on another member, after a reconnect, at or past what it saw;
	// -1 and 0 carry no state.
	a2 := &ConnLog{ID: 3, Session: 1, Events: []WireEvent{sent(3), recv(3, 12), recv(jute.XidNotification, -1), recv(4, 0), recv(5, -1), recv(6, 15)}}
	if v := CheckZxid([]*ConnLog{a1, b1, a2}); len(v) != 0 {
		t.Fatalf("monotonic histories rejected: %v", v)
	}
	// The reconnect landed on a member that answers from an older state.
	a3 := &ConnLog{ID: 4, Session: 1, Server: 2, Events: []WireEvent{sent(7), recv(7, 14)}}
	v := CheckZxid([]*ConnLog{a3, a2, a1, b1}) // any order in: the checker orders connections by ID
	if len(v) != 1 || !strings.Contains(v[0].Msg, "has zxid 0xe, but conn 3 already saw zxid 0xf") {
		t.Fatalf("zxid going back across connections: got %v", v)
	}
	within := &ConnLog{ID: 1, Session: 9, Events: []WireEvent{recv(1, 20), recv(2, 19)}}
	if v := CheckZxid([]*ConnLog{within}); len(v) != 1 {
		t.Fatalf("zxid going back within a connection: got %v", v)
	}
	pingBack := &ConnLog{ID: 1, Session: 9, Events: []WireEvent{recv(1, 20), recv(jute.XidPing, 19)}}
	if v := CheckZxid([]*ConnLog{pingBack}); len(v) != 1 {
		t.Fatalf("a ping reply going back: got %v", v)
	}
}

func lop(client int, call, ret int64, in linearize.Input, out linearize.Output) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Call: call, Return: ret, Input: in, Output: out}
}

func TestCheckLinearizable(t *testing.T) {
	get := func(k, v string, ver int32) (linearize.Input, linearize.Output) {
		return linearize.Input{Key: k, Kind: linearize.Get}, linearize.Output{Value: v, Version: ver}
	}
	set := func(k, v string, ver int32) (linearize.Input, linearize.Output) {
		return linearize.Input{Key: k, Kind: linearize.Set, Value: v}, linearize.Output{Result: linearize.OK, Version: ver}
	}
	in1, out1 := set("/a", "x", 1)
	in2, out2 := get("/a", "x", 1)
	in3, out3 := set("/b", "y", 1)
	in4, out4 := get("/b", "", 0) // stale: after the set returned
	inU := linearize.Input{Key: "/b", Kind: linearize.Set, Value: "z"}
	outU := linearize.Output{Result: linearize.Unknown}
	ok := []porcupine.Operation{lop(1, 0, 10, in1, out1), lop(2, 20, 30, in2, out2), lop(1, 0, 10, in3, out3), lop(3, 5, unknownReturn, inU, outU)}
	if v, to := CheckLinearizable(ok, nil, time.Minute, ""); len(v) != 0 || len(to) != 0 {
		t.Fatalf("linearizable history rejected: %v %v", v, to)
	}
	bad := append(slices.Clone(ok), lop(2, 20, 30, in4, out4))
	v, _ := CheckLinearizable(bad, nil, time.Minute, "")
	if len(v) != 1 || !strings.Contains(v[0].Msg, "key /b: stale read: client 2 get(/b)") {
		t.Fatalf("stale read: got %v", v)
	}
	// A failed CAS that no version explains: only porcupine sees it.
	inC := linearize.Input{Key: "/a", Kind: linearize.CAS, Version: 1, Value: "w"}
	outC := linearize.Output{Result: linearize.BadVersion}
	dump := t.TempDir()
	bad = append(slices.Clone(ok), lop(2, 40, 50, inC, outC))
	if v := CheckVersions(bad); len(v) != 0 {
		t.Fatalf("CheckVersions: %v", v)
	}
	v, _ = CheckLinearizable(bad, nil, time.Minute, dump)
	if len(v) != 1 || !strings.Contains(v[0].Msg, "key /a: the 3 operations") {
		t.Fatalf("bad CAS: got %v", v)
	}
	if _, err := os.Stat(filepath.Join(dump, "linearizability_a.html")); err != nil {
		t.Errorf("no visualisation: %v", err)
	}
}

func TestCheckVersions(t *testing.T) {
	k := "/k"
	set := func(c int, call, ret int64, val string, ver int32) porcupine.Operation {
		return lop(c, call, ret, linearize.Input{Key: k, Kind: linearize.Set, Value: val}, linearize.Output{Result: linearize.OK, Version: ver})
	}
	get := func(c int, call, ret int64, val string, ver int32) porcupine.Operation {
		return lop(c, call, ret, linearize.Input{Key: k, Kind: linearize.Get}, linearize.Output{Value: val, Version: ver})
	}
	good := []porcupine.Operation{set(1, 0, 10, "a", 1), get(2, 5, 15, "", 0), set(2, 20, 30, "b", 2), get(3, 25, 35, "a", 1)}
	if v := CheckVersions(good); len(v) != 0 {
		t.Fatalf("good history: %v", v)
	}
	for name, tc := range map[string]struct {
		op   porcupine.Operation
		want string
	}{
		"two values":      {get(3, 40, 50, "zz", 2), "version 2 holds two values"},
		"two versions":    {get(3, 40, 50, "a", 3), `value "a" has two versions`},
		"stale read":      {get(3, 40, 50, "a", 1), "stale read"},
		"write went back": {set(3, 40, 50, "c", 2), "version 2 holds two values"},
		"write reordered": {set(3, 40, 50, "c", 1), "version 1 holds two values"},
	} {
		v := CheckVersions(append(slices.Clone(good), tc.op))
		if len(v) == 0 || !strings.Contains(v[0].Msg, tc.want) {
			t.Errorf("%s: got %v, want %q", name, v, tc.want)
		}
	}
	// A write that starts after a read returned must get a greater version.
	v := CheckVersions([]porcupine.Operation{get(1, 0, 10, "", 0), set(2, 20, 30, "x", 0)})
	if len(v) == 0 || !strings.Contains(v[len(v)-1].Msg, "write ordered before an earlier one") {
		t.Errorf("write after read: got %v", v)
	}
}

func TestSettleUnknown(t *testing.T) {
	k := "/k"
	unknown := func(c int, call int64, val string) porcupine.Operation {
		return lop(c, call, unknownReturn, linearize.Input{Key: k, Kind: linearize.Set, Value: val}, linearize.Output{Result: linearize.Unknown})
	}
	set := func(c int, call, ret int64, val string, ver int32) porcupine.Operation {
		return lop(c, call, ret, linearize.Input{Key: k, Kind: linearize.Set, Value: val}, linearize.Output{Result: linearize.OK, Version: ver})
	}
	get := func(c int, call, ret int64, val string, ver int32) porcupine.Operation {
		return lop(c, call, ret, linearize.Input{Key: k, Kind: linearize.Get}, linearize.Output{Value: val, Version: ver})
	}
	final := get(0, 100, 110, "c", 3)
	ops := []porcupine.Operation{set(1, 0, 10, "a", 1), unknown(2, 5, "b"), unknown(3, 6, "lost"), get(1, 20, 30, "b", 2), set(1, 40, 50, "c", 3), final}
	got := settleUnknown(ops, final)
	if len(got) != 5 {
		t.Fatalf("want the unobserved unknown write dropped: %v", got)
	}
	for _, op := range got {
		if op.Input.(linearize.Input).Value == "b" && op.Output.(linearize.Output) != (linearize.Output{Result: linearize.OK, Version: 2}) {
			t.Fatalf("the unknown write that a read saw is not pinned to its version: %+v", op)
		}
	}
	if !linearize.Check(got) || !linearize.Check(ops) {
		t.Fatal("settled history rejected")
	}
	// A version nobody pins: some unknown write made it, porcupine has to find which.
	gap := []porcupine.Operation{set(1, 0, 10, "a", 1), unknown(2, 5, "b"), unknown(3, 6, "x"), set(1, 40, 50, "c", 3), final}
	if got := settleUnknown(gap, final); len(got) != len(gap) {
		t.Fatalf("a history with a gap was changed: %v", got)
	}
}

func TestCheckNoLostWrites(t *testing.T) {
	writes := []WriteRecord{
		{Key: "/a", Value: "a1", Acked: true, Version: 1},
		{Key: "/a", Value: "a2", Acked: true, Version: 2},
		{Key: "/a", Value: "a3"}, // unknown outcome
		{Key: "/b", Value: "b1", Acked: true, Version: 1},
	}
	good := []FinalRead{{Key: "/a", Value: "a3", Version: 3}, {Key: "/b", Value: "b1", Version: 1}, {Key: "/c", Value: "", Version: 0}}
	if v := CheckNoLostWrites(writes, good); len(v) != 0 {
		t.Fatalf("good final state rejected: %v", v)
	}
	for name, final := range map[string]FinalRead{
		"version went back":        {Key: "/a", Value: "a1", Version: 1},
		"value never written":      {Key: "/b", Value: "zz", Version: 2},
		"acked version mismatch":   {Key: "/b", Value: "b1", Version: 4},
		"initial value, versioned": {Key: "/c", Value: "", Version: 3},
		"initial value after acks": {Key: "/b", Value: "", Version: 0},
	} {
		if v := CheckNoLostWrites(writes, []FinalRead{final}); len(v) != 1 || v[0].Check != "lost-write" {
			t.Errorf("%s: got %v", name, v)
		}
	}
}

func TestScheduleIsSeeded(t *testing.T) {
	kinds := []Kind{Kill, Pause, Partition, TornLog}
	a, b := Schedule(42, 12, kinds), Schedule(42, 12, kinds)
	if FormatSchedule(a) != FormatSchedule(b) {
		t.Fatal("one seed gave two schedules")
	}
	if FormatSchedule(a) == FormatSchedule(Schedule(43, 12, kinds)) {
		t.Fatal("two seeds gave one schedule")
	}
	seen := map[Kind]bool{}
	for _, f := range a[:len(kinds)] {
		seen[f.Kind] = true
	}
	if len(seen) != len(kinds) {
		t.Fatalf("the first %d faults do not cover every kind:\n%s", len(kinds), FormatSchedule(a))
	}
}
