package storage

import (
	"os"
	"strconv"
	"testing"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

// BenchmarkLoadSnapshot reads a snapshot file of 2M nodes (10-byte data, 16-byte names under
// 100 parents) into a tree, as a restart does: the decoder and the loader, not the disk (the
// file is in the page cache after the first iteration).
func BenchmarkLoadSnapshot(b *testing.B) {
	n := 2_000_000
	if s := os.Getenv("ZKD_LOADBENCH_NODES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	fsys, dir := OSFS{}, b.TempDir()
	func() {
		tr := datatree.New()
		h := &jute.TxnHeader{ClientID: 0x1000, Time: 1_700_000_000_000, Type: jute.OpCreate}
		body := &jute.CreateTxn{Data: []byte{}, ACL: jute.OpenACLUnsafe}
		for i := 0; i < 100; i++ {
			h.Zxid++
			body.Path, body.ParentCVersion = "/p"+strconv.Itoa(100+i), int32(i+1)
			tr.Apply(h, body)
		}
		body.Data = []byte("0123456789")
		for i := 0; i < n-100; i++ {
			h.Zxid++
			body.Path = "/p" + strconv.Itoa(100+i%100) + "/n" + strconv.Itoa(1_000_000_000_000_000 + i)[:15]
			body.ParentCVersion = int32(i/100 + 1)
			tr.Apply(h, body)
		}
		if err := WriteSnapshot(fsys, dir, tr.Capture(), nil, SnapUncompressed, nil); err != nil {
			b.Fatal(err)
		}
	}()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		var loader *datatree.Loader
		sf, err := LoadNewest(fsys, dir, nil, func(SnapshotFile) SnapshotHandler {
			loader = datatree.NewLoader()
			return SnapshotHandler{
				ACL:  func(key int64, acls []jute.ACL) error { loader.ACL(key, acls); return nil },
				Node: func(n SnapNode) error { return loader.Node(n) },
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		tr, err := loader.Finish(false, sf.Zxid)
		if err != nil {
			b.Fatal(err)
		}
		if got := tr.NodeCount(); got < n {
			b.Fatalf("loaded %d nodes, want %d", got, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
}
