package admin

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestObserversJSON: getLearnerHandlerInfo's keys in its order, established as epoch ms.
func TestObserversJSON(t *testing.T) {
	est := time.UnixMilli(1700000000123)
	o := ObserversJSON([]LearnerInfo{{Remote: "/127.0.0.1:40112", Sid: 4, Established: est, QueuedPackets: 2,
		QueuedPacketsSize: 60, PacketsReceived: 5, PacketsSent: 7, Requests: 3, LastZxid: 0x100000002}})
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"synced_observers":1,"observers":[{"remote_socket_address":"/127.0.0.1:40112","sid":4,` +
		`"established":1700000000123,"queued_packets":2,"queued_packets_size":60,"packets_received":5,` +
		`"packets_sent":7,"requests":3,"last_zxid":4294967298}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if b, _ := json.Marshal(ObserversJSON(nil)); string(b) != `{"synced_observers":0,"observers":[]}` {
		t.Errorf("no observers: %s", b)
	}
}

// TestMntrLearnerSets: the learner queue sets print as ZooKeeper's AvgMinMaxCounterSet
// and AvgMinMaxPercentileCounterSet do, "<prefix>_<sid>_<set>", after the other summaries.
func TestMntrLearnerSets(t *testing.T) {
	s := goldenStats(1, 2)
	s.LearnerQueueSize = []NamedSummary{{"2", Summary{Count: 4, Sum: 6, Min: 0, Max: 3}}}
	s.LearnerQueueTime = []NamedSummary{{"2", Summary{Count: 1, Sum: 5, Min: 5, Max: 5, P50: 5, P95: 5, P99: 5, P999: 5}}}
	got := Mntr(s)
	want := "zk_p999_write_commitproc_time_ms\t0\n" +
		"zk_avg_2_learner_handler_qp_size\t1.5\nzk_min_2_learner_handler_qp_size\t0\nzk_max_2_learner_handler_qp_size\t3\n" +
		"zk_cnt_2_learner_handler_qp_size\t4\nzk_sum_2_learner_handler_qp_size\t6\n" +
		"zk_avg_2_learner_handler_qp_time_ms\t5.0\nzk_min_2_learner_handler_qp_time_ms\t5\nzk_max_2_learner_handler_qp_time_ms\t5\n" +
		"zk_cnt_2_learner_handler_qp_time_ms\t1\nzk_sum_2_learner_handler_qp_time_ms\t5\n" +
		"zk_p50_2_learner_handler_qp_time_ms\t5\nzk_p95_2_learner_handler_qp_time_ms\t5\nzk_p99_2_learner_handler_qp_time_ms\t5\nzk_p999_2_learner_handler_qp_time_ms\t5\n"
	if !strings.HasSuffix(got, want) {
		t.Errorf("mntr ends %q\nwant %q", got[max(0, len(got)-len(want)):], want)
	}
	m := MonitorJSON(s)
	found := false
	for _, f := range m {
		if f.Key == "p99_2_learner_handler_qp_time_ms" {
			found = f.Value == int64(5)
		}
	}
	if !found {
		t.Errorf("monitor lacks p99_2_learner_handler_qp_time_ms = 5")
	}
}
