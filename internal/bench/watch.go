package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// errRearm ends a watch run when a watcher does not re-arm in time.
var errRearm = errors.New("zkbench: watchers did not re-arm within 10s")

// runWatch measures watch fan-out: one writer sets a hot znode; cfg.clients watcher sessions
// each hold a data watch on it. A round is one write and every watcher's notification and
// re-arm; the writer starts the next round only when all watchers have re-armed, so each
// write is seen by every watcher. Latency is from sending the write to receiving the
// notification, per watcher.
func runWatch(ctx context.Context, b *bench) (*Result, error) {
	hot := b.cfg.root + "/watch/hot"
	b.data = payload(b.cfg.dataSize)
	if err := b.withSetup(ctx, func(conns []*conn) error { return ensurePath(ctx, conns[0], hot, b.data) }); err != nil {
		return nil, err
	}
	n := max(b.cfg.clients, 1)
	events := make([]chan time.Time, n)
	for i := range events {
		events[i] = make(chan time.Time, 1)
	}
	conns, err := b.openSessions(ctx, n+1, func(i int) dialOptions {
		o := b.dialOpts()
		// A watcher reads one small notification and one reply at a time; the default
		// buffer, sized for pipelined replies, would take a quarter of a GB at 1000 watchers.
		o.readBuffer = 4 << 10
		if i < n {
			ch := events[i]
			o.onEvent = func(ev jute.WatcherEvent, t time.Time) {
				if ev.Type == jute.EventNodeDataChanged && ev.Path == hot {
					select {
					case ch <- t:
					default: // one watch, one notification: cannot be full
					}
				}
			}
		}
		return o
	})
	if err != nil {
		return nil, err
	}
	defer closeSessions(conns)
	watchers := b.newWorkers(n, conns[:n])
	writer := conns[n]

	armed := make(chan struct{}, n)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, w := range watchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			arm := &jute.GetDataRequest{Path: hot, Watch: true}
			for {
				if _, err := w.conn.do(ctx, jute.OpGetData, arm); err != nil {
					if b.measuring() {
						w.rec.record(0, err)
					}
					return
				}
				armed <- struct{}{}
				select {
				case t := <-events[i]:
					if b.writeMeasured.Load() && b.measuring() {
						w.rec.record(t.Sub(b.base)-time.Duration(b.writeAt.Load()), nil)
						w.done.Add(1)
					}
				case <-stop:
					return
				}
			}
		}()
	}

	var writes int64
	var writerErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(stop)
		set := &jute.SetDataRequest{Path: hot, Data: b.data, Version: -1}
		for {
			timeout := time.NewTimer(10 * time.Second)
			for range n {
				select {
				case <-armed:
				case <-timeout.C:
					writerErr = errRearm
					return
				case <-ctx.Done():
					return
				}
			}
			timeout.Stop()
			ok, measured := b.mayIssue()
			if !ok {
				return
			}
			b.writeMeasured.Store(measured)
			b.writeAt.Store(int64(time.Since(b.base)))
			if _, err := writer.do(ctx, jute.OpSetData, set); err != nil {
				writerErr = fmt.Errorf("writer: %w", err)
				return
			}
			if measured {
				writes++
			}
		}
	}()
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	win := b.measureWindow(ctx, watchers, func() {}, allDone, true, false)
	<-allDone
	res := b.result(watchers, win)
	res.Outstanding = 1
	res.Batch = n
	if res.Seconds > 0 {
		res.Note = fmt.Sprintf("%.0f writes/s, each to %d watchers", float64(writes)/res.Seconds, n)
		// Each recorded op is one watcher's notification of one write.
		res.NotificationsPerSec = math.Round(float64(res.Ops) / res.Seconds)
	}
	if writerErr != nil {
		res.Errors++
		if res.ErrorKinds == nil {
			res.ErrorKinds = map[string]int64{}
		}
		res.ErrorKinds[errKind(writerErr)]++
	}
	return res, win.procErr
}
