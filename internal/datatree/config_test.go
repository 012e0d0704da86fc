package datatree

import (
	"testing"

	"github.com/zkd-io/zkd/jute"
)

func TestSetConfig(t *testing.T) {
	tr := New()
	digest, size := tr.Digest(), tr.ApproximateDataSize()
	text := []byte("server.1=127.0.0.1:2888:3888:participant\nversion=0")
	ev := tr.SetConfig(text, 0, 1700000000000)
	if len(ev) != 1 || ev[0].Type != jute.EventNodeDataChanged || ev[0].Path != ConfigPath {
		t.Errorf("events = %+v, want one NodeDataChanged on %s", ev, ConfigPath)
	}
	n := tr.Get(ConfigPath)
	if string(n.Data) != string(text) {
		t.Errorf("data = %q", n.Data)
	}
	// As ZooKeeper 3.8 serves it: only Mtime, Version -1, and the ACL's Aversion -1.
	want := jute.Stat{Mtime: 1700000000000, Version: -1, Aversion: -1, DataLength: int32(len(text))}
	if got := tr.StatOf(n); got != want {
		t.Errorf("stat = %+v, want %+v", got, want)
	}
	if acl := tr.ACL(n.ACL); len(acl) != 1 || acl[0] != jute.ReadACLUnsafe[0] {
		t.Errorf("ACL = %+v, want world:anyone READ", acl)
	}
	// ZooKeeper leaves /zookeeper/ out of the digest but counts the data's size.
	if tr.Digest() != digest {
		t.Errorf("digest changed: %x -> %x", digest, tr.Digest())
	}
	if got := tr.ApproximateDataSize(); got != size+int64(len(text)) {
		t.Errorf("data size = %d, want %d", got, size+int64(len(text)))
	}
	// A later configuration's version is the Mzxid.
	tr.SetConfig([]byte("version=100000002"), 0x100000002, 1700000000001)
	if st := tr.StatOf(tr.Get(ConfigPath)); st.Mzxid != 0x100000002 || st.Version != -1 || st.Czxid != 0 {
		t.Errorf("stat after second config = %+v", st)
	}
	if tr.LastZxid() != 0 {
		t.Errorf("SetConfig moved the last zxid to %x", tr.LastZxid())
	}
}
