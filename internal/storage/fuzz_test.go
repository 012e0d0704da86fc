package storage

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"testing"
)

// FuzzReadLog: reading arbitrary bytes as a log never panics; recovery keeps exactly the
// entries a read delivered before stopping, and leaves a log that reads without error.
func FuzzReadLog(f *testing.F) {
	head, err := os.ReadFile("testdata/log.1.head")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(head)
	f.Add(head[:300])
	f.Add([]byte{})
	f.Add(head[:16])
	m := NewMemFS()
	l, _ := OpenLog(m, vdir, LogOptions{PreAllocSize: -1, Logger: quiet})
	for _, e := range mkEntries(1, 4, 0) {
		l.Append(e.zxid, e.txn)
	}
	l.Close()
	own, _ := m.ReadFile(vdir + "/log.1")
	f.Add(own)
	f.Fuzz(func(t *testing.T, data []byte) {
		m := NewMemFS()
		m.MkdirAll(vdir, 0o755)
		m.WriteFile(vdir+"/log.1", data)
		before, lastBefore, err := readAll(t, m, vdir, 0)
		if err != nil && !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("unexpected error: %v", err)
		}
		l, err := OpenLog(m, vdir, LogOptions{PreAllocSize: -1, Logger: quiet})
		if err != nil {
			t.Fatalf("OpenLog: %v", err)
		}
		defer l.Close()
		after, lastAfter, err := readAll(t, m, vdir, 0)
		if err != nil {
			t.Fatalf("after recovery: %v", err)
		}
		sameEntries(t, after, before)
		if lastAfter != lastBefore {
			t.Fatalf("last zxid %#x before, %#x after", lastBefore, lastAfter)
		}
		if len(after) > 0 && l.LastZxid() != after[len(after)-1].zxid {
			t.Fatalf("LastZxid %#x", l.LastZxid())
		}
	})
}

// FuzzReadSnapshot: decoding arbitrary bytes as a snapshot or SNAP stream never panics, and
// every failure that is not a handler error is reported as corruption.
func FuzzReadSnapshot(f *testing.F) {
	for _, name := range []string{"snapshot.0", "snapshot.3c"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	var stream bytes.Buffer
	c := testTree("f")
	sw, _ := NewSnapStreamWriter(&stream, c.sessions, c.acls)
	sw.WriteNodes(c.nodes[:3])
	sw.Finish()
	f.Add(stream.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &snapContents{}
		if err := ReadSnapshot(bytes.NewReader(data), c.handler()); err != nil && !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("ReadSnapshot: %v", err)
		}
		c = &snapContents{}
		if err := ReadSnapStream(bufio.NewReader(bytes.NewReader(data)), c.handler()); err != nil && !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("ReadSnapStream: %v", err)
		}
	})
}
