package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkd-io/zkd/internal/bench/benchstat"
	"github.com/zkd-io/zkd/jute"
)

// config is the knobs of a run.
type config struct {
	servers        []string
	clients        int // sessions (watchers for watch, concurrent cycles for connect/ephemeral)
	outstanding    int // requests in flight per session
	dataSize       int
	largeSize      int
	duration       time.Duration
	ops            int64 // if > 0, stop after this many measured ops instead of after duration
	warmup         time.Duration
	keys           int
	readRatio      float64
	multiSize      int
	znodes         int
	znodesFrom     int // the znodes workload's first index: grow a tree in steps
	sessions       int // storm and idle: sessions opened (0: the workload's default)
	root           string
	serverPIDs     []int // their CPU and RSS are summed (an ensemble's servers)
	params         map[string]string
	label          string
	progress       time.Duration // 0: no progress lines
	sessionTimeout time.Duration
	seed           uint64
	cleanup        bool
	tls            *tls.Config // nil: plaintext
	// driver is the client the key-space workloads run on: "" for zkbench's own, or
	// driverGoZK (github.com/go-zookeeper/zk), the cross-check with a client zkd did not write.
	driver string
	// snapshotDir is the server's snapshot directory (its dataDir/version-2), watched to tell
	// the latencies during a snapshot from the rest; "" for none.
	snapshotDir string
}

const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

// bench runs one workload with one config. Workers share only the phase and the op budget;
// each has its own recorder, merged at the end.
type bench struct {
	cfg   config
	wl    *workload
	log   io.Writer // progress lines
	base  time.Time
	runID string

	phase  atomic.Int32
	issued atomic.Int64 // measured ops issued, against cfg.ops

	// Shared state of workloads.
	keys    []string
	keyDir  string // the parent of keys, for keyRequest
	data    []byte
	next    atomic.Int64 // the memory workload's next znode
	workers []*worker    // of the last runPipelined, for cleanup
	snaps   *snapWatch   // nil without cfg.snapshotDir

	// watch workload: when the current write was sent (ns since base) and whether it counts.
	writeAt       atomic.Int64
	writeMeasured atomic.Bool
}

// worker is one session's (or one cycle loop's) goroutine state.
type worker struct {
	id       int
	b        *bench
	rng      *rand.Rand
	conn     *conn
	rec      *recorder
	seq      int64        // the worker's own counter (creates, cycles)
	done     atomic.Int64 // recorded completions, read by the progress line
	multiOps []jute.MultiOp
}

// mayIssue reports whether a worker may start another operation and whether it is measured.
func (b *bench) mayIssue() (ok, measured bool) {
	switch b.phase.Load() {
	case phaseWarmup:
		return true, false
	case phaseMeasure:
		if b.cfg.ops > 0 && b.issued.Add(1) > b.cfg.ops {
			return false, false
		}
		return true, true
	}
	return false, false
}

func (b *bench) measuring() bool { return b.phase.Load() == phaseMeasure }

func (b *bench) dialOpts() dialOptions {
	return dialOptions{sessionTimeout: b.cfg.sessionTimeout, dialTimeout: 10 * time.Second, tls: b.cfg.tls}
}

// server picks the server of session i: sessions are spread round-robin.
func (b *bench) server(i int) string { return b.cfg.servers[i%len(b.cfg.servers)] }

// openSessions opens n sessions in parallel (a few at a time: ZooKeeper logs each one).
func (b *bench) openSessions(ctx context.Context, n int, opts func(i int) dialOptions) ([]*conn, error) {
	conns := make([]*conn, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			o := b.dialOpts()
			if opts != nil {
				o = opts(i)
			}
			conns[i], errs[i] = dial(ctx, b.server(i), o)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeSessions(conns)
		return nil, err
	}
	return conns, nil
}

// closeSessions ends every session, in parallel.
func closeSessions(conns []*conn) {
	var wg sync.WaitGroup
	for _, c := range conns {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.close(10 * time.Second)
		}()
	}
	wg.Wait()
}

// window is the measured phase: its edges and the samples taken at them.
type window struct {
	start, end            time.Time
	before, after         procSample
	cpuBefore, cpuAfter   time.Duration
	machBefore, machAfter benchstat.MachineSample
	procErr               error
}

// measureWindow starts the workers (launch) and runs the warm-up and the measured phase: it
// flips the phase, samples the server and this process at the window's edges, and prints
// progress. workersDone is closed when every worker has returned. untilDone makes the measured phase
// last until the workers finish by themselves (a workload with a fixed amount of work)
// instead of for cfg.duration; so does an op budget (cfg.ops).
func (b *bench) measureWindow(ctx context.Context, workers []*worker, launch func(), workersDone <-chan struct{}, warmup bool, untilDone bool) window {
	var w window
	stopProgress := b.startProgress(workers)
	defer stopProgress()
	if b.snaps != nil {
		defer b.snaps.start()()
	}
	begin := func() {
		w.before, w.procErr = sampleProcs(b.cfg.serverPIDs)
		w.cpuBefore = benchstat.SelfCPU()
		w.machBefore = benchstat.SampleMachine()
		w.start = time.Now()
		b.phase.Store(phaseMeasure)
	}
	if warmup && b.cfg.warmup > 0 {
		launch()
		t := time.NewTimer(b.cfg.warmup)
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-workersDone:
		}
		t.Stop()
		begin()
	} else {
		begin()
		launch()
	}
	var limit <-chan time.Time
	if !untilDone && b.cfg.ops == 0 {
		t := time.NewTimer(b.cfg.duration)
		defer t.Stop()
		limit = t.C
	}
	select {
	case <-limit:
	case <-ctx.Done():
	case <-workersDone:
	}
	b.phase.Store(phaseStop)
	w.end = time.Now()
	w.cpuAfter = benchstat.SelfCPU()
	w.machAfter = benchstat.SampleMachine()
	var err error
	w.after, err = sampleProcs(b.cfg.serverPIDs)
	w.procErr = errors.Join(w.procErr, err)
	return w
}

// startProgress prints a line every cfg.progress with the ops completed so far.
func (b *bench) startProgress(workers []*worker) (stop func()) {
	if b.cfg.progress <= 0 || b.log == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(b.cfg.progress)
		defer t.Stop()
		var last int64
		lastAt := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				var total int64
				for _, w := range workers {
					total += w.done.Load()
				}
				phase := "warmup"
				if b.phase.Load() != phaseWarmup {
					phase = "measure"
				}
				rate := float64(total-last) / now.Sub(lastAt).Seconds()
				fmt.Fprintf(b.log, "zkbench: %-12s %-7s %6.1fs  ops %9d  %9.0f ops/s\n",
					b.wl.name, phase, now.Sub(b.base).Seconds(), total, rate)
				last, lastAt = total, now
			}
		}
	}()
	return func() { close(done); <-finished }
}

// result merges the workers' recorders into a Result for the window.
func (b *bench) result(workers []*worker, w window) *Result {
	rec := newRecorder().watching(b.snaps)
	for _, wk := range workers {
		rec.merge(wk.rec)
	}
	res := &Result{
		Label:       b.cfg.label,
		Workload:    b.wl.name,
		Servers:     joinComma(b.cfg.servers),
		Clients:     b.cfg.clients,
		Outstanding: b.cfg.outstanding,
		DataSize:    b.cfg.dataSize,
		Params:      b.cfg.params,
	}
	res.fill(rec, w.end.Sub(w.start))
	res.stats().FillServer(w.before, w.after)
	res.stats().FillClient(w.cpuAfter - w.cpuBefore)
	res.stats().FillMachine(w.machBefore, w.machAfter, runtime.NumCPU())
	if b.snaps != nil {
		b.snaps.fill(res, rec)
	}
	return res
}

func joinComma(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}

// gen fills c with a worker's next request; it returns false when the workload has no more
// work (the memory workload once every znode is issued).
type gen func(w *worker, c *call) bool

// runPipelined runs a workload of requests: cfg.clients sessions, each keeping up to
// cfg.outstanding requests in flight.
func (b *bench) runPipelined(ctx context.Context, g gen, untilDone bool) (*Result, error) {
	conns, err := b.openSessions(ctx, b.cfg.clients, nil)
	if err != nil {
		return nil, err
	}
	defer closeSessions(conns)
	workers := b.newWorkers(len(conns), conns)
	b.workers = workers
	var wg sync.WaitGroup
	allDone := make(chan struct{})
	launch := func() {
		for _, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.pipeline(g)
			}()
		}
		go func() { wg.Wait(); close(allDone) }()
	}
	win := b.measureWindow(ctx, workers, launch, allDone, !b.wl.noWarmup, untilDone)
	<-allDone
	res := b.result(workers, win)
	return res, win.procErr
}

// newWorkers makes n workers; conns, if not nil, gives each its session.
func (b *bench) newWorkers(n int, conns []*conn) []*worker {
	workers := make([]*worker, n)
	for i := range workers {
		workers[i] = &worker{id: i, b: b, rng: sessionRNG(b.cfg.seed, i), rec: newRecorder().watching(b.snaps)}
		if conns != nil {
			workers[i].conn = conns[i]
		}
	}
	return workers
}

// pipeline keeps cfg.outstanding requests in flight until the phase or the workload ends.
// Completed calls are recorded and re-issued by a callback on the session's reader
// goroutine, so a request costs no goroutine switch or channel operation, and the requests
// the replies of one read cause go out in one write.
func (w *worker) pipeline(g gen) {
	p := &pipe{w: w, g: g, done: make(chan struct{})}
	cb := p.complete
	p.mu.Lock()
	for range max(w.b.cfg.outstanding, 1) {
		if !p.issue(&call{cb: cb}, true) {
			break
		}
		p.inflight++
	}
	idle := p.inflight == 0
	p.mu.Unlock()
	if !idle {
		<-p.done
	}
}

// pipe is one worker's pipelined run. Its callbacks run on the session's reader goroutine,
// but the first requests are issued by the worker and a lost connection completes calls on
// whichever goroutine saw it go, so mu (uncontended while requests flow) guards the worker's
// state: its generator, recorder and counts.
type pipe struct {
	w        *worker
	g        gen
	mu       sync.Mutex
	inflight int
	stopped  bool
	done     chan struct{} // closed when the last call in flight has come back
}

// issue fills c with the next request and queues it; false when there is none to send.
func (p *pipe) issue(c *call, wake bool) bool {
	if p.stopped {
		return false
	}
	ok, measured := p.w.b.mayIssue()
	if !ok || !p.g(p.w, c) {
		p.stopped = true
		return false
	}
	c.measured = measured
	if !p.w.conn.enqueue(c, wake) {
		p.stopped = true // the session is gone
		return false
	}
	return true
}

// complete records a returned call and sends the next request in its place.
func (p *pipe) complete(c *call) {
	w := p.w
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.measured && w.b.measuring() {
		w.rec.record(c.end.Sub(c.start), c.err)
		w.done.Add(1)
	}
	if errors.Is(c.err, jute.ErrConnectionLoss) {
		p.stopped = true // the session is gone; its other calls fail on their own
	}
	if !p.issue(c, false) {
		p.inflight--
		if p.inflight == 0 {
			close(p.done)
		}
	}
}

// runCycles runs a workload of whole-session cycles (connect, ephemeral): cfg.clients loops,
// each timing one cycle at a time.
func (b *bench) runCycles(ctx context.Context, cycle func(ctx context.Context, w *worker) error) (*Result, error) {
	workers := b.newWorkers(b.cfg.clients, nil)
	var wg sync.WaitGroup
	allDone := make(chan struct{})
	launch := func() {
		for _, w := range workers {
			wg.Add(1)
			go w.cycles(ctx, &wg, cycle)
		}
		go func() { wg.Wait(); close(allDone) }()
	}
	win := b.measureWindow(ctx, workers, launch, allDone, true, false)
	<-allDone
	res := b.result(workers, win)
	res.Outstanding = 0
	return res, win.procErr
}

// cycles runs one session cycle at a time until the phase ends.
func (w *worker) cycles(ctx context.Context, wg *sync.WaitGroup, cycle func(ctx context.Context, w *worker) error) {
	defer wg.Done()
	b := w.b
	for ctx.Err() == nil {
		ok, measured := b.mayIssue()
		if !ok {
			return
		}
		start := time.Now()
		err := cycle(ctx, w)
		if measured && b.measuring() {
			w.rec.record(time.Since(start), err)
			w.done.Add(1)
		}
		if err != nil {
			// A server that refuses connections fails fast; do not spin on it.
			select {
			case <-time.After(10 * time.Millisecond):
			case <-ctx.Done():
			}
		}
	}
}

// pump runs n requests over conns, each with up to depth in flight: build fills the call for
// index i, and onDone sees each completed call (from several goroutines at once). It is for
// setup and cleanup, which are not measured. It stops at the first lost connection.
func pump(ctx context.Context, conns []*conn, depth, n int, build func(i int, c *call), onDone func(i int, c *call)) error {
	var next atomic.Int64
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for ci, cn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan *call, depth)
			inflight := 0
			issue := func(c *call) bool {
				if ctx.Err() != nil || errs[ci] != nil {
					return false
				}
				i := int(next.Add(1) - 1)
				if i >= n {
					return false
				}
				c.tag = int64(i)
				c.wantBody = false
				build(i, c)
				cn.submit(c)
				inflight++
				return true
			}
			for range depth {
				if !issue(&call{done: done}) {
					break
				}
			}
			for inflight > 0 {
				c := <-done
				inflight--
				if errors.Is(c.err, jute.ErrConnectionLoss) {
					errs[ci] = c.err
				} else if onDone != nil {
					onDone(int(c.tag), c)
				}
				issue(c)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}
