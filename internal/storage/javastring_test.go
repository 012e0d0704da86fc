package storage

import (
	"bytes"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

// TestSnapshotStringsAsJava: ACL ids may hold any characters. The snapshot holds them as
// ZooKeeper's writer does (a character above U+FFFF as two 3-byte surrogates), and they read
// back as ZooKeeper's reader gives them (each surrogate, like any malformed UTF-8, as U+FFFD),
// not as a corrupt snapshot.
func TestSnapshotStringsAsJava(t *testing.T) {
	m := NewMemFS()
	c := testTree("x")
	c.acls[7] = []jute.ACL{
		{Perms: 31, ID: jute.ID{Scheme: "digest", ID: "😀:x"}},
		{Perms: 1, ID: jute.ID{Scheme: "digest", ID: "\xed\xa0\xbd\xc3(:x"}}, // written as it is
	}
	writeSnap(t, m, vdir, 9, c, 10)
	f, err := m.OpenFile(vdir+"/snapshot.9", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	if _, err := raw.ReadFrom(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !bytes.Contains(raw.Bytes(), []byte("\x00\x00\x00\x08\xed\xa0\xbd\xed\xb8\x80:x")) {
		t.Errorf("the snapshot does not hold 😀:x as CESU-8")
	}
	got := &snapContents{}
	if err := ReadSnapshotFile(m, vdir, SnapshotFile{"snapshot.9", 9}, got.handler()); err != nil {
		t.Fatal(err)
	}
	ids := got.acls[7]
	if len(ids) != 2 || ids[0].ID.ID != "\uFFFD\uFFFD:x" || ids[1].ID.ID != "\uFFFD\uFFFD(:x" {
		t.Errorf("ACL 7 reads back as %+q", ids)
	}
}
