package server_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/server"
)

// startObserverMasterEnsemble starts voters and observers with observerMasterPort. Every
// member has a loopback address of its own (127.0.0.<sid>), as the port is the same on
// each follower's host.
func startObserverMasterEnsemble(t *testing.T, voters, observers int) *testEnsemble {
	port := freePorts(t, 1)[0]
	return startEnsembleFull(t, voters, observers, func(c *server.Config) {
		c.ObserverMasterPort = port
		c.FourLetterWhitelist = []string{"mntr"}
		c.Peers = slices.Clone(c.Peers)
		for i := range c.Peers {
			c.Peers[i].Host = "127.0.0." + strconv.FormatInt(c.Peers[i].ID, 10)
		}
	})
}

// mntr is member i's mntr; empty while the member is not serving (a role just taken,
// not synced yet), so that conditions polled on it wait instead of failing.
func (e *testEnsemble) mntr(i int) map[string]string {
	out := fourLetter(e.t, e.members[i].cfg.ListenAddr, "mntr")
	if strings.HasPrefix(out, "This ZooKeeper instance is not currently serving requests") {
		return map[string]string{}
	}
	return mntrLines(e.t, out)
}

// observerMasters waits until every observer (from index first on) is serving, and
// returns the sid each syncs from.
func (e *testEnsemble) observerMasters(first int) map[int]int64 {
	e.t.Helper()
	out := map[int]int64{}
	waitFor(e.t, "observers to sync from a learner master", func() bool {
		clear(out)
		for i := first; i < len(e.members); i++ {
			if e.members[i].srv == nil || e.members[i].srv.Mode() != "observer" {
				return false
			}
			id, ok := mntrInt(e.mntr(i), "observer_master_id")
			if !ok {
				return false
			}
			out[i] = id
		}
		return true
	})
	return out
}

// waitLeaderLearners waits until the leader counts exactly the followers as learners:
// observers of followers are not the leader's.
func (e *testEnsemble) waitLeaderLearners(followers int) {
	e.t.Helper()
	waitFor(e.t, fmt.Sprintf("the leader to count %d learners, all followers", followers), func() bool {
		l := e.leaderIndex()
		if l < 0 {
			return false
		}
		m := e.mntr(l)
		n, _ := mntrInt(m, "learners")
		f, _ := mntrInt(m, "synced_followers")
		o, _ := mntrInt(m, "synced_observers")
		return n == int64(followers) && f == int64(followers) && o == 0
	})
}

// TestEnsembleObserversSyncFromFollowers: with observerMasterPort, observers sync from
// followers, not the leader; they serve reads, forward writes and sessions, move to
// another follower when theirs dies, and to a restarted one.
func TestEnsembleObserversSyncFromFollowers(t *testing.T) {
	e := startObserverMasterEnsemble(t, 3, 2)
	e.waitServing()
	e.waitLeaderLearners(2)
	l := e.leaderIndex()
	leaderSid := e.members[l].cfg.ServerID
	masters := e.observerMasters(3)
	for i, m := range masters {
		if m == leaderSid || m < 1 || m > 3 {
			t.Fatalf("observer %d syncs from %d (leader %d), want a follower", i+1, m, leaderSid)
		}
	}
	// The followers count the observers they serve.
	waitFor(t, "followers to count their observers", func() bool {
		total := int64(0)
		for i := 0; i < 3; i++ {
			if i == l {
				continue
			}
			n, ok := mntrInt(e.mntr(i), "synced_observers")
			if !ok {
				return false
			}
			total += n
		}
		return total == 2
	})

	// Writes and a session's ephemeral through an observer; reads there; the leader's
	// writes reach it.
	obs := connectTo(t, e.members[3].cfg.ListenAddr)
	for i := 0; i < 5; i++ {
		if _, err := obs.Create(fmt.Sprintf("/o%d", i), []byte("x"), 0, open); err != nil {
			t.Fatalf("write through the observer: %v", err)
		}
	}
	if _, err := obs.Create("/eph", nil, zk.FlagEphemeral, open); err != nil {
		t.Fatalf("ephemeral through the observer: %v", err)
	}
	lc := connectTo(t, e.members[l].cfg.ListenAddr)
	if ok, _, err := lc.Exists("/eph"); err != nil || !ok {
		t.Fatalf("the leader misses the observer's ephemeral: %v %v", ok, err)
	}
	if _, err := lc.Create("/from-leader", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 5; i++ {
		c := connectTo(t, e.members[i].cfg.ListenAddr)
		if _, err := c.Sync("/"); err != nil {
			t.Fatalf("sync through observer %d: %v", i+1, err)
		}
		if ok, _, err := c.Exists("/from-leader"); err != nil || !ok {
			t.Fatalf("observer %d misses /from-leader after sync: %v %v", i+1, ok, err)
		}
		if kids, _, err := c.Children("/"); err != nil || !slices.Contains(kids, "o4") {
			t.Fatalf("observer %d reads %v %v", i+1, kids, err)
		}
	}

	// The first observer's follower dies: it moves to the other follower, and its
	// client's session (revalidated through the new one) keeps its ephemeral.
	dead := int(masters[3]) - 1
	other := 3 - l - dead // the voter that is neither the leader nor dead (indexes 0..2)
	e.stop(dead)
	waitFor(t, "the observer to sync from the other follower", func() bool {
		m := e.observerMasters(3)
		return m[3] == int64(other+1) && m[4] == int64(other+1)
	})
	e.waitLeaderLearners(1)
	if _, err := obs.Create("/after-failover", nil, 0, open); err != nil {
		t.Fatalf("write through the observer after its follower died: %v", err)
	}
	if ok, _, err := obs.Exists("/eph"); err != nil || !ok {
		t.Fatalf("the observer's session lost its ephemeral: %v %v", ok, err)
	}

	// The dead follower restarts and the other one stops: the observers move to it.
	e.start(dead)
	e.waitLeaderLearners(2)
	e.stop(other)
	waitFor(t, "the observers to sync from the restarted follower", func() bool {
		m := e.observerMasters(3)
		return m[3] == int64(dead+1) && m[4] == int64(dead+1)
	})
	if _, err := obs.Create("/after-restart", nil, 0, open); err != nil {
		t.Fatalf("write through the observer after the restart: %v", err)
	}
	c4 := connectTo(t, e.members[4].cfg.ListenAddr)
	if _, err := c4.Sync("/"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/after-failover", "/after-restart", "/eph"} {
		if ok, _, err := c4.Exists(p); err != nil || !ok {
			t.Fatalf("observer 5 misses %s: %v %v", p, ok, err)
		}
	}
}

// TestEnsembleObserverMasterReconfig: a reconfig committed while an observer syncs from a
// follower reaches the observer (INFORMANDACTIVATE from the follower's observer master),
// which keeps serving.
func TestEnsembleObserverMasterReconfig(t *testing.T) {
	port := freePorts(t, 1)[0]
	e := startEnsembleFull(t, 3, 1, func(c *server.Config) {
		c.ObserverMasterPort = port
		c.FourLetterWhitelist = []string{"mntr"}
		c.ReconfigEnabled = true
		c.StandaloneEnabled = true
		c.SuperDigest = auth.DigestID("super", reconfigSuperPw)
		c.Peers = slices.Clone(c.Peers)
		for i := range c.Peers {
			c.Peers[i].Host = "127.0.0." + strconv.FormatInt(c.Peers[i].ID, 10)
		}
	})
	e.waitServing()
	master := e.observerMasters(3)[3]
	_, v0, _ := configOf(t, e.members[3])

	// Give the observer's follower a client address: a change of the configuration only.
	m := e.members[master-1]
	p := m.cfg.Peers[master-1]
	line := fmt.Sprintf("server.%d=%s:%d:%d:participant;%s", master, p.Host, p.QuorumPort, p.ElectionPort, m.cfg.ListenAddr)
	c := superConn(t, e.members[e.leaderIndex()].cfg.ListenAddr)
	st, err := c.IncrementalReconfig([]string{line}, nil, v0)
	if err != nil {
		t.Fatalf("reconfig: %v", err)
	}
	waitFor(t, "the observer to activate the new configuration", func() bool {
		lines, v, _ := configOf(t, e.members[3])
		return v == st.Mzxid && slices.Contains(lines, line)
	})
	obs := connectTo(t, e.members[3].cfg.ListenAddr)
	if _, err := obs.Create("/after-reconfig", nil, 0, open); err != nil {
		t.Fatalf("write through the observer after the reconfig: %v", err)
	}
}

// TestEnsembleObserverMasterDiffFromLog: an observer that missed more txns than the
// follower keeps in memory is synced by DIFF from the follower's log, not a SNAP.
func TestEnsembleObserverMasterDiffFromLog(t *testing.T) {
	e := startObserverMasterEnsemble(t, 3, 1)
	e.waitServing()
	e.observerMasters(3)
	e.stop(3)
	l := e.leaderIndex()
	const writers, each = 6, 110 // more than the 500 txns of the in-memory history
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		c := connectTo(t, e.members[l].cfg.ListenAddr)
		go func() {
			for i := 0; i < each; i++ {
				if _, err := c.Create(fmt.Sprintf("/w%d-%d", w, i), nil, 0, open); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < writers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	snaps := func() int64 {
		var n int64
		for i := 0; i < 3; i++ {
			if i != l {
				v, _ := mntrInt(e.mntr(i), "snap_count")
				n += v
			}
		}
		return n
	}
	before := snaps()
	e.start(3)
	master := e.observerMasters(3)[3]
	if n := snaps(); n != before {
		t.Fatalf("the observer was synced by SNAP (followers' snap_count %d -> %d), want a DIFF from the log", before, n)
	}
	c := connectTo(t, e.members[3].cfg.ListenAddr)
	if ok, _, err := c.Exists(fmt.Sprintf("/w%d-%d", writers-1, each-1)); err != nil || !ok {
		t.Fatalf("the observer (synced by %d) misses the last write: %v %v", master, ok, err)
	}
	if kids, _, err := c.Children("/"); err != nil || len(kids) != writers*each+1 {
		t.Fatalf("the observer has %d children of /, want %d: %v", len(kids), writers*each+1, err)
	}
}
