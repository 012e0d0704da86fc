package bench

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A curve plot shows how results change along one swept parameter (sessions, value size, ...):
// one panel per workload and y metric, one line per series (the server), each point the
// median of the runs at that x, with the single runs as faint dots so the spread stays
// visible.
const (
	curvePanelW, curvePanelH = 420, 270
	curveL, curveR           = 64, 16 // margins inside a panel
	curveT, curveB           = 28, 40
	curveHeaderH             = 52
	curveMaxTicks            = 12 // more distinct x values than this get round ticks instead
)

// metric is a result field a curve can use as an axis.
type metric struct {
	path  string  // in the result's JSON, dotted; or a --param name
	label string  // axis label
	scale float64 // multiplies the stored value (µs → ms)
	bytes bool    // tick labels in KiB/MiB
}

// curveMetrics are the fields known by a short name; any other name is looked up in the
// results' params first and then as a dotted JSON path.
var curveMetrics = map[string]metric{
	"ops_per_sec":          {path: "ops_per_sec", label: "throughput (ops/s)", scale: 1},
	"sessions":             {path: "clients", label: "sessions", scale: 1},
	"clients":              {path: "clients", label: "sessions", scale: 1},
	"outstanding":          {path: "outstanding", label: "outstanding requests per session", scale: 1},
	"data_size":            {path: "data_size", label: "value size (bytes)", scale: 1, bytes: true},
	"p50":                  {path: "latency_us.p50", label: "p50 latency (ms)", scale: 1e-3},
	"p90":                  {path: "latency_us.p90", label: "p90 latency (ms)", scale: 1e-3},
	"p99":                  {path: "latency_us.p99", label: "p99 latency (ms)", scale: 1e-3},
	"p999":                 {path: "latency_us.p999", label: "p99.9 latency (ms)", scale: 1e-3},
	"max":                  {path: "latency_us.max", label: "max latency (ms)", scale: 1e-3},
	"server_cpu_us_per_op": {path: "server_cpu_us_per_op", label: "server CPU per op (µs)", scale: 1},
	"client_cpu_us_per_op": {path: "client_cpu_us_per_op", label: "zkbench CPU per op (µs)", scale: 1},
	"server_rss_end":       {path: "server_rss_end", label: "server RSS (MiB)", scale: 1.0 / (1 << 20)},
	"bytes_per_znode":      {path: "bytes_per_znode", label: "server RSS per znode (bytes)", scale: 1},
}

func lookupMetric(name string) metric {
	if m, ok := curveMetrics[name]; ok {
		return m
	}
	return metric{path: name, label: name, scale: 1}
}

// curveOptions are zkbench curve's flags.
type curveOptions struct {
	x      string
	ys     []string
	series []string // fields whose values, joined, name a line; "label" is the server
	logX   string   // auto, on, off
	title  string
}

// fieldValue reads a metric of one result: its params first, then its JSON fields.
func fieldValue(r *Result, doc map[string]any, m metric) (float64, bool) {
	var raw any
	if v, ok := r.Params[m.path]; ok {
		raw = v
	} else {
		var cur any = doc
		for _, part := range strings.Split(m.path, ".") {
			obj, ok := cur.(map[string]any)
			if !ok {
				return 0, false
			}
			if cur, ok = obj[part]; !ok {
				return 0, false
			}
		}
		raw = cur
	}
	switch v := raw.(type) {
	case float64:
		return v * m.scale, true
	case string:
		f, err := strconv.ParseFloat(v, 64)
		return f * m.scale, err == nil
	}
	return 0, false
}

// fieldString names a series: a param, or a JSON field (label, workload, ...).
func fieldString(r *Result, doc map[string]any, name string) string {
	if v, ok := r.Params[name]; ok {
		return v
	}
	if v, ok := doc[name]; ok && v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

// curvePanel is one workload's y metric against x.
type curvePanel struct {
	workload string
	y        string
	series   map[string]map[float64][]float64 // series → x → the runs' values
}

// writeCurve draws rs as small multiples: a row per workload, a column per y metric.
func writeCurve(w io.Writer, rs []*Result, o curveOptions) error {
	if o.x == "" || len(o.ys) == 0 {
		return errors.New("curve: -x and -y are required")
	}
	if len(o.series) == 0 {
		o.series = []string{"label"}
	}
	xm := lookupMetric(o.x)
	var wls, names []string
	panels := map[string]*curvePanel{}
	for _, r := range rs {
		if r.Kind != kindLoad || r.Ops == 0 {
			continue
		}
		raw, err := json.Marshal(r)
		if err != nil {
			return err
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return err
		}
		x, ok := fieldValue(r, doc, xm)
		if !ok {
			continue
		}
		var parts []string
		for _, s := range o.series {
			if v := fieldString(r, doc, s); v != "" {
				parts = append(parts, v)
			}
		}
		name := dash(strings.Join(parts, " "))
		for _, y := range o.ys {
			v, ok := fieldValue(r, doc, lookupMetric(y))
			if !ok {
				continue
			}
			key := r.Workload + "\x00" + y
			p := panels[key]
			if p == nil {
				p = &curvePanel{workload: r.Workload, y: y, series: map[string]map[float64][]float64{}}
				panels[key] = p
				if !slices.Contains(wls, r.Workload) {
					wls = append(wls, r.Workload)
				}
			}
			if p.series[name] == nil {
				p.series[name] = map[float64][]float64{}
			}
			p.series[name][x] = append(p.series[name][x], v)
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	if len(panels) == 0 {
		return fmt.Errorf("curve: no load results with both %s and %s", o.x, strings.Join(o.ys, ", "))
	}
	// One x axis for every panel, so the columns line up.
	var xs []float64
	for _, p := range panels {
		for _, pts := range p.series {
			for x := range pts {
				if !slices.Contains(xs, x) {
					xs = append(xs, x)
				}
			}
		}
	}
	sort.Float64s(xs)
	logX := o.logX == "on" || (o.logX != "off" && xs[0] > 0 && xs[len(xs)-1]/xs[0] >= 20)
	if logX && xs[0] <= 0 {
		return fmt.Errorf("curve: -logx on needs x values above 0 (have %g)", xs[0])
	}
	xa := newAxis(xs[0], xs[len(xs)-1], logX, true)
	if len(xs) <= curveMaxTicks {
		xa.ticks = xs
	}

	cols := len(o.ys)
	width, height := cols*curvePanelW, curveHeaderH+len(wls)*curvePanelH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	title := o.title
	if title == "" {
		title = "against " + xm.label
	}
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="14" font-weight="bold" class="title">%s</text>`+"\n", html.EscapeString(title))
	lx := 10
	for i, n := range names {
		fmt.Fprintf(&b, `<rect x="%d" y="32" width="14" height="4" fill="%s"/><text x="%d" y="38" class="legend">%s</text>`+"\n", lx, palette[i%len(palette)], lx+18, html.EscapeString(n))
		lx += 30 + 7*len(n)
	}
	fmt.Fprintf(&b, `<text x="%d" y="38" text-anchor="end" fill="#555">lines: median of the runs at each point; dots: single runs</text>`+"\n", width-10)
	for row, wl := range wls {
		for col, y := range o.ys {
			p := panels[wl+"\x00"+y]
			if p == nil {
				continue
			}
			drawCurvePanel(&b, col*curvePanelW, curveHeaderH+row*curvePanelH, p, names, xa, xm, lookupMetric(y))
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// axis maps values to [0, 1], linearly or by their logarithm.
type axis struct {
	lo, hi float64
	log    bool
	ticks  []float64
}

// newAxis spans [lo, hi]: a log axis is widened to whole decades for y and left tight for
// x (whose ticks are usually the sweep's own points); a linear y axis starts at 0 so heights
// compare.
func newAxis(lo, hi float64, log, isX bool) axis {
	a := axis{lo: lo, hi: hi, log: log}
	switch {
	case log:
		dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if dhi <= dlo {
			dhi = dlo + 1
		}
		if !isX {
			a.lo, a.hi = math.Pow(10, dlo), math.Pow(10, dhi)
		}
		for d := dlo; d <= dhi; d++ {
			if v := math.Pow(10, d); v >= a.lo*0.999 && v <= a.hi*1.001 {
				a.ticks = append(a.ticks, v)
			}
		}
	default:
		a.lo = math.Min(a.lo, 0)
		step := niceStep((a.hi - a.lo) / 5)
		if step <= 0 {
			step, a.hi = 1, a.lo+1
		}
		a.hi = math.Ceil(a.hi/step) * step
		for v := a.lo; v <= a.hi+step/2; v += step {
			a.ticks = append(a.ticks, v)
		}
	}
	if a.hi <= a.lo {
		a.hi = a.lo + 1
	}
	return a
}

// niceStep rounds a tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func (a axis) pos(v float64) float64 {
	if a.log {
		v = math.Max(v, a.lo/10)
		return (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	}
	return (v - a.lo) / (a.hi - a.lo)
}

// yAxis picks log when the panel's values span more than 50x (a value size sweep's
// throughput), else a linear axis from 0.
func yAxis(p *curvePanel) axis {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pts := range p.series {
		for _, vs := range pts {
			for _, v := range vs {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	return newAxis(lo, hi, lo > 0 && hi/lo > 50, false)
}

func drawCurvePanel(b *strings.Builder, ox, oy int, p *curvePanel, names []string, xa axis, xm, ym metric) {
	ya := yAxis(p)
	x0, x1 := float64(ox+curveL), float64(ox+curvePanelW-curveR)
	y0, y1 := float64(oy+curvePanelH-curveB), float64(oy+curveT)
	// A little room at the ends of x so the first and last points are not on the frame.
	pad := (x1 - x0) * 0.03
	px := func(v float64) float64 { return x0 + pad + (x1-x0-2*pad)*xa.pos(v) }
	py := func(v float64) float64 { return y0 - (y0-y1)*ya.pos(v) }
	fmt.Fprintf(b, `<g class="panel" data-workload="%s" data-y="%s">`+"\n", html.EscapeString(p.workload), html.EscapeString(p.y))
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold" font-size="12">%s: %s</text>`+"\n", ox+curveL, oy+18, html.EscapeString(p.workload), html.EscapeString(ym.label))
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`+"\n", x0, y1, x1-x0, y0-y1)
	for _, t := range ya.ticks {
		y := py(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`, x0, y, x1, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" class="ytick">%s</text>`+"\n", x0-4, y+4, tickLabel(t, ym.bytes))
	}
	for _, t := range xa.ticks {
		x := px(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`, x, y0, x, y1)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" class="xtick">%s</text>`+"\n", x, y0+14, tickLabel(t, xm.bytes))
	}
	scale := ""
	if xa.log {
		scale = ", log scale"
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555" class="xlabel">%s%s</text>`+"\n", (x0+x1)/2, y0+30, html.EscapeString(xm.label), scale)
	if ya.log {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#555">log scale</text>`+"\n", x1-4, y1+12)
	}
	for i, n := range names {
		pts := p.series[n]
		if len(pts) == 0 {
			continue
		}
		color := palette[i%len(palette)]
		xs := make([]float64, 0, len(pts))
		for x := range pts {
			xs = append(xs, x)
		}
		sort.Float64s(xs)
		var line []string
		for _, x := range xs {
			vs := pts[x]
			if len(vs) > 1 {
				for _, v := range vs {
					fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2" fill="%s" fill-opacity="0.35" class="run"/>`, px(x), py(v), color)
				}
			}
			m := median(vs)
			line = append(line, fmt.Sprintf("%.1f,%.1f", px(x), py(m)))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s %s=%s: %s</title></circle>`+"\n",
				px(x), py(m), color, html.EscapeString(n), html.EscapeString(xm.label), tickLabel(x, xm.bytes), pointValue(m))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s</title></polyline>`+"\n",
			color, strings.Join(line, " "), html.EscapeString(n))
	}
	b.WriteString("</g>\n")
}

// pointValue writes a plotted value for its tooltip: whole numbers from 100 up, else three
// significant digits.
func pointValue(v float64) string {
	if math.Abs(v) >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// tickLabel writes a tick value short: 1k, 2.5M; sizes as 1 KiB, 1 MiB when exact.
func tickLabel(v float64, bytes bool) string {
	if bytes {
		for _, u := range []struct {
			n    float64
			name string
		}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
			if v >= u.n && math.Mod(v, u.n) == 0 {
				return strconv.FormatFloat(v/u.n, 'f', -1, 64) + " " + u.name
			}
		}
	}
	av := math.Abs(v)
	switch {
	case av >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case av >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func cmdCurve(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("zkbench curve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "curve.svg", "SVG file to write")
	x := fs.String("x", "", "x axis: sessions, outstanding, data_size, or a --param name (e.g. znodes, write_pct, servers)")
	y := fs.String("y", "ops_per_sec,p99,server_cpu_us_per_op", "comma-separated y metrics, a panel column each: ops_per_sec, p50, p99, p999, max, server_cpu_us_per_op, client_cpu_us_per_op, server_rss_end, or a JSON field")
	series := fs.String("series", "label", "comma-separated fields or params whose values name a line")
	logX := fs.String("logx", "auto", "log x axis: auto (when the largest x is 20x the smallest), on, off")
	title := fs.String("title", "", "title of the plot")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: zkbench curve -x FIELD [-y FIELD,...] -o OUT.svg FILE...\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *logX != "auto" && *logX != "on" && *logX != "off" {
		return fmt.Errorf("-logx %q: want auto, on or off", *logX)
	}
	if fs.NArg() == 0 {
		return errors.New("curve: no result files given")
	}
	var all []*Result
	for _, p := range fs.Args() {
		rs, err := readResultsFile(p)
		if err != nil {
			return err
		}
		all = append(all, rs...)
	}
	o := curveOptions{x: *x, ys: splitList(*y), series: splitList(*series), logX: *logX, title: *title}
	var b strings.Builder
	if err := writeCurve(&b, all, o); err != nil {
		return err
	}
	return os.WriteFile(*out, []byte(b.String()), 0o644)
}
