package benchstat

import (
	"context"
	"errors"
	"io"
	"maps"
	"math"
	"net"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds, from 1 µs to a minute, to three significant digits.
const (
	histMin    = 1
	histMax    = int64(time.Minute / time.Microsecond)
	histDigits = 3
)

// spectrumPercentiles are the points kept in the JSON output for plotting.
var spectrumPercentiles = []float64{0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999, 100}

// Recorder collects one goroutine's latencies and errors; it is not safe for concurrent use.
// Recorders are merged at the end of a run (Merge) and the total fills a Result (Fill).
type Recorder struct {
	hist   *hdrhistogram.Histogram
	ops    int64
	errs   int64
	kinds  map[string]int64
	clamps int64 // latencies above histMax, recorded as histMax
	kind   func(error) string
}

// NewRecorder returns an empty Recorder that counts errors under kind(err): a client's own
// error codes name errors better than their messages, which carry addresses and ports. A nil
// kind is ErrKind.
func NewRecorder(kind func(error) string) *Recorder {
	if kind == nil {
		kind = ErrKind
	}
	return &Recorder{hist: hdrhistogram.New(histMin, histMax, histDigits), kinds: map[string]int64{}, kind: kind}
}

// Record counts one completed operation: a success with its latency, or an error.
func (r *Recorder) Record(d time.Duration, err error) {
	if err != nil {
		r.errs++
		r.kinds[r.kind(err)]++
		return
	}
	r.ops++
	us := int64(d / time.Microsecond)
	if us < histMin {
		us = histMin
	}
	if us > histMax {
		us = histMax
		r.clamps++
	}
	// In range by construction, so RecordValue cannot fail.
	_ = r.hist.RecordValue(us)
}

// Merge adds o's counts to r.
func (r *Recorder) Merge(o *Recorder) {
	r.hist.Merge(o.hist)
	r.ops += o.ops
	r.errs += o.errs
	r.clamps += o.clamps
	for k, v := range o.kinds {
		r.kinds[k] += v
	}
}

// Ops is the number of successes recorded.
func (r *Recorder) Ops() int64 { return r.ops }

// Errors is the number of errors recorded.
func (r *Recorder) Errors() int64 { return r.errs }

// ErrorKinds counts the errors by kind; the map is r's own, not to be modified.
func (r *Recorder) ErrorKinds() map[string]int64 { return r.kinds }

// Latency summarizes the latencies of the successes recorded.
func (r *Recorder) Latency() Latency { return summarize(r.hist) }

// ErrKind names an error for counting when the client has no code for it: a timeout, the
// errno or operation of a network error, a closed connection; otherwise the start of its
// message. Network errors name the connection's ports: by message, every one would be a
// kind of its own.
func ErrKind(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "connection closed by the server"
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Op + ": " + op.Err.Error()
	}
	s := err.Error()
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// Point is one percentile of a latency distribution.
type Point struct {
	Percentile float64 `json:"p"`
	Micros     float64 `json:"us"`
}

// Latency summarizes a latency distribution, in microseconds.
type Latency struct {
	Mean     float64 `json:"mean"`
	P50      float64 `json:"p50"`
	P90      float64 `json:"p90"`
	P99      float64 `json:"p99"`
	P999     float64 `json:"p999"`
	Max      float64 `json:"max"`
	Spectrum []Point `json:"spectrum,omitempty"`
}

func summarize(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	l := Latency{
		Mean: Round3(h.Mean()),
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

// Round3 rounds v to three decimals, as the Result's derived figures are written.
func Round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Result is one run of one workload: the line zkbench and etcdbench write as JSON, and
// `zkbench compare` renders in tables. Its JSON field names are that file format.
type Result struct {
	Kind     string `json:"kind,omitempty"`  // "" for a load run, "wait" or "fsync"
	Label    string `json:"label,omitempty"` // what the run was against, e.g. "zkd"
	Workload string `json:"workload"`
	// Of is the workload that ran when its results are recorded under another name (run --as).
	Of          string `json:"of,omitempty"`
	Servers     string `json:"servers,omitempty"`
	Clients     int    `json:"clients,omitempty"`
	Outstanding int    `json:"outstanding,omitempty"`
	DataSize    int    `json:"data_size,omitempty"`
	Keys        int    `json:"keys,omitempty"`
	// Batch is the number of items per operation: ops in a multi, znodes per create batch.
	Batch int `json:"batch,omitempty"`
	// Params are the caller's names for the run (zkbench run --param), e.g. the sweep and the
	// x value of a point of a curve, copied into the result so a plot can find them.
	Params map[string]string `json:"params,omitempty"`

	Ops        int64            `json:"ops"`
	Errors     int64            `json:"errors"`
	ErrorKinds map[string]int64 `json:"error_kinds,omitempty"`
	Seconds    float64          `json:"seconds"`
	OpsPerSec  float64          `json:"ops_per_sec"`
	Latency    Latency          `json:"latency_us"`

	// Server figures, from /proc when --server-pid is given.
	ServerCPUSeconds float64 `json:"server_cpu_s,omitempty"`
	ServerCPUPerOpUS float64 `json:"server_cpu_us_per_op,omitempty"`
	ServerRSSStart   int64   `json:"server_rss_start,omitempty"`
	ServerRSSEnd     int64   `json:"server_rss_end,omitempty"`
	BytesPerZnode    float64 `json:"bytes_per_znode,omitempty"`
	// SnapshotMaxMS and SnapshotCount are the server's snapshots so far (mntr's
	// zk_max_snapshottime and zk_cnt_snapshottime), read after a run that grew the tree:
	// the longest is about the last, of the biggest tree.
	SnapshotMaxMS float64 `json:"snapshot_max_ms,omitempty"`
	SnapshotCount int64   `json:"snapshot_count,omitempty"`
	// BytesPerSession is the growth of the server's RSS per idle session held open.
	BytesPerSession float64 `json:"bytes_per_session,omitempty"`
	// NotificationsPerSec is the watch notifications delivered per second: writes/s times
	// the watchers that received each.
	NotificationsPerSec float64 `json:"notifications_per_sec,omitempty"`
	// The benchmark client's own CPU (getrusage: user+system of its process, SelfCPU) over the
	// measured window, and per op next to the server's: how much of the machine the client
	// took to measure it.
	ClientCPUSeconds float64 `json:"client_cpu_s,omitempty"`
	ClientCPUPerOpUS float64 `json:"client_cpu_us_per_op,omitempty"`
	// The whole machine over the measured window, in percent of all CPUs: to tell a
	// CPU-bound run (busy near 100) from one waiting on the disk (iowait) or on itself.
	MachineBusyPct   float64 `json:"machine_busy_pct,omitempty"`
	MachineIOWaitPct float64 `json:"machine_iowait_pct,omitempty"`
	// KernelThreadsPct is the kernel threads' share (journal, writeback, block I/O).
	KernelThreadsPct float64 `json:"kernel_threads_pct,omitempty"`
	// StealPct is the share the hypervisor gave to other virtual machines.
	StealPct float64 `json:"steal_pct,omitempty"`
	// OtherCPUPct is the machine's busy share not spent by the server, the client, interrupts
	// or kernel threads: other processes competing for the CPUs, which makes a run
	// unreliable.
	OtherCPUPct      float64 `json:"other_cpu_pct,omitempty"`
	ElapsedSeconds   float64 `json:"elapsed_s,omitempty"` // wait: time to the first success
	Note             string  `json:"note,omitempty"`
	Attempts         int     `json:"attempts,omitempty"` // runs made; the least disturbed is kept
	LatenciesClamped int64   `json:"latencies_clamped,omitempty"`
	// Snapshot windows (zkbench run --snapshot-dir): the requests in flight while the server
	// was writing a snapshot, and the others; the measured seconds with a snapshot running
	// and the snapshots seen.
	DuringSnapshot   *Window `json:"during_snapshot,omitempty"`
	OutsideSnapshot  *Window `json:"outside_snapshot,omitempty"`
	SnapshotRunningS float64 `json:"snapshot_running_s,omitempty"`
	SnapshotsSeen    int     `json:"snapshots_seen,omitempty"`
}

// Window is the successes and their latency in part of a measured window.
type Window struct {
	Ops     int64   `json:"ops"`
	Latency Latency `json:"latency_us"`
}

// Fill sets the counts and latency fields from a merged Recorder measured over elapsed.
func (res *Result) Fill(r *Recorder, elapsed time.Duration) {
	res.Ops = r.ops
	res.Errors = r.errs
	if len(r.kinds) > 0 {
		res.ErrorKinds = maps.Clone(r.kinds)
	}
	res.Seconds = Round3(elapsed.Seconds())
	if elapsed > 0 {
		res.OpsPerSec = math.Round(float64(r.ops) / elapsed.Seconds())
	}
	res.Latency = summarize(r.hist)
	res.LatenciesClamped = r.clamps
}

// FillServer sets the server-side fields from two samples of the server process (or the sums
// over an ensemble's), at the measured window's edges.
func (res *Result) FillServer(before, after ProcSample) {
	if !before.OK || !after.OK {
		return
	}
	cpu := after.CPU - before.CPU
	res.ServerCPUSeconds = Round3(cpu.Seconds())
	if res.Ops > 0 {
		res.ServerCPUPerOpUS = Round3(float64(cpu.Microseconds()) / float64(res.Ops))
	}
	res.ServerRSSStart = before.RSS
	res.ServerRSSEnd = after.RSS
}

// FillClient sets the benchmark client's own CPU figures from its CPU time over the window
// (SelfCPU's difference); the ops must be filled in already.
func (res *Result) FillClient(cpu time.Duration) {
	if cpu <= 0 {
		return
	}
	res.ClientCPUSeconds = Round3(cpu.Seconds())
	if res.Ops > 0 {
		res.ClientCPUPerOpUS = Round3(float64(cpu.Nanoseconds()) / 1e3 / float64(res.Ops))
	}
}

// FillMachine sets the machine-wide figures from two samples of /proc/stat, given the number
// of CPUs; the server and client CPU times must be filled in already.
func (res *Result) FillMachine(before, after MachineSample, ncpu int) {
	u := machineDelta(before, after)
	if u.busy == 0 || res.Seconds == 0 || ncpu <= 0 {
		return
	}
	res.MachineBusyPct, res.MachineIOWaitPct = math.Round(u.busy), math.Round(u.iowait)
	res.KernelThreadsPct, res.StealPct = math.Round(u.kthreads), math.Round(u.steal)
	// Interrupts and kernel threads are not charged to any process, but are mostly the
	// run's own networking and disk writes.
	own := 100*(res.ServerCPUSeconds+res.ClientCPUSeconds)/(res.Seconds*float64(ncpu)) + u.irq + u.kthreads
	res.OtherCPUPct = math.Round(max(0, u.busy-own-u.steal))
}
