package bench

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
	fmt.Fprintf(w, "%-12s %-10s %7s %4s %7s %10s %10s %7s %9s %9s %9s %9s %9s %9s %9s %8s %8s %9s %5s %5s %5s\n",
		"workload", "label", "clients", "out", "size", "ops", "ops/s", "errors",
		"p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms", "srv us/op", "cli us/op", "srv cpu%", "cli cpu%", "srv rss MB", "box%", "oth%", "stl%")
}

func tableRow(w io.Writer, r *Result) {
	if r.Kind == kindWait {
		fmt.Fprintf(w, "%-12s %-10s %s: first success after %.3f s (%d failed attempts)\n",
			r.Workload, r.Label, r.Servers, r.ElapsedSeconds, r.Errors)
		return
	}
	fmt.Fprintf(w, "%-12s %-10s %7d %4d %7d %10d %10.0f %7d %9s %9s %9s %9s %9s %9s %9s %8s %8s %9s %5s %5s %5s\n",
		r.Workload, dash(r.Label), r.Clients, r.Outstanding, r.DataSize, r.Ops, r.OpsPerSec, r.Errors,
		ms(r.Latency.P50), ms(r.Latency.P90), ms(r.Latency.P99), ms(r.Latency.P999), ms(r.Latency.Max),
		opt(r.ServerCPUPerOpUS, "%.1f"), opt(r.ClientCPUPerOpUS, "%.2f"), pct(r.ServerCPUSeconds, r.Seconds), pct(r.ClientCPUSeconds, r.Seconds),
		mb(r.ServerRSSEnd), opt(r.MachineBusyPct, "%.0f"), opt(r.OtherCPUPct, "%.0f"), opt(r.StealPct, "%.0f"))
	if r.Note != "" || r.BytesPerZnode != 0 || r.BytesPerSession != 0 || r.NotificationsPerSec != 0 || r.Errors > 0 {
		var extra []string
		if r.Note != "" {
			extra = append(extra, r.Note)
		}
		if r.BytesPerZnode != 0 {
			extra = append(extra, fmt.Sprintf("%.0f bytes of server RSS per znode", r.BytesPerZnode))
		}
		if r.BytesPerSession != 0 {
			extra = append(extra, fmt.Sprintf("%.0f bytes of server RSS per session", r.BytesPerSession))
		}
		if r.NotificationsPerSec != 0 {
			extra = append(extra, fmt.Sprintf("%.0f notifications/s delivered", r.NotificationsPerSec))
		}
		if r.Errors > 0 {
			extra = append(extra, "errors: "+errorSummary(r.ErrorKinds))
		}
		fmt.Fprintf(w, "%-12s   %s\n", "", strings.Join(extra, "; "))
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

// goal is one of issue 16's targets: a metric of a workload whose ratio a/b is to be at
// least (atLeast) or at most the target, and, if abs is set, whose value for a is to be at
// most abs too. key names it in a --notes file.
type goal struct {
	key      string
	what     string
	workload string
	metric   func(*Result) float64
	unit     string
	atLeast  bool
	target   float64
	abs      float64
}

var (
	mThroughput    = func(r *Result) float64 { return r.OpsPerSec }
	mCPUPerOp      = func(r *Result) float64 { return r.ServerCPUPerOpUS }
	mP50           = func(r *Result) float64 { return r.Latency.P50 / 1000 }
	mP99           = func(r *Result) float64 { return r.Latency.P99 / 1000 }
	mPerZnode      = func(r *Result) float64 { return r.BytesPerZnode }
	mPerSession    = func(r *Result) float64 { return r.BytesPerSession }
	mNotifications = func(r *Result) float64 { return r.NotificationsPerSec }
	mElapsed       = func(r *Result) float64 { return r.ElapsedSeconds }
)

// goals are issue 16's, keyed by the workload names bench/compare.sh records.
var goals = []goal{
	{key: "cpu-set", what: "server CPU per op, set 1 KB (µs)", workload: "set", metric: mCPUPerOp, unit: "µs", target: 0.25},
	{key: "cpu-get", what: "server CPU per op, get 1 KB (µs)", workload: "get", metric: mCPUPerOp, unit: "µs", target: 0.2},
	{key: "cpu-createdelete", what: "server CPU per op, create+delete (µs)", workload: "createdelete", metric: mCPUPerOp, unit: "µs", target: 0.25},
	{key: "cpu-multi", what: "server CPU per op, multi of 10 (µs)", workload: "multi", metric: mCPUPerOp, unit: "µs", target: 0.25},
	{key: "throughput-set", what: "throughput, set 64 × 32 (ops/s)", workload: "set", metric: mThroughput, unit: "ops/s", atLeast: true, target: 3},
	{key: "throughput-get", what: "throughput, get 64 × 32 (ops/s)", workload: "get", metric: mThroughput, unit: "ops/s", atLeast: true, target: 3},
	{key: "p99-set", what: "p99 latency, set 64 × 32 (ms)", workload: "set", metric: mP99, unit: "ms", target: 0.33},
	{key: "p99-get", what: "p99 latency, get 64 × 32 (ms)", workload: "get", metric: mP99, unit: "ms", target: 0.33},
	{key: "p50-get-1", what: "p50 latency, get, 1 session × 1 outstanding (ms)", workload: "get-1", metric: mP50, unit: "ms", target: 0.5},
	{key: "p50-set-1", what: "p50 latency, set, 1 session × 1 outstanding (ms)", workload: "set-1", metric: mP50, unit: "ms", target: 0.5},
	{key: "watch-1000", what: "watch fan-out, 1000 watchers (notifications/s)", workload: "watch-1000", metric: mNotifications, unit: "ops/s", atLeast: true, target: 3},
	{key: "storm", what: "connect storm, 2000 sessions opened and closed (sessions/s)", workload: "storm", metric: mThroughput, unit: "ops/s", atLeast: true, target: 3},
	{key: "znodes", what: "memory per znode at 1M znodes (bytes of RSS)", workload: "znodes", metric: mPerZnode, unit: "bytes", target: 0.25},
	{key: "znodes-10m", what: "memory per znode at 10M znodes (bytes of RSS)", workload: "znodes-10m", metric: mPerZnode, unit: "bytes", target: 0.25},
	{key: "idle", what: "memory per idle session, ~20,000 sessions (bytes of RSS)", workload: "idle", metric: mPerSession, unit: "bytes", target: 0.25},
	{key: "recovery-clean", what: "restart until the last write is readable, clean stop, 1M znodes (s)", workload: "recovery-clean", metric: mElapsed, unit: "s", target: 0.1},
	{key: "recovery-kill9", what: "restart until the last write is readable, kill -9, 1M znodes (s)", workload: "recovery-kill9", metric: mElapsed, unit: "s", target: 0.1},
	{key: "recovery-clean-10m", what: "restart until the last write is readable, clean stop, 10M znodes (s)", workload: "recovery-clean-10m", metric: mElapsed, unit: "s", target: 0.1},
	{key: "recovery-kill9-10m", what: "restart until the last write is readable, kill -9, 10M znodes (s)", workload: "recovery-kill9-10m", metric: mElapsed, unit: "s", target: 0.1},
	{key: "failover", what: "leader kill -9 until a write succeeds, 3 servers, empty (s)", workload: "failover", metric: mElapsed, unit: "s", target: 0.25, abs: 0.105},
	{key: "failover-1m", what: "leader kill -9 until a write succeeds, 3 servers, 1M znodes (s)", workload: "failover-1m", metric: mElapsed, unit: "s", target: 0.25},
	{key: "ensemble-set", what: "3-server ensemble set throughput (ops/s)", workload: "ensemble-set", metric: mThroughput, unit: "ops/s", atLeast: true, target: 3},
	{key: "ensemble-get", what: "3-server ensemble get throughput (ops/s)", workload: "ensemble-get", metric: mThroughput, unit: "ops/s", atLeast: true, target: 3},
}

// Verdicts of a goal.
const (
	goalMet         = "yes"
	goalUnmet       = "no"
	goalNotMeasured = "not measured"
)

// verdict judges g on the figures va (of the server under test) and vb (of the reference),
// 0 meaning missing. An absolute bound broken is a "no" even without the reference.
func (g goal) verdict(va, vb float64) string {
	switch {
	case va <= 0:
		return goalNotMeasured
	case g.abs > 0 && va > g.abs:
		return goalUnmet
	case vb <= 0:
		return goalNotMeasured
	}
	r := va / vb
	if (g.atLeast && r >= g.target) || (!g.atLeast && r <= g.target) {
		return goalMet
	}
	return goalUnmet
}

// targetCell renders g's target: the ratio, and the absolute bound if there is one.
func (g goal) targetCell() string {
	cmp := "≥"
	if !g.atLeast {
		cmp = "≤"
	}
	t := fmt.Sprintf("%s %.2gx", cmp, g.target)
	if g.abs > 0 {
		t += fmt.Sprintf(" and ≤ %s %s", num(g.abs, g.unit), g.unit)
	}
	return t
}

// readNotes reads a --notes file: "key: text" lines, where key is a goal's and text (a
// sentence or a markdown link) explains why it is not met. Blank lines and lines starting
// with # are skipped; an unknown key is an error, so that a misspelt note is not lost.
func readNotes(r io.Reader) (map[string]string, error) {
	known := map[string]bool{}
	for _, g := range goals {
		known[g.key] = true
	}
	notes := map[string]string{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		key, text, ok := strings.Cut(l, ":")
		key, text = strings.TrimSpace(key), strings.TrimSpace(text)
		switch {
		case !ok || text == "":
			return nil, fmt.Errorf("line %d: want \"key: text\"", line)
		case !known[key]:
			return nil, fmt.Errorf("line %d: no goal %q", line, key)
		}
		// A pipe would end the table's cell.
		text = strings.ReplaceAll(text, "|", `\|`)
		if prev, dup := notes[key]; dup { // a long note may take several lines
			text = prev + " " + text
		}
		notes[key] = text
	}
	return notes, sc.Err()
}

func readNotesFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	notes, err := readNotes(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return notes, nil
}

// writeGoals writes the goals table: every goal, measured or not. With notes, a last
// column gives each goal's explanation.
func writeGoals(w io.Writer, a, b side, notes map[string]string) {
	rt := fmt.Sprintf("%s / %s", a.name, b.name)
	why, sep := "", ""
	if len(notes) > 0 {
		why, sep = " why |", "---|"
	}
	fmt.Fprintf(w, "### Goals\n\n| goal | target (%s) | %s | %s | ratio | met |%s\n|---|---|---|---|---|---|%s\n", rt, a.name, b.name, why, sep)
	for _, g := range goals {
		va, vb := metricOf(a.byWL[g.workload], g.metric), metricOf(b.byWL[g.workload], g.metric)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |", g.what, g.targetCell(),
			num(va, g.unit), num(vb, g.unit), ratio(va, vb), g.verdict(va, vb))
		if len(notes) > 0 {
			fmt.Fprintf(w, " %s |", notes[g.key])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// writeComparison writes markdown tables comparing a (e.g. zkd) with b (e.g. ZooKeeper):
// the goals, then one table per load workload, then the wait figures. Ratios are a/b;
// notes explain goals (see readNotes) and may be nil.
func writeComparison(w io.Writer, a, b side, goals bool, notes map[string]string) {
	rt := fmt.Sprintf("%s / %s", a.name, b.name)
	if warn := contention(a, b); warn != "" {
		fmt.Fprintf(w, "**Warning:** %s\n\n", warn)
	}
	if goals {
		writeGoals(w, a, b, notes)
	}
	writeScale(w, a, b)

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
		row("watch notifications delivered (/s)", mNotifications, "ops/s")
		row("server RSS per znode (bytes)", mPerZnode, "bytes")
		row("server RSS per session (bytes)", mPerSession, "bytes")
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

// writeScale writes the figures of issue 16's "Scale" list that are not goals: getChildren
// of a node with a million children and a 1 MB value read by a thousand sessions, in a
// table of their own (their runs also get the full table of every workload), and where the
// list's other items are. Nothing is written when neither side ran them.
func writeScale(w io.Writer, a, b side) {
	var rows []string
	for _, wl := range []struct {
		name string
		what func(*Result) string
		rows []scaleRow
	}{
		{"children", func(r *Result) string {
			return fmt.Sprintf("getChildren, %d children (%d × %d)", r.Keys, r.Clients, r.Outstanding)
		}, []scaleRow{
			{"throughput (ops/s)", mThroughput, "ops/s"}, {"p50 latency (ms)", mP50, "ms"},
			{"p99 latency (ms)", mP99, "ms"}, {"server CPU per op (µs)", mCPUPerOp, "µs"},
		}},
		{"bigread", func(r *Result) string {
			return fmt.Sprintf("getData of %d bytes (%d × %d)", r.DataSize, r.Clients, r.Outstanding)
		}, []scaleRow{
			{"throughput (ops/s)", mThroughput, "ops/s"}, {"data read (MB/s)", bigreadMBps, "MB/s"},
			{"p99 latency (ms)", mP99, "ms"}, {"server CPU per op (µs)", mCPUPerOp, "µs"},
		}},
		{"znodes-10m", snapshotsWhat, snapshotRows},
		{"znodes", snapshotsWhat, snapshotRows},
	} {
		ra, rb := a.byWL[wl.name], b.byWL[wl.name]
		shown := ra
		if shown == nil {
			shown = rb
		}
		if shown == nil {
			continue
		}
		for _, sr := range wl.rows {
			va, vb := metricOf(ra, sr.metric), metricOf(rb, sr.metric)
			if va == 0 && vb == 0 {
				continue
			}
			rows = append(rows, fmt.Sprintf("| %s: %s | %s | %s | %s |", wl.what(shown), sr.label, num(va, sr.unit), num(vb, sr.unit), ratio(va, vb)))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "### Scale\n\nIssue 16's scale figures that are not goals (sessions × outstanding requests; MB of 2^20 bytes; "+
		"snapshots: mntr's snapshottime summary after the memory test grew the tree, each server snapshotting at its own snapCount).")
	var elsewhere []string
	if a.byWL["znodes-10m"] != nil || b.byWL["znodes-10m"] != nil {
		elsewhere = append(elsewhere, "memory per znode and restart time at 10M znodes are in the goals table (details: znodes-10m, Restart and failover)")
	}
	if a.byWL["idle"] != nil || b.byWL["idle"] != nil {
		elsewhere = append(elsewhere, "RSS per connected session is in the goals table (details: idle)")
	}
	if len(elsewhere) > 0 {
		fmt.Fprintf(w, " Also: %s.", strings.Join(elsewhere, "; "))
	}
	fmt.Fprintf(w, "\n\n| metric | %s | %s | %s / %s |\n|---|---|---|---|\n", a.name, b.name, a.name, b.name)
	for _, r := range rows {
		fmt.Fprintln(w, r)
	}
	fmt.Fprintln(w)
}

// snapshotsWhat and snapshotRows show the snapshots a server wrote while the memory test
// grew its tree (each server at its own snapCount; mntr's snapshottime summary).
func snapshotsWhat(r *Result) string {
	return fmt.Sprintf("snapshots written while growing the tree to %d znodes", r.Keys)
}

// scaleRow is one figure of a workload in the Scale table.
type scaleRow struct {
	label  string
	metric func(*Result) float64
	unit   string
}

var snapshotRows = []scaleRow{
	{"the longest (ms)", func(r *Result) float64 { return r.SnapshotMaxMS }, "ms"},
	{"count", func(r *Result) float64 { return float64(r.SnapshotCount) }, "ops/s"},
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
	switch r.base() {
	case "watch":
		parts = append(parts, fmt.Sprintf("1 writer, %d watchers", r.Clients))
	case "connect", "ephemeral":
		parts = append(parts, fmt.Sprintf("%d concurrent session cycles", r.Clients))
	case "storm":
		return fmt.Sprintf("%d sessions opened, then closed, in rounds, %d handshakes at a time; throughput is sessions/s, latency the opening; measured for %.1f s.",
			r.Clients, r.Batch, r.Seconds)
	case "idle":
		return fmt.Sprintf("%d idle sessions opened, %d at a time, and held until the server's RSS settled; throughput is sessions connected/s, latency the opening; measured for %.1f s.",
			r.Clients, r.Batch, r.Seconds)
	case "znodes":
		return fmt.Sprintf("%d znodes of %d bytes in multis of %d, %d sessions × %d outstanding.",
			r.Keys, r.DataSize, r.Batch, r.Clients, r.Outstanding)
	case "children":
		return fmt.Sprintf("getChildren of a node with %d empty children, %d sessions × %d outstanding; measured for %.1f s.",
			r.Keys, r.Clients, r.Outstanding, r.Seconds)
	case "bigread":
		return fmt.Sprintf("getData of one %d-byte znode, %d sessions × %d outstanding; measured for %.1f s.",
			r.DataSize, r.Clients, r.Outstanding, r.Seconds)
	default:
		parts = append(parts, fmt.Sprintf("%d sessions × %d outstanding", r.Clients, r.Outstanding))
	}
	if r.DataSize > 0 {
		parts = append(parts, fmt.Sprintf("%d-byte data", r.DataSize))
	}
	if r.Keys > 0 {
		parts = append(parts, fmt.Sprintf("%d keys", r.Keys))
	}
	if r.Batch > 0 && r.base() != "watch" {
		parts = append(parts, fmt.Sprintf("%d per multi", r.Batch))
	}
	return strings.Join(parts, ", ") + fmt.Sprintf("; measured for %.1f s.", r.Seconds)
}
