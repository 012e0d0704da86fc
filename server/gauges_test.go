package server_test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
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
			e := startEnsembleFull(t, tc.voters, tc.observers, func(c *server.Config) { c.FourLetterWhitelist = []string{"mntr", "srvr", "srst"} })
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

			// srst starts the leader's proposal sizes again, as ZooKeeper's StatResetCommand.
			if got := fourLetter(t, leaderAddr, "srst"); got != "Server stats reset.\n" {
				t.Fatalf("srst: %q", got)
			}
			if s := fourLetter(t, leaderAddr, "srvr"); !strings.Contains(s, "Proposal sizes last/min/max: -1/-1/-1\n") {
				t.Errorf("srvr after srst:\n%s", s)
			}
			if _, err := c.Create("/after-srst", nil, 0, open); err != nil {
				t.Fatal(err)
			}

			// The session's createSession and the creates were proposed and committed.
			waitFor(t, "the leader to count its proposals since srst, all committed", func() bool {
				m := mntrLines(t, fourLetter(t, leaderAddr, "mntr"))
				p, _ := mntrInt(m, "proposal_count")
				c, _ := mntrInt(m, "commit_count")
				return p >= 1 && c == p
			})

			for i, mb := range e.members {
				if i == l {
					continue
				}
				var m map[string]string
				waitFor(t, fmt.Sprintf("member %d to count the 3 txns it was sent", i+1), func() bool {
					m = mntrLines(t, fourLetter(t, mb.cfg.ListenAddr, "mntr"))
					c, _ := mntrInt(m, "learner_commit_received_count")
					return c >= 3
				})
				mode := m["server_state"]
				// Followers get PROPOSALs, observers INFORMs only.
				if p, _ := mntrInt(m, "learner_proposal_received_count"); (mode == "follower") != (p >= 3) {
					t.Errorf("member %d (%s): learner_proposal_received_count %d", i+1, mode, p)
				}
				if n, _ := mntrInt(m, "request_commit_queued"); n < 3 {
					t.Errorf("member %d (%s): request_commit_queued %d", i+1, mode, n)
				}
				if n, _ := mntrInt(m, "looking_count"); n < 1 {
					t.Errorf("member %d (%s): looking_count %d", i+1, mode, n)
				}
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

// TestMntrCounters: a standalone server counts its clients' connections, the bytes they
// send, the replies and notifications it sends and their sizes; srst zeroes them.
func TestMntrCounters(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.FourLetterWhitelist = []string{"mntr", "srst"}
		c.ConnectTimeout = 300 * time.Millisecond
	}))
	// A connection that never sends its ConnectRequest expires; one whose client hangs up
	// mid-frame is a drop.
	idle, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	hangup, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hangup.Write([]byte{0, 0, 0, 44, 0, 0}); err != nil {
		t.Fatal(err)
	}
	hangup.Close()
	waitFor(t, "the idle connection to expire and the hang-up to count", func() bool {
		m := mntrLines(t, fourLetter(t, srv.Addr(), "mntr"))
		return m["sessionless_connections_expired"] == "1" && m["connection_drop_count"] == "1"
	})

	c, _ := connect(t, srv.Addr(), 10*time.Second)
	if _, err := c.Create("/w", make([]byte, 300), 0, open); err != nil {
		t.Fatal(err)
	}
	_, _, ev, err := c.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/w", nil, -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ev:
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event")
	}
	m := mntrLines(t, fourLetter(t, srv.Addr(), "mntr"))
	for _, k := range []string{"connection_request_count", "bytes_received_count", "response_bytes", "watch_bytes"} {
		if n, _ := mntrInt(m, k); n < 1 {
			t.Errorf("%s is %q", k, m[k])
		}
	}
	// The getData reply carries the 300 bytes: the biggest reply.
	minSize, _ := mntrInt(m, "min_client_response_size")
	maxSize, _ := mntrInt(m, "max_client_response_size")
	lastSize, _ := mntrInt(m, "last_client_response_size")
	if !(minSize > 0 && maxSize > 300 && minSize <= lastSize && lastSize <= maxSize) {
		t.Errorf("client response sizes last %d min %d max %d", lastSize, minSize, maxSize)
	}
	for _, k := range []string{"proposal_count", "commit_count", "looking_count", "learner_commit_received_count", "request_commit_queued"} {
		if m[k] != "0" {
			t.Errorf("standalone %s is %q", k, m[k])
		}
	}

	c.Close()
	waitFor(t, "the client's connection to close", func() bool {
		// The one connection left is the one asking.
		return mntrLines(t, fourLetter(t, srv.Addr(), "mntr"))["num_alive_connections"] == "1"
	})
	if got := fourLetter(t, srv.Addr(), "srst"); got != "Server stats reset.\n" {
		t.Fatalf("srst: %q", got)
	}
	m = mntrLines(t, fourLetter(t, srv.Addr(), "mntr"))
	for _, k := range []string{"connection_request_count", "response_bytes", "watch_bytes",
		"sessionless_connections_expired", "connection_drop_count"} {
		if m[k] != "0" {
			t.Errorf("after srst %s is %q", k, m[k])
		}
	}
	// mntr's own 4 bytes, counted before it answers, as ZooKeeper's packetReceived(4)
	// (internal/testing/compat's TestCompatFourLetterPacketCounts compares).
	if m["bytes_received_count"] != "4" {
		t.Errorf("after srst bytes_received_count is %q, want mntr's own 4", m["bytes_received_count"])
	}
	for _, k := range []string{"last_client_response_size", "min_client_response_size", "max_client_response_size"} {
		if m[k] != "-1" {
			t.Errorf("after srst %s is %q", k, m[k])
		}
	}
}
