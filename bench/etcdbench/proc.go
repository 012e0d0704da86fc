package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of utime and stime in /proc/PID/stat: 100 on every Linux architecture
// Go supports.
const userHZ = 100

// procSample is one reading of the server's CPU time and resident memory.
type procSample struct {
	ok  bool
	cpu time.Duration // user + system
	rss int64         // bytes
}

// sampleProc reads /proc/PID/stat and /proc/PID/status, as zkbench does. pid 0 gives an
// empty sample.
func sampleProc(pid int) (procSample, error) {
	if pid <= 0 {
		return procSample{}, nil
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}, fmt.Errorf("server pid %d: %w", pid, err)
	}
	cpu, err := parseStatCPU(stat)
	if err != nil {
		return procSample{}, fmt.Errorf("server pid %d: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procSample{}, fmt.Errorf("server pid %d: %w", pid, err)
	}
	rss, err := parseStatusRSS(status)
	if err != nil {
		return procSample{}, fmt.Errorf("server pid %d: %w", pid, err)
	}
	return procSample{ok: true, cpu: cpu, rss: rss}, nil
}

// parseStatCPU returns utime+stime (fields 14 and 15) of a /proc/PID/stat line. The command
// name in parentheses may hold spaces, so fields are counted after its closing parenthesis.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat: %d fields", len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("malformed /proc stat: %w", err)
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// parseStatusRSS returns VmRSS in bytes from /proc/PID/status.
func parseStatusRSS(b []byte) (int64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("malformed VmRSS line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed VmRSS line %q: %w", line, err)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// machineSample is the machine's CPU time from the first line of /proc/stat, and the time
// of the kernel threads then alive, in ticks: zkbench's figures of how busy the machine
// was, so that `zkbench compare` warns of a disturbed etcd run as of a zkd one.
type machineSample struct {
	ok                              bool
	total, idle, iowait, irq, steal int64
	kthreads                        int64
}

func sampleMachine() machineSample {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineSample{}
	}
	m, err := parseProcStat(b)
	if err != nil {
		return machineSample{}
	}
	m.kthreads = kernelThreadTicks()
	return m
}

// pfKthread is PF_KTHREAD in the flags field of /proc/PID/stat.
const pfKthread = 0x00200000

// kernelThreadTicks sums the CPU time of the kernel threads (journal, block I/O, writeback):
// work the run's fsyncs cause that no process is charged for.
func kernelThreadTicks() int64 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var sum int64
	for _, e := range ents {
		if n := e.Name(); n[0] < '0' || n[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		flags, err1 := strconv.ParseUint(f[6], 10, 64)
		ut, err2 := strconv.ParseInt(f[11], 10, 64)
		st, err3 := strconv.ParseInt(f[12], 10, 64)
		if errors.Join(err1, err2, err3) == nil && flags&pfKthread != 0 {
			sum += ut + st
		}
	}
	return sum
}

// parseProcStat reads the aggregate "cpu" line: user nice system idle iowait irq softirq
// steal (guest time is already counted in user).
func parseProcStat(b []byte) (machineSample, error) {
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineSample{}, errors.New("malformed /proc/stat")
	}
	var m machineSample
	for i, v := range f[1:9] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return machineSample{}, fmt.Errorf("malformed /proc/stat field %q", v)
		}
		m.total += n
		switch i {
		case 3:
			m.idle = n
		case 4:
			m.iowait = n
		case 5, 6:
			m.irq += n
		case 7:
			m.steal = n
		}
	}
	m.ok = true
	return m, nil
}

// fillMachine sets the machine-wide figures as zkbench does (cmd/zkbench/stats.go); the
// server and client CPU must be filled in already.
func (res *Result) fillMachine(a, b machineSample, ncpu int) {
	d := b.total - a.total
	if !a.ok || !b.ok || d <= 0 || res.Seconds == 0 || ncpu <= 0 {
		return
	}
	pct := func(n int64) float64 { return 100 * float64(max(n, 0)) / float64(d) }
	idle := (b.idle - a.idle) + (b.iowait - a.iowait)
	busy, irq, kthreads, steal := pct(d-idle), pct(b.irq-a.irq), pct(b.kthreads-a.kthreads), pct(b.steal-a.steal)
	res.MachineBusyPct, res.MachineIOWaitPct = math.Round(busy), math.Round(pct(b.iowait-a.iowait))
	res.KernelThreadsPct, res.StealPct = math.Round(kthreads), math.Round(steal)
	own := 100*(res.ServerCPUSeconds+res.ClientCPUSeconds)/(res.Seconds*float64(ncpu)) + irq + kthreads
	res.OtherCPUPct = math.Round(max(0, busy-own-steal))
}
