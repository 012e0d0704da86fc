// Command etcdbench is a pipelined put benchmark for etcd, the second peer zkd's writes are
// measured against (bench/etcd.sh). It is zkbench's set workload in etcd's terms: --clients
// gRPC connections, each with --outstanding puts in flight, of --data-size bytes on random
// keys of a --keys key space; and it appends one JSON line in zkbench's Result format,
// measured as zkbench measures (internal/bench/benchstat), so that `zkbench compare` renders zkd
// and etcd side by side.
//
// It is a module of its own so that zkd's module does not depend on etcd's client; it uses
// zkd's module, from this checkout (go.mod's replace), for internal/bench/benchstat.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zkd-io/zkd/internal/bench/benchstat"
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

func appendJSON(path string, res *benchstat.Result) error {
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
func run(ctx context.Context, c *config) (*benchstat.Result, error) {
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
	recs := make([]*benchstat.Recorder, c.clients*c.outstanding)
	for i := range recs {
		recs[i] = benchstat.NewRecorder(errKind)
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
						rec.Record(time.Since(t), err)
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
	before, err := benchstat.SampleProc(c.serverPID)
	if err != nil {
		slog.Warn("no server figures", "err", err)
	}
	mach0 := benchstat.SampleMachine()
	cpu0 := benchstat.SelfCPU()
	start := time.Now()
	measuring.Store(true)
	werr := sleepCtx(ctx, c.duration)
	done.Store(true)
	elapsed := time.Since(start)
	cpu1 := benchstat.SelfCPU()
	mach1 := benchstat.SampleMachine()
	after, err := benchstat.SampleProc(c.serverPID)
	if err != nil {
		slog.Warn("no server figures", "err", err)
	}
	// The puts in flight at the end are not counted, and need not be waited for.
	stopRun()
	wg.Wait()
	if werr != nil {
		return nil, werr
	}

	total := benchstat.NewRecorder(errKind)
	for _, r := range recs {
		total.Merge(r)
	}
	res := &benchstat.Result{
		Label: c.label, Workload: "set", Servers: strings.Join(c.endpoints, ","),
		Clients: c.clients, Outstanding: c.outstanding, DataSize: c.dataSize, Keys: c.keys,
	}
	res.Fill(total, elapsed)
	res.FillServer(before, after)
	res.FillClient(cpu1 - cpu0)
	res.FillMachine(mach0, mach1, runtime.NumCPU())
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

// errKind names an error for counting: its gRPC code when it has one, so that addresses in
// messages do not make every error a kind of its own. A put past its --op-timeout (the
// client returns the context's error) is a "timeout", as zkbench counts one.
func errKind(err error) string {
	if !errors.Is(err, context.DeadlineExceeded) {
		if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
			return s.Code().String()
		}
	}
	return benchstat.ErrKind(err)
}
