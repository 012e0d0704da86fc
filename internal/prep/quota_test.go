package prep

import (
	"testing"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

// quotaFixture is a preparer over a tree where /q has a hard count limit of 3 and a hard
// byte limit of 10, holding /q ("abc") and /q/a ("xy"): count 2, bytes 5.
func quotaFixture(t *testing.T) (p *Preparer, prepare func(*Request) *jute.LoggedTxn, apply func(*jute.LoggedTxn), seen *[]datatree.QuotaExceeded) {
	t.Helper()
	tree := datatree.New()
	p = New(tree)
	p.EnforceQuota = true
	seen = new([]datatree.QuotaExceeded)
	p.OnQuotaExceeded = func(e datatree.QuotaExceeded) { *seen = append(*seen, e) }
	zxid := int64(0)
	prepare = func(r *Request) *jute.LoggedTxn {
		zxid++
		return p.Prepare(r, zxid, 1)
	}
	apply = func(txn *jute.LoggedTxn) {
		if res := tree.Apply(&txn.Header, txn.Body); res.Err != 0 {
			t.Fatalf("apply %+v: %v", txn.Header, res.Err)
		}
		p.Applied(txn.Header.Zxid)
	}
	for _, c := range []struct{ path, data string }{
		{"/q", "abc"}, {"/q/a", "xy"}, {"/zookeeper/quota/q", ""},
		{"/zookeeper/quota/q/zookeeper_limits", "count=-1,bytes=-1=;byteHardLimit=10;countHardLimit=3"},
		{"/zookeeper/quota/q/zookeeper_stats", "count=0,bytes=0"},
	} {
		txn := prepare(createReq(c.path, c.data))
		if txn.Header.Type == jute.OpError {
			t.Fatalf("setup create %s: %+v", c.path, txn.Body)
		}
		apply(txn)
	}
	return p, prepare, apply, seen
}

func createReq(path, data string) *Request {
	return &Request{SessionID: 1, Type: jute.OpCreate, Body: &jute.CreateRequest{Path: path, Data: []byte(data), ACL: jute.OpenACLUnsafe}}
}

func setDataReq(path, data string, version int32) *Request {
	return &Request{SessionID: 1, Type: jute.OpSetData, Body: &jute.SetDataRequest{Path: path, Data: []byte(data), Version: version}}
}

func errOf(txn *jute.LoggedTxn) jute.Code {
	if txn.Header.Type != jute.OpError {
		return 0
	}
	return txn.Body.(*jute.ErrorTxn).Err
}

func TestQuotaEnforced(t *testing.T) {
	p, prepare, apply, seen := quotaFixture(t)
	apply(prepare(createReq("/q/b", "")))
	if got := errOf(prepare(createReq("/q/c", ""))); got != jute.ErrQuotaExceeded {
		t.Fatalf("fourth node: %v, want QUOTAEXCEEDED", got)
	}
	if len(*seen) != 1 || !(*seen)[0].Hard || (*seen)[0].Namespace != "q" {
		t.Errorf("reported %+v", *seen)
	}
	// Bytes: setData counts the change in length and is checked before its version.
	if got := errOf(prepare(setDataReq("/q/a", "1234567890", 9))); got != jute.ErrQuotaExceeded {
		t.Errorf("setData past the byte limit with a bad version: %v", got)
	}
	if got := errOf(prepare(setDataReq("/q/a", "1234567", -1))); got != 0 {
		t.Errorf("setData to exactly 10 bytes: %v", got)
	}
	// Off, nothing is checked.
	p.EnforceQuota = false
	if got := errOf(prepare(createReq("/q/c", ""))); got != 0 {
		t.Errorf("not enforced: %v", got)
	}
}

// As in ZooKeeper, the stats are the applied tree's: two outstanding creates, or two in one
// multi, are each checked against the same count; but a setData's old length is the
// outstanding one.
func TestQuotaChecksTheAppliedTree(t *testing.T) {
	_, prepare, apply, _ := quotaFixture(t)
	t1 := prepare(createReq("/q/b", ""))
	t2 := prepare(createReq("/q/c", ""))
	if errOf(t1) != 0 || errOf(t2) != 0 {
		t.Fatalf("pipelined creates: %v %v", errOf(t1), errOf(t2))
	}
	apply(t1)
	apply(t2)
	if got := errOf(prepare(createReq("/q/d", ""))); got != jute.ErrQuotaExceeded {
		t.Fatalf("after both applied: %v", got)
	}

	_, prepare, _, _ = quotaFixture(t)
	m := prepare(&Request{SessionID: 1, Type: jute.OpMulti, Body: &jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpCreate, Body: &jute.CreateRequest{Path: "/q/m1", ACL: jute.OpenACLUnsafe}},
		{Type: jute.OpCreate, Body: &jute.CreateRequest{Path: "/q/m2", ACL: jute.OpenACLUnsafe}},
	}}})
	if m.Header.Type != jute.OpMulti {
		t.Fatalf("multi of two creates: %+v", m.Body)
	}

	_, prepare, _, _ = quotaFixture(t)
	// Outstanding: /q/a grows from 2 to 7 bytes (the applied stats still say 5). A setData
	// to 8 bytes adds 1 to the applied 5 (ZooKeeper's ChangeRecord data), where the applied
	// length would have made it 5+6, past the limit.
	if got := errOf(prepare(setDataReq("/q/a", "1234567", -1))); got != 0 {
		t.Fatalf("first setData: %v", got)
	}
	if got := errOf(prepare(setDataReq("/q/a", "12345678", -1))); got != 0 {
		t.Errorf("one byte more than the outstanding data: %v", got)
	}
	if got := errOf(prepare(setDataReq("/q/a", "12345678901234", -1))); got != jute.ErrQuotaExceeded {
		t.Errorf("six bytes more than the outstanding data: %v", got)
	}
}

// A soft limit is reported, never refused.
func TestQuotaSoft(t *testing.T) {
	_, prepare, apply, seen := quotaFixture(t)
	apply(prepare(setDataReq("/zookeeper/quota/q/zookeeper_limits", "count=2,bytes=5", -1)))
	if got := errOf(prepare(createReq("/q/b", "x"))); got != 0 {
		t.Fatalf("soft limits refused: %v", got)
	}
	if len(*seen) != 2 || (*seen)[0].Hard || (*seen)[0].Bytes || !(*seen)[1].Bytes {
		t.Errorf("reported %+v", *seen)
	}
}
