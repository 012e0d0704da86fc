package benchstat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of utime and stime in /proc/PID/stat. The kernel reports them in
// USER_HZ, which is 100 on every Linux architecture Go supports.
const userHZ = 100

// ProcSample is one reading of a process's CPU time and resident memory.
type ProcSample struct {
	OK  bool          // false for no process
	CPU time.Duration // user + system
	RSS int64         // bytes
}

// SampleProc reads /proc/PID/stat and /proc/PID/status. pid 0 gives an empty sample.
func SampleProc(pid int) (ProcSample, error) {
	if pid <= 0 {
		return ProcSample{}, nil
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcSample{}, fmt.Errorf("server pid %d: %w", pid, err)
	}
	cpu, err := parseStatCPU(stat)
	if err != nil {
		return ProcSample{}, fmt.Errorf("server pid %d: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcSample{}, fmt.Errorf("server pid %d: %w", pid, err)
	}
	rss, err := parseStatusRSS(status)
	if err != nil {
		return ProcSample{}, fmt.Errorf("server pid %d: %w", pid, err)
	}
	return ProcSample{OK: true, CPU: cpu, RSS: rss}, nil
}

// SampleProcs sums the samples of pids (the servers of an ensemble measured together). No
// pid gives an empty sample.
func SampleProcs(pids []int) (ProcSample, error) {
	var sum ProcSample
	for _, pid := range pids {
		s, err := SampleProc(pid)
		if err != nil {
			return ProcSample{}, err
		}
		sum.OK = sum.OK || s.OK
		sum.CPU += s.CPU
		sum.RSS += s.RSS
	}
	return sum, nil
}

// parseStatCPU returns utime+stime from the contents of /proc/PID/stat.
func parseStatCPU(b []byte) (time.Duration, error) {
	_, ticks, err := parseStatFlagsTicks(b)
	return time.Duration(ticks) * time.Second / userHZ, err
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
			return 0, fmt.Errorf("malformed VmRSS line %q: %w", line, err)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// MachineSample is the machine's CPU time from the first line of /proc/stat, and the time
// of the kernel threads then alive, in ticks. Two of them, taken at a measured window's
// edges, give Result's machine figures (Result.FillMachine).
type MachineSample struct {
	ok                              bool
	total, idle, iowait, irq, steal int64
	kthreads                        int64
}

// SampleMachine reads /proc/stat and the kernel threads' times; off Linux, or should
// /proc/stat not parse, it gives an empty sample, which Result.FillMachine ignores.
func SampleMachine() MachineSample {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return MachineSample{}
	}
	m, err := parseProcStat(b)
	if err != nil {
		return MachineSample{}
	}
	m.kthreads = kernelThreadTicks()
	return m
}

// pfKthread is PF_KTHREAD in the flags field of /proc/PID/stat.
const pfKthread = 0x00200000

// kernelThreadTicks sums the CPU time of the kernel threads (the file system's journal,
// block I/O and writeback workers): work a run causes, mostly by fsync, that no process is
// charged for. Threads that come and go between two samples are missed.
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
		if flags, ticks, err := parseStatFlagsTicks(b); err == nil && flags&pfKthread != 0 {
			sum += ticks
		}
	}
	return sum
}

// parseStatFlagsTicks returns the flags (field 9) and utime+stime in ticks (fields 14, 15)
// of a /proc/PID/stat line.
func parseStatFlagsTicks(b []byte) (flags uint64, ticks int64, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("malformed /proc stat: %d fields", len(f))
	}
	flags, err1 := strconv.ParseUint(f[6], 10, 64)
	ut, err2 := strconv.ParseInt(f[11], 10, 64)
	st, err3 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return 0, 0, fmt.Errorf("malformed /proc stat: %w", err)
	}
	return flags, ut + st, nil
}

// parseProcStat reads the aggregate "cpu" line: user nice system idle iowait irq softirq
// steal (guest time is already counted in user).
func parseProcStat(b []byte) (MachineSample, error) {
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return MachineSample{}, errors.New("malformed /proc/stat")
	}
	var m MachineSample
	for i, v := range f[1:9] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return MachineSample{}, fmt.Errorf("malformed /proc/stat field %q", v)
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

// machineUse is the machine's use between two samples, in percent of all CPUs' time.
type machineUse struct {
	busy     float64
	iowait   float64 // idle, waiting for I/O
	irq      float64 // interrupts: loopback networking runs there, for whichever process
	kthreads float64 // kernel threads
	steal    float64 // taken by the hypervisor for other virtual machines
}

func machineDelta(a, b MachineSample) machineUse {
	d := b.total - a.total
	if !a.ok || !b.ok || d <= 0 {
		return machineUse{}
	}
	idle := (b.idle - a.idle) + (b.iowait - a.iowait)
	pct := func(n int64) float64 { return 100 * float64(max(n, 0)) / float64(d) }
	return machineUse{
		busy: pct(d - idle), iowait: pct(b.iowait - a.iowait), irq: pct(b.irq - a.irq),
		kthreads: pct(b.kthreads - a.kthreads), steal: pct(b.steal - a.steal),
	}
}
