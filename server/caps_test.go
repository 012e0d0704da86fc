package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

func capsServer(t *testing.T, set ext.Set, more ...func(*server.Config)) *zktest.Server {
	return zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.Extensions = set
		c.FourLetterWhitelist = []string{"*"}
		c.AdminAddr = "127.0.0.1:0"
		c.SuperDigest = auth.DigestID("super", adminSuperPw)
		for _, f := range more {
			f(c)
		}
	}))
}

func capsCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestCapabilitiesNodes reads ClickHouse Keeper's virtual nodes and zkd's capability node,
// with the flags keeper-ops brings and without them, and checks they are read-only views.
func TestCapabilitiesNodes(t *testing.T) {
	for _, tc := range []struct {
		set   ext.Set
		apiv  string
		flags []byte
		ftfl  string
	}{
		{set: ext.Of(ext.Capabilities), apiv: "0", flags: []byte{0},
			ftfl: "filtered_list\t0\nmulti_read\t0\ncheck_not_exists\t0\ncreate_if_not_exists\t0\nremove_recursive\t0\n"},
		{set: ext.Of(ext.Capabilities, ext.KeeperOps), apiv: "2", flags: []byte{0xf8},
			ftfl: "filtered_list\t1\nmulti_read\t1\ncheck_not_exists\t1\ncreate_if_not_exists\t1\nremove_recursive\t1\n"},
	} {
		t.Run(tc.set.String(), func(t *testing.T) {
			srv := capsServer(t, tc.set)
			c := connectZK(t, srv.Addr())
			ctx := capsCtx(t)
			zero := func(path string, want []byte) {
				t.Helper()
				data, st, err := c.Get(ctx, path)
				if err != nil {
					t.Fatalf("get %s: %v", path, err)
				}
				if !bytes.Equal(data, want) {
					t.Errorf("get %s = %q, want %q", path, data, want)
				}
				// ClickHouse Keeper's system nodes: an all-zero Stat but for dataLength.
				if (*st != zk.Stat{DataLength: int32(len(want))}) {
					t.Errorf("get %s: Stat %+v", path, *st)
				}
				if ok, ex, err := c.Exists(ctx, path); err != nil || !ok || *ex != *st {
					t.Errorf("exists %s = %v %v, %v", path, ok, ex, err)
				}
			}
			zero(admin.KeeperAPIVersionPath, []byte(tc.apiv))
			zero(admin.KeeperFeatureFlagsPath, tc.flags)
			zero(admin.KeeperPath, []byte{})
			kids, _, err := c.Children(ctx, admin.KeeperPath)
			if err != nil || !slices.Equal(kids, []string{"api_version", "feature_flags"}) {
				t.Errorf("children of /keeper = %v, %v", kids, err)
			}
			data, _, err := c.Get(ctx, ext.CapabilitiesNode)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Version    int
				Server     string
				Extensions []string
			}
			if err := json.Unmarshal(data, &doc); err != nil || doc.Version != 1 || len(doc.Server) < 5 || doc.Server[:4] != "zkd " {
				t.Errorf("capability node %s: %+v, %v", data, doc, err)
			}
			var want []string
			for _, n := range tc.set.List() {
				want = append(want, string(n))
			}
			if !slices.Equal(doc.Extensions, want) {
				t.Errorf("capability node lists %v, want %v", doc.Extensions, want)
			}

			// The four-letter words and the AdminServer command.
			if got := fourLetter(t, srv.Addr(), "apiv"); got != tc.apiv {
				t.Errorf("apiv = %q, want %q", got, tc.apiv)
			}
			if got := fourLetter(t, srv.Addr(), "ftfl"); got != tc.ftfl {
				t.Errorf("ftfl = %q, want %q", got, tc.ftfl)
			}
			for _, name := range admin.CapabilitiesCommands {
				got := adminJSON(t, "http://"+srv.AdminAddr()+"/commands", name)
				if got["command"] != "capabilities" || fmt.Sprint(got["version"]) != "1" || fmt.Sprint(got["extensions"]) != fmt.Sprint(want) {
					t.Errorf("AdminServer %s = %v", name, got)
				}
			}

			// Writes are answered by the real tree, as ZooKeeper answers them: nothing there.
			if _, err := c.Set(ctx, admin.KeeperAPIVersionPath, []byte("9"), zk.AnyVersion); !errors.Is(err, zk.ErrNoNode) {
				t.Errorf("set api_version: %v, want NoNode", err)
			}
			if err := c.Delete(ctx, ext.CapabilitiesNode, zk.AnyVersion); !errors.Is(err, zk.ErrNoNode) {
				t.Errorf("delete the capability node: %v, want NoNode", err)
			}
			if _, err := c.Create(ctx, admin.KeeperFeatureFlagsPath, nil, zk.OpenACL(), zk.ModePersistent); !errors.Is(err, zk.ErrNoNode) {
				t.Errorf("create feature_flags: %v, want NoNode (no real /keeper)", err)
			}
			// A user's own /keeper wins: the virtual subtree yields to it entirely.
			if _, err := c.Create(ctx, admin.KeeperPath, []byte("mine"), zk.OpenACL(), zk.ModePersistent); err != nil {
				t.Fatalf("create a real /keeper: %v", err)
			}
			if data, st, err := c.Get(ctx, admin.KeeperPath); err != nil || string(data) != "mine" || st.Czxid == 0 {
				t.Errorf("get the real /keeper = %q %+v %v", data, st, err)
			}
			if _, _, err := c.Get(ctx, admin.KeeperAPIVersionPath); !errors.Is(err, zk.ErrNoNode) {
				t.Errorf("api_version under a real /keeper: %v, want NoNode", err)
			}
			if kids, _, err := c.Children(ctx, admin.KeeperPath); err != nil || len(kids) != 0 {
				t.Errorf("children of the real /keeper = %v, %v", kids, err)
			}
		})
	}
}

// TestCapabilitiesOff: with no extension, the nodes, words and command are ZooKeeper's
// answers to things it does not know; with only keeper-ops, zkd's node tells it (so a
// client learns of keeper-ops) while ClickHouse Keeper's surface stays off.
func TestCapabilitiesOff(t *testing.T) {
	off := capsServer(t, ext.Set{})
	ops := capsServer(t, ext.Of(ext.KeeperOps))
	for _, srv := range []*zktest.Server{off, ops} {
		c := connectZK(t, srv.Addr())
		ctx := capsCtx(t)
		for _, p := range []string{admin.KeeperPath, admin.KeeperAPIVersionPath, admin.KeeperFeatureFlagsPath} {
			if _, _, err := c.Get(ctx, p); !errors.Is(err, zk.ErrNoNode) {
				t.Errorf("get %s: %v, want NoNode", p, err)
			}
		}
		// ZooKeeper reads "apiv" as a frame length far over jute.maxbuffer: it closes.
		if got, err := fourLetterErr(srv.Addr(), "apiv"); got != "" {
			t.Errorf("apiv with capabilities off = %q, %v; want the connection closed", got, err)
		}
		got := adminJSON(t, "http://"+srv.AdminAddr()+"/commands", "capabilities")
		if got["error"] != admin.UnknownCommandPrefix+"capabilities" {
			t.Errorf("AdminServer capabilities with the extension off = %v", got)
		}
	}
	c := connectZK(t, off.Addr())
	if _, _, err := c.Get(capsCtx(t), ext.CapabilitiesNode); !errors.Is(err, zk.ErrNoNode) {
		t.Errorf("capability node with no extension: %v, want NoNode", err)
	}
	c = connectZK(t, ops.Addr())
	if data, _, err := c.Get(capsCtx(t), ext.CapabilitiesNode); err != nil || !bytes.Contains(data, []byte(`"extensions":["keeper-ops"]`)) {
		t.Errorf("capability node with keeper-ops = %s, %v", data, err)
	}
}

// TestCapabilitiesWhitelist: apiv and ftfl obey 4lw.commands.whitelist as ZooKeeper's words.
func TestCapabilitiesWhitelist(t *testing.T) {
	srv := capsServer(t, ext.Of(ext.Capabilities), func(c *server.Config) { c.FourLetterWhitelist = []string{"srvr", "ftfl"} })
	if got := fourLetter(t, srv.Addr(), "apiv"); got != "apiv is not executed because it is not in the whitelist.\n" {
		t.Errorf("apiv outside the whitelist = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "ftfl"); got == "" || got[:14] != "filtered_list\t" {
		t.Errorf("ftfl in the whitelist = %q", got)
	}
}

// TestCapabilitiesKeeperListed: zkd.keeperNodesListed lists the virtual /keeper under "/".
func TestCapabilitiesKeeperListed(t *testing.T) {
	srv := capsServer(t, ext.Of(ext.Capabilities), func(c *server.Config) { c.KeeperNodesListed = true })
	c := connectZK(t, srv.Addr())
	kids, st, err := c.Children(capsCtx(t), "/")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(kids)
	if !slices.Equal(kids, []string{"keeper", "zookeeper"}) || st.NumChildren != 2 {
		t.Errorf("children of / = %v (numChildren %d), want [keeper zookeeper]", kids, st.NumChildren)
	}
}

// TestCapabilitiesInvisibleToStockClients: the same workload on a server with every
// extension and on one with none leaves the same listings of "/" and "/zookeeper" and the same
// snapshot paths, with no virtual node among them; reading the virtual nodes leaves the
// tree digest as it was.
func TestCapabilitiesInvisibleToStockClients(t *testing.T) {
	type view struct {
		root, zookeeper []string
		digest          int64
		snapPaths       []string
	}
	run := func(set ext.Set) view {
		srv := capsServer(t, set, func(c *server.Config) { c.AdminSnap = server.AdminSnapConfig{} })
		c := connectZK(t, srv.Addr())
		ctx := capsCtx(t)
		for i := range 5 {
			if _, err := c.Create(ctx, fmt.Sprintf("/app%d", i), []byte("x"), zk.OpenACL(), zk.ModePersistent); err != nil {
				t.Fatal(err)
			}
		}
		var v view
		var err error
		// Reads of the virtual nodes change nothing in the tree (its digest covers every
		// node, so a virtual one that slipped in would change it).
		before, _ := server.TreeDigest(srv.Server)
		c.Get(ctx, ext.CapabilitiesNode)
		c.Get(ctx, admin.KeeperFeatureFlagsPath)
		c.Children(ctx, admin.KeeperPath)
		if v.root, _, err = c.Children(ctx, "/"); err != nil {
			t.Fatal(err)
		}
		if v.zookeeper, _, err = c.Children(ctx, "/zookeeper"); err != nil {
			t.Fatal(err)
		}
		slices.Sort(v.root)
		slices.Sort(v.zookeeper)
		if v.digest, _ = server.TreeDigest(srv.Server); v.digest != before {
			t.Errorf("%v: reading the virtual nodes moved the tree digest from %x to %x", set, before, v.digest)
		}
		resp, snap := adminDo(t, http.MethodGet, "http://"+srv.AdminAddr()+"/commands/snapshot?streaming=true", "digest super:"+adminSuperPw, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("snapshot: %d", resp.StatusCode)
		}
		if err := storage.ReadSnapshot(bytes.NewReader(snap), storage.SnapshotHandler{
			Node: func(n storage.SnapNode) error { v.snapPaths = append(v.snapPaths, n.Path); return nil },
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(v.snapPaths)
		return v
	}
	none, all := run(ext.Set{}), run(ext.Of(ext.All...))
	if !slices.Equal(none.root, all.root) || !slices.Equal(none.zookeeper, all.zookeeper) {
		t.Errorf("listings differ: none / %v /zookeeper %v; all / %v /zookeeper %v", none.root, none.zookeeper, all.root, all.zookeeper)
	}
	if !slices.Equal(none.snapPaths, all.snapPaths) {
		t.Errorf("snapshot paths differ: none %v, all %v", none.snapPaths, all.snapPaths)
	}
	for _, p := range all.snapPaths {
		if p == admin.KeeperPath || p == ext.CapabilitiesNode || p == admin.KeeperAPIVersionPath {
			t.Errorf("snapshot holds the virtual node %s", p)
		}
	}
}

// TestCapabilitiesSetWatches: a reconnecting client's watches on virtual nodes are re-armed
// as on any node that did not change, not fired as if the nodes had gone.
func TestCapabilitiesSetWatches(t *testing.T) {
	srv := capsServer(t, ext.Of(ext.Capabilities))
	c := rawzk.Connect(t, srv.Addr())
	c.Call(jute.OpSetWatches, &jute.SetWatches{
		DataWatches:  []string{ext.CapabilitiesNode, admin.KeeperAPIVersionPath},
		ExistWatches: []string{admin.KeeperFeatureFlagsPath + "-not"},
		ChildWatches: []string{admin.KeeperPath},
	}, nil)
	// Events from setWatches come before the reply to the next request.
	c.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}, &jute.StatResponse{})
	if len(c.Events) != 0 {
		t.Errorf("re-arming watches on virtual nodes fired %+v", c.Events)
	}
}
