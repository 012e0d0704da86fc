package server_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/metrics"
	"github.com/zkd-io/zkd/server"
)

// observersOf asks a member's AdminServer for observers and returns synced_observers and
// the entries.
func observersOf(t *testing.T, m *ensembleMember) (int64, []map[string]any) {
	t.Helper()
	resp := adminJSON(t, "http://"+m.srv.AdminAddr()+"/commands", "obsr")
	if resp["command"] != "observers" || resp["error"] != nil {
		t.Fatalf("observers: %v", resp)
	}
	n, err := strconv.ParseInt(fmt.Sprint(resp["synced_observers"]), 10, 64)
	if err != nil {
		t.Fatalf("synced_observers: %v", resp)
	}
	var out []map[string]any
	list, ok := resp["observers"].([]any)
	if !ok {
		t.Fatalf("observers is %T: %v", resp["observers"], resp)
	}
	for _, o := range list {
		out = append(out, o.(map[string]any))
	}
	return n, out
}

func num(t *testing.T, o map[string]any, k string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(fmt.Sprint(o[k]), 10, 64)
	if err != nil {
		t.Fatalf("%s is not an integer in %v", k, o)
	}
	return v
}

// TestAdminObserversOnLeader: the leader's observers command lists its observer as
// LearnerHandler.getLearnerHandlerInfo does, counting the observer's requests and the
// packets sent to it; orst resets the counts; the followers list none; mntr and
// Prometheus carry the learner_handler_qp_* sets by sid.
func TestAdminObserversOnLeader(t *testing.T) {
	start := time.Now()
	e := startEnsembleFull(t, 3, 1, func(c *server.Config) {
		c.AdminAddr = "127.0.0.1:0"
		c.FourLetterWhitelist = []string{"mntr", "srst"}
		c.Metrics = metrics.New(metrics.Options{})
	})
	e.waitServing()
	l := e.leaderIndex()
	leader := e.members[l]
	waitFor(t, "the leader to list its observer", func() bool {
		n, list := observersOf(t, leader)
		return n == 1 && len(list) == 1
	})

	const writes = 50
	obs := connectTo(t, e.members[3].cfg.ListenAddr)
	for i := 0; i < writes; i++ {
		if _, err := obs.Create(fmt.Sprintf("/w%d", i), nil, 0, open); err != nil {
			t.Fatal(err)
		}
	}
	_, st, err := obs.Exists(fmt.Sprintf("/w%d", writes-1))
	if err != nil {
		t.Fatal(err)
	}
	lastZxid := st.Czxid
	var o map[string]any
	waitFor(t, "the observer's entry to count the writes", func() bool {
		_, list := observersOf(t, leader)
		if len(list) != 1 {
			return false
		}
		o = list[0]
		// The INFORM of the last write carries its zxid; pings carry it too.
		return num(t, o, "last_zxid") == lastZxid && num(t, o, "requests") >= writes
	})
	t.Logf("the observer on the leader: %v", o)
	if got := num(t, o, "sid"); got != 4 {
		t.Errorf("sid = %d, want 4", got)
	}
	if r := fmt.Sprint(o["remote_socket_address"]); len(r) < 12 || r[:11] != "/127.0.0.1:" {
		t.Errorf("remote_socket_address = %q, want Java's /127.0.0.1:port", r)
	}
	if est := num(t, o, "established"); est < start.UnixMilli() || est > time.Now().UnixMilli() {
		t.Errorf("established = %d, not epoch ms within the test (%d..)", est, start.UnixMilli())
	}
	// Every write was a REQUEST from the observer and an INFORM to it; the session's
	// creation added one more of each.
	if r, s, rcv := num(t, o, "requests"), num(t, o, "packets_sent"), num(t, o, "packets_received"); r > writes+2 || s < writes || rcv < r {
		t.Errorf("requests %d, packets_sent %d, packets_received %d after %d writes", r, s, rcv, writes)
	}
	q, qs := num(t, o, "queued_packets"), num(t, o, "queued_packets_size")
	if q < 0 || qs < 0 || (q == 0) != (qs == 0) {
		t.Errorf("queued_packets %d, queued_packets_size %d", q, qs)
	}
	keys := []string{"remote_socket_address", "sid", "established", "queued_packets", "queued_packets_size",
		"packets_received", "packets_sent", "requests", "last_zxid"}
	if len(o) != len(keys) {
		t.Errorf("entry has %d keys, want %v: %v", len(o), keys, o)
	}
	for _, k := range keys {
		if _, ok := o[k]; !ok {
			t.Errorf("entry lacks %s: %v", k, o)
		}
	}

	// orst resets the observer's counts (pings may follow at once, requests may not).
	sentBefore := num(t, o, "packets_sent")
	if resp := adminJSON(t, "http://"+leader.srv.AdminAddr()+"/commands", "orst"); resp["error"] != nil {
		t.Fatalf("orst: %v", resp)
	}
	_, list := observersOf(t, leader)
	if len(list) != 1 || num(t, list[0], "requests") != 0 || num(t, list[0], "packets_sent") >= sentBefore {
		t.Errorf("after orst: %v (packets_sent was %d)", list, sentBefore)
	}

	for i, m := range e.members {
		if i == l {
			continue
		}
		if n, list := observersOf(t, m); n != 0 || len(list) != 0 {
			t.Errorf("member %d (%s) lists observers %d %v", i+1, m.srv.Mode(), n, list)
		}
	}

	// mntr: with the Prometheus provider, its samples of the queue sets of every learner,
	// by sid (PrometheusMetricsProvider.dump); gauges_mixed_test compares the sets that
	// the default provider prints with ZooKeeper's.
	dump := func() map[string]float64 {
		out := map[string]float64{}
		for k, v := range mntrLines(t, fourLetter(t, leader.cfg.ListenAddr, "mntr")) {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				out[k] = f
			}
		}
		return out
	}
	m := dump()
	for sid := int64(1); sid <= 4; sid++ {
		if sid == leader.cfg.ServerID {
			continue
		}
		key := `{key="` + strconv.FormatInt(sid, 10) + `"}`
		if n := m["learner_handler_qp_size_count"+key]; n < 2 {
			t.Errorf("zk_learner_handler_qp_size_count%s = %v", key, n)
		}
		// The first packet queued is sampled for its time in the queue.
		if n := m["learner_handler_qp_time_ms_count"+key]; n < 1 {
			t.Errorf("zk_learner_handler_qp_time_ms_count%s = %v", key, n)
		}
		q := func(name, quantile string) string {
			return name + `{key="` + strconv.FormatInt(sid, 10) + `",quantile="` + quantile + `"}`
		}
		for _, k := range []string{"learner_handler_qp_size_sum" + key, q("learner_handler_qp_size", "0.5"),
			q("learner_handler_qp_time_ms", "0.5"), q("learner_handler_qp_time_ms", "0.9"), q("learner_handler_qp_time_ms", "0.99")} {
			if _, ok := m[k]; !ok {
				t.Errorf("mntr lacks zk_%s", k)
			}
		}
	}
	cntBefore := m[`learner_handler_qp_size_count{key="4"}`]
	// srst does not reset the Prometheus provider's values ("not supported on Prometheus").
	fourLetter(t, leader.cfg.ListenAddr, "srst")
	if n := dump()[`learner_handler_qp_size_count{key="4"}`]; n < cntBefore {
		t.Errorf("after srst zk_learner_handler_qp_size_count{key=\"4\"} = %v, was %v", n, cntBefore)
	}

	// Prometheus: the same sets, labelled by sid.
	fams, err := leader.cfg.Metrics.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]uint64{}
	for _, f := range fams {
		if f.GetName() != "learner_handler_qp_size" && f.GetName() != "learner_handler_qp_time_ms" {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if lp.GetName() == "key" {
					seen[f.GetName()+"/"+lp.GetValue()] = mt.GetSummary().GetSampleCount()
				}
			}
		}
	}
	if seen["learner_handler_qp_size/4"] < writes || seen["learner_handler_qp_time_ms/4"] < 1 {
		t.Errorf("Prometheus learner sets: %v", seen)
	}
}

// TestAdminObserversOnObserverMaster: with observerMasterPort a follower lists the
// observers it serves and the leader none.
func TestAdminObserversOnObserverMaster(t *testing.T) {
	port := freePorts(t, 1)[0]
	e := startEnsembleFull(t, 3, 2, func(c *server.Config) {
		c.ObserverMasterPort = port
		c.AdminAddr = "127.0.0.1:0"
		c.FourLetterWhitelist = []string{"mntr"}
		c.Peers = slices.Clone(c.Peers)
		for i := range c.Peers {
			c.Peers[i].Host = "127.0.0." + strconv.FormatInt(c.Peers[i].ID, 10)
		}
	})
	e.waitServing()
	masters := e.observerMasters(3)
	want := map[int64][]int64{} // follower sid -> observer sids
	for i, sid := range masters {
		want[sid] = append(want[sid], e.members[i].cfg.ServerID)
	}
	waitFor(t, "followers to list their observers", func() bool {
		for i := 0; i < 3; i++ {
			m := e.members[i]
			n, list := observersOf(t, m)
			w := want[m.cfg.ServerID]
			if n != int64(len(w)) || len(list) != len(w) {
				return false
			}
			for j, o := range list {
				if num(t, o, "sid") != w[j] && !(len(w) == 2 && num(t, o, "sid") == w[1-j]) {
					return false
				}
			}
		}
		return true
	})
	l := e.leaderIndex()
	if n, list := observersOf(t, e.members[l]); n != 0 || len(list) != 0 {
		t.Errorf("the leader lists %d %v", n, list)
	}
}
