package jute

import (
	"bytes"
	"testing"
)

// A version-11 ConnectRequest has ClickHouse's layout: the compression byte after the
// version, 46 bytes with readOnly.
func TestConnectRequestXID64Layout(t *testing.T) {
	req := ConnectRequest{ProtocolVersion: ProtocolVersionXID64, XID64: true, LastZxidSeen: 7, TimeOut: 30000,
		SessionID: 0x0102030405060708, Passwd: bytes.Repeat([]byte{9}, 16), ReadOnly: true, HasReadOnly: true}
	b := Marshal(&req)
	if len(b) != 46 {
		t.Fatalf("encoded %d bytes, want 46", len(b))
	}
	want := []byte{0, 0, 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0x75, 0x30, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 16}
	if !bytes.Equal(b[:len(want)], want) {
		t.Fatalf("encoded % x, want prefix % x", b, want)
	}
	var got ConnectRequest
	d := Decoder{B: b}
	got.DecodeXID64(&d)
	if d.Err() != nil || d.Remaining() != 0 {
		t.Fatalf("DecodeXID64: %v, %d left", d.Err(), d.Remaining())
	}
	if !got.XID64 || got.ProtocolVersion != 11 || got.LastZxidSeen != 7 || got.SessionID != req.SessionID || !got.ReadOnly || !got.HasReadOnly || got.Compression {
		t.Fatalf("decoded %+v", got)
	}
	// ZooKeeper's layout, whatever the version.
	req.XID64 = false
	if n := len(Marshal(&req)); n != 45 {
		t.Fatalf("ZooKeeper's layout: %d bytes, want 45", n)
	}
}

func TestHeaders64(t *testing.T) {
	rq := RequestHeader64{Xid: 1 << 40, Type: OpGetData}
	b := Marshal(&rq)
	if len(b) != RequestHeader64Size {
		t.Fatalf("request header: %d bytes", len(b))
	}
	var rq2 RequestHeader64
	if err := Unmarshal(b, &rq2); err != nil || rq2 != rq {
		t.Fatalf("request header round trip: %+v, %v", rq2, err)
	}
	rp := ReplyHeader64{Xid: -1, Zxid: 5, Err: ErrNoNode}
	b = Marshal(&rp)
	if len(b) != ReplyHeader64Size || !bytes.Equal(b[:8], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) {
		t.Fatalf("reply header: % x", b)
	}
	var rp2 ReplyHeader64
	if err := Unmarshal(b, &rp2); err != nil || rp2 != rp {
		t.Fatalf("reply header round trip: %+v, %v", rp2, err)
	}
}
