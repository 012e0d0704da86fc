package admin

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestJSONObjectKeepsOrderAndJavaDoubles(t *testing.T) {
	resp := Response("monitor", nil, Object{{"z", Double(0)}, {"a", Double(2.71428)}, {"m", Double(1e7)}, {"n", Double(math.Inf(1))}})
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"z":0.0,"a":2.71428,"m":1.0E7,"n":"Infinity","command":"monitor","error":null}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(ErrorResponse("leader", NotInitializedMsg))
	if want := `{"error":"server is not initialized","command":"leader"}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestJSONCommandsAndAnswers(t *testing.T) {
	if c, ok := LookupHTTP("mntr"); !ok || c.Primary() != "monitor" || c.ServerRequired {
		t.Errorf("mntr -> %+v %v", c, ok)
	}
	if c, ok := LookupHTTP("snap"); !ok || c.Primary() != "snapshot" || !c.NeedsAuth || !c.ServerRequired {
		t.Errorf("snap -> %+v %v", c, ok)
	}
	if c, ok := LookupHTTP("rest"); !ok || c.Primary() != "restore" || !c.NeedsAuth {
		t.Errorf("rest -> %+v %v", c, ok)
	}
	if c, _ := LookupHTTP("dump"); c.NeedsAuth {
		t.Error("dump needs auth")
	}
	if n := len(HTTPPrimaryNames()); n != 28 {
		t.Errorf("%d commands, want ZooKeeper 3.9's 28", n)
	}
	at := time.UnixMilli(1_700_000_000_000)
	d := DumpJSON(DumpInfo{
		SessionSets: []SessionSet{{Expire: at.Add(time.Second), Sessions: []int64{7}}, {Expire: at}},
		Ephemerals:  []SessionEphemerals{{SessionID: 7, Paths: []string{"/e"}}},
	})
	b, _ := json.Marshal(d)
	want := `{"expiry_time_to_session_ids":{"1700000000000":[],"1700000001000":[7]},"session_id_to_ephemeral_paths":{"7":["/e"]}}`
	if string(b) != want {
		t.Errorf("dump\ngot  %s\nwant %s", b, want)
	}
	conn := ConnInfo{Remote: "/127.0.0.1:5", Interest: 1, SessionID: 9, LastOp: "PING", Established: at, LastCxid: -1}
	b, _ = json.Marshal(StatsJSON(ServerStats{Mode: "standalone", ResponseSize: NewBufferStats()}, 1, 2, []ConnInfo{conn}))
	for _, frag := range []string{`"connections":[{"remote_socket_address":"127.0.0.1:5","interest_ops":1,"outstanding_requests":0,"packets_received":0,"packets_sent":0}]`,
		`"client_response":{"last_buffer_size":-1,"min_buffer_size":-1,"max_buffer_size":-1}`, `"avg_latency":0.0`, `"data_dir_size":1,"log_dir_size":2`} {
		if !json.Valid(b) || !contains(string(b), frag) {
			t.Errorf("stats %s\nlacks %s", b, frag)
		}
	}
	b, _ = json.Marshal(LastSnapshotJSON(-1, -1))
	if want := `{"zxid":"ffffffffffffffff","timestamp":-1}`; string(b) != want {
		t.Errorf("last_snapshot %s, want %s", b, want)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
