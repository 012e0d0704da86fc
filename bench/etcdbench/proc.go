package main

import (
	"bytes"
	"errors"
	"fmt"
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
