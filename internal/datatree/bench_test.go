package datatree

import (
	"math/rand"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// benchTree has 256 persistent parents /p000 ... /p255 to spread creates over.
func benchTree(tb testing.TB) (*Tree, *jute.TxnHeader) {
	tb.Helper()
	tr := New()
	h := &jute.TxnHeader{ClientID: 0x1000, Time: 1_700_000_000_000, Type: jute.OpCreate}
	for i := 0; i < 256; i++ {
		h.Zxid++
		p := "/p" + strconv.Itoa(1000 + i)[1:]
		if r := tr.Apply(h, &jute.CreateTxn{Path: p, Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: int32(i + 1)}); r.Err != jute.OK {
			tb.Fatal(r.Err)
		}
	}
	return tr, h
}

func BenchmarkApplyCreate(b *testing.B) {
	tr, h := benchTree(b)
	data := []byte("0123456789abcdef")
	parents := make([]string, 256)
	for i := range parents {
		parents[i] = "/p" + strconv.Itoa(1000 + i)[1:] + "/n"
	}
	body := &jute.CreateTxn{Data: data, ACL: jute.OpenACLUnsafe}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.Zxid++
		body.Path = parents[i&255] + strconv.Itoa(i)
		body.ParentCVersion = int32(i>>8) + 1
		if r := tr.Apply(h, body); r.Err != jute.OK {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkApplySetData(b *testing.B) {
	tr, h := benchTree(b)
	h.Type = jute.OpSetData
	bodies := make([]*jute.SetDataTxn, 256)
	for i := range bodies {
		bodies[i] = &jute.SetDataTxn{Path: "/p" + strconv.Itoa(1000 + i)[1:], Data: []byte("0123456789abcdef")}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.Zxid++
		body := bodies[i&255]
		body.Version++
		if r := tr.Apply(h, body); r.Err != jute.OK {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkWalk(b *testing.B) {
	tr, h := benchTree(b)
	body := &jute.CreateTxn{Data: []byte("x"), ACL: jute.OpenACLUnsafe}
	for i := 0; i < 10000; i++ {
		h.Zxid++
		body.Path = "/p" + strconv.Itoa(1000 + i&255)[1:] + "/n" + strconv.Itoa(i)
		tr.Apply(h, body)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var buf []SnapNode
	for i := 0; i < b.N; i++ {
		w := tr.Walk()
		for done := false; !done; {
			buf, done = w.Next(1000, buf[:0])
		}
		w.Close()
	}
}

// TestMemoryPerNode reports the heap cost of a node (100k nodes, 16-byte data, 11-byte
// names, 100 parents). It only logs: run with -v to see the figure.
func TestMemoryPerNode(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	const n = 100_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tr := New()
	h := &jute.TxnHeader{ClientID: 0x1000, Time: 1_700_000_000_000, Type: jute.OpCreate}
	for i := 0; i < 100; i++ {
		h.Zxid++
		tr.Apply(h, &jute.CreateTxn{Path: "/p" + strconv.Itoa(100+i), Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: int32(i + 1)})
	}
	for i := 0; i < n-100; i++ {
		h.Zxid++
		tr.Apply(h, &jute.CreateTxn{
			Path:           "/p" + strconv.Itoa(100+i%100) + "/n" + strconv.Itoa(1_000_000_000+i),
			Data:           []byte("0123456789abcdef"),
			ACL:            jute.OpenACLUnsafe,
			ParentCVersion: int32(i/100 + 1),
		})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if tr.NodeCount() != n+4 {
		t.Fatalf("NodeCount %d", tr.NodeCount())
	}
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	note := ""
	if raceEnabled {
		note = " (race detector on: inflated)"
	}
	t.Logf("%d nodes: %.0f heap bytes/node%s", n, per, note)
	runtime.KeepAlive(tr)
}

// BenchmarkFill builds a tree of 1M nodes (10-byte data, 16-byte names, under 100 parents)
// per iteration and reports the heap bytes a node costs and the collector's time to mark
// the full tree once (what every cycle pays while the tree is live).
func BenchmarkFill(b *testing.B) {
	const n = 1_000_000
	data := []byte("0123456789")
	for it := 0; it < b.N; it++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tr := New()
		h := &jute.TxnHeader{ClientID: 0x1000, Time: 1_700_000_000_000, Type: jute.OpCreate}
		body := &jute.CreateTxn{Data: []byte{}, ACL: jute.OpenACLUnsafe}
		for i := 0; i < 100; i++ {
			h.Zxid++
			body.Path, body.ParentCVersion = "/p"+strconv.Itoa(100+i), int32(i+1)
			tr.Apply(h, body)
		}
		body.Data = data
		for i := 0; i < n-100; i++ {
			h.Zxid++
			body.Path = "/p" + strconv.Itoa(100+i%100) + "/n" + strconv.Itoa(1_000_000_000_000_000 + i)[:15]
			body.ParentCVersion = int32(i/100 + 1)
			tr.Apply(h, body)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heapB/node")
		// A forced collection marks everything live: its time is the tree's marking cost.
		start := time.Now()
		runtime.GC()
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "gc-ms")
		runtime.KeepAlive(tr)
	}
}

// BenchmarkSetData1KBigTree sets 1 KB values on 10k nodes of a 1M-node tree in a random
// order, as zkbench's set workload does against a big tree: the arena's compaction of the
// rewritten values is part of each set's cost.
func BenchmarkSetData1KBigTree(b *testing.B) {
	tr := New()
	h := &jute.TxnHeader{ClientID: 0x1000, Time: 1_700_000_000_000, Type: jute.OpCreate}
	body := &jute.CreateTxn{Data: []byte("0123456789"), ACL: jute.OpenACLUnsafe}
	for i := 0; i < 100; i++ {
		h.Zxid++
		body.Path, body.ParentCVersion = "/p"+strconv.Itoa(100+i), int32(i+1)
		tr.Apply(h, body)
	}
	for i := 0; i < 1_000_000; i++ {
		h.Zxid++
		body.Path = "/p" + strconv.Itoa(100+i%100) + "/n" + strconv.Itoa(1_000_000_000_000_000 + i)[:15]
		body.ParentCVersion = int32(i/100 + 1)
		tr.Apply(h, body)
	}
	const keys = 10_000
	sets := make([]*jute.SetDataTxn, keys)
	for i := range sets {
		j := i * 97
		sets[i] = &jute.SetDataTxn{Path: "/p" + strconv.Itoa(100+j%100) + "/n" + strconv.Itoa(1_000_000_000_000_000 + j)[:15],
			Data: make([]byte, 1024), Version: -1}
	}
	rng := rand.New(rand.NewSource(1))
	h.Type = jute.OpSetData
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.Zxid++
		if r := tr.Apply(h, sets[rng.Intn(keys)]); r.Err != jute.OK {
			b.Fatal(r.Err)
		}
	}
}
