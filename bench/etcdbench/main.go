// Command etcdbench is a pipelined put benchmark for etcd, the second peer zkd's writes are
// measured against (bench/etcd.sh). It is zkbench's set workload in etcd's terms: --clients
// gRPC connections, each with --outstanding puts in flight, of --data-size bytes on random
// keys of a --keys key space; and it appends one JSON line in zkbench's Result format
// (cmd/zkbench/stats.go), so that `zkbench compare` renders zkd and etcd side by side.
//
// It is a module of its own so that zkd's module does not depend on etcd's client.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := cli(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "etcdbench:", err)
		}
		os.Exit(1)
	}
}

type config struct {
	endpoints   []string
	clients     int
	outstanding int
	dataSize    int
	keys        int
	duration    time.Duration
	warmup      time.Duration
	serverPID   int
	label       string
	jsonPath    string
	prefix      string
	opTimeout   time.Duration
}

func parse(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("etcdbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	endpoints := fs.String("endpoints", "127.0.0.1:2379", "comma-separated etcd client URLs or host:port")
	fs.IntVar(&c.clients, "clients", 64, "etcd clients, each with its own gRPC connection")
	fs.IntVar(&c.outstanding, "outstanding", 32, "puts in flight per client")
	fs.IntVar(&c.dataSize, "data-size", 1024, "bytes of value per put")
	fs.IntVar(&c.keys, "keys", 10000, "key space: puts go to random keys of it")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured load before the measurement")
	fs.IntVar(&c.serverPID, "server-pid", 0, "etcd's pid: its CPU per op and RSS from /proc (0: none)")
	fs.StringVar(&c.label, "label", "etcd", "what the run was against, copied into the result")
	fs.StringVar(&c.jsonPath, "json", "", "append the result as one JSON line to this file")
	fs.StringVar(&c.prefix, "prefix", "/etcdbench/", "prefix of the keys written")
	fs.DurationVar(&c.opTimeout, "op-timeout", 10*time.Second, "a put not answered within this counts as an error")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, e := range strings.Split(*endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			c.endpoints = append(c.endpoints, e)
		}
	}
	switch {
	case len(c.endpoints) == 0:
		return nil, errors.New("--endpoints is empty")
	case c.clients < 1 || c.outstanding < 1 || c.keys < 1 || c.dataSize < 0:
		return nil, errors.New("--clients, --outstanding and --keys must be at least 1, --data-size at least 0")
	case c.duration <= 0 || c.warmup < 0:
		return nil, errors.New("--duration must be positive and --warmup not negative")
	}
	return &c, nil
}

func cli(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	res, err := run(ctx, c)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s set %dx%d %dB: %d ops in %.1f s, %.0f ops/s, p50 %.2f ms, p99 %.2f ms, %d errors, server %.1f µs/op, client %.1f µs/op, machine %.0f%% busy, others %.0f%%\n",
		res.Label, res.Clients, res.Outstanding, res.DataSize, res.Ops, res.Seconds, res.OpsPerSec,
		res.Latency.P50/1000, res.Latency.P99/1000, res.Errors, res.ServerCPUPerOpUS, res.ClientCPUPerOpUS,
		res.MachineBusyPct, res.OtherCPUPct)
	if c.jsonPath == "" {
		return nil
	}
	return appendJSON(c.jsonPath, res)
}

func appendJSON(path string, res *Result) error {
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encoding the result: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening --json: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("writing --json: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing --json: %w", err)
	}
	return nil
}

// run connects the clients, loads the server for the warm-up and then the measured window,
// and returns what was measured. Only puts sent inside the window are counted, so the
// warm-up's and the shutdown's are not.
func run(ctx context.Context, c *config) (*Result, error) {
	clients := make([]*clientv3.Client, 0, c.clients)
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for i := 0; i < c.clients; i++ {
		// A client per connection: clientv3 multiplexes one client's calls over one gRPC
		// connection, as a zkbench session pipelines over one TCP connection.
		cl, err := clientv3.New(clientv3.Config{
			Endpoints:   c.endpoints,
			DialTimeout: 10 * time.Second,
			Logger:      zap.NewNop(),
			Context:     ctx,
		})
		if err != nil {
			return nil, fmt.Errorf("client %d: %w", i, err)
		}
		clients = append(clients, cl)
	}
	// One round trip before the clock starts: the connection is up and the server answers.
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := clients[0].Put(pctx, c.prefix+"ping", "")
	cancel()
	if err != nil {
		return nil, fmt.Errorf("first put to %s: %w", strings.Join(c.endpoints, ","), err)
	}

	value := string(make([]byte, c.dataSize))
	keys := make([]string, c.keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%08d", c.prefix, i) // fixed width: every put has the same size
	}

	var (
		measuring atomic.Bool // set at the window's start
		done      atomic.Bool // set at the window's end
		wg        sync.WaitGroup
	)
	recs := make([]*recorder, c.clients*c.outstanding)
	for i := range recs {
		recs[i] = newRecorder()
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	for ci, cl := range clients {
		for o := 0; o < c.outstanding; o++ {
			w := ci*c.outstanding + o
			rng := rand.New(rand.NewPCG(1, uint64(w)+1))
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec := recs[w]
				for !done.Load() && runCtx.Err() == nil {
					counted := measuring.Load()
					t := time.Now()
					octx, cancel := context.WithTimeout(runCtx, c.opTimeout)
					_, err := cl.Put(octx, keys[rng.IntN(len(keys))], value)
					cancel()
					if counted && !done.Load() {
						rec.record(time.Since(t), err)
					}
				}
			}()
		}
	}

	if err := sleepCtx(ctx, c.warmup); err != nil {
		done.Store(true)
		stopRun()
		wg.Wait()
		return nil, err
	}
	before, err := sampleProc(c.serverPID)
	if err != nil {
		slog.Warn("no server figures", "err", err)
	}
	mach0 := sampleMachine()
	cpu0 := selfCPU()
	start := time.Now()
	measuring.Store(true)
	werr := sleepCtx(ctx, c.duration)
	done.Store(true)
	elapsed := time.Since(start)
	cpu1 := selfCPU()
	mach1 := sampleMachine()
	after, err := sampleProc(c.serverPID)
	if err != nil {
		slog.Warn("no server figures", "err", err)
	}
	// The puts in flight at the end are not counted, and need not be waited for.
	stopRun()
	wg.Wait()
	if werr != nil {
		return nil, werr
	}

	total := newRecorder()
	for _, r := range recs {
		total.merge(r)
	}
	res := &Result{
		Label: c.label, Workload: "set", Servers: strings.Join(c.endpoints, ","),
		Clients: c.clients, Outstanding: c.outstanding, DataSize: c.dataSize, Keys: c.keys,
	}
	res.fill(total, elapsed)
	res.fillServer(before, after)
	res.fillClient(cpu1 - cpu0)
	res.fillMachine(mach0, mach1, runtime.NumCPU())
	return res, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Latencies are recorded in microseconds from 1 µs to a minute to three significant digits,
// as zkbench does.
const (
	histMin    = 1
	histMax    = int64(time.Minute / time.Microsecond)
	histDigits = 3
)

// spectrumPercentiles are zkbench's, for plotting both servers with `zkbench plot`.
var spectrumPercentiles = []float64{0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999, 100}

// recorder collects one worker's latencies and errors; recorders are merged at the end.
type recorder struct {
	hist   *hdrhistogram.Histogram
	ops    int64
	errs   int64
	kinds  map[string]int64
	clamps int64
}

func newRecorder() *recorder {
	return &recorder{hist: hdrhistogram.New(histMin, histMax, histDigits), kinds: map[string]int64{}}
}

func (r *recorder) record(d time.Duration, err error) {
	if err != nil {
		r.errs++
		r.kinds[errKind(err)]++
		return
	}
	r.ops++
	us := min(max(int64(d/time.Microsecond), histMin), histMax)
	if us == histMax {
		r.clamps++
	}
	_ = r.hist.RecordValue(us) // in range by construction
}

func (r *recorder) merge(o *recorder) {
	r.hist.Merge(o.hist)
	r.ops += o.ops
	r.errs += o.errs
	r.clamps += o.clamps
	for k, v := range o.kinds {
		r.kinds[k] += v
	}
}

// errKind names an error for counting: its gRPC code when it has one, so that addresses in
// messages do not make every error a kind of its own.
func errKind(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return s.Code().String()
	}
	s := err.Error()
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// Point, Latency and Result are the fields of zkbench's Result (cmd/zkbench/stats.go) that
// this benchmark fills, with the same JSON names.
type Point struct {
	Percentile float64 `json:"p"`
	Micros     float64 `json:"us"`
}

type Latency struct {
	Mean     float64 `json:"mean"`
	P50      float64 `json:"p50"`
	P90      float64 `json:"p90"`
	P99      float64 `json:"p99"`
	P999     float64 `json:"p999"`
	Max      float64 `json:"max"`
	Spectrum []Point `json:"spectrum,omitempty"`
}

type Result struct {
	Kind        string `json:"kind,omitempty"`
	Label       string `json:"label,omitempty"`
	Workload    string `json:"workload"`
	Servers     string `json:"servers,omitempty"`
	Clients     int    `json:"clients,omitempty"`
	Outstanding int    `json:"outstanding,omitempty"`
	DataSize    int    `json:"data_size,omitempty"`
	Keys        int    `json:"keys,omitempty"`

	Ops        int64            `json:"ops"`
	Errors     int64            `json:"errors"`
	ErrorKinds map[string]int64 `json:"error_kinds,omitempty"`
	Seconds    float64          `json:"seconds"`
	OpsPerSec  float64          `json:"ops_per_sec"`
	Latency    Latency          `json:"latency_us"`

	ServerCPUSeconds float64 `json:"server_cpu_s,omitempty"`
	ServerCPUPerOpUS float64 `json:"server_cpu_us_per_op,omitempty"`
	ServerRSSStart   int64   `json:"server_rss_start,omitempty"`
	ServerRSSEnd     int64   `json:"server_rss_end,omitempty"`
	ClientCPUSeconds float64 `json:"client_cpu_s,omitempty"`
	ClientCPUPerOpUS float64 `json:"client_cpu_us_per_op,omitempty"`
	MachineBusyPct   float64 `json:"machine_busy_pct,omitempty"`
	MachineIOWaitPct float64 `json:"machine_iowait_pct,omitempty"`
	KernelThreadsPct float64 `json:"kernel_threads_pct,omitempty"`
	StealPct         float64 `json:"steal_pct,omitempty"`
	OtherCPUPct      float64 `json:"other_cpu_pct,omitempty"`
	LatenciesClamped int64   `json:"latencies_clamped,omitempty"`
}

func summarize(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	l := Latency{
		Mean: round3(h.Mean()),
		P50:  float64(h.ValueAtPercentile(50)),
		P90:  float64(h.ValueAtPercentile(90)),
		P99:  float64(h.ValueAtPercentile(99)),
		P999: float64(h.ValueAtPercentile(99.9)),
		Max:  float64(h.Max()),
	}
	for _, p := range spectrumPercentiles {
		l.Spectrum = append(l.Spectrum, Point{Percentile: p, Micros: float64(h.ValueAtPercentile(p))})
	}
	return l
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func (res *Result) fill(r *recorder, elapsed time.Duration) {
	res.Ops, res.Errors = r.ops, r.errs
	if len(r.kinds) > 0 {
		res.ErrorKinds = r.kinds
	}
	res.Seconds = round3(elapsed.Seconds())
	if elapsed > 0 {
		res.OpsPerSec = math.Round(float64(r.ops) / elapsed.Seconds())
	}
	res.Latency = summarize(r.hist)
	res.LatenciesClamped = r.clamps
}

func (res *Result) fillServer(before, after procSample) {
	if !before.ok || !after.ok {
		return
	}
	cpu := after.cpu - before.cpu
	res.ServerCPUSeconds = round3(cpu.Seconds())
	if res.Ops > 0 {
		res.ServerCPUPerOpUS = round3(float64(cpu.Microseconds()) / float64(res.Ops))
	}
	res.ServerRSSStart, res.ServerRSSEnd = before.rss, after.rss
}

func (res *Result) fillClient(cpu time.Duration) {
	if cpu <= 0 {
		return
	}
	res.ClientCPUSeconds = round3(cpu.Seconds())
	if res.Ops > 0 {
		res.ClientCPUPerOpUS = round3(float64(cpu.Nanoseconds()) / 1e3 / float64(res.Ops))
	}
}
