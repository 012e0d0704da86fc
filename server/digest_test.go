package server_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

func mntrCount(t *testing.T, addr, name string) int64 {
	t.Helper()
	out, err := fourLetterErr(addr, "mntr")
	if err != nil || strings.Contains(out, "not currently serving") {
		return -1 // not serving (resyncing): the caller polls again
	}
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "\t"); ok {
			m[strings.TrimPrefix(k, "zk_")] = v
		}
	}
	n, ok := mntrInt(m, name)
	if !ok {
		t.Fatalf("mntr has no %s:\n%s", name, out)
	}
	return n
}

// digestWorkload runs creates, sets, deletes, multis, sessions and ephemerals through c.
func digestWorkload(t *testing.T, c *zk.Conn, prefix string) {
	t.Helper()
	if _, err := c.Create(prefix, []byte("p"), 0, open); err != nil && err != zk.ErrNodeExists {
		t.Fatalf("create %s: %v", prefix, err)
	}
	for i := 0; i < 20; i++ {
		p := fmt.Sprintf("%s/n%d", prefix, i)
		if _, err := c.Create(p, []byte(p), 0, open); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
		if _, err := c.Set(p, []byte("v2"), -1); err != nil {
			t.Fatalf("set %s: %v", p, err)
		}
		if _, err := c.Create(p+"/e", nil, zk.FlagEphemeral, open); err != nil {
			t.Fatalf("ephemeral %s/e: %v", p, err)
		}
		if _, err := c.Create(p+"/s-", nil, zk.FlagSequence, open); err != nil {
			t.Fatalf("sequential %s/s-: %v", p, err)
		}
	}
	for i := 0; i < 10; i++ {
		p := fmt.Sprintf("%s/n%d", prefix, i)
		if _, err := c.Multi(
			&zk.CreateRequest{Path: p + "/m", Data: []byte("m"), Acl: open},
			&zk.SetDataRequest{Path: p, Data: []byte("v3"), Version: -1},
			&zk.DeleteRequest{Path: p + "/m", Version: -1},
		); err != nil {
			t.Fatalf("multi on %s: %v", p, err)
		}
		// A failed multi (its txn carries the digest unchanged) and a failed write (an
		// error txn carries none).
		if _, err := c.Multi(&zk.SetDataRequest{Path: p, Data: []byte("x"), Version: 99}); err == nil {
			t.Fatalf("multi with a bad version on %s succeeded", p)
		}
		if err := c.Delete(p, 99); err == nil {
			t.Fatalf("delete with a bad version on %s succeeded", p)
		}
	}
}

// TestDigestDivergenceResyncs plants a divergence in one follower's tree: the next txn's
// digest disagrees with it, the follower counts the mismatch, says so in its log (zxid and
// both digests), serves no read from the diverged tree, rejoins its leader, which sends it
// a SNAP, and agrees with the leader again; the other members count nothing.
func TestDigestDivergenceResyncs(t *testing.T) {
	logs := map[int64]*syncBuffer{}
	e := startEnsembleConfig(t, 3, func(c *server.Config) {
		c.FourLetterWhitelist = []string{"*"}
		b := &syncBuffer{}
		logs[c.ServerID] = b
		c.Logger = slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	e.waitServing()
	l := e.leaderIndex()
	f := (l + 1) % 3
	other := (l + 2) % 3
	lc := connectTo(t, e.members[l].cfg.ListenAddr)
	digestWorkload(t, lc, "/before")
	if _, err := lc.Create("/d", []byte("good"), 0, open); err != nil {
		t.Fatal(err)
	}
	fc := connectTo(t, e.members[f].cfg.ListenAddr)
	if _, err := fc.Sync("/d"); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{l, f, other} {
		if n := mntrCount(t, e.members[i].cfg.ListenAddr, "digest_mismatches_count"); n != 0 {
			t.Fatalf("server %d counted %d digest mismatches before any divergence", i, n)
		}
	}
	snapsBefore := mntrCount(t, e.members[l].cfg.ListenAddr, "snap_count")

	if !server.PlantDivergence(e.members[f].srv, "/d", []byte("planted")) {
		t.Fatal("no /d on the follower")
	}
	if d, _, err := fc.Get("/d"); err != nil || string(d) != "planted" {
		t.Fatalf("the follower's planted /d reads %q %v", d, err)
	}
	// The next txn's digest is the leader's tree's, which the follower's no longer is.
	if _, err := lc.Create("/trigger", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	fAddr := e.members[f].cfg.ListenAddr
	waitFor(t, "the follower to count the mismatch", func() bool {
		return mntrCount(t, fAddr, "digest_mismatches_count") >= 1
	})
	// From the moment it counted, the follower serves nothing from the diverged tree: the
	// old connection is closed, and what it reads after reconnecting is the leader's.
	waitFor(t, "a read on the follower after the resync", func() bool {
		d, _, err := fc.Get("/d")
		if err == nil && string(d) == "planted" {
			t.Fatalf("the follower served the diverged /d after counting the mismatch")
		}
		return err == nil && string(d) == "good"
	})
	waitFor(t, "the follower to be back", func() bool { return e.modes()[f] == "follower" })

	if n := mntrCount(t, fAddr, "digest_resync_count"); n != 1 {
		t.Fatalf("digest_resync_count %d, want 1", n)
	}
	if n := mntrCount(t, e.members[l].cfg.ListenAddr, "snap_count"); n != snapsBefore+1 {
		t.Fatalf("the leader sent %d SNAPs for the resync, want 1", n-snapsBefore)
	}
	warn := regexp.MustCompile(`level=WARN msg="tree digest mismatch[^"]*" zxid=0x[0-9a-f]+ type=\S+ txnDigest=-?\d+ treeDigest=-?\d+`)
	if !warn.MatchString(logs[e.members[f].cfg.ServerID].String()) {
		t.Fatalf("the follower's log has no WARN naming the zxid and both digests:\n%s", grepLines(logs[e.members[f].cfg.ServerID].String(), "digest"))
	}

	// It agrees again: more writes, no more mismatches anywhere, and the same tree.
	digestWorkload(t, lc, "/after")
	for _, c := range []*zk.Conn{fc, connectTo(t, e.members[other].cfg.ListenAddr)} {
		if _, err := c.Sync("/"); err != nil {
			t.Fatal(err)
		}
	}
	ld, lz := server.TreeDigest(e.members[l].srv)
	for _, i := range []int{f, other} {
		waitFor(t, fmt.Sprintf("server %d to reach the leader's zxid", i), func() bool {
			_, z := server.TreeDigest(e.members[i].srv)
			return z >= lz
		})
		if d, z := server.TreeDigest(e.members[i].srv); z == lz && d != ld {
			t.Fatalf("server %d: digest %d at zxid %x, the leader's %d", i, d, z, ld)
		}
	}
	if n := mntrCount(t, fAddr, "digest_mismatches_count"); n != 1 {
		t.Fatalf("the follower counted %d mismatches, want 1 (the planted one)", n)
	}
	for _, i := range []int{l, other} {
		if n := mntrCount(t, e.members[i].cfg.ListenAddr, "digest_mismatches_count"); n != 0 {
			t.Fatalf("server %d counted %d digest mismatches", i, n)
		}
	}
}

// TestStandaloneLogsDigests: a standalone server logs every txn but error txns with the
// digest of the tree after it (checked by replaying the log onto a fresh tree), and
// checks them when it replays its log at start-up: a log whose digest was altered is
// counted once.
func TestStandaloneLogsDigests(t *testing.T) {
	srv := startStock(t, zktest.WithConfig(func(c *server.Config) { c.FourLetterWhitelist = []string{"*"} }))
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	digestWorkload(t, c, "/s")
	c.Close() // a closeSession deleting ephemerals
	dataDir := srv.DataDir()
	srv.Stop()

	logDir := filepath.Join(dataDir, "version-2")
	tree := datatree.New()
	var entries []jute.LoggedTxn
	withDigest, errorTxns := 0, 0
	if _, err := storage.ReadLog(storage.OSFS{}, logDir, 0, func(zxid int64, b []byte) error {
		lt, err := jute.DecodeTxn(bytes.Clone(b)) // b is only valid during the call
		if err != nil {
			return fmt.Errorf("txn %x: %w", zxid, err)
		}
		tree.Apply(&lt.Header, lt.Body)
		switch {
		case lt.Header.Type == jute.OpError:
			errorTxns++
			if lt.Digest != nil {
				t.Errorf("error txn %x carries a digest", zxid)
			}
		case lt.Digest == nil:
			t.Errorf("%v txn %x carries no digest", lt.Header.Type, zxid)
		case lt.Digest.Version != jute.DigestVersion || lt.Digest.TreeDigest != tree.Digest():
			t.Errorf("%v txn %x: digest %+v, the tree's after it %d", lt.Header.Type, zxid, *lt.Digest, tree.Digest())
		default:
			withDigest++
		}
		entries = append(entries, lt)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if withDigest < 100 || errorTxns == 0 {
		t.Fatalf("%d txns with a digest and %d error txns logged", withDigest, errorTxns)
	}

	// The same txns in a fresh directory, one digest altered: the replay counts it.
	altered := t.TempDir()
	lg, err := storage.OpenLog(storage.OSFS{}, filepath.Join(altered, "version-2"), storage.LogOptions{PreAllocSize: 1 << 20, ForceSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, lt := range entries {
		if i == len(entries)/2 {
			if lt.Digest == nil {
				t.Fatal("the middle txn carries no digest")
			}
			d := *lt.Digest
			d.TreeDigest++
			lt.Digest = &d
		}
		if err := lg.Append(lt.Header.Zxid, jute.EncodeTxn(nil, &lt)); err != nil {
			t.Fatal(err)
		}
	}
	if err := lg.Sync(); err != nil {
		t.Fatal(err)
	}
	lg.Close()
	for _, dir := range []string{dataDir, altered} {
		s2 := startStock(t, zktest.WithConfig(func(c *server.Config) {
			c.FourLetterWhitelist = []string{"*"}
			c.DataDir = dir
			// The altered directory has a log and no snapshot, which start-up refuses
			// unless told to trust it (snapshot.trust.empty), as ZooKeeper does.
			c.SnapshotTrustEmpty = dir == altered
		}))
		want := int64(0)
		if dir == altered {
			want = 1
		}
		if n := mntrCount(t, s2.Addr(), "digest_mismatches_count"); n != want {
			t.Errorf("replaying %s: %d digest mismatches, want %d", dir, n, want)
		}
		s2.Stop()
	}
}
