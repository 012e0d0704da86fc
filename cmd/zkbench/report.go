package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// Result kinds: a load run, a wait for the first success, a disk measurement.
const (
	kindLoad  = ""
	kindWait  = "wait"
	kindFsync = "fsync"
)

// tableHeader and tableRow print results as an aligned text table, a row at a time, so a
// row appears as soon as its run ends.
func tableHeader(w io.Writer) {
	fmt.Fprintf(w, "%-10s %-10s %7s %4s %7s %10s %10s %7s %9s %9s %9s %9s %9s %9s %9s %8s %8s %9s %5s %5s %5s\n",
		"workload", "label", "clients", "out", "size", "ops", "ops/s", "errors",
		"p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms", "srv us/op", "cli us/op", "srv cpu%", "cli cpu%", "srv rss MB", "box%", "oth%", "stl%")
}

func tableRow(w io.Writer, r *Result) {
	if r.Kind == kindWait {
		fmt.Fprintf(w, "%-10s %-10s %s: first success after %.3f s (%d failed attempts)\n",
			r.Workload, r.Label, r.Servers, r.ElapsedSeconds, r.Errors)
		return
	}
	fmt.Fprintf(w, "%-10s %-10s %7d %4d %7d %10d %10.0f %7d %9s %9s %9s %9s %9s %9s %9s %8s %8s %9s %5s %5s %5s\n",
		r.Workload, dash(r.Label), r.Clients, r.Outstanding, r.DataSize, r.Ops, r.OpsPerSec, r.Errors,
		ms(r.Latency.P50), ms(r.Latency.P90), ms(r.Latency.P99), ms(r.Latency.P999), ms(r.Latency.Max),
		opt(r.ServerCPUPerOpUS, "%.1f"), opt(r.ClientCPUPerOpUS, "%.2f"), pct(r.ServerCPUSeconds, r.Seconds), pct(r.ClientCPUSeconds, r.Seconds),
		mb(r.ServerRSSEnd), opt(r.MachineBusyPct, "%.0f"), opt(r.OtherCPUPct, "%.0f"), opt(r.StealPct, "%.0f"))
	if r.Note != "" || r.BytesPerZnode != 0 || r.Errors > 0 {
		var extra []string
		if r.Note != "" {
			extra = append(extra, r.Note)
		}
		if r.BytesPerZnode != 0 {
			extra = append(extra, fmt.Sprintf("%.0f bytes of server RSS per znode", r.BytesPerZnode))
		}
		if r.Errors > 0 {
			extra = append(extra, "errors: "+errorSummary(r.ErrorKinds))
		}
		fmt.Fprintf(w, "%-10s   %s\n", "", strings.Join(extra, "; "))
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ms(us float64) string {
	if us == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", us/1000)
}

func opt(v float64, f string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(f, v)
}

func pct(cpu, wall float64) string {
	if cpu == 0 || wall == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", 100*cpu/wall)
}

func mb(b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(b)/(1<<20))
}

// writeJSON writes r as one line of JSON.
func writeJSON(w io.Writer, r *Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readResults reads JSON lines; blank lines are skipped.
func readResults(r io.Reader) ([]*Result, error) {
	var out []*Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		b := strings.TrimSpace(sc.Text())
		if b == "" {
			continue
		}
		var res Result
		if err := json.Unmarshal([]byte(b), &res); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, &res)
	}
	return out, sc.Err()
}

func readResultsFile(path string) ([]*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rs, err := readResults(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rs, nil
}

// side is one column of a comparison: a name and the last result per workload.
type side struct {
	name  string
	byWL  map[string]*Result
	order []string
}

func newSide(name string, rs []*Result) side {
	s := side{name: name, byWL: map[string]*Result{}}
	for _, r := range rs {
		if _, seen := s.byWL[r.Workload]; !seen {
			s.order = append(s.order, r.Workload)
		}
		s.byWL[r.Workload] = r
	}
	return s
}

// ratio renders a/b, or a dash when either is missing.
func ratio(a, b float64) string {
	if a == 0 || b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "—"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// goal is one of issue #6's targets: a metric of a workload whose ratio a/b is to be at
// least (atLeast) or at most the target.
type goal struct {
	what     string
	workload string
	metric   func(*Result) float64
	unit     string
	atLeast  bool
	target   float64
}

var (
	mThroughput = func(r *Result) float64 { return r.OpsPerSec }
	mCPUPerOp   = func(r *Result) float64 { return r.ServerCPUPerOpUS }
	mP99        = func(r *Result) float64 { return r.Latency.P99 / 1000 }
	mPerZnode   = func(r *Result) float64 { return r.BytesPerZnode }
	mElapsed    = func(r *Result) float64 { return r.ElapsedSeconds }
)

var goals = []goal{
	{"write throughput, set (ops/s)", "set", mThroughput, "ops/s", true, 2},
	{"read throughput, get (ops/s)", "get", mThroughput, "ops/s", true, 1.5},
	{"server CPU per op, set (µs)", "set", mCPUPerOp, "µs", false, 0.5},
	{"server CPU per op, get (µs)", "get", mCPUPerOp, "µs", false, 0.5},
	{"p99 latency, set (ms)", "set", mP99, "ms", false, 0.5},
	{"p99 latency, get (ms)", "get", mP99, "ms", false, 0.5},
	{"memory per znode (bytes of RSS)", "znodes", mPerZnode, "bytes", false, 0.5},
	{"restart recovery, clean stop (s)", "recovery-clean", mElapsed, "s", false, 0.25},
	{"restart recovery, kill -9 (s)", "recovery-kill9", mElapsed, "s", false, 0.25},
}

// writeComparison writes markdown tables comparing a (e.g. zkd) with b (e.g. ZooKeeper):
// the goals, then one table per load workload, then the wait figures. Ratios are a/b.
func writeComparison(w io.Writer, a, b side) {
	rt := fmt.Sprintf("%s / %s", a.name, b.name)
	if warn := contention(a, b); warn != "" {
		fmt.Fprintf(w, "**Warning:** %s\n\n", warn)
	}
	fmt.Fprintf(w, "### Goals\n\n| goal | target (%s) | %s | %s | ratio | met |\n|---|---|---|---|---|---|\n", rt, a.name, b.name)
	for _, g := range goals {
		ra, rb := a.byWL[g.workload], b.byWL[g.workload]
		if ra == nil && rb == nil {
			continue
		}
		va, vb := metricOf(ra, g.metric), metricOf(rb, g.metric)
		cmp := "≥"
		if !g.atLeast {
			cmp = "≤"
		}
		met := "—"
		if va > 0 && vb > 0 {
			r := va / vb
			if (g.atLeast && r >= g.target) || (!g.atLeast && r <= g.target) {
				met = "yes"
			} else {
				met = "no"
			}
		}
		fmt.Fprintf(w, "| %s | %s %.2gx | %s | %s | %s | %s |\n", g.what, cmp, g.target,
			num(va, g.unit), num(vb, g.unit), ratio(va, vb), met)
	}
	fmt.Fprintln(w)

	names := append([]string(nil), a.order...)
	for _, n := range b.order {
		if _, ok := a.byWL[n]; !ok {
			names = append(names, n)
		}
	}
	var waits []string
	for _, n := range names {
		ra, rb := a.byWL[n], b.byWL[n]
		any := ra
		if any == nil {
			any = rb
		}
		switch any.Kind {
		case kindWait:
			waits = append(waits, n)
			continue
		case kindFsync:
			continue
		}
		fmt.Fprintf(w, "### %s\n\n%s\n\n", n, shape(any))
		fmt.Fprintf(w, "| metric | %s | %s | %s |\n|---|---|---|---|\n", a.name, b.name, rt)
		row := func(label string, f func(*Result) float64, unit string) {
			va, vb := metricOf(ra, f), metricOf(rb, f)
			if va == 0 && vb == 0 {
				return
			}
			r := ratio(va, vb)
			switch unit { // a condition of the run, not a figure of the server: no ratio
			case "%m":
				r, unit = "", "%"
			case "µsm":
				r, unit = "", "µs"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", label, num(va, unit), num(vb, unit), r)
		}
		row("throughput (ops/s)", mThroughput, "ops/s")
		row("p50 latency (ms)", func(r *Result) float64 { return r.Latency.P50 / 1000 }, "ms")
		row("p99 latency (ms)", mP99, "ms")
		row("p99.9 latency (ms)", func(r *Result) float64 { return r.Latency.P999 / 1000 }, "ms")
		row("max latency (ms)", func(r *Result) float64 { return r.Latency.Max / 1000 }, "ms")
		row("server CPU per op (µs)", mCPUPerOp, "µs")
		row("server CPU (% of a core)", func(r *Result) float64 { return cpuPct(r.ServerCPUSeconds, r.Seconds) }, "%")
		row("zkbench CPU per op (µs)", func(r *Result) float64 { return r.ClientCPUPerOpUS }, "µsm")
		row("zkbench CPU (% of a core)", func(r *Result) float64 { return cpuPct(r.ClientCPUSeconds, r.Seconds) }, "%m")
		row("machine CPU busy (% of all cores)", func(r *Result) float64 { return r.MachineBusyPct }, "%m")
		row("machine CPU in iowait (%)", func(r *Result) float64 { return r.MachineIOWaitPct }, "%m")
		row("kernel threads' CPU (% of all cores)", func(r *Result) float64 { return r.KernelThreadsPct }, "%m")
		row("other processes' CPU (% of all cores)", func(r *Result) float64 { return r.OtherCPUPct }, "%m")
		row("CPU stolen by the hypervisor (%)", func(r *Result) float64 { return r.StealPct }, "%m")
		row("server RSS at end (MB)", func(r *Result) float64 { return float64(r.ServerRSSEnd) / (1 << 20) }, "MB")
		row("server RSS per znode (bytes)", mPerZnode, "bytes")
		fmt.Fprintf(w, "| errors | %s | %s | |\n", errCell(ra), errCell(rb))
		if notes := noteCells(a, b, ra, rb); notes != "" {
			fmt.Fprintf(w, "\n%s\n", notes)
		}
		fmt.Fprintln(w)
	}
	if len(waits) > 0 {
		fmt.Fprintf(w, "### Restart and failover\n\nSeconds from starting the server (or killing the leader) to the first successful request.\n\n")
		fmt.Fprintf(w, "| figure | %s | %s | %s |\n|---|---|---|---|\n", a.name, b.name, rt)
		for _, n := range waits {
			ra, rb := a.byWL[n], b.byWL[n]
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", n, waitCell(ra), waitCell(rb), ratio(metricOf(ra, mElapsed), metricOf(rb, mElapsed)))
		}
		fmt.Fprintln(w)
	}
}

// contentionLimit is the share of the machine other processes and virtual machines may take
// during a run before the comparison warns that its figures are unreliable.
const contentionLimit = 10

// contention describes the runs during which other processes or virtual machines used the
// machine's CPUs.
func contention(sides ...side) string {
	var runs []string
	worst := 0.0
	for _, s := range sides {
		for _, n := range s.order {
			if o := s.byWL[n].OtherCPUPct + s.byWL[n].StealPct; o > contentionLimit {
				runs = append(runs, fmt.Sprintf("%s %s (%.0f%%)", s.name, n, o))
				worst = max(worst, o)
			}
		}
	}
	if len(runs) == 0 {
		return ""
	}
	return fmt.Sprintf("other processes or virtual machines took up to %.0f%% of the machine's CPU during %d runs, "+
		"whose figures are therefore unreliable: %s.", worst, len(runs), strings.Join(runs, ", "))
}

func metricOf(r *Result, f func(*Result) float64) float64 {
	if r == nil {
		return 0
	}
	return f(r)
}

func cpuPct(cpu, wall float64) float64 {
	if wall == 0 {
		return 0
	}
	return 100 * cpu / wall
}

// num renders a figure with a precision that suits its size.
func num(v float64, unit string) string {
	switch {
	case v == 0:
		return "—"
	case unit == "ops/s" || unit == "%" || unit == "bytes":
		return fmt.Sprintf("%.0f", v)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

func errCell(r *Result) string {
	if r == nil {
		return "—"
	}
	if r.Errors == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", r.Errors, errorSummary(r.ErrorKinds))
}

func waitCell(r *Result) string {
	if r == nil {
		return "—"
	}
	if r.Note != "" && r.ElapsedSeconds == 0 {
		return r.Note
	}
	return fmt.Sprintf("%.3f", r.ElapsedSeconds)
}

func noteCells(a, b side, ra, rb *Result) string {
	var out []string
	for _, x := range []struct {
		name string
		r    *Result
	}{{a.name, ra}, {b.name, rb}} {
		if x.r == nil {
			continue
		}
		if x.r.Note != "" {
			out = append(out, fmt.Sprintf("%s: %s.", x.name, x.r.Note))
		}
		if x.r.Attempts > 1 {
			out = append(out, fmt.Sprintf("%s: run %d times as other processes or virtual machines took CPU; the least disturbed run is shown.", x.name, x.r.Attempts))
		}
	}
	return strings.Join(out, " ")
}

// shape describes a run's parameters in words.
func shape(r *Result) string {
	var parts []string
	switch r.Workload {
	case "watch":
		parts = append(parts, fmt.Sprintf("1 writer, %d watchers", r.Clients))
	case "connect", "ephemeral":
		parts = append(parts, fmt.Sprintf("%d concurrent session cycles", r.Clients))
	case "znodes":
		return fmt.Sprintf("%d znodes of %d bytes in multis of %d, %d sessions × %d outstanding.",
			r.Keys, r.DataSize, r.Batch, r.Clients, r.Outstanding)
	default:
		parts = append(parts, fmt.Sprintf("%d sessions × %d outstanding", r.Clients, r.Outstanding))
	}
	if r.DataSize > 0 {
		parts = append(parts, fmt.Sprintf("%d-byte data", r.DataSize))
	}
	if r.Keys > 0 {
		parts = append(parts, fmt.Sprintf("%d keys", r.Keys))
	}
	if r.Batch > 0 && r.Workload != "watch" {
		parts = append(parts, fmt.Sprintf("%d per multi", r.Batch))
	}
	return strings.Join(parts, ", ") + fmt.Sprintf("; measured for %.1f s.", r.Seconds)
}
