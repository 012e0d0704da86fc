package bench

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleResult(label, workload string, opsPerSec, p99us float64) *Result {
	r := newRecorder()
	for range 1000 {
		r.record(time.Duration(p99us/2)*time.Microsecond, nil)
	}
	res := &Result{Label: label, Workload: workload, Servers: "127.0.0.1:2181", Clients: 64, Outstanding: 32, DataSize: 1024, Keys: 10000}
	res.fill(r, time.Second)
	res.OpsPerSec = opsPerSec
	res.Latency.P99 = p99us
	res.ServerCPUSeconds = 0.5
	res.ServerCPUPerOpUS = 1e6 * 0.5 / opsPerSec
	res.ClientCPUSeconds = 0.25
	res.ClientCPUPerOpUS = 1e6 * 0.25 / opsPerSec
	return res
}

func TestTableRow(t *testing.T) {
	var b bytes.Buffer
	tableHeader(&b)
	res := sampleResult("zkd", "set", 40000, 1500)
	res.Errors = 2
	res.ErrorKinds = map[string]int64{"zk: bad version": 2}
	tableRow(&b, res)
	tableRow(&b, &Result{Kind: kindWait, Workload: "recovery-clean", Label: "zkd", Servers: "127.0.0.1:1", ElapsedSeconds: 1.25, Errors: 3})
	out := b.String()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want header, row, error line and wait line; got\n%s", out)
	}
	for _, want := range []string{"set", "zkd", "40000", "1.500", "12.5", "6.25", "50", "25"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("row lacks %q: %s", want, lines[1])
		}
	}
	// Columns line up with the header.
	if i, j := strings.Index(lines[0], "ops/s"), strings.Index(lines[1], "40000"); i+len("ops/s") != j+len("40000") {
		t.Errorf("ops/s column misaligned:\n%s\n%s", lines[0], lines[1])
	}
	if i, j := strings.Index(lines[0], "cli us/op"), strings.Index(lines[1], "6.25"); i+len("cli us/op") != j+len("6.25") {
		t.Errorf("cli us/op column misaligned:\n%s\n%s", lines[0], lines[1])
	}
	if !strings.Contains(lines[2], "errors: zk: bad version: 2") {
		t.Errorf("error line: %s", lines[2])
	}
	if !strings.Contains(lines[3], "first success after 1.250 s (3 failed attempts)") {
		t.Errorf("wait line: %s", lines[3])
	}
}

func TestJSONRoundTrip(t *testing.T) {
	in := []*Result{sampleResult("zkd", "get", 100000, 800), {Kind: kindWait, Workload: "failover", Label: "zookeeper", ElapsedSeconds: 2.5, Ops: 1}}
	var b bytes.Buffer
	for _, r := range in {
		if err := writeJSON(&b, r); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(b.String(), "\n"); n != 2 {
		t.Fatalf("%d lines, want 2:\n%s", n, b.String())
	}
	out, err := readResults(strings.NewReader(b.String() + "\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip changed results:\n in %+v\nout %+v", in[0], out[0])
	}
	if _, err := readResults(strings.NewReader("{\"workload\":\"x\"}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: err = %v", err)
	}
}

func TestComparison(t *testing.T) {
	zkd := []*Result{
		sampleResult("zkd", "set", 40000, 1000),
		sampleResult("zkd", "get", 60000, 500),
		{Kind: kindWait, Workload: "recovery-clean", ElapsedSeconds: 0.2},
		{Kind: kindWait, Workload: "failover", Note: "skipped: no ensemble mode yet"},
	}
	zk := []*Result{
		sampleResult("zookeeper", "set", 10000, 8000),
		sampleResult("zookeeper", "set", 20000, 4000), // the last result of a workload counts
		sampleResult("zookeeper", "get", 50000, 400),
		{Kind: kindWait, Workload: "recovery-clean", ElapsedSeconds: 4},
		{Kind: kindWait, Workload: "failover", ElapsedSeconds: 1.5},
	}
	var b bytes.Buffer
	writeComparison(&b, newSide("zkd", zkd), newSide("ZooKeeper", zk), true, nil)
	md := b.String()
	for _, want := range []string{
		"| goal | target (zkd / ZooKeeper) | zkd | ZooKeeper | ratio | met |\n",
		"| throughput, set 64 × 32 (ops/s) | ≥ 3x | 40000 | 20000 | 2.00x | no |",
		"| throughput, get 64 × 32 (ops/s) | ≥ 3x | 60000 | 50000 | 1.20x | no |",
		"| p99 latency, set 64 × 32 (ms) | ≤ 0.33x | 1.00 | 4.00 | 0.25x | yes |",
		"| restart until the last write is readable, clean stop, 1M znodes (s) | ≤ 0.1x | 0.200 | 4.00 | 0.05x | yes |",
		// Goals neither side measured are listed all the same.
		"| memory per znode at 1M znodes (bytes of RSS) | ≤ 0.25x | — | — | — | not measured |",
		"| leader kill -9 until a write succeeds, 3 servers, empty (s) | ≤ 0.25x and ≤ 0.105 s | — | 1.50 | — | not measured |",
		"### set\n\n64 sessions × 32 outstanding, 1024-byte data, 10000 keys; measured for 1.0 s.",
		"| throughput (ops/s) | 40000 | 20000 | 2.00x |",
		"| p99 latency (ms) | 0.500 | 0.400 | 1.25x |",
		"| server CPU (% of a core) | 50 | 50 | 1.00x |",
		"| zkbench CPU per op (µs) | 6.25 | 12.5 |  |",
		"| recovery-clean | 0.200 | 4.000 | 0.05x |",
		"| failover | skipped: no ensemble mode yet | 1.500 | — |",
		"| errors | 0 | 0 | |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("comparison lacks %q", want)
		}
	}
	if strings.Count(md, "\n| ") < len(goals) || strings.Contains(md, "why") {
		t.Error("goals missing, or a why column without notes")
	}
	if strings.Contains(md, "Warning") {
		t.Error("contention warning without contention")
	}
	zk[2].OtherCPUPct, zk[2].StealPct = 30, 5
	b.Reset()
	writeComparison(&b, newSide("zkd", zkd), newSide("ZooKeeper", zk), true, nil)
	if want := "**Warning:** other processes or virtual machines took up to 35% of the machine's CPU during 1 runs, whose figures are therefore unreliable: ZooKeeper get (35%)."; !strings.Contains(b.String(), want) {
		t.Errorf("no contention warning:\n%s", b.String())
	}
	// Every table row has as many cells as its header.
	cells := 0
	for _, line := range strings.Split(md, "\n") {
		switch {
		case !strings.HasPrefix(line, "|"):
			cells = 0
		case cells == 0:
			cells = strings.Count(line, "|")
		case strings.Count(line, "|") != cells:
			t.Errorf("row with %d separators in a table of %d: %s", strings.Count(line, "|"), cells, line)
		}
	}
}

func TestRatio(t *testing.T) {
	for _, c := range []struct {
		a, b float64
		want string
	}{{3, 2, "1.50x"}, {0, 2, "—"}, {2, 0, "—"}} {
		if got := ratio(c.a, c.b); got != c.want {
			t.Errorf("ratio(%v, %v) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

func TestPlot(t *testing.T) {
	rs := []*Result{
		sampleResult("zkd", "set", 1, 1000), sampleResult("zookeeper", "set", 1, 3000),
		sampleResult("zkd", "get", 1, 300), sampleResult("zkd <&>", "watch", 1, 50),
		{Kind: kindWait, Workload: "failover", ElapsedSeconds: 1}, // no latencies: left out
	}
	var b bytes.Buffer
	if err := writePlot(&b, rs); err != nil {
		t.Fatal(err)
	}
	// Well-formed XML, with one line per (workload, label) and a panel title per workload.
	d := xml.NewDecoder(&b)
	lines, titles := 0, map[string]bool{}
	inTitle := false
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
			if tok.Name.Local == "polyline" {
				lines++
			}
			inTitle = tok.Name.Local == "text" && len(tok.Attr) > 0 && hasAttr(tok, "font-weight")
		case xml.CharData:
			if inTitle {
				titles[string(tok)] = true
			}
		case xml.EndElement:
			inTitle = false
		}
	}
	if lines != 4 {
		t.Errorf("%d polylines, want 4", lines)
	}
	for _, w := range []string{"set", "get", "watch"} {
		if !titles[w] {
			t.Errorf("no panel titled %q (have %v)", w, titles)
		}
	}
	if err := writePlot(io.Discard, rs[4:]); err == nil {
		t.Error("plotting nothing did not fail")
	}
}

func hasAttr(e xml.StartElement, name string) bool {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return true
		}
	}
	return false
}

func TestPercentileX(t *testing.T) {
	for _, c := range []struct{ p, x float64 }{{0, 0}, {90, 1}, {99, 2}, {99.9, 3}, {100, maxNines + maxGap}} {
		if got := percentileX(c.p); !within(got*1000, c.x*1000) {
			t.Errorf("percentileX(%v) = %v, want %v", c.p, got, c.x)
		}
	}
}

func TestScaleTable(t *testing.T) {
	scale := func(label string, childrenOps, bigreadOps float64) []*Result {
		ch := sampleResult(label, "children", childrenOps, 200000)
		ch.Clients, ch.Outstanding, ch.DataSize, ch.Keys = 4, 2, 0, 1000000
		br := sampleResult(label, "bigread", bigreadOps, 90000)
		br.Clients, br.Outstanding, br.DataSize, br.Keys = 1000, 1, 1048000, 1
		return []*Result{ch, br}
	}
	zkd := append(scale("zkd", 40, 2000), &Result{Workload: "znodes-10m", BytesPerZnode: 300, Keys: 10000000, SnapshotMaxMS: 4000, SnapshotCount: 20})
	zk := append(scale("zookeeper", 10, 1000), &Result{Workload: "znodes-10m", BytesPerZnode: 600, Keys: 10000000, SnapshotMaxMS: 16000, SnapshotCount: 10})
	var b bytes.Buffer
	writeComparison(&b, newSide("zkd", zkd), newSide("ZooKeeper", zk), true, nil)
	md := b.String()
	for _, want := range []string{
		"### Scale\n\n",
		"memory per znode and restart time at 10M znodes are in the goals table",
		"| metric | zkd | ZooKeeper | zkd / ZooKeeper |\n|---|---|---|---|\n| getChildren, 1000000 children (4 × 2): throughput (ops/s) | 40 | 10 | 4.00x |",
		"| getChildren, 1000000 children (4 × 2): server CPU per op (µs) | 12500 | 50000 | 0.25x |",
		// 2000 reads/s of 1048000 bytes.
		"| getData of 1048000 bytes (1000 × 1): data read (MB/s) | 1999 | 999 | 2.00x |",
		"| getData of 1048000 bytes (1000 × 1): p99 latency (ms) | 90.0 | 90.0 | 1.00x |",
		"### children\n\ngetChildren of a node with 1000000 empty children, 4 sessions × 2 outstanding;",
		"### bigread\n\ngetData of one 1048000-byte znode, 1000 sessions × 1 outstanding;",
		"| snapshots written while growing the tree to 10000000 znodes: the longest (ms) | 4000 | 16000 | 0.25x |",
		"| snapshots written while growing the tree to 10000000 znodes: count | 20 | 10 | 2.00x |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("comparison lacks %q:\n%s", want, md)
		}
	}
	if i, j := strings.Index(md, "### Goals"), strings.Index(md, "### Scale"); i < 0 || j < i {
		t.Errorf("the scale table is not after the goals")
	}

	// Without the scale runs there is no table.
	b.Reset()
	writeComparison(&b, newSide("zkd", []*Result{{Workload: "set", Ops: 10, OpsPerSec: 1}}), newSide("ZooKeeper", nil), true, nil)
	if strings.Contains(b.String(), "### Scale") {
		t.Errorf("a scale table without scale runs:\n%s", b.String())
	}
}
