package prep

import (
	"fmt"
	"testing"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

// BenchmarkPrepareSetData1K prepares 1 KiB setDatas with 32 outstanding, as a pipelined
// server does: each txn is applied (and the overlay told) 32 txns after it was prepared.
func BenchmarkPrepareSetData1K(b *testing.B) {
	const keys, window = 256, 32
	tree := datatree.New()
	p := New(tree)
	data := make([]byte, 1024)
	reqs := make([]*Request, keys)
	zxid := int64(0)
	for i := range reqs {
		path := fmt.Sprintf("/k%04d", i)
		zxid++
		t := p.Prepare(&Request{SessionID: 1, Type: jute.OpCreate, Body: &jute.CreateRequest{Path: path, Data: data, ACL: jute.OpenACLUnsafe}}, zxid, 1)
		tree.Apply(&t.Header, t.Body)
		p.Applied(zxid)
		reqs[i] = &Request{SessionID: 1, Type: jute.OpSetData, Body: &jute.SetDataRequest{Path: path, Data: data, Version: -1}}
	}
	var ring [window]*jute.LoggedTxn
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		zxid++
		if t := ring[zxid%window]; t != nil {
			if res := tree.Apply(&t.Header, t.Body); res.Err != jute.OK {
				b.Fatal(res.Err)
			}
			p.Applied(t.Header.Zxid)
		}
		ring[zxid%window] = p.Prepare(reqs[i%keys], zxid, 2)
	}
}
