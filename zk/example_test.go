package zk_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zkd-io/zkd/zk"
)

// The examples need a running server on 127.0.0.1:2181 (zkd or ZooKeeper), so they are
// compiled but not run by go test.

func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := zk.Connect(ctx, "127.0.0.1:2181/myapp", zk.WithSessionTimeout(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// Paths are relative to the chroot /myapp, which must exist.
	if _, err := c.Create(ctx, "/config", []byte("v1"), zk.OpenACL(), zk.ModePersistent); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		log.Fatal(err)
	}
	data, stat, err := c.Get(ctx, "/config")
	if err != nil {
		log.Fatal(err)
	}
	// Optimistic concurrency: the write succeeds only if nobody changed the node meanwhile.
	if _, err := c.Set(ctx, "/config", append(data, '+'), stat.Version); errors.Is(err, zk.ErrBadVersion) {
		fmt.Println("lost the race; retry")
	}
}

func ExampleConn_GetW() {
	ctx := context.Background()
	c, err := zk.Connect(ctx, "127.0.0.1:2181")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for {
		data, _, changed, err := c.GetW(ctx, "/config")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("config is %q\n", data)
		ev := <-changed // one event, then the channel is closed
		if ev.Type != zk.EventNodeDataChanged {
			return // deleted, or the session ended (ev.Err)
		}
	}
}

func ExampleConn_AddWatch() {
	ctx := context.Background()
	c, err := zk.Connect(ctx, "127.0.0.1:2181")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	w, err := c.AddWatch(ctx, "/services", zk.AddWatchPersistentRecursive)
	if err != nil {
		log.Fatal(err)
	}
	// Every creation, change and deletion below /services, until Remove or the session ends.
	for ev := range w.Events() {
		fmt.Println(ev.Type, ev.Path)
	}
}

func ExampleConn_Txn() {
	ctx := context.Background()
	c, err := zk.Connect(ctx, "127.0.0.1:2181")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Move a job from /queue to /running atomically, provided nobody touched it.
	_, stat, err := c.Get(ctx, "/queue/job-1")
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Txn().
		Delete("/queue/job-1", stat.Version).
		Create("/running/job-1", nil, zk.OpenACL(), zk.ModeEphemeral).
		Commit(ctx)
	var me *zk.MultiError
	if errors.As(err, &me) {
		fmt.Println("operation", me.Index, "failed:", me.Err)
	}
}

func ExampleConn_AddAuth() {
	ctx := context.Background()
	c, err := zk.Connect(ctx, "127.0.0.1:2181")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// The credentials are kept and re-sent after every reconnect.
	if err := c.AddAuth(ctx, "digest", []byte("alice:secret")); err != nil {
		log.Fatal(err)
	}
	// Only sessions authenticated as alice may read or change /private.
	_, err = c.Create(ctx, "/private", nil, zk.DigestACL(zk.PermAll, "alice", "secret"), zk.ModePersistent)
	if err != nil {
		log.Fatal(err)
	}
}

func ExampleConn_Events() {
	c, err := zk.Connect(context.Background(), "zk1:2181,zk2:2181,zk3:2181")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	go func() {
		for ev := range c.Events() {
			switch ev.State {
			case zk.StateDisconnected:
				log.Print("lost the connection; requests wait for the next one")
			case zk.StateConnected:
				log.Print("connected to ", ev.Server)
			case zk.StateExpired:
				log.Print("session expired: ephemeral nodes and watches are gone")
			}
		}
	}()
}

func ExampleGo() {
	ctx := context.Background()
	c, err := zk.Connect(ctx, "127.0.0.1:2181")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// The three requests are on the wire together and answered in this order.
	var reads []*zk.Pending[[]byte]
	for _, p := range []string{"/a", "/b", "/c"} {
		reads = append(reads, zk.Go(ctx, func(ctx context.Context) ([]byte, error) {
			data, _, err := c.Get(ctx, p)
			return data, err
		}))
	}
	for _, r := range reads {
		data, err := r.Wait(ctx)
		fmt.Println(string(data), err)
	}
}

func ExampleConn_MultiRead() {
	ctx := context.Background()
	c, err := zk.Connect(ctx, "127.0.0.1:2181")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.MultiRead(ctx, &zk.GetOp{Path: "/config"}, &zk.ChildrenOp{Path: "/services"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res[0].Data), res[1].Children, res[1].Err)
}
