package recipe_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zk/recipe"
)

// exampleServer starts an in-process zkd so that the examples run under go test, and returns
// a function that connects to it and one that stops everything. Real programs connect to
// their ensemble instead: zk.Connect(ctx, "zk1:2181,zk2:2181,zk3:2181/myapp").
func exampleServer() (connect func() *zk.Conn, stop func()) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir, err := os.MkdirTemp("", "recipe-example")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Config{ListenAddr: "127.0.0.1:0", DataDir: dir, TickTime: 200,
		PreAllocSize: 1 << 20, NoSync: true, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	var mu sync.Mutex
	var conns []*zk.Conn
	connect = func() *zk.Conn {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := zk.Connect(ctx, srv.Addr(), zk.WithLogger(quiet))
		if err != nil {
			log.Fatal(err)
		}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		return c
	}
	stop = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
		srv.Close()
		os.RemoveAll(dir)
	}
	return connect, stop
}

func ExampleMutex() {
	connect, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	c := connect()
	if _, err := c.Create(ctx, "/log", nil, zk.OpenACL(), zk.ModePersistent); err != nil {
		log.Fatal(err)
	}
	// Three processes (here: sessions) take turns appending to a log.
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b", "c"} {
		c := connect()
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := recipe.NewMutex(c, "/locks/log", recipe.WithData([]byte(name)))
			if err := m.Lock(ctx); err != nil {
				log.Fatal(err)
			}
			defer m.Unlock(ctx)
			// Critical section: read, modify, write without a version check.
			data, _, err := c.Get(ctx, "/log")
			if err != nil {
				log.Fatal(err)
			}
			if _, err := c.Set(ctx, "/log", append(data, '+'), zk.AnyVersion); err != nil {
				log.Fatal(err)
			}
		}()
	}
	wg.Wait()
	data, _, _ := c.Get(ctx, "/log")
	fmt.Println(string(data))
	// Output: +++
}

func ExampleRWMutex() {
	connect, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	r1 := recipe.NewRWMutex(connect(), "/locks/table")
	r2 := recipe.NewRWMutex(connect(), "/locks/table")
	w := recipe.NewRWMutex(connect(), "/locks/table")
	r1.RLock(ctx)
	r2.RLock(ctx) // readers share the lock
	ok, _ := w.TryLock(ctx)
	fmt.Println("writer while reading:", ok)
	r1.RUnlock(ctx)
	r2.RUnlock(ctx)
	ok, _ = w.TryLock(ctx)
	fmt.Println("writer alone:", ok)
	w.Unlock(ctx)
	// Output:
	// writer while reading: false
	// writer alone: true
}

func ExampleRevoke() {
	connect, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	// The holder agrees to give the lock up when asked.
	var holder *recipe.Mutex
	holder = recipe.NewMutex(connect(), "/locks/res", recipe.WithRevocation(func() {
		fmt.Println("holder: asked to release")
		holder.Unlock(ctx)
	}))
	holder.Lock(ctx)

	c := connect()
	m := recipe.NewMutex(c, "/locks/res")
	nodes, _ := m.Contenders(ctx)
	recipe.Revoke(ctx, c, nodes[0]) // write "unlock" to the holder's node
	m.Lock(ctx)
	fmt.Println("waiter: locked")
	m.Unlock(ctx)
	// Output:
	// holder: asked to release
	// waiter: locked
}

func ExampleSemaphore() {
	connect, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	// Two leases: at most two workers download at once.
	c := connect()
	var sems []*recipe.Semaphore
	for range 3 {
		s := recipe.NewSemaphore(c, "/sem/downloads", 2)
		ok, _ := s.TryLock(ctx)
		fmt.Println("got a lease:", ok)
		if ok {
			sems = append(sems, s)
		}
	}
	for _, s := range sems {
		s.Unlock(ctx)
	}
	// Output:
	// got a lease: true
	// got a lease: true
	// got a lease: false
}

func ExampleBarrier() {
	connect, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	b := recipe.NewBarrier(connect(), "/barriers/start")
	b.Set(ctx)
	done := make(chan struct{})
	go func() {
		recipe.NewBarrier(connect(), "/barriers/start").Wait(ctx) // blocks until removed
		fmt.Println("worker: started")
		close(done)
	}()
	fmt.Println("coordinator: go")
	b.Remove(ctx)
	<-done
	// Output:
	// coordinator: go
	// worker: started
}

func ExampleDoubleBarrier() {
	connect, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	const n = 3
	var wg sync.WaitGroup
	var mu sync.Mutex
	inside := 0
	for range n {
		c := connect()
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := recipe.NewDoubleBarrier(c, "/barriers/round", n)
			if err := b.Enter(ctx); err != nil { // returns once all n have entered
				log.Fatal(err)
			}
			mu.Lock()
			inside++
			mu.Unlock()
			if err := b.Leave(ctx); err != nil { // returns once all n have left
				log.Fatal(err)
			}
		}()
	}
	wg.Wait()
	fmt.Println(inside, "computed together")
	// Output: 3 computed together
}

func ExampleQueue() {
	connect, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	producer := recipe.NewQueue(connect(), "/queues/jobs")
	consumer := recipe.NewQueue(connect(), "/queues/jobs")
	for _, job := range []string{"resize", "upload", "notify"} {
		producer.Put(ctx, []byte(job))
	}
	for range 3 {
		job, err := consumer.Take(ctx) // blocks while the queue is empty
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(job))
	}
	// Output:
	// resize
	// upload
	// notify
}

func ExamplePriorityQueue() {
	connect, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	q := recipe.NewPriorityQueue(connect(), "/queues/alerts")
	q.Put(ctx, []byte("disk 80%"), 5)
	q.Put(ctx, []byte("server down"), 0)
	q.Put(ctx, []byte("disk 90%"), 5)
	for range 3 {
		a, _ := q.Take(ctx)
		fmt.Println(string(a))
	}
	// Output:
	// server down
	// disk 80%
	// disk 90%
}

func ExampleElection() {
	connect, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	first := recipe.NewElection(connect(), "/election/scheduler")
	second := recipe.NewElection(connect(), "/election/scheduler")
	first.Campaign(ctx, []byte("host-1"))
	won := make(chan struct{})
	go func() {
		second.Campaign(ctx, []byte("host-2")) // waits for host-1 to go
		close(won)
	}()
	l, _ := first.Leader(ctx)
	fmt.Println("leader:", string(l.Data))

	first.Resign(ctx)
	<-first.Done() // a leader stops leading when Done closes
	<-won
	l, _ = second.Leader(ctx)
	fmt.Println("leader:", string(l.Data))
	second.Resign(ctx)
	// Output:
	// leader: host-1
	// leader: host-2
}

func ExampleTx() {
	connect, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	sites := []string{"east", "west"}
	coordinator := recipe.NewTx(connect(), "/tx/42")
	if err := coordinator.Begin(ctx, []byte("debit 10"), sites); err != nil {
		log.Fatal(err)
	}
	for _, s := range sites {
		go func() {
			tx := recipe.NewTx(connect(), "/tx/42")
			op, _ := tx.Data(ctx)
			_ = op                          // ... prepare the operation locally ...
			tx.Vote(ctx, s, s != "nowhere") // then vote commit (or abort)
		}()
	}
	outcome, err := coordinator.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(outcome)
	coordinator.Delete(ctx)
	// Output: committed
}

func ExampleCounter() {
	connect, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	var wg sync.WaitGroup
	for range 4 {
		k := recipe.NewCounter(connect(), "/counters/visits")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				k.Add(ctx, 1)
			}
		}()
	}
	wg.Wait()
	v, _, _ := recipe.NewCounter(connect(), "/counters/visits").Get(ctx)
	fmt.Println(v)
	// Output: 20
}

func ExampleLease() {
	connect, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	// The nightly report runs on one host per day, whichever asks first.
	a := recipe.NewLease(connect(), "/leases/report", "host-a")
	b := recipe.NewLease(connect(), "/leases/report", "host-b")
	ok, _ := a.TryAcquire(ctx, 24*time.Hour)
	fmt.Println("host-a runs it:", ok)
	ok, _ = b.TryAcquire(ctx, 24*time.Hour)
	fmt.Println("host-b runs it:", ok)
	// Output:
	// host-a runs it: true
	// host-b runs it: false
}

func ExampleWatchConfig() {
	connect, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	admin := connect()
	admin.Create(ctx, "/config", []byte("timeout=5s"), zk.OpenACL(), zk.ModePersistent)
	w, err := recipe.WatchConfig(ctx, connect(), "/config")
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	fmt.Println(string(w.Value().Data))

	admin.Set(ctx, "/config", []byte("timeout=9s"), zk.AnyVersion)
	for string(w.Value().Data) != "timeout=9s" {
		<-w.Changes() // coalesced: Value is always the latest
	}
	fmt.Println(string(w.Value().Data))
	// Output:
	// timeout=5s
	// timeout=9s
}

func ExampleGroup() {
	connect, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	g := recipe.NewGroup(connect(), "/services/api")
	members := g.Watch(ctx)
	fmt.Println(<-members)

	worker := connect()
	recipe.NewGroup(worker, "/services/api").Join(ctx, "10.0.0.7:8080", nil)
	fmt.Println(<-members)

	worker.Close() // a crashed member leaves with its session
	fmt.Println(<-members)
	// Output:
	// []
	// [10.0.0.7:8080]
	// []
}
