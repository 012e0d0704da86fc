package bench

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// curvePoint is one load result of a sweep.
func curvePoint(label, wl string, sessions int, ops, p99us float64, params map[string]string) *Result {
	return &Result{Label: label, Workload: wl, Clients: sessions, Outstanding: 32, DataSize: 1024,
		Ops: 1000, Seconds: 1, OpsPerSec: ops, Latency: Latency{P99: p99us}, ServerCPUPerOpUS: 10, Params: params}
}

// svgPanel is what a test reads back from a curve SVG.
type svgPanel struct {
	workload, y string
	lines       map[string][][2]float64 // series → points
	pointTitles []string
	runs        int
	xticks      []string
	xlabel      string
}

func parseCurveSVG(t *testing.T, svg []byte) (title string, legend []string, panels []*svgPanel) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	var cur *svgPanel
	var stack []xml.StartElement
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tok.Copy())
			switch {
			case tok.Name.Local == "g" && attr(tok, "class") == "panel":
				cur = &svgPanel{workload: attr(tok, "data-workload"), y: attr(tok, "data-y"), lines: map[string][][2]float64{}}
				panels = append(panels, cur)
			case tok.Name.Local == "circle" && attr(tok, "class") == "run":
				cur.runs++
			}
		case xml.EndElement:
			if tok.Name.Local == "g" {
				cur = nil
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) == 0 {
				continue
			}
			text := string(tok)
			top := stack[len(stack)-1]
			var parent xml.StartElement
			if len(stack) > 1 {
				parent = stack[len(stack)-2]
			}
			switch {
			case attr(top, "class") == "title":
				title = text
			case attr(top, "class") == "legend":
				legend = append(legend, text)
			case cur == nil:
			case attr(top, "class") == "xtick":
				cur.xticks = append(cur.xticks, text)
			case attr(top, "class") == "xlabel":
				cur.xlabel = text
			case top.Name.Local == "title" && parent.Name.Local == "circle":
				cur.pointTitles = append(cur.pointTitles, text)
			case top.Name.Local == "title" && parent.Name.Local == "polyline":
				cur.lines[text] = parsePoints(t, attr(parent, "points"))
			}
		}
	}
	return title, legend, panels
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func parsePoints(t *testing.T, s string) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, f := range strings.Fields(s) {
		xs, ys, ok := strings.Cut(f, ",")
		x, err1 := strconv.ParseFloat(xs, 64)
		y, err2 := strconv.ParseFloat(ys, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("bad polyline point %q", f)
		}
		out = append(out, [2]float64{x, y})
	}
	return out
}

// sessionSweep is both servers over 1..1024 sessions for set and get, with three runs of zkd
// at 64 sessions (medians are plotted) and one result without latencies (left out).
func sessionSweep() []*Result {
	var rs []*Result
	for s := 1; s <= 1024; s *= 2 {
		for _, wl := range []string{"set", "get"} {
			rs = append(rs, curvePoint("zkd", wl, s, 1000*float64(s), 500, nil),
				curvePoint("zookeeper", wl, s, 400*float64(s), 2000, nil))
		}
	}
	rs = append(rs, curvePoint("zkd", "set", 64, 30000, 500, nil), curvePoint("zkd", "set", 64, 20000, 500, nil))
	rs = append(rs, &Result{Kind: kindWait, Workload: "failover", ElapsedSeconds: 1})
	return rs
}

func TestCurveSessions(t *testing.T) {
	var b bytes.Buffer
	err := writeCurve(&b, sessionSweep(), curveOptions{x: "sessions", ys: []string{"ops_per_sec", "p99"}, title: "sessions <sweep>"})
	if err != nil {
		t.Fatal(err)
	}
	title, legend, panels := parseCurveSVG(t, b.Bytes())
	if title != "sessions <sweep>" {
		t.Errorf("title %q", title)
	}
	if strings.Join(legend, ",") != "zkd,zookeeper" {
		t.Errorf("legend %q, want zkd and zookeeper", legend)
	}
	var got []string
	for _, p := range panels {
		got = append(got, p.workload+"/"+p.y)
	}
	if want := "set/ops_per_sec,set/p99,get/ops_per_sec,get/p99"; strings.Join(got, ",") != want {
		t.Fatalf("panels %v, want %s", got, want)
	}
	for _, p := range panels {
		if !strings.Contains(p.xlabel, "sessions") || !strings.Contains(p.xlabel, "log scale") {
			t.Errorf("%s/%s: x label %q, want sessions on a log scale", p.workload, p.y, p.xlabel)
		}
		if len(p.xticks) != 11 || p.xticks[0] != "1" || p.xticks[10] != "1024" {
			t.Errorf("%s/%s: x ticks %v, want the 11 swept values 1..1024", p.workload, p.y, p.xticks)
		}
		if len(p.lines) != 2 {
			t.Errorf("%s/%s: lines %v, want zkd and zookeeper", p.workload, p.y, p.lines)
		}
		for name, pts := range p.lines {
			if len(pts) != 11 {
				t.Fatalf("%s/%s/%s: %d points, want 11", p.workload, p.y, name, len(pts))
			}
			// Doubling sessions is one equal step on a log axis.
			step := pts[1][0] - pts[0][0]
			for i := 1; i < len(pts); i++ {
				if d := pts[i][0] - pts[i-1][0]; step <= 0 || math.Abs(d-step) > 0.15 {
					t.Errorf("%s/%s/%s: x step %d is %.1f, first %.1f: not a log axis", p.workload, p.y, name, i, d, step)
				}
			}
		}
		zkd, zk := p.lines["zkd"], p.lines["zookeeper"]
		if p.y == "ops_per_sec" && p.workload == "get" && zkd[5][1] >= zk[5][1] {
			t.Errorf("get throughput: zkd's point at y=%.1f is not above ZooKeeper's at %.1f", zkd[5][1], zk[5][1])
		}
		if p.y == "p99" && zkd[0][1] <= zk[0][1] {
			t.Errorf("p99: zkd's 0.5 ms at y=%.1f is not below ZooKeeper's 2 ms at %.1f", zkd[0][1], zk[0][1])
		}
	}
	// zkd's set at 64 sessions ran three times (64000, 30000, 20000 ops/s): the median is drawn,
	// the runs as dots.
	set := panels[0]
	if set.runs != 3 {
		t.Errorf("set/ops_per_sec: %d single-run dots, want 3", set.runs)
	}
	if !containsString(set.pointTitles, "zkd sessions=64: 30000") {
		t.Errorf("set/ops_per_sec: no median point 30000 at 64 sessions among %v", set.pointTitles)
	}
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// A sweep through 0 (writes in percent) gets a linear x axis, a param names x, and series can
// be split by a param (observers).
func TestCurveLinearParam(t *testing.T) {
	var rs []*Result
	for _, pct := range []int{0, 10, 100} {
		for _, obs := range []string{"no", "yes"} {
			p := map[string]string{"write_pct": strconv.Itoa(pct), "observers": obs}
			rs = append(rs, curvePoint("zkd", "mixed", 64, 1000, 500, p), curvePoint("zookeeper", "mixed", 64, 500, 900, p))
		}
	}
	var b bytes.Buffer
	err := writeCurve(&b, rs, curveOptions{x: "write_pct", ys: []string{"server_cpu_us_per_op"}, series: []string{"label", "observers"}})
	if err != nil {
		t.Fatal(err)
	}
	_, legend, panels := parseCurveSVG(t, b.Bytes())
	if strings.Join(legend, ",") != "zkd no,zookeeper no,zkd yes,zookeeper yes" {
		t.Errorf("legend %q", legend)
	}
	if len(panels) != 1 || len(panels[0].lines) != 4 {
		t.Fatalf("panels %+v, want one with four lines", panels)
	}
	p := panels[0]
	if strings.Contains(p.xlabel, "log") {
		t.Errorf("x label %q: want a linear axis through 0", p.xlabel)
	}
	pts := p.lines["zkd no"]
	if len(pts) != 3 {
		t.Fatalf("zkd no: %v", pts)
	}
	// 0, 10, 100 on a linear axis: the second step is nine times the first.
	if r := (pts[2][0] - pts[1][0]) / (pts[1][0] - pts[0][0]); math.Abs(r-9) > 0.1 {
		t.Errorf("x steps in ratio %.2f, want 9 (linear)", r)
	}
}

func TestCurveErrors(t *testing.T) {
	rs := sessionSweep()
	for _, o := range []curveOptions{
		{ys: []string{"ops_per_sec"}},                   // no x
		{x: "sessions"},                                 // no y
		{x: "znodes", ys: []string{"ops_per_sec"}},      // no result has it
		{x: "sessions", ys: []string{"no_such_field"}},  // nor this
		{x: "sessions", ys: []string{"p99"}, logX: "x"}, // checked by the command; harmless here
	} {
		err := writeCurve(io.Discard, rs, o)
		if (err == nil) != (o.logX == "x") {
			t.Errorf("%+v: err %v", o, err)
		}
	}
	if err := writeCurve(io.Discard, rs[len(rs)-1:], curveOptions{x: "sessions", ys: []string{"p99"}}); err == nil {
		t.Error("a wait result alone made a curve")
	}
}

func TestTickLabel(t *testing.T) {
	for _, c := range []struct {
		v     float64
		bytes bool
		want  string
	}{{1, false, "1"}, {1024, false, "1024"}, {20000, false, "20k"}, {1e7, false, "10M"}, {0.25, false, "0.25"},
		{32, true, "32"}, {1024, true, "1 KiB"}, {1 << 20, true, "1 MiB"}, {1500, true, "1500"}} {
		if got := tickLabel(c.v, c.bytes); got != c.want {
			t.Errorf("tickLabel(%g, %v) = %q, want %q", c.v, c.bytes, got, c.want)
		}
	}
}

// The command end to end: JSON lines written by run (with --param) in, an SVG out, and the
// output kept byte for byte (testdata/curve.golden.svg; go test -update rewrites it).
func TestCurveCommand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "sweep.jsonl")
	var lines bytes.Buffer
	for _, n := range []int{1000, 100000, 10000000} {
		p := map[string]string{"znodes": strconv.Itoa(n)}
		for _, r := range []*Result{curvePoint("zkd", "get", 64, 3e5-float64(n)/100, 900, p), curvePoint("zookeeper", "get", 64, 6e4, 4000, p)} {
			if err := writeJSON(&lines, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(in, lines.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "znodes.svg")
	var stderr bytes.Buffer
	if err := cli(context.Background(), []string{"curve", "-x", "znodes", "-o", out, "-title", "znode count", in}, io.Discard, &stderr); err != nil {
		t.Fatalf("curve: %v (%s)", err, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	_, _, panels := parseCurveSVG(t, got)
	if len(panels) != 3 || panels[0].y != "ops_per_sec" || panels[1].y != "p99" || panels[2].y != "server_cpu_us_per_op" {
		t.Fatalf("default y metrics: panels %+v", panels)
	}
	if ticks := strings.Join(panels[0].xticks, ","); ticks != "1000,100k,10M" {
		t.Errorf("x ticks %s", ticks)
	}
	golden := filepath.Join("testdata", "curve.golden.svg")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestCurveCommand -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the SVG differs from %s (if the change is meant, rerun with -update and look at it)", golden)
	}
	for _, args := range [][]string{
		{"curve", "-x", "znodes", "-o", out},                       // no file
		{"curve", "-x", "znodes", "-logx", "maybe", "-o", out, in}, // bad -logx
		{"curve", "-x", "znodes", "-o", out, filepath.Join(dir, "missing.jsonl")},
	} {
		if err := cli(context.Background(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func TestRunParamsAndPIDs(t *testing.T) {
	o, err := parseRun([]string{"--param", "sweep=sessions", "--param", "x=64", "--server-pid", "10,0,12", "get"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.params["sweep"] != "sessions" || o.cfg.params["x"] != "64" || len(o.cfg.params) != 2 {
		t.Errorf("params %v", o.cfg.params)
	}
	if len(o.cfg.serverPIDs) != 2 || o.cfg.serverPIDs[0] != 10 || o.cfg.serverPIDs[1] != 12 {
		t.Errorf("pids %v, want [10 12]", o.cfg.serverPIDs)
	}
	for _, args := range [][]string{{"--param", "novalue", "get"}, {"--param", "=1", "get"}, {"--server-pid", "abc", "get"}, {"--server-pid", "-3", "get"}} {
		if _, err := parseRun(args, io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
