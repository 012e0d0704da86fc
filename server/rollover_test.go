package server_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/server"
)

// TestEnsembleZxidRolloverStartsNewEpoch runs writes through a leader whose zxid counter is
// about to run out: it must step down and a new epoch must take over (ZOOKEEPER-1277)
// without the write that hit the end leaving anything behind in the prepared-change overlay
// (a create that never happened must not make the next create of that path NODEEXISTS).
func TestEnsembleZxidRolloverStartsNewEpoch(t *testing.T) {
	e := startEnsembleConfig(t, 3, func(c *server.Config) {
		server.SetZxidCounterStart(c, 0xfffffff0) // 14 proposals per epoch
		// ZooKeeper's step-down, which wide replaces in an all-zkd ensemble.
		c.Extensions = ext.Set{}
	})
	e.waitServing()
	c, _, err := zk.Connect(e.addrs(), 10*time.Second, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var firstEpoch, lastEpoch int64 = -1, -1
	const n = 40 // about three rollovers
	for i := 0; i < n; i++ {
		path := fmt.Sprintf("/roll%d", i)
		var lastErr error
		waitFor(t, "create "+path, func() bool {
			_, lastErr = c.Create(path, nil, 0, open)
			if errors.Is(lastErr, zk.ErrNodeExists) {
				// Only a create that really happened (and whose reply was lost) may say so.
				ok, _, err := c.Exists(path)
				if err == nil && !ok {
					t.Fatalf("create %s: NODEEXISTS, but the node does not exist", path)
				}
				return err == nil
			}
			return lastErr == nil
		})
		_, st, err := c.Exists(path)
		if err != nil {
			t.Fatal(err)
		}
		if firstEpoch < 0 {
			firstEpoch = st.Czxid >> 32
		}
		lastEpoch = st.Czxid >> 32
		if ctr := st.Czxid & 0xffffffff; ctr >= 0xffffffff {
			t.Fatalf("%s created with zxid 0x%x: the counter rolled over", path, st.Czxid)
		}
	}
	if lastEpoch < firstEpoch+2 {
		t.Fatalf("epochs went from %d to %d over %d writes; want at least two new epochs", firstEpoch, lastEpoch, n)
	}
	// Every member serves every node.
	for i, addr := range e.addrs() {
		ci := connectTo(t, addr)
		if _, err := ci.Sync("/"); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < n; j++ {
			if ok, _, err := ci.Exists(fmt.Sprintf("/roll%d", j)); err != nil || !ok {
				t.Fatalf("member %d misses /roll%d: %v %v", i+1, j, ok, err)
			}
		}
	}
}
