package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// within reports whether got is within HDR's three-significant-digit precision of want.
func within(got, want float64) bool { return math.Abs(got-want) <= want*0.001+1 }

func TestRecorderPercentiles(t *testing.T) {
	r := newRecorder()
	for us := 1; us <= 10000; us++ {
		r.record(time.Duration(us)*time.Microsecond, nil)
	}
	l := summarize(r.hist)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"p50", l.P50, 5000}, {"p90", l.P90, 9000}, {"p99", l.P99, 9900},
		{"p99.9", l.P999, 9990}, {"max", l.Max, 10000}, {"mean", l.Mean, 5000.5},
	} {
		if !within(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if len(l.Spectrum) != len(spectrumPercentiles) {
		t.Fatalf("spectrum has %d points, want %d", len(l.Spectrum), len(spectrumPercentiles))
	}
	for i := 1; i < len(l.Spectrum); i++ {
		if l.Spectrum[i].Micros < l.Spectrum[i-1].Micros {
			t.Errorf("spectrum not monotonic at %v: %v", l.Spectrum[i].Percentile, l.Spectrum)
		}
	}
}

func TestRecorderMergeAndErrors(t *testing.T) {
	a, b := newRecorder(), newRecorder()
	for range 90 {
		a.record(100*time.Microsecond, nil)
	}
	for range 10 {
		b.record(50*time.Millisecond, nil)
	}
	b.record(0, jute.ErrNoNode)
	b.record(0, fmt.Errorf("read: %w: %w", errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: reset"), jute.ErrConnectionLoss))
	b.record(0, fmt.Errorf("wrapped: %w", jute.ErrNoNode))
	b.record(2*time.Hour, nil) // beyond the histogram: clamped, still counted
	a.merge(b)
	if a.ops != 101 || a.errs != 3 || a.clamps != 1 {
		t.Fatalf("ops %d errs %d clamps %d, want 101 3 1", a.ops, a.errs, a.clamps)
	}
	if a.kinds["zk: node does not exist"] != 2 || a.kinds["zk: connection loss"] != 1 || len(a.kinds) != 2 {
		t.Errorf("error kinds %v", a.kinds)
	}
	l := summarize(a.hist)
	if !within(l.P50, 100) || !within(l.P99, 50000) || !within(l.Max, float64(histMax)) {
		// p50 in the fast group, p99 in the slow one, max clamped to the histogram's top.
		t.Errorf("merged latency %+v", l)
	}
	if got := errorSummary(a.kinds); got != "zk: node does not exist: 2; zk: connection loss: 1" {
		t.Errorf("errorSummary = %q", got)
	}
}

func TestResultFill(t *testing.T) {
	r := newRecorder()
	for range 500 {
		r.record(time.Millisecond, nil)
	}
	r.record(0, jute.ErrBadVersion)
	var res Result
	res.fill(r, 2*time.Second)
	if res.Ops != 500 || res.Errors != 1 || res.OpsPerSec != 250 || res.Seconds != 2 {
		t.Errorf("fill: %+v", res)
	}
	if res.ErrorKinds["zk: bad version"] != 1 {
		t.Errorf("error kinds %v", res.ErrorKinds)
	}
	res.fillServer(procSample{ok: true, cpu: time.Second, rss: 1 << 20}, procSample{ok: true, cpu: 2 * time.Second, rss: 3 << 20})
	if res.ServerCPUSeconds != 1 || res.ServerCPUPerOpUS != 2000 || res.ServerRSSStart != 1<<20 || res.ServerRSSEnd != 3<<20 {
		t.Errorf("fillServer: %+v", res)
	}
	res.fillClient(1500 * time.Microsecond)
	if res.ClientCPUSeconds != 0.002 || res.ClientCPUPerOpUS != 3 {
		t.Errorf("fillClient: %v s, %v µs/op", res.ClientCPUSeconds, res.ClientCPUPerOpUS)
	}
	var empty Result
	empty.fill(newRecorder(), 0)
	empty.fillServer(procSample{}, procSample{ok: true})
	empty.fillClient(time.Second)
	if empty.OpsPerSec != 0 || empty.Latency.P99 != 0 || empty.ServerRSSEnd != 0 || empty.ClientCPUPerOpUS != 0 {
		t.Errorf("empty fill: %+v", empty)
	}
}

func TestParseProc(t *testing.T) {
	// The command name may hold spaces and parentheses.
	stat := "4242 (java (zk) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 40 0 123 456 789\n"
	cpu, err := parseStatCPU([]byte(stat))
	if err != nil || cpu != 3250*time.Millisecond {
		t.Errorf("parseStatCPU = %v, %v; want 3.25s", cpu, err)
	}
	kthread := "76 (kdamond.0) S 2 0 0 0 -1 2129984 0 0 0 0 7 1985 0 0 20 0 1 0 9 0 0\n"
	if flags, ticks, err := parseStatFlagsTicks([]byte(kthread)); err != nil || flags&pfKthread == 0 || ticks != 1992 {
		t.Errorf("kernel thread: flags %#x ticks %d err %v", flags, ticks, err)
	}
	if flags, _, _ := parseStatFlagsTicks([]byte(stat)); flags&pfKthread != 0 {
		t.Error("a process taken for a kernel thread")
	}
	if _, err := parseStatCPU([]byte("4242 (x) S 1 2")); err == nil {
		t.Error("parseStatCPU accepted a short line")
	}
	status := "Name:\tjava\nVmPeak:\t  999 kB\nVmRSS:\t  123456 kB\nThreads:\t40\n"
	rss, err := parseStatusRSS([]byte(status))
	if err != nil || rss != 123456*1024 {
		t.Errorf("parseStatusRSS = %v, %v", rss, err)
	}
	if _, err := parseStatusRSS([]byte("Name:\tx\n")); err == nil {
		t.Error("parseStatusRSS accepted a status without VmRSS")
	}
}

func TestSampleSelf(t *testing.T) {
	s, err := sampleProc(0)
	if err != nil || s.ok {
		t.Fatalf("pid 0: %+v, %v", s, err)
	}
	if _, err := sampleProc(1 << 30); err == nil {
		t.Error("no error for a pid that does not exist")
	}
}

func TestMachineUse(t *testing.T) {
	a, err := parseProcStat([]byte("cpu  100 0 50 800 50 10 5 20 0 0\ncpu0 1 2 3 4 5 6 7 8\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseProcStat([]byte("cpu  234 0 100 850 100 20 15 36 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	a.kthreads, b.kthreads = 1000, 1016
	// 320 ticks passed: 220 busy (user+system+irq+softirq+steal), 50 idle, 50 iowait; 16
	// stolen; kernel threads had 16.
	u := machineDelta(a, b)
	if !within(u.busy*100, 6875) || !within(u.iowait*100, 1562) || !within(u.irq*100, 625) || !within(u.kthreads*100, 500) || !within(u.steal*100, 500) {
		t.Errorf("machine use %+v, want busy 68.75, iowait 15.6, irq 6.25, kernel threads and steal 5", u)
	}
	// Over 1 s on 2 CPUs, the server used 0.5 s and zkbench 0.3 s: 40% of the machine;
	// interrupts had 6.25%, kernel threads 5% and other virtual machines 5%, so other
	// processes had the remaining 12.5% of the 68.75% busy.
	res := Result{Seconds: 1, ServerCPUSeconds: 0.5, ClientCPUSeconds: 0.3}
	res.fillMachine(a, b, 2)
	if res.MachineBusyPct != 69 || res.MachineIOWaitPct != 16 || res.KernelThreadsPct != 5 || res.StealPct != 5 || res.OtherCPUPct != 13 {
		t.Errorf("fillMachine: %+v", res)
	}
	if u := machineDelta(machineSample{}, b); u.busy != 0 {
		t.Errorf("busy from a missing sample: %v", u.busy)
	}
	if _, err := parseProcStat([]byte("intr 1 2 3\n")); err == nil {
		t.Error("parseProcStat accepted a file without a cpu line")
	}
	if runtime.GOOS != "linux" {
		return
	}
	if m := sampleMachine(); !m.ok || m.total <= 0 || m.kthreads <= 0 {
		t.Errorf("sampleMachine on this machine: %+v", m)
	}
}

// Network errors name their ports; counted by kind, a thousand refused connections are one
// kind, not a thousand.
func TestErrKindDropsAddresses(t *testing.T) {
	mk := func(port int, err error) error {
		return fmt.Errorf("connect to 127.0.0.1:2181: %w", &net.OpError{Op: "read", Net: "tcp",
			Source: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}, Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2181}, Err: err})
	}
	reset := &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}
	if a, b := errKind(mk(40000, reset)), errKind(mk(40001, reset)); a != b || a != syscall.ECONNRESET.Error() {
		t.Errorf("connection resets from two ports: kinds %q and %q, want both %q", a, b, syscall.ECONNRESET.Error())
	}
	if k := errKind(fmt.Errorf("connect to 127.0.0.1:2181: %w", io.EOF)); k != "connection closed by the server" {
		t.Errorf("EOF: kind %q", k)
	}
	if k := errKind(mk(40002, errors.New("i/o timeout"))); k != "read: i/o timeout" {
		t.Errorf("op error: kind %q", k)
	}
}
