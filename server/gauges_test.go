package server_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/server"
)

// mntrLines parses an mntr answer into its values by name (without "zk_"), failing on a
// name printed twice.
func mntrLines(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, v, ok := strings.Cut(l, "\t")
		if !ok || !strings.HasPrefix(k, "zk_") {
			t.Fatalf("mntr line %q", l)
		}
		k = strings.TrimPrefix(k, "zk_")
		if _, dup := m[k]; dup {
			t.Fatalf("mntr prints %s twice:\n%s", k, out)
		}
		m[k] = v
	}
	return m
}

func mntrInt(m map[string]string, k string) (int64, bool) {
	v, ok := m[k]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// leaderRoleGauges are the gauges only a leader prints (LeaderZooKeeperServer).
var leaderRoleGauges = []string{
	"learners", "synced_followers", "synced_non_voting_followers", "synced_observers",
	"pending_syncs", "leader_uptime", "last_proposal_size", "max_proposal_size", "min_proposal_size",
}

// TestMntrRoleGauges: the leader of an ensemble reports its learners as ZooKeeper's
// leader does, followers and observers report what ZooKeeper's do, and srvr shows the
// leader's proposal sizes.
func TestMntrRoleGauges(t *testing.T) {
	for _, tc := range []struct {
		voters, observers int
	}{{3, 0}, {3, 1}} {
		t.Run(fmt.Sprintf("%dvoters%dobservers", tc.voters, tc.observers), func(t *testing.T) {
			e := startEnsembleFull(t, tc.voters, tc.observers, func(c *server.Config) { c.FourLetterWhitelist = []string{"mntr", "srvr"} })
			e.waitServing()
			l := e.leaderIndex()
			leaderAddr := e.members[l].cfg.ListenAddr
			want := map[string]int64{
				"quorum_size":                 int64(tc.voters),
				"learners":                    int64(tc.voters - 1 + tc.observers),
				"synced_followers":            int64(tc.voters - 1),
				"synced_non_voting_followers": 0,
				"synced_observers":            int64(tc.observers),
				"pending_syncs":               0,
				// No proposal yet: BufferStats' start.
				"last_proposal_size": -1, "min_proposal_size": -1, "max_proposal_size": -1,
			}
			var last map[string]string
			waitFor(t, "the leader's mntr to count every learner as synced", func() bool {
				last = mntrLines(t, fourLetter(t, leaderAddr, "mntr"))
				for k, v := range want {
					if got, ok := mntrInt(last, k); !ok || got != v {
						return false
					}
				}
				return true
			})
			if last["server_state"] != "leader" || last["peer_state"] != "leading - broadcast" {
				t.Errorf("leader's server_state %q peer_state %q", last["server_state"], last["peer_state"])
			}
			if up, ok := mntrInt(last, "leader_uptime"); !ok || up < 0 {
				t.Errorf("leader_uptime %q", last["leader_uptime"])
			}
			if _, ok := last["observer_master_id"]; ok {
				t.Error("the leader prints observer_master_id")
			}
			if s := fourLetter(t, leaderAddr, "srvr"); !strings.Contains(s, "Proposal sizes last/min/max: -1/-1/-1\n") {
				t.Errorf("srvr before any proposal:\n%s", s)
			}

			// Two writes of different sizes: the proposal sizes follow them.
			c := connectTo(t, leaderAddr)
			for _, n := range []int{100, 10} {
				if _, err := c.Create(fmt.Sprintf("/g%d", n), make([]byte, n), 0, open); err != nil {
					t.Fatal(err)
				}
			}
			m := mntrLines(t, fourLetter(t, leaderAddr, "mntr"))
			lastSize, _ := mntrInt(m, "last_proposal_size")
			minSize, _ := mntrInt(m, "min_proposal_size")
			maxSize, _ := mntrInt(m, "max_proposal_size")
			// A session's createSession was proposed too; the 100-byte create is the biggest.
			if !(lastSize > 10 && maxSize >= lastSize+90 && minSize > 0 && minSize <= lastSize) {
				t.Errorf("proposal sizes last %d min %d max %d", lastSize, minSize, maxSize)
			}
			sizes := fmt.Sprintf("Proposal sizes last/min/max: %d/%d/%d\n", lastSize, minSize, maxSize)
			if s := fourLetter(t, leaderAddr, "srvr"); !strings.Contains(s, sizes) {
				t.Errorf("srvr lacks %q:\n%s", sizes, s)
			}

			for i, mb := range e.members {
				if i == l {
					continue
				}
				m := mntrLines(t, fourLetter(t, mb.cfg.ListenAddr, "mntr"))
				mode := m["server_state"]
				wantPeer := map[string]string{"follower": "following - broadcast", "observer": "observing - broadcast"}[mode]
				if wantPeer == "" || m["peer_state"] != wantPeer {
					t.Errorf("member %d: server_state %q peer_state %q", i+1, mode, m["peer_state"])
				}
				if q, _ := mntrInt(m, "quorum_size"); q != int64(tc.voters) {
					t.Errorf("member %d (%s): quorum_size %q", i+1, mode, m["quorum_size"])
				}
				for _, k := range leaderRoleGauges {
					if _, ok := m[k]; ok {
						t.Errorf("member %d (%s) prints the leader's %s", i+1, mode, k)
					}
				}
				master, ok := mntrInt(m, "observer_master_id")
				if mode == "observer" && (!ok || master != int64(l+1)) {
					t.Errorf("observer: observer_master_id %q, want %d", m["observer_master_id"], l+1)
				}
				if mode != "observer" && ok {
					t.Errorf("%s prints observer_master_id", mode)
				}
			}
		})
	}
}
