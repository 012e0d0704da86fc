package server_test

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/server"
)

// mntrLoadLine are the lines of the summary sets whose keys depend on which requests each
// server served (per-namespace request sizes by top-level znode, sampled ack times by
// sid): not compared between servers that served different requests. The standalone
// differential test in cmd/zkd compares them under the same load.
func mntrLoadLine(k string) bool {
	for _, suffix := range []string{"_read_per_namespace", "_write_per_namespace", "_ack_latency"} {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

// learnerSetKey matches the lines of the per-learner send queue summary sets,
// "<stat>_<sid>_learner_handler_qp_size" and "..._qp_time_ms".
var learnerSetKey = regexp.MustCompile(`^([a-z0-9]+)_\d+_(learner_handler_qp_\w+)$`)

// learnerSetsBySid replaces the sid in the learner set lines with "*": a leader prints
// them for the learners it served, which differ by sid between two leaders.
func learnerSetsBySid(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[learnerSetKey.ReplaceAllString(k, "${1}_*_${2}")] = v
	}
	return out
}

// mntrOnlyZkd are zkd's own mntr lines: ZooKeeper counts DIFF and SNAP syncs, not TRUNC,
// and counts a digest mismatch but does not resync.
var mntrOnlyZkd = []string{"trunc_count", "digest_resync_count"}

// TestMixedMntrRoleGauges: a ZooKeeper 3.8 leader with two zkd followers counts them as
// synced followers, and, once it dies, the zkd leader elected in its place prints the same
// mntr lines it printed (up to the listed differences), with its role gauges as ZooKeeper
// computes them.
func TestMixedMntrRoleGauges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	members := startMixedWith(t, map[int64]bool{1: true, 2: true}, []int64{3, 1, 2},
		func(c *server.Config) { c.FourLetterWhitelist = []string{"*"} },
		[]string{"4lw.commands.whitelist=*"})
	ref := members[2]
	if m := ref.mode(t); m != "leader" {
		t.Fatalf("ZooKeeper (sid 3) is %q", m)
	}
	var refMntr map[string]string
	waitFor(t, "ZooKeeper's leader to count both zkd followers as synced", func() bool {
		out, err := ref.ref.Command("mntr")
		if err != nil {
			return false
		}
		refMntr = mntrLines(t, out)
		return refMntr["learners"] == "2" && refMntr["synced_followers"] == "2"
	})
	// Both zkd followers print what a ZooKeeper follower prints: the leader's lines
	// without the leader's gauges.
	followerWant := map[string]bool{}
	for k := range refMntr {
		// A follower has no learners, so no learner sets.
		if !mntrLoadLine(k) && !slices.Contains(leaderRoleGauges, k) && !learnerSetKey.MatchString(k) {
			followerWant[k] = true
		}
	}
	for _, k := range mntrOnlyZkd {
		followerWant[k] = true
	}
	for _, m := range members[:2] {
		got := mntrLines(t, fourLetter(t, m.addr, "mntr"))
		maps.DeleteFunc(got, func(k, _ string) bool { return mntrLoadLine(k) })
		compareKeys(t, "zkd follower "+m.addr, got, followerWant)
		if got["peer_state"] != refFollowerPeerState {
			t.Errorf("zkd follower: peer_state %q", got["peer_state"])
		}
	}

	ref.ref.Kill()
	var leader *mixedMember
	waitFor(t, "a zkd leader after the ZooKeeper leader died", func() bool {
		for _, m := range members[:2] {
			if m.mode(t) == "leader" {
				leader = m
				return true
			}
		}
		return false
	})
	var got map[string]string
	waitFor(t, "the zkd leader to count the other zkd as a synced follower", func() bool {
		got = mntrLines(t, fourLetter(t, leader.addr, "mntr"))
		return got["learners"] == "1" && got["synced_followers"] == "1"
	})
	want := map[string]bool{}
	for k := range learnerSetsBySid(refMntr) {
		if !mntrLoadLine(k) {
			want[k] = true
		}
	}
	for _, k := range mntrOnlyZkd {
		want[k] = true
	}
	maps.DeleteFunc(got, func(k, _ string) bool { return mntrLoadLine(k) })
	compareKeys(t, "zkd leader", learnerSetsBySid(got), want)
	for _, k := range []string{"quorum_size", "synced_non_voting_followers", "synced_observers"} {
		if got[k] != refMntr[k] {
			t.Errorf("%s: zkd leader %q, ZooKeeper leader %q", k, got[k], refMntr[k])
		}
	}
	if got["peer_state"] != refMntr["peer_state"] {
		t.Errorf("peer_state: zkd leader %q, ZooKeeper leader %q", got["peer_state"], refMntr["peer_state"])
	}
}

// refFollowerPeerState is QuorumPeer.getDetailedPeerState of a follower in broadcast.
const refFollowerPeerState = "following - broadcast"

func compareKeys(t *testing.T, who string, got map[string]string, want map[string]bool) {
	t.Helper()
	var missing, extra []string
	for k := range want {
		if _, ok := got[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra) > 0 {
		t.Errorf("%s: mntr lacks %v and has extra %v (of %d lines)", who, slices.Sorted(slices.Values(missing)),
			slices.Sorted(slices.Values(extra)), len(slices.Collect(maps.Keys(got))))
	}
}
