package bench

import (
	"context"
	"fmt"
	"io"
	"log"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// driverGoZK names github.com/go-zookeeper/zk as --driver.
const driverGoZK = "go-zookeeper"

// runGoZK runs a key-space workload through github.com/go-zookeeper/zk instead of
// zkbench's own client: the cross-check that what zkbench measures is the servers, not a
// way of talking to them that suits one better. A session's outstanding requests are that
// many goroutines making synchronous calls on one zk.Conn, which go-zookeeper pipelines on
// the connection.
func (b *bench) runGoZK(ctx context.Context, op keyOp) (*Result, error) {
	if op == opMulti {
		return nil, fmt.Errorf("--driver %s: set, get, exists and mixed only", driverGoZK)
	}
	conns := make([]*zk.Conn, b.cfg.clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	quiet := zk.WithLogger(log.New(io.Discard, "", 0))
	for i := range conns {
		c, events, err := zk.Connect([]string{b.server(i)}, b.cfg.sessionTimeout, zk.WithLogInfo(false), quiet)
		if err != nil {
			return nil, fmt.Errorf("go-zookeeper session %d: %w", i, err)
		}
		conns[i] = c
		if err := awaitSession(ctx, events, 30*time.Second); err != nil {
			return nil, fmt.Errorf("go-zookeeper session %d to %s: %w", i, b.server(i), err)
		}
	}
	workers := b.newWorkers(len(conns), nil)
	b.workers = workers
	var wg sync.WaitGroup
	allDone := make(chan struct{})
	launch := func() {
		for i, w := range workers {
			c := conns[i]
			var mu sync.Mutex // w.rec, shared by the session's goroutines
			for j := range max(b.cfg.outstanding, 1) {
				rng := sessionRNG(b.cfg.seed, (j+1)<<20|i)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						ok, measured := b.mayIssue()
						if !ok {
							return
						}
						key := b.keys[pickKey(rng, len(b.keys))]
						start := time.Now()
						var err error
						switch {
						case op == opExists:
							_, _, err = c.Exists(key)
						case op == opGet || op == opMixed && rng.Float64() < b.cfg.readRatio:
							_, _, err = c.Get(key)
						default:
							_, err = c.Set(key, b.data, -1)
						}
						if measured {
							d := time.Since(start)
							mu.Lock()
							w.rec.record(d, err)
							mu.Unlock()
							w.done.Add(1)
						}
					}
				}()
			}
		}
		go func() { wg.Wait(); close(allDone) }()
	}
	win := b.measureWindow(ctx, workers, launch, allDone, !b.wl.noWarmup, false)
	<-allDone
	res := b.result(workers, win)
	res.Note = "client: github.com/go-zookeeper/zk, one goroutine per outstanding request"
	return res, win.procErr
}

// awaitSession waits for a go-zookeeper connection's session to be established.
func awaitSession(ctx context.Context, events <-chan zk.Event, within time.Duration) error {
	t := time.NewTimer(within)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return fmt.Errorf("connection closed before a session")
			}
			if ev.State == zk.StateHasSession {
				return nil
			}
		case <-t.C:
			return fmt.Errorf("no session within %v", within)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
