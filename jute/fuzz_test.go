package jute

import (
	"reflect"
	"strings"
	"testing"
)

// goldenRequests returns the request frames (RequestHeader + body) of the captures.
func goldenRequests(f *testing.F) [][]byte {
	var out [][]byte
	for _, name := range []string{"01-kazoo-session.txt", "02-java-client-session.txt", "03-raw-edge-cases.txt"} {
		for _, fr := range parseGoldenFrames(f, name) {
			if fr.Dir == "C>S" && fr.Label != "ConnectRequest" {
				out = append(out, fr.Bytes)
			}
		}
	}
	return out
}

func FuzzDecodeRequest(f *testing.F) {
	seeds := goldenRequests(f)
	if len(seeds) < 60 {
		f.Fatalf("only %d seed requests", len(seeds))
	}
	for _, b := range seeds {
		f.Add(b)
	}
	// The extensions' requests (ext.KeeperOps), which no capture holds.
	for _, req := range []struct {
		op   OpCode
		body Record
	}{
		{OpFilteredList, &FilteredListRequest{Path: "/a", Watch: true, Type: ListEphemeralOnly}},
		{OpCheckNotExists, &CheckVersionRequest{Path: "/a", Version: -1}},
		{OpCreateIfNotExists, &CreateRequest{Path: "/a", Data: []byte("x"), ACL: OpenACLUnsafe}},
		{OpRemoveRecursive, &RemoveRecursiveRequest{Path: "/a", Limit: 100}},
		{OpCreateWithParents, &CreateRequest{Path: "/a/b/c", ACL: OpenACLUnsafe, Flags: 1}},
		{OpMulti, &MultiRequest{Ops: []MultiOp{
			{Type: OpCheckNotExists, Body: &CheckVersionRequest{Path: "/a", Version: -1}},
			{Type: OpRemoveRecursive, Body: &RemoveRecursiveRequest{Path: "/b", Limit: 1 << 31}},
			{Type: OpCreateIfNotExists, Body: &CreateRequest{Path: "/a", ACL: OpenACLUnsafe}},
		}}},
	} {
		var e Encoder
		(&RequestHeader{Xid: 1, Type: req.op}).Encode(&e)
		req.body.Encode(&e)
		f.Add(e.Buf)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, body, err := decodeRequest(b)
		if err != nil || body == nil {
			return
		}
		var e Encoder
		h.Encode(&e)
		body.Encode(&e)
		h2, body2, err := decodeRequest(e.Buf)
		javaRoundTripRecord(body)
		if err != nil {
			t.Fatalf("%x decoded as %+v %#v, whose encoding %x does not decode: %v", b, h, body, e.Buf, err)
		}
		if h2 != h || !reflect.DeepEqual(body2, body) {
			t.Fatalf("%x: decode/encode/decode changed the value:\n got %+v %#v\nwant %+v %#v", b, h2, body2, h, body)
		}
	})
}

func FuzzDecodeTxn(f *testing.F) {
	_, entries := readLogHead(f)
	if len(entries) != 60 {
		f.Fatalf("%d seed txns, want 60", len(entries))
	}
	for _, e := range entries {
		f.Add(e.txn)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		lt, err := DecodeTxn(b)
		if err != nil {
			return
		}
		enc := EncodeTxn(nil, &lt)
		lt2, err := DecodeTxn(enc)
		javaRoundTripRecord(&lt)
		if err != nil {
			t.Fatalf("%x decoded as %+v %#v, whose encoding %x does not decode: %v", b, lt.Header, lt.Body, enc, err)
		}
		if !reflect.DeepEqual(lt2, lt) {
			t.Fatalf("%x: decode/encode/decode changed the txn:\n got %+v %#v %v\nwant %+v %#v %v",
				b, lt2.Header, lt2.Body, lt2.Digest, lt.Header, lt.Body, lt.Digest)
		}
		mt, ok := lt.Body.(*MultiTxn)
		if !ok {
			return
		}
		for _, sub := range mt.Txns {
			body := NewTxnBody(sub.Type)
			if body == nil || Unmarshal(sub.Data, body) != nil {
				continue
			}
			body2 := NewTxnBody(sub.Type)
			enc := Marshal(body)
			javaRoundTripRecord(body)
			if err := Unmarshal(enc, body2); err != nil || !reflect.DeepEqual(body2, body) {
				t.Fatalf("sub-txn %v %x: round trip gives %#v (%v), want %#v", sub.Type, sub.Data, body2, err, body)
			}
		}
	})
}

func FuzzMultiResponse(f *testing.F) {
	seeds := 0
	for _, name := range []string{"01-kazoo-session.txt", "02-java-client-session.txt"} {
		for _, fr := range parseGoldenFrames(f, name) {
			if fr.Dir == "S>C" && len(fr.Bytes) > ReplyHeaderSize &&
				(strings.HasPrefix(fr.Label, "Reply to multi ") || strings.HasPrefix(fr.Label, "Reply to multiRead ")) {
				f.Add(fr.Bytes[ReplyHeaderSize:])
				seeds++
			}
		}
	}
	if seeds != 3 {
		f.Fatalf("%d seed multi responses, want 3", seeds)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m MultiResponse
		if Unmarshal(b, &m) != nil {
			return
		}
		enc := Marshal(&m)
		var m2 MultiResponse
		javaRoundTripRecord(&m)
		if err := Unmarshal(enc, &m2); err != nil {
			t.Fatalf("%x decoded as %#v, whose encoding %x does not decode: %v", b, m, enc, err)
		}
		if !reflect.DeepEqual(m2, m) {
			t.Fatalf("%x: decode/encode/decode changed the value:\n got %#v\nwant %#v", b, m2, m)
		}
	})
}

func FuzzConnectRequest(f *testing.F) {
	seeds := 0
	for _, name := range []string{"01-kazoo-session.txt", "02-java-client-session.txt", "03-raw-edge-cases.txt"} {
		for _, fr := range parseGoldenFrames(f, name) {
			if fr.Label == "ConnectRequest" {
				f.Add(fr.Bytes)
				seeds++
			}
		}
	}
	if seeds < 10 {
		f.Fatalf("only %d seed connect requests", seeds)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c ConnectRequest
		if Unmarshal(b, &c) != nil {
			return
		}
		enc := Marshal(&c)
		if len(enc) != len(b) {
			t.Fatalf("%x re-encodes in %d bytes", b, len(enc))
		}
		var c2 ConnectRequest
		if err := Unmarshal(enc, &c2); err != nil {
			t.Fatalf("%x decoded as %+v, whose encoding %x does not decode: %v", b, c, enc, err)
		}
		if !reflect.DeepEqual(c2, c) {
			t.Fatalf("%x: decode/encode/decode changed the value:\n got %+v\nwant %+v", b, c2, c)
		}
	})
}
