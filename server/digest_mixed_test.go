package server_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkd-io/zkd/server"
)

// mixedCount reads a counter from a mixed ensemble member's mntr: -1 while it does not
// serve.
func mixedCount(t *testing.T, m *mixedMember, name string) int64 {
	t.Helper()
	var out string
	var err error
	if m.zkd != nil {
		out, err = fourLetterErr(m.addr, "mntr")
	} else {
		out, err = m.ref.Command("mntr")
	}
	if err != nil || strings.Contains(out, "not currently serving") {
		return -1
	}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "\t"); ok && k == "zk_"+name {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("mntr %s", l)
			}
			return n
		}
	}
	t.Fatalf("member %d's mntr has no %s:\n%s", m.id, name, out)
	return 0
}

func startMixedDigest(t *testing.T, zkdIDs map[int64]bool, order []int64) []*mixedMember {
	return startMixedWith(t, zkdIDs, order,
		func(c *server.Config) { c.FourLetterWhitelist = []string{"*"} },
		[]string{"4lw.commands.whitelist=*"})
}

// mixedDigestWorkload runs digestWorkload through every member (writes through a learner go
// to the leader), closes those sessions (their ephemerals go with the closeSession txns),
// and waits until every member has applied everything.
func mixedDigestWorkload(t *testing.T, members []*mixedMember, tag string) {
	t.Helper()
	for _, m := range members {
		c, _ := connect(t, m.addr, 10e9)
		digestWorkload(t, c, fmt.Sprintf("/%s%d", tag, m.id))
		c.Close()
	}
	c := connectTo(t, members[0].addr)
	if _, err := c.Create("/"+tag+"-end", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		mc := connectTo(t, m.addr)
		if _, err := mc.Sync("/"); err != nil {
			t.Fatal(err)
		}
		if ok, _, err := mc.Exists("/" + tag + "-end"); err != nil || !ok {
			t.Fatalf("member %d: /%s-end %v %v", m.id, tag, ok, err)
		}
		mc.Close()
	}
}

func noMismatches(t *testing.T, members []*mixedMember) {
	t.Helper()
	for _, m := range members {
		if n := mixedCount(t, m, "digest_mismatches_count"); n != 0 {
			t.Errorf("member %d (zkd %v, %s) counted %d digest mismatches", m.id, m.zkd != nil, m.mode(t), n)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// proposalSizeProbe sets 100 bytes on /probe through the leader and returns the leader's
// last_proposal_size: a TxnHeader (32), the SetDataTxn (4+6 path, 4+100 data, 4 version)
// and the TxnDigest (12), on ZooKeeper's leader as on zkd's.
const probeProposalSize = 32 + 4 + len("/probe") + 4 + 100 + 4 + 12

func proposalSizeProbe(t *testing.T, leader *mixedMember) int64 {
	t.Helper()
	c := connectTo(t, leader.addr)
	if _, err := c.Create("/probe", nil, 0, open); err != nil && err != zk.ErrNodeExists {
		t.Fatal(err)
	}
	if _, err := c.Set("/probe", make([]byte, 100), -1); err != nil {
		t.Fatal(err)
	}
	return mixedCount(t, leader, "last_proposal_size")
}

// TestMixedDigestZkdLeads: zkd leads two ZooKeeper 3.8 followers through creates, sets,
// deletes, multis (failed ones too), sessions and ephemerals; ZooKeeper checks the digest
// zkd's proposals carry after applying each, and counts no mismatch, nor does zkd. A
// divergence planted in zkd's tree then shows: the ZooKeeper followers count mismatches.
func TestMixedDigestZkdLeads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	members := startMixedDigest(t, map[int64]bool{3: true}, []int64{1, 3, 2})
	leader := members[2]
	if m := leader.mode(t); m != "leader" {
		t.Fatalf("zkd (sid 3) is %q", m)
	}
	mixedDigestWorkload(t, members, "zl")
	noMismatches(t, members)
	if n := proposalSizeProbe(t, leader); n != int64(probeProposalSize) {
		t.Fatalf("zkd leader's proposal of a 100-byte setData is %d bytes, ZooKeeper's shape is %d", n, probeProposalSize)
	}
	noMismatches(t, members)

	// The ZooKeeper followers do compare: a tree the zkd leader alone changed makes
	// every digest it sends from now on disagree with theirs.
	if !server.PlantDivergence(leader.zkd, "/probe", []byte("planted")) {
		t.Fatal("no /probe on the leader")
	}
	c := connectTo(t, leader.addr)
	if _, err := c.Create("/after-plant", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	for _, m := range members[:2] {
		waitFor(t, fmt.Sprintf("ZooKeeper %d to count the mismatch", m.id), func() bool {
			return mixedCount(t, m, "digest_mismatches_count") >= 1
		})
	}
}

// TestMixedDigestZooKeeperLeads: ZooKeeper 3.8 leads two zkd followers through the same
// operations; no member counts a mismatch. A divergence planted in one zkd follower is
// found at the next txn; the follower rejoins ZooKeeper's leader claiming zxid -1, gets a
// SNAP and agrees again.
func TestMixedDigestZooKeeperLeads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	members := startMixedDigest(t, map[int64]bool{1: true, 2: true}, []int64{3, 1, 2})
	leader := members[2]
	if m := leader.mode(t); m != "leader" {
		t.Fatalf("ZooKeeper (sid 3) is %q", m)
	}
	mixedDigestWorkload(t, members, "rl")
	noMismatches(t, members)
	if n := proposalSizeProbe(t, leader); n != int64(probeProposalSize) {
		t.Fatalf("ZooKeeper leader's proposal of a 100-byte setData is %d bytes, want %d", n, probeProposalSize)
	}

	f := members[0]
	snaps := mixedCount(t, leader, "snap_count")
	if !server.PlantDivergence(f.zkd, "/probe", []byte("planted")) {
		t.Fatal("no /probe on zkd 1")
	}
	c := connectTo(t, leader.addr)
	if _, err := c.Create("/after-plant", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "zkd 1 to count the mismatch", func() bool { return mixedCount(t, f, "digest_mismatches_count") >= 1 })
	waitFor(t, "zkd 1 to resync", func() bool {
		return f.mode(t) == "follower" && mixedCount(t, f, "digest_resync_count") == 1
	})
	if n := mixedCount(t, leader, "snap_count"); n != snaps+1 {
		t.Fatalf("ZooKeeper's leader sent %d SNAPs for the resync, want 1", n-snaps)
	}
	fc := connectTo(t, f.addr)
	if d, _, err := fc.Get("/probe"); err != nil || len(d) != 100 {
		t.Fatalf("zkd 1 reads /probe as %q %v after the resync", d, err)
	}
	mixedDigestWorkload(t, members, "rl2")
	if n := mixedCount(t, f, "digest_mismatches_count"); n != 1 {
		t.Fatalf("zkd 1 counted %d mismatches, want the planted one", n)
	}
	noMismatches(t, members[1:])
}
