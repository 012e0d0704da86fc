package benchstat

import (
	"os"
	"runtime"
	"testing"
	"time"
)

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
	if _, err := parseStatusRSS([]byte("VmRSS:\t12x kB\n")); err == nil {
		t.Error("parseStatusRSS accepted a malformed VmRSS")
	}
}

func TestSampleSelf(t *testing.T) {
	s, err := SampleProc(0)
	if err != nil || s.OK {
		t.Fatalf("pid 0: %+v, %v", s, err)
	}
	if _, err := SampleProc(1 << 30); err == nil {
		t.Error("no error for a pid that does not exist")
	}
	if runtime.GOOS != "linux" {
		return
	}
	// Two processes' samples add up.
	self := os.Getpid()
	one, err := SampleProcs([]int{self})
	if err != nil {
		t.Fatal(err)
	}
	if !one.OK || one.RSS <= 0 {
		t.Errorf("this process: %+v", one)
	}
	two, err := SampleProcs([]int{self, self})
	if err != nil {
		t.Fatal(err)
	}
	if !two.OK || two.RSS < 2*one.RSS*9/10 {
		t.Errorf("sum of two samples of this process: rss %d, one is %d", two.RSS, one.RSS)
	}
	if s, err := SampleProcs(nil); err != nil || s.OK {
		t.Errorf("no pids: %+v, %v", s, err)
	}
	if _, err := SampleProcs([]int{self, 1 << 30}); err == nil {
		t.Error("no error when one of the pids does not exist")
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
	// Over 1 s on 2 CPUs, the server used 0.5 s and the client 0.3 s: 40% of the machine;
	// interrupts had 6.25%, kernel threads 5% and other virtual machines 5%, so other
	// processes had the remaining 12.5% of the 68.75% busy.
	res := Result{Seconds: 1, ServerCPUSeconds: 0.5, ClientCPUSeconds: 0.3}
	res.FillMachine(a, b, 2)
	if res.MachineBusyPct != 69 || res.MachineIOWaitPct != 16 || res.KernelThreadsPct != 5 || res.StealPct != 5 || res.OtherCPUPct != 13 {
		t.Errorf("FillMachine: %+v", res)
	}
	if u := machineDelta(MachineSample{}, b); u.busy != 0 {
		t.Errorf("busy from a missing sample: %v", u.busy)
	}
	var untouched Result
	untouched.Seconds = 1
	untouched.FillMachine(MachineSample{}, b, 2)
	if untouched.MachineBusyPct != 0 || untouched.OtherCPUPct != 0 {
		t.Errorf("FillMachine from a missing sample: %+v", untouched)
	}
	if _, err := parseProcStat([]byte("intr 1 2 3\n")); err == nil {
		t.Error("parseProcStat accepted a file without a cpu line")
	}
	if runtime.GOOS != "linux" {
		return
	}
	if m := SampleMachine(); !m.ok || m.total <= 0 || m.kthreads <= 0 {
		t.Errorf("SampleMachine on this machine: %+v", m)
	}
}

func TestSelfCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SelfCPU is measured on Unix; this test burns CPU until it shows on Linux")
	}
	start := SelfCPU()
	// Bounded: 10 s of busy work is far beyond a tick of CPU time on a loaded machine.
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for SelfCPU() <= start && time.Now().Before(deadline) {
		for i := range 1 << 20 {
			x += i
		}
	}
	if SelfCPU() <= start {
		t.Errorf("SelfCPU did not grow over busy work (%d)", x)
	}
}
