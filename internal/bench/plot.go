package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// The plot is small multiples: one panel per workload, one line per label (server), latency
// (log scale) against percentile on the usual HDR axis, where each step right is one more
// nine: 0, 90, 99, 99.9 ... with the maximum at the right edge.
const (
	panelW, panelH = 360, 230
	plotL, plotR   = 58, 12 // margins inside a panel
	plotT, plotB   = 26, 34
	columns        = 3
	legendH        = 30
	maxNines       = 5   // 99.999
	maxGap         = 0.8 // from 99.999 to the maximum, in nines
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"}

// percentileX places a percentile on the nines axis: 0 → 0, 90 → 1, 99 → 2, ...; 100 (the
// maximum) goes a little past the last nine.
func percentileX(p float64) float64 {
	if p >= 100 {
		return maxNines + maxGap
	}
	x := -math.Log10(1 - p/100)
	return math.Min(x, maxNines)
}

// writePlot draws the latency spectra of rs as an SVG.
func writePlot(w io.Writer, rs []*Result) error {
	var wls, labels []string
	series := map[string]map[string]*Result{} // workload → label → result (the last one wins)
	for _, r := range rs {
		if len(r.Latency.Spectrum) == 0 {
			continue
		}
		if series[r.Workload] == nil {
			series[r.Workload] = map[string]*Result{}
			wls = append(wls, r.Workload)
		}
		l := dash(r.Label)
		if !contains(labels, l) {
			labels = append(labels, l)
		}
		series[r.Workload][l] = r
	}
	if len(wls) == 0 {
		return fmt.Errorf("no results with latencies to plot")
	}
	cols := min(columns, len(wls))
	rows := (len(wls) + cols - 1) / cols
	width, height := cols*panelW, legendH+rows*panelH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	x := 10
	for i, l := range labels {
		fmt.Fprintf(&b, `<rect x="%d" y="10" width="14" height="4" fill="%s"/><text x="%d" y="16">%s</text>`+"\n", x, palette[i%len(palette)], x+18, html.EscapeString(l))
		x += 30 + 7*len(l)
	}
	fmt.Fprintf(&b, `<text x="%d" y="16" text-anchor="end" fill="#555">latency (ms, log scale) by percentile</text>`+"\n", width-10)
	for i, wl := range wls {
		ox, oy := (i%cols)*panelW, legendH+(i/cols)*panelH
		drawPanel(&b, ox, oy, wl, series[wl], labels)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func drawPanel(b *strings.Builder, ox, oy int, wl string, byLabel map[string]*Result, labels []string) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range byLabel {
		for _, p := range r.Latency.Spectrum {
			v := math.Max(p.Micros, 1)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	// Whole decades of microseconds, at least one.
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	x0, x1 := float64(ox+plotL), float64(ox+panelW-plotR)
	y0, y1 := float64(oy+panelH-plotB), float64(oy+plotT)
	px := func(p float64) float64 { return x0 + (x1-x0)*percentileX(p)/(maxNines+maxGap) }
	py := func(us float64) float64 {
		return y0 - (y0-y1)*(math.Log10(math.Max(us, 1))-dlo)/(dhi-dlo)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold" font-size="12">%s</text>`+"\n", ox+plotL, oy+16, html.EscapeString(wl))
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`+"\n", x0, y1, x1-x0, y0-y1)
	for d := dlo; d <= dhi; d++ {
		y := py(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`, x0, y, x1, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-4, y+4, msLabel(math.Pow(10, d)))
	}
	ticks := []struct {
		p     float64
		label string
	}{{0, "0"}, {90, "90"}, {99, "99"}, {99.9, "99.9"}, {99.99, "99.99"}, {99.999, "99.999"}, {100, "max"}}
	for _, t := range ticks {
		x := px(t.p)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`, x, y0, x, y1)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, y0+14, t.label)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">percentile</text>`+"\n", (x0+x1)/2, y0+28)
	for i, l := range labels {
		r := byLabel[l]
		if r == nil {
			continue
		}
		var pts []string
		for _, p := range r.Latency.Spectrum {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.Percentile), py(p.Micros)))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s %s</title></polyline>`+"\n",
			palette[i%len(palette)], strings.Join(pts, " "), html.EscapeString(l), html.EscapeString(wl))
	}
}

// msLabel renders a decade of microseconds as milliseconds.
func msLabel(us float64) string {
	v := us / 1000
	switch {
	case v >= 1:
		return fmt.Sprintf("%g", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}
