package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/portlock"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/zk"
)

// TestReconfigMatchesZooKeeper runs Apache ZooKeeper as a one-member ensemble
// (standaloneEnabled=false, reconfigEnabled=true) from a dynamic file zkd wrote, reconfigures
// it with the zk client, and checks zkd's side against it: ApplyReconfig computes the
// configuration ZooKeeper answers and the same error codes for refused requests,
// WriteDynamicConfig writes the zoo.cfg.dynamic.<version> file ZooKeeper writes, and Load
// reads the zoo.cfg ZooKeeper edited.
func TestReconfigMatchesZooKeeper(t *testing.T) {
	t.Parallel()
	refzk.Require(t)
	ports := make([]int, 6)
	for i := range ports {
		p, lock, err := portlock.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lock.Close() })
		ports[i] = p
	}
	dir := t.TempDir()
	initial := Dynamic{Version: 0x100000000, Servers: map[int]Member{
		1: {ID: 1, Host: "127.0.0.1", QuorumPort: ports[0], ElectionPort: ports[1]},
	}}
	dynPath := filepath.Join(dir, "zoo.cfg.dynamic.100000000")
	if err := WriteDynamicConfig(dynPath, initial.Text(), false); err != nil {
		t.Fatal(err)
	}
	s := refzk.StartStandalone(t, refzk.Options{
		MyID:             1,
		Config:           []string{"reconfigEnabled=true", "standaloneEnabled=false", "dynamicConfigFile=" + dynPath},
		SystemProperties: []string{"-Dzookeeper.skipACL=yes"}, // reconfig is the super user's otherwise
	})
	// `conf` of an ensemble member, ports, role and membership included.
	conf, err := s.Command("conf")
	if err != nil {
		t.Fatal(err)
	}
	staticBefore, err := os.ReadFile(s.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	// zkd reads what ZooKeeper started from.
	c0, err := Load(s.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	if !c0.Dynamic().Equal(initial) || !c0.ReconfigEnabled || c0.StandaloneEnabled() || !c0.Distributed() {
		t.Fatalf("Load: %+v", c0)
	}
	info := ConfInfo{DataDirSize: confInt(t, conf, "dataDirSize"), DataLogSize: confInt(t, conf, "dataLogSize"),
		ServerID: 1, Quorum: &initial}
	if got := c0.Conf(info); got != conf {
		t.Errorf("Conf:\n%s\nZooKeeper's conf:\n%s", got, conf)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := zk.Connect(ctx, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	data, _, err := cli.GetConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := ParseDynamic(data)
	if err != nil {
		t.Fatalf("ParseDynamic(%q): %v", data, err)
	}
	if got := cur.Text(); got != string(data) {
		t.Errorf("ZooKeeper's /zookeeper/config %q prints back as %q", data, got)
	}
	if !maps1Equal(cur, initial) {
		t.Fatalf("ZooKeeper serves %q, started from %q", data, initial.Text())
	}

	observer := fmt.Sprintf("server.2=127.0.0.1:%d:%d:observer;127.0.0.1:%d", ports[2], ports[3], ports[4])
	participant := fmt.Sprintf("server.3=127.0.0.1:%d:%d:participant;127.0.0.1:%d", ports[2], ports[3], ports[5])
	synced := func(sid int64) bool { return sid == 1 } // the leader alone
	str := func(s string) *string { return &s }
	// Refused requests: ZooKeeper's code and ApplyReconfig's agree.
	for _, tc := range []struct {
		name             string
		joining, leaving []string
		newMembers       *string
		want             jute.Code
	}{
		{"no synced quorum", []string{participant}, nil, nil, jute.ErrNewConfigNoQuorum},
		{"no client port", []string{"server.4=127.0.0.1:1:2:observer"}, nil, nil, jute.ErrBadArguments},
		{"wrong format", []string{"server.4"}, nil, nil, jute.ErrBadArguments},
		{"leaving not a number", nil, []string{"x"}, nil, jute.ErrMarshallingError},
		{"no participants left", nil, []string{"1"}, nil, jute.ErrBadArguments},
		// With standaloneEnabled=false, parseDynamicConfig throws IllegalArgumentException.
		{"bulk empty", nil, nil, str(""), jute.ErrMarshallingError},
		{"bulk unknown key", nil, nil, str(string(data) + ",tickTime=1"), jute.ErrBadArguments},
		{"bulk observers only", nil, nil, str(observer), jute.ErrMarshallingError},
	} {
		var err error
		if tc.newMembers != nil {
			_, _, err = cli.Reconfig(ctx, strings.Split(*tc.newMembers, ","), -1)
		} else {
			_, _, err = cli.IncrementalReconfig(ctx, tc.joining, tc.leaving, -1)
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: ZooKeeper answered %v, want %v", tc.name, err, tc.want)
		}
		_, ours := ApplyReconfig(cur, strings.Join(tc.joining, ","), strings.Join(tc.leaving, ","), tc.newMembers,
			ReconfigOptions{Version: 0x100000009, StandaloneEnabled: false, Synced: synced})
		if !errors.Is(ours, tc.want) {
			t.Errorf("%s: ApplyReconfig: %v, want %v", tc.name, ours, tc.want)
		}
	}
	if _, _, err := cli.IncrementalReconfig(ctx, []string{observer}, nil, 5); !errors.Is(err, zk.ErrBadVersion) {
		t.Errorf("stale fromConfig: %v, want BADVERSION", err)
	}
	if err := CheckReconfigStart(cur.Version, cur.Version, 5); !errors.Is(err, jute.ErrBadVersion) {
		t.Errorf("CheckReconfigStart: %v", err)
	}

	// An accepted one.
	data, st, err := cli.IncrementalReconfig(ctx, []string{observer}, nil, cur.Version)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ApplyReconfig(cur, observer, "", nil, ReconfigOptions{Version: st.Mzxid, Synced: synced})
	if err != nil {
		t.Fatal(err)
	}
	if want.Text() != string(data) {
		t.Errorf("ZooKeeper's new configuration:\n%s\nApplyReconfig's:\n%s", data, want.Text())
	}

	// ZooKeeper wrote zoo.cfg.dynamic.<zxid> and pointed the zoo.cfg at it.
	zkDyn := DynamicConfigPath(s.ConfigPath(), st.Mzxid)
	var zkDynText []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		if zkDynText, err = os.ReadFile(zkDyn); err == nil {
			if c, err := Load(s.ConfigPath()); err == nil && c.DynamicVersion == st.Mzxid {
				if got := c.Dynamic(); !got.Equal(want) {
					t.Errorf("Load of ZooKeeper's files: %s, want %s", got.Text(), want.Text())
				}
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ZooKeeper did not write %s and point its zoo.cfg at it: %v", zkDyn, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ours := filepath.Join(t.TempDir(), "zoo.cfg.dynamic")
	if err := WriteDynamicConfig(ours, string(data), false); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(ours); string(got) != string(zkDynText) {
		t.Errorf("WriteDynamicConfig wrote\n%s\nZooKeeper wrote\n%s", got, zkDynText)
	}
	// EditStaticConfig makes the same lines of the zoo.cfg ZooKeeper started with (in
	// another order: ZooKeeper writes its hash table's).
	copyPath := filepath.Join(t.TempDir(), "zoo.cfg")
	if err := os.WriteFile(copyPath, staticBefore, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := EditStaticConfig(copyPath, zkDyn, false); err != nil {
		t.Fatal(err)
	}
	zkStatic, err := os.ReadFile(s.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	gotLines, _ := os.ReadFile(copyPath)
	if a, b := sortedLines(gotLines), sortedLines(zkStatic); !slices.Equal(a, b) {
		t.Errorf("EditStaticConfig:\n%s\nZooKeeper's edit:\n%s", gotLines, zkStatic)
	}
}

func maps1Equal(a, b Dynamic) bool {
	a.Version, b.Version = 0, 0
	return a.Text() == b.Text()
}

func sortedLines(b []byte) []string {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	slices.Sort(lines)
	return lines
}
