package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// bareSession is a session without the pipelined client's reader and writer goroutines and
// buffers: what the storm and idle workloads hold thousands of. It only pings and closes.
type bareSession struct {
	nc       net.Conn
	timeout  time.Duration // negotiated
	lastPing time.Time     // or the handshake; the pinger's alone once the session is shared
}

// openBare connects to addr and opens a session.
func openBare(ctx context.Context, addr string, o dialOptions) (*bareSession, error) {
	o = o.withDefaults()
	nc, err := connect(ctx, addr, o)
	if err != nil {
		return nil, err
	}
	_, timeout, err := handshake(nc, o)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	return &bareSession{nc: nc, timeout: timeout, lastPing: time.Now()}, nil
}

// ping sends a ping and does not wait for the answer: the replies wait in the socket's
// receive buffer, a few bytes each, and close reads past them.
func (s *bareSession) ping(now time.Time) error {
	s.lastPing = now
	s.nc.SetWriteDeadline(now.Add(5 * time.Second))
	_, err := s.nc.Write(appendPing(nil))
	return err
}

// bareCloseXid is the xid of the closeSession request, the only request a bare session makes.
const bareCloseXid = 1

// close ends the session, waiting at most timeout for the server's answer, and the
// connection.
func (s *bareSession) close(timeout time.Duration) error {
	defer s.nc.Close()
	s.nc.SetDeadline(time.Now().Add(timeout))
	var c call
	c.setRequest(jute.OpCloseSession, nil)
	binary.BigEndian.PutUint32(c.frame[4:], bareCloseXid)
	if _, err := s.nc.Write(c.frame); err != nil {
		return fmt.Errorf("closeSession: %w", err)
	}
	var buf []byte
	for {
		b, err := readFrame(s.nc, buf, jute.DefaultMaxBuffer)
		if err != nil {
			return fmt.Errorf("closeSession: %w", err)
		}
		buf = b
		if len(b) < jute.ReplyHeaderSize {
			return fmt.Errorf("%w: reply of %d bytes", errProtocol, len(b))
		}
		if xid := int32(binary.BigEndian.Uint32(b)); xid != bareCloseXid {
			continue // a ping's answer, or a notification
		}
		return jute.Code(int32(binary.BigEndian.Uint32(b[12:]))).Err()
	}
}

// parallel runs f(i) for i in [0, n) on at most par goroutines; f gets its goroutine's
// index g (in [0, par)) too, for per-goroutine state.
func parallel(ctx context.Context, n, par int, f func(g, i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := range min(par, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(g, i)
			}
		}()
	}
	wg.Wait()
}

// defaultSessions are the storm's and idle's --sessions when it is not given.
const (
	defaultStormSessions = 2000
	defaultIdleSessions  = 20000
)

func (b *bench) sessions(def int) int {
	if b.cfg.sessions > 0 {
		return b.cfg.sessions
	}
	return def
}

// runStorm is a connect storm: it opens --sessions sessions, at most --clients handshakes
// at a time, then closes them all, and again in rounds until --duration (or --ops sessions)
// is reached, at least once. An op is a session opened and closed; its latency is the
// opening (TCP connect and handshake). A --warmup makes one unmeasured round first.
func runStorm(ctx context.Context, b *bench) (*Result, error) {
	n := b.sessions(defaultStormSessions)
	par := max(b.cfg.clients, 1)
	workers := b.newWorkers(par, nil)
	round := func(measured bool) (ok int64) {
		sess := make([]*bareSession, n)
		opened := make([]time.Duration, n)
		parallel(ctx, n, par, func(g, i int) {
			start := time.Now()
			s, err := openBare(ctx, b.server(i), b.dialOpts())
			if err != nil {
				if measured {
					workers[g].rec.record(0, err)
				}
				return
			}
			sess[i], opened[i] = s, time.Since(start)
		})
		var okCount atomic.Int64
		parallel(context.WithoutCancel(ctx), n, par, func(g, i int) {
			if sess[i] == nil {
				return
			}
			err := sess[i].close(10 * time.Second)
			if err == nil {
				okCount.Add(1)
			}
			if measured {
				workers[g].rec.record(opened[i], err)
				workers[g].done.Add(1)
			}
		})
		return okCount.Load()
	}
	if b.cfg.warmup > 0 {
		round(false)
	}
	var rounds int
	var runErr error
	allDone := make(chan struct{})
	launch := func() {
		go func() {
			defer close(allDone)
			start := time.Now()
			var total int64
			for ctx.Err() == nil {
				ok := round(true)
				rounds++
				total += ok
				if ok == 0 {
					runErr = fmt.Errorf("storm: no session of %d opened and closed", n)
					return
				}
				if b.cfg.ops > 0 && total >= b.cfg.ops || b.cfg.ops == 0 && time.Since(start) >= b.cfg.duration {
					return
				}
			}
		}()
	}
	win := b.measureWindow(ctx, workers, launch, allDone, false, true)
	<-allDone
	res := b.result(workers, win)
	res.Clients, res.Outstanding, res.Batch, res.DataSize = n, 0, par, 0
	res.Note = fmt.Sprintf("%d rounds of %d sessions, %d handshakes at a time", rounds, n, par)
	return res, errors.Join(runErr, win.procErr)
}

// settle bounds: the server's RSS has settled once it changed by less than settleChange
// over settleOver; it is given at most settleMax.
const (
	settleEvery  = 250 * time.Millisecond
	settleOver   = 2 * time.Second
	settleChange = 0.01
	settleMax    = time.Minute
)

// runIdle opens --sessions sessions (--clients handshakes at a time) and holds them,
// pinging each as a client does, until the server's RSS has settled; the growth of the RSS
// from before the first session, per session, is the cost of an idle session. The sessions
// are closed afterwards, outside the measured window.
func runIdle(ctx context.Context, b *bench) (*Result, error) {
	n := b.sessions(defaultIdleSessions)
	if err := checkFDs(n); err != nil {
		return nil, err
	}
	par := max(b.cfg.clients, 1)
	workers := b.newWorkers(par, nil)
	sess := make([]*bareSession, n)
	var mu sync.Mutex // guards sess while the pinger reads it
	stopPinger := startPinger(n, func(i int) *bareSession {
		mu.Lock()
		defer mu.Unlock()
		return sess[i]
	})
	defer func() {
		stopPinger()
		parallel(context.WithoutCancel(ctx), n, par, func(_, i int) {
			if sess[i] != nil {
				sess[i].close(10 * time.Second)
			}
		})
	}()

	var connected, settled time.Duration
	var settledOK bool
	var runErr error
	allDone := make(chan struct{})
	launch := func() {
		go func() {
			defer close(allDone)
			start := time.Now()
			parallel(ctx, n, par, func(g, i int) {
				t := time.Now()
				s, err := openBare(ctx, b.server(i), b.dialOpts())
				workers[g].rec.record(time.Since(t), err)
				if err == nil {
					workers[g].done.Add(1)
					mu.Lock()
					sess[i] = s
					mu.Unlock()
				}
			})
			connected = time.Since(start)
			settledOK, runErr = waitSettled(ctx, b.cfg.serverPIDs)
			settled = time.Since(start) - connected
		}()
	}
	win := b.measureWindow(ctx, workers, launch, allDone, false, true)
	<-allDone
	res := b.result(workers, win)
	res.Clients, res.Outstanding, res.Batch, res.DataSize = n, 0, par, 0
	if connected > 0 {
		res.OpsPerSec = math.Round(float64(res.Ops) / connected.Seconds())
	}
	res.Note = fmt.Sprintf("%d sessions connected in %.1f s, %d at a time", res.Ops, connected.Seconds(), par)
	switch {
	case len(b.cfg.serverPIDs) == 0:
	case settledOK:
		res.Note += fmt.Sprintf("; server RSS settled %.1f s later", settled.Seconds())
	default:
		res.Note += fmt.Sprintf("; server RSS still changing after %.0f s", settled.Seconds())
	}
	if res.ServerRSSEnd > 0 && res.Errors == 0 && res.Ops > 0 {
		res.BytesPerSession = round3(float64(res.ServerRSSEnd-res.ServerRSSStart) / float64(res.Ops))
	}
	return res, errors.Join(runErr, win.procErr)
}

// waitSettled waits until the summed RSS of pids changed by less than settleChange over
// settleOver, for at most settleMax; it reports whether it did. With no pids there is
// nothing to wait for but settleOver, so that the sessions are held a moment.
func waitSettled(ctx context.Context, pids []int) (bool, error) {
	tick := time.NewTicker(settleEvery)
	defer tick.Stop()
	deadline := time.Now().Add(settleMax)
	type sample struct {
		at  time.Time
		rss int64
	}
	var hist []sample
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case now := <-tick.C:
			if len(pids) == 0 {
				if len(hist) == 0 {
					hist = append(hist, sample{at: now})
				}
				if now.Sub(hist[0].at) >= settleOver {
					return true, nil
				}
				continue
			}
			s, err := sampleProcs(pids)
			if err != nil {
				return false, err
			}
			hist = append(hist, sample{now, s.RSS})
			// The oldest sample at least settleOver old is the one to compare with.
			for len(hist) > 1 && now.Sub(hist[1].at) >= settleOver {
				hist = hist[1:]
			}
			if old := hist[0]; now.Sub(old.at) >= settleOver && old.rss > 0 &&
				math.Abs(float64(s.RSS-old.rss)) < settleChange*float64(old.rss) {
				return true, nil
			}
			if now.After(deadline) {
				return false, nil
			}
		}
	}
}

// The pinger looks at a bucket of sessions per tick, so each session every
// pingTick*pingBuckets, and pings those idle for a third of their timeout, as ZooKeeper's
// clients do.
const (
	pingTick    = 50 * time.Millisecond
	pingBuckets = 32
)

// startPinger keeps n sessions (get(i), nil while not open) alive from one goroutine. stop
// ends it.
func startPinger(n int, get func(i int) *bareSession) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(pingTick)
		defer t.Stop()
		for k := 0; ; k = (k + 1) % pingBuckets {
			var now time.Time
			select {
			case <-done:
				return
			case now = <-t.C:
			}
			for i := k; i < n; i += pingBuckets {
				if s := get(i); s != nil && now.Sub(s.lastPing) >= s.timeout/3 {
					s.ping(now) // a lost session shows when it is closed
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}
