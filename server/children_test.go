package server_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestGetChildrenWhileChildrenChange: a getChildren reply is encoded from the tree's own
// child list on the connection's writer (no copy on the core); deletes and creates of
// children meanwhile must not change what a reply lists (run with -race). Each reply is a
// list the node had at some point: 200 names from a fixed set, none twice.
func TestGetChildrenWhileChildrenChange(t *testing.T) {
	srv := startStock(t)
	c, _, err := zk.Connect([]string{srv.Config().ListenAddr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 200
	if _, err := c.Create("/p", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := c.Create(fmt.Sprintf("/p/c%03d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	w, _, err := zk.Connect([]string{srv.Config().ListenAddr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // delete and recreate children, one at a time: the node always has n or n-1
		defer wg.Done()
		for i := 0; ; i = (i + 7) % n {
			select {
			case <-stop:
				return
			default:
			}
			p := fmt.Sprintf("/p/c%03d", i)
			if err := w.Delete(p, -1); err != nil {
				t.Errorf("delete %s: %v", p, err)
				return
			}
			if _, err := w.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Errorf("create %s: %v", p, err)
				return
			}
		}
	}()
	for range 300 {
		names, _, err := c.Children("/p")
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		if len(names) < n-1 || len(names) > n || len(slices.Compact(slices.Clone(names))) != len(names) {
			t.Fatalf("a reply listed %d names (%d distinct), want %d or %d", len(names), len(slices.Compact(slices.Clone(names))), n-1, n)
		}
		for _, name := range names {
			var i int
			if _, err := fmt.Sscanf(name, "c%03d", &i); err != nil || i >= n {
				t.Fatalf("a reply listed %q", name)
			}
		}
	}
	close(stop)
	wg.Wait()
}
