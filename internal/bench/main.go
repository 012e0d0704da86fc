// Package bench is zkbench's engine (cmd/zkbench is its thin main): a load generator for
// ZooKeeper-compatible servers. It speaks the client wire protocol itself (package jute) through
// a minimal pipelined client, so its own cost per request is small and the same whichever server
// it drives, and it measures latency with HDR histograms. It owns the benchmark workloads, the
// server-side samples taken from /proc, and the rendering of results as text tables, JSON lines,
// markdown comparisons and SVG plots.
//
//	zkbench run [flags] WORKLOAD...     run workloads against --servers
//	zkbench wait [flags]                time until a server answers (restart, failover)
//	zkbench fsync [flags]               time write+fsync of a directory's disk
//	zkbench compare --a F --b F         markdown comparison of two JSON-lines files
//	zkbench plot -o F.svg FILE...       latency percentiles of JSON-lines files
//	zkbench curve -x F -o F.svg FILE... a metric against a swept parameter (bench/curves.sh)
//	zkbench list                        the workloads
package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// Main runs zkbench with args (without the program name), writing to stdout and stderr. It
// returns nil on success and the error that ended the run otherwise (flag.ErrHelp after
// -h, which it has printed already).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli(ctx, args, stdout, stderr)
}

const usage = `usage:
  zkbench run [flags] WORKLOAD...     run workloads (see zkbench list) against --servers
  zkbench wait [flags]                time until a request succeeds (restart recovery, failover)
  zkbench fsync [flags]               time 4 KB write + fsync in a directory
  zkbench compare --a F --b F         markdown comparison of two JSON-lines result files
  zkbench plot -o OUT.svg FILE...     plot latency percentiles from JSON-lines result files
  zkbench curve -x FIELD -o OUT.svg FILE...
                                      plot metrics against a swept parameter, a line per server
  zkbench list                        list the workloads
Run "zkbench COMMAND -h" for a command's flags.
`

// cli runs one zkbench command.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr)
	case "wait":
		return cmdWait(ctx, args[1:], stdout, stderr)
	case "fsync":
		return cmdFsync(args[1:], stdout, stderr)
	case "compare":
		return cmdCompare(args[1:], stdout, stderr)
	case "plot":
		return cmdPlot(args[1:], stderr)
	case "curve":
		return cmdCurve(args[1:], stderr)
	case "list":
		for _, w := range workloads {
			fmt.Fprintf(stdout, "%-12s %s\n", w.name, w.desc)
		}
		return nil
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

// runOptions are run's flags beyond the benchmark config.
type runOptions struct {
	cfg       config
	workloads []string
	// as records the (single) workload's results under this name, so one workload can be
	// run with different shapes into one results file (get at 64 x 32 and get-1 at 1 x 1).
	as       string
	jsonPath string
	plotPath string
	// A run during which others took more than contentionLimit percent of the machine's
	// CPU is run again, up to contentionRetries times, keeping the least disturbed.
	contentionLimit   float64
	contentionRetries int
	scale             scaleOptions
}

func parseRun(args []string, stderr io.Writer) (*runOptions, error) {
	fs := flag.NewFlagSet("zkbench run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o runOptions
	c := &o.cfg
	servers := fs.String("servers", "127.0.0.1:2181", "comma-separated host:port list; sessions are spread over them round-robin")
	fs.IntVar(&c.clients, "clients", 64, "sessions (watchers for watch; concurrent session cycles for connect and ephemeral)")
	fs.IntVar(&c.outstanding, "outstanding", 32, "requests in flight per session")
	fs.StringVar(&c.driver, "driver", "", "client for set, get, exists and mixed: empty for zkbench's own, "+driverGoZK+" for github.com/go-zookeeper/zk (outstanding = goroutines per session)")
	fs.StringVar(&c.snapshotDir, "snapshot-dir", "", "the server's snapshot directory (dataDir/version-2): latencies are also reported during and outside the snapshots it sees written there")
	fs.IntVar(&c.dataSize, "data-size", 1024, "bytes of data per znode written")
	fs.IntVar(&c.largeSize, "large-size", 100*1024, fmt.Sprintf("bytes of data for the large workload, and for bigread (which, without the flag, reads %d)", defaultBigreadSize))
	fs.IntVar(&o.scale.children, "children", defaultChildren, "children of the node the children workload lists")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time per workload")
	fs.Int64Var(&c.ops, "ops", 0, "measured operations per workload instead of --duration (0: use --duration)")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured load before each workload's measurement")
	fs.IntVar(&c.keys, "keys", 10000, "key space: znodes read and written by set, get, exists, mixed and multi")
	fs.Float64Var(&c.readRatio, "read-ratio", 0.9, "fraction of reads in the mixed workload")
	fs.IntVar(&c.multiSize, "multi-size", 10, "ops per multi (multi workload); znodes per multi (znodes workload)")
	fs.IntVar(&c.znodes, "znodes", 1000000, "znodes created by the znodes workload")
	fs.IntVar(&c.znodesFrom, "znodes-from", 0, "index of the znodes workload's first znode, to add to a tree made by an earlier run")
	fs.StringVar(&c.root, "root", "/zkbench", "parent znode of the workloads' znodes")
	pids := fs.String("server-pid", "", "server processes (comma-separated: an ensemble's, summed) to sample in /proc for CPU and RSS")
	var params paramFlag
	fs.Var(&params, "param", "name=value written into every result's params (repeatable), e.g. the x of a curve's point")
	fs.StringVar(&c.label, "label", "", "name of the server under test, written into every result")
	fs.DurationVar(&c.progress, "progress", time.Second, "interval of progress lines on stderr (0: none)")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", 30*time.Second, "requested session timeout")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the key choices")
	fs.BoolVar(&c.cleanup, "cleanup", true, "delete the znodes the create and children workloads made")
	fs.StringVar(&o.jsonPath, "json", "", "append results as JSON lines to this file (- for stdout, instead of the table)")
	fs.StringVar(&o.plotPath, "plot", "", "write an SVG of the latency percentiles of this invocation's runs")
	fs.IntVar(&o.contentionRetries, "contention-retries", 0, "run a workload again, up to this many times, while other processes take more than --contention-limit of the CPU")
	fs.Float64Var(&o.contentionLimit, "contention-limit", 10, "percent of the machine's CPU others may take during a run (see --contention-retries)")
	tf := addTLSFlags(fs)
	wl := fs.String("w", "", "comma-separated workloads (also accepted as arguments)")
	fs.StringVar(&o.as, "as", "", "record the results of the one workload given under this name (e.g. get-1 for get at --clients 1 --outstanding 1)")
	fs.IntVar(&c.sessions, "sessions", 0, "sessions of the storm (default 2000) and idle (default 20000) workloads")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: zkbench run [flags] WORKLOAD...\n\nworkloads:\n")
		for _, w := range workloads {
			fmt.Fprintf(stderr, "  %-12s %s\n", w.name, w.desc)
		}
		fmt.Fprintf(stderr, "\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	c.servers = splitList(*servers)
	c.params = params.m
	o.scale.bigreadSize = defaultBigreadSize
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "large-size" {
			o.scale.bigreadSize = c.largeSize
		}
	})
	var err error
	if c.serverPIDs, err = parsePIDs(*pids); err != nil {
		return nil, err
	}
	if c.tls, err = tf.config(); err != nil {
		return nil, err
	}
	o.workloads = append(splitList(*wl), fs.Args()...)
	switch {
	case len(c.servers) == 0:
		return nil, errors.New("--servers: no server given")
	case len(o.workloads) == 0:
		fs.Usage()
		return nil, errors.New("no workload given")
	case c.clients < 1 || c.outstanding < 1:
		return nil, errors.New("--clients and --outstanding must be at least 1")
	case c.znodesFrom < 0:
		return nil, errors.New("--znodes-from must not be negative")
	case o.as != "" && len(o.workloads) != 1:
		return nil, fmt.Errorf("--as %q: give exactly one workload, not %d", o.as, len(o.workloads))
	case o.as != "" && strings.TrimSpace(o.as) != o.as:
		return nil, fmt.Errorf("--as %q: no leading or trailing spaces", o.as)
	case c.sessions < 0:
		return nil, errors.New("--sessions must not be negative")
	case c.keys < 1 || c.znodes < 1 || c.multiSize < 1:
		return nil, errors.New("--keys, --znodes and --multi-size must be at least 1")
	case c.dataSize < 0 || c.largeSize < 0:
		return nil, errors.New("--data-size and --large-size must not be negative")
	case o.scale.children < 1 || o.scale.children > maxChildren:
		return nil, fmt.Errorf("--children %d: want 1 to %d", o.scale.children, maxChildren)
	case c.readRatio < 0 || c.readRatio > 1:
		return nil, errors.New("--read-ratio must be within [0, 1]")
	case c.duration <= 0 && c.ops <= 0:
		return nil, errors.New("--duration or --ops must be positive")
	case !strings.HasPrefix(c.root, "/") || strings.HasSuffix(c.root, "/"):
		return nil, fmt.Errorf("--root %q: must start and must not end with /", c.root)
	}
	for _, name := range o.workloads {
		if _, err := findWorkload(name); err != nil {
			return nil, err
		}
	}
	return &o, nil
}

// parsePIDs reads --server-pid: a comma-separated list, where 0 means none.
func parsePIDs(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid < 0 {
			return nil, fmt.Errorf("--server-pid %q: not a process id", f)
		}
		if pid > 0 {
			out = append(out, pid)
		}
	}
	return out, nil
}

// paramFlag collects repeated --param name=value.
type paramFlag struct{ m map[string]string }

func (p *paramFlag) String() string { return "" }

func (p *paramFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q: want name=value", v)
	}
	if p.m == nil {
		p.m = map[string]string{}
	}
	p.m[name] = value
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseRun(args, stderr)
	if err != nil {
		return err
	}
	results, err := runWorkloads(ctx, o, stdout, stderr)
	if o.plotPath != "" && len(results) > 0 {
		if perr := writePlotFile(o.plotPath, results); perr != nil {
			err = errors.Join(err, perr)
		}
	}
	return err
}

// runWorkloads runs o's workloads in turn, printing each result as it is known.
func runWorkloads(ctx context.Context, o *runOptions, stdout, stderr io.Writer) ([]*Result, error) {
	var jsonOut io.Writer
	table := stdout
	switch o.jsonPath {
	case "":
	case "-":
		jsonOut, table = stdout, nil
	default:
		f, err := os.OpenFile(o.jsonPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		jsonOut = f
	}
	if table != nil {
		tableHeader(table)
	}
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	var results []*Result
	for i, name := range o.workloads {
		wl, _ := findWorkload(name)
		retries := o.contentionRetries
		if wl.once {
			retries = 0
		}
		res, err := runBest(ctx, retries, o.contentionLimit, func(attempt int) (*Result, error) {
			b := &bench{cfg: o.cfg, wl: wl, log: stderr, base: time.Now(), runID: fmt.Sprintf("%s-%d-%d", runID, i, attempt)}
			if o.cfg.snapshotDir != "" {
				b.snaps = newSnapWatch(o.cfg.snapshotDir, b)
			}
			if wl.scaled != nil {
				return wl.scaled(ctx, b, o.scale)
			}
			return wl.run(ctx, b)
		}, func(r *Result) {
			fmt.Fprintf(stderr, "zkbench: %s: others took %.0f%% of the machine's CPU; running it again\n", name, contended(r))
		})
		if res != nil {
			if o.as != "" {
				res.Of, res.Workload = res.Workload, o.as
			}
			results = append(results, res)
			if table != nil {
				tableRow(table, res)
			}
			if jsonOut != nil {
				if jerr := writeJSON(jsonOut, res); jerr != nil {
					return results, jerr
				}
			}
		}
		if err != nil {
			return results, fmt.Errorf("%s: %w", name, err)
		}
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
	}
	return results, nil
}

// runBest runs a workload, and again up to retries times while others took more than limit
// percent of the machine's CPU, and returns the least disturbed result. An error ends it.
func runBest(ctx context.Context, retries int, limit float64, run func(attempt int) (*Result, error), again func(*Result)) (*Result, error) {
	var best *Result
	for attempt := 0; ; attempt++ {
		r, err := run(attempt)
		if r == nil || err != nil {
			if r == nil {
				r = best
			}
			return r, err
		}
		if best == nil || contended(r) < contended(best) {
			best = r
		}
		best.Attempts = attempt + 1
		if contended(best) <= limit || attempt >= retries || ctx.Err() != nil {
			return best, nil
		}
		again(r)
	}
}

// contended is the share of the machine's CPU that others took during a run.
func contended(r *Result) float64 { return r.OtherCPUPct + r.StealPct }

func writePlotFile(path string, rs []*Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writePlot(f, rs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cmdWait times how long it takes until a request succeeds: after a restart (the first read
// served) or after killing an ensemble's leader (the first write committed). Each attempt
// is a new session on the next server of the list.
func cmdWait(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("zkbench wait", flag.ContinueOnError)
	fs.SetOutput(stderr)
	servers := fs.String("servers", "127.0.0.1:2181", "comma-separated host:port list, tried in turn")
	op := fs.String("op", "get", "get: getData --path; write: create a sequential znode under --path")
	p := fs.String("path", "/", "znode read by get, parent of the znode created by write")
	since := fs.Int64("since", 0, "start of the measured time, in Unix nanoseconds (0: now)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	attempt := fs.Duration("attempt-timeout", 2*time.Second, "time allowed for one attempt")
	name := fs.String("name", "wait", "workload name written into the result")
	label := fs.String("label", "", "name of the server under test")
	jsonPath := fs.String("json", "", "append the result as a JSON line to this file (- for stdout)")
	tf := addTLSFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	tlsCfg, err := tf.config()
	if err != nil {
		return err
	}
	start := time.Now()
	if *since > 0 {
		start = time.Unix(0, *since)
	}
	if *op != "get" && *op != "write" {
		return fmt.Errorf("--op %q: want get or write", *op)
	}
	res, err := waitFirst(ctx, splitList(*servers), *op, *p, start, *timeout, *attempt, tlsCfg)
	res.Label, res.Workload = *label, *name
	if jerr := emit(res, *jsonPath, stdout); jerr != nil {
		return jerr
	}
	return err
}

// waitFirst retries until one request succeeds and reports the time from start.
func waitFirst(ctx context.Context, servers []string, op, p string, start time.Time, timeout, attempt time.Duration, tlsCfg *tls.Config) (*Result, error) {
	res := &Result{Kind: kindWait, Servers: joinComma(servers)}
	if len(servers) == 0 {
		return res, errors.New("no server given")
	}
	deadline := time.Now().Add(timeout)
	var last error
	for i := 0; ; i++ {
		actx, cancel := context.WithTimeout(ctx, attempt)
		last = tryOnce(actx, servers[i%len(servers)], op, p, attempt, tlsCfg)
		cancel()
		if last == nil {
			res.ElapsedSeconds = round3(time.Since(start).Seconds())
			res.Ops = 1
			res.Errors = int64(i)
			return res, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			res.Errors = int64(i + 1)
			res.Note = "no success: " + errKind(last)
			return res, fmt.Errorf("no success within %v: %w", timeout, last)
		}
		select {
		case <-time.After(5 * time.Millisecond): // the resolution of the figure
		case <-ctx.Done():
		}
	}
}

func tryOnce(ctx context.Context, addr, op, p string, attempt time.Duration, tlsCfg *tls.Config) error {
	c, err := dial(ctx, addr, dialOptions{dialTimeout: attempt, sessionTimeout: 10 * time.Second, tls: tlsCfg})
	if err != nil {
		return err
	}
	defer c.abort()
	switch op {
	case "get":
		_, err = c.do(ctx, jute.OpGetData, &jute.GetDataRequest{Path: p})
	default:
		parent := strings.TrimSuffix(p, "/")
		_, err = c.do(ctx, jute.OpCreate, &jute.CreateRequest{Path: parent + "/zkbench-wait-", ACL: jute.OpenACLUnsafe, Flags: jute.FlagPersistentSequential})
	}
	if err != nil {
		return err
	}
	return c.close(attempt)
}

func emit(res *Result, jsonPath string, stdout io.Writer) error {
	switch jsonPath {
	case "":
		tableRow(stdout, res)
		return nil
	case "-":
		return writeJSON(stdout, res)
	}
	tableRow(stdout, res)
	f, err := os.OpenFile(jsonPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := writeJSON(f, res); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cmdFsync times write + fsync of a small block into a preallocated file, which is what a
// transaction log commit costs the disk.
func cmdFsync(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("zkbench fsync", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", os.TempDir(), "directory on the disk to measure")
	count := fs.Int("count", 200, "writes to time")
	size := fs.Int("size", 4096, "bytes per write")
	label := fs.String("label", "", "label written into the result")
	jsonPath := fs.String("json", "", "append the result as a JSON line to this file (- for stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *count < 1 || *size < 1 {
		return errors.New("--count and --size must be at least 1")
	}
	res, err := measureFsync(*dir, *count, *size)
	if err != nil {
		return err
	}
	res.Label = *label
	if *jsonPath == "-" {
		return writeJSON(stdout, res)
	}
	fmt.Fprintf(stdout, "fsync of %d-byte writes in %s: p50 %s ms, p99 %s ms, max %s ms, %.0f syncs/s\n",
		*size, *dir, ms(res.Latency.P50), ms(res.Latency.P99), ms(res.Latency.Max), res.OpsPerSec)
	if *jsonPath != "" {
		return emit(res, *jsonPath, io.Discard)
	}
	return nil
}

func measureFsync(dir string, count, size int) (*Result, error) {
	f, err := os.CreateTemp(dir, "zkbench-fsync-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	// Preallocate with real blocks, as a transaction log does, so the timed writes do not
	// allocate.
	block := payload(size)
	for range count {
		if _, err := f.Write(block); err != nil {
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	rec := newRecorder()
	start := time.Now()
	for i := range count {
		t := time.Now()
		if _, err := f.WriteAt(block, int64(i*size)); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		rec.record(time.Since(t), nil)
	}
	res := &Result{Kind: kindFsync, Workload: "fsync", Servers: filepath.Clean(dir), DataSize: size}
	res.fill(rec, time.Since(start))
	return res, nil
}

func cmdCompare(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("zkbench compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	a := fs.String("a", "", "JSON-lines results of the first server (the numerator of ratios)")
	b := fs.String("b", "", "JSON-lines results of the second server")
	aName := fs.String("a-name", "zkd", "name of the first server")
	bName := fs.String("b-name", "ZooKeeper", "name of the second server")
	goals := fs.Bool("goals", true, "start with issue 16's goals table (false for servers the goals are not about, e.g. etcd)")
	notesPath := fs.String("notes", "", `file of "goal-key: text" lines explaining goals (a markdown link or a sentence), shown in a last "why" column`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	var notes map[string]string
	if *notesPath != "" {
		var err error
		if notes, err = readNotesFile(*notesPath); err != nil {
			return err
		}
	}
	if *a == "" || *b == "" {
		return errors.New("--a and --b are required")
	}
	ra, err := readResultsFile(*a)
	if err != nil {
		return err
	}
	rb, err := readResultsFile(*b)
	if err != nil {
		return err
	}
	if !*goals && notes != nil {
		return errors.New("--notes explain the goals table: not with --goals=false")
	}
	writeComparison(stdout, newSide(*aName, ra), newSide(*bName, rb), *goals, notes)
	return nil
}

func cmdPlot(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("zkbench plot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "latency.svg", "SVG file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var all []*Result
	for _, p := range fs.Args() {
		rs, err := readResultsFile(p)
		if err != nil {
			return err
		}
		all = append(all, rs...)
	}
	return writePlotFile(*out, all)
}
