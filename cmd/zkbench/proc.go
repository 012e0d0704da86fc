package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of utime and stime in /proc/PID/stat. The kernel reports them in
// USER_HZ, which is 100 on every Linux architecture Go supports.
const userHZ = 100

// procSample is one reading of a process's CPU time and resident memory.
type procSample struct {
	ok  bool
	cpu time.Duration // user + system
	rss int64         // bytes
}

// sampleProc reads /proc/PID/stat and /proc/PID/status. pid 0 gives an empty sample.
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

// parseStatCPU returns utime+stime from the contents of /proc/PID/stat. The command name
// (field 2) may contain spaces and parentheses, so fields are counted from the last ')'.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc stat: %d fields", len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed /proc stat times %q %q", f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// parseStatusRSS returns VmRSS in bytes from the contents of /proc/PID/status.
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
			return 0, fmt.Errorf("malformed VmRSS line %q", line)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no VmRSS in /proc status")
}

// machineSample is the machine's CPU time from the first line of /proc/stat, in ticks.
type machineSample struct {
	ok                       bool
	total, idle, iowait, irq int64
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
	return m
}

// parseProcStat reads the aggregate "cpu" line: user nice system idle iowait irq softirq
// steal (guest time is already counted in user).
func parseProcStat(b []byte) (machineSample, error) {
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineSample{}, fmt.Errorf("malformed /proc/stat")
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
		}
	}
	m.ok = true
	return m, nil
}

// machineUse gives, in percent of all CPUs' time between two samples: the busy share, the
// share idle waiting for I/O, and the share spent in interrupts (loopback networking runs
// there, on behalf of whichever process).
func machineUse(a, b machineSample) (busy, iowait, irq float64) {
	d := b.total - a.total
	if !a.ok || !b.ok || d <= 0 {
		return 0, 0, 0
	}
	idle := (b.idle - a.idle) + (b.iowait - a.iowait)
	pct := func(n int64) float64 { return 100 * float64(n) / float64(d) }
	return pct(d - idle), pct(b.iowait - a.iowait), pct(b.irq - a.irq)
}
