package jute

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// goldenResult summarises one capture file.
type goldenResult struct {
	checked, skipped int
	annotations      int
	unresolved       map[string]int
	tags             map[string]bool
}

// connState is what the test tracks per TCP connection: the opcode of every request by xid,
// so replies can be decoded, and the ConnectRequest, whose shape the response mirrors.
type connState struct {
	ops     map[int32]OpCode
	connReq *ConnectRequest
}

// decodeAll decodes recs back to back from b, requires that b is consumed exactly and that
// re-encoding gives b again.
func decodeAll(b []byte, recs ...Record) error {
	d := Decoder{B: b}
	for _, r := range recs {
		r.Decode(&d)
	}
	if err := d.Err(); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if d.Remaining() != 0 {
		return fmt.Errorf("%d bytes left over", d.Remaining())
	}
	var e Encoder
	for _, r := range recs {
		r.Encode(&e)
	}
	if !bytes.Equal(e.Buf, b) {
		return fmt.Errorf("re-encoded bytes differ:\n got %x\nwant %x", e.Buf, b)
	}
	return nil
}

var (
	requestLabelRE = regexp.MustCompile(`^Request (\S+) xid=(-?\d+)$`)
	replyLabelRE   = regexp.MustCompile(`^Reply to (\S+) xid=(-?\d+) err=(\S+)$`)
)

func runGoldenFile(t *testing.T, name string) goldenResult {
	t.Helper()
	res := goldenResult{unresolved: map[string]int{}, tags: map[string]bool{}}
	var st *connState
	lastConn := -1
	for _, f := range parseGoldenFrames(t, name) {
		if f.Conn != lastConn {
			st = &connState{ops: map[int32]OpCode{}}
			lastConn = f.Conn
		}
		roots, ok := checkGoldenFrame(t, f, st, res.tags)
		if !ok {
			res.skipped++
			continue
		}
		res.checked++
		n, unresolved, errs := checkAnnotations(f.Lines, roots)
		for _, err := range errs {
			t.Errorf("%v: annotation %v", f, err)
		}
		res.annotations += n
		for _, u := range unresolved {
			res.unresolved[u]++
		}
	}
	return res
}

// checkGoldenFrame decodes and re-encodes one frame. It returns false for a frame it cannot
// identify; decoding failures are reported as test errors.
func checkGoldenFrame(t *testing.T, f *goldenFrame, st *connState, tags map[string]bool) (annotationRoots, bool) {
	t.Helper()
	fail := func(err error) (annotationRoots, bool) {
		t.Errorf("%v: %v", f, err)
		return nil, true
	}
	switch {
	case f.Label == "ConnectRequest":
		if f.Dir != "C>S" || st.connReq != nil {
			return fail(fmt.Errorf("unexpected ConnectRequest"))
		}
		var r ConnectRequest
		if err := decodeAll(f.Bytes, &r); err != nil {
			return fail(err)
		}
		if r.HasReadOnly != (len(f.Bytes) == 45) {
			return fail(fmt.Errorf("HasReadOnly = %v for a %d-byte request", r.HasReadOnly, len(f.Bytes)))
		}
		st.connReq = &r
		tags[fmt.Sprintf("connreq:%d", len(f.Bytes))] = true
		return annotationRoots{"": &r}, true

	case f.Label == "ConnectResponse":
		if f.Dir != "S>C" || st.connReq == nil {
			return fail(fmt.Errorf("ConnectResponse without a request"))
		}
		var r ConnectResponse
		if err := decodeAll(f.Bytes, &r); err != nil {
			return fail(err)
		}
		if r.HasReadOnly != st.connReq.HasReadOnly {
			return fail(fmt.Errorf("response HasReadOnly = %v, request %v", r.HasReadOnly, st.connReq.HasReadOnly))
		}
		tags[fmt.Sprintf("connresp:%d", len(f.Bytes))] = true
		return annotationRoots{"": &r}, true

	case f.Dir == "C>S":
		h, body, err := decodeRequest(f.Bytes)
		if err != nil {
			return fail(err)
		}
		st.ops[h.Xid] = h.Type
		if body == nil {
			return nil, false
		}
		m := requestLabelRE.FindStringSubmatch(f.Label)
		if m == nil || m[1] != h.Type.String() || m[2] != strconv.Itoa(int(h.Xid)) {
			return fail(fmt.Errorf("decoded %v xid=%d, label says otherwise", h.Type, h.Xid))
		}
		if err := decodeAll(f.Bytes, &RequestHeader{}, requestBody(h.Type)); err != nil {
			return fail(err)
		}
		tags["req:"+h.Type.String()] = true
		return annotationRoots{"RequestHeader": &h, "req": body}, true

	default: // a reply or a notification
		var h ReplyHeader
		d := Decoder{B: f.Bytes}
		h.Decode(&d)
		if d.Err() != nil {
			return fail(d.Err())
		}
		if h.Xid == XidNotification {
			var ev WatcherEvent
			if err := decodeAll(f.Bytes, &ReplyHeader{}, &ev); err != nil {
				return fail(err)
			}
			if !strings.HasPrefix(f.Label, "Notification") {
				return fail(fmt.Errorf("xid -1 in a frame not labelled as a notification"))
			}
			tags["notification"] = true
			return annotationRoots{"ReplyHeader": &h, "WatcherEvent": &ev}, true
		}
		op, ok := st.ops[h.Xid]
		if !ok {
			return nil, false
		}
		var body Record = &Empty{}
		if h.Err == OK {
			if body = replyBody(op); body == nil {
				return nil, false
			}
		}
		if m := replyLabelRE.FindStringSubmatch(f.Label); m == nil ||
			(requestBody(op) != nil && m[1] != op.String()) || m[2] != strconv.Itoa(int(h.Xid)) {
			return fail(fmt.Errorf("reply to %v xid=%d, label says otherwise", op, h.Xid))
		}
		if err := decodeAll(f.Bytes, &ReplyHeader{}, body); err != nil {
			return fail(err)
		}
		tags["rep:"+op.String()] = true
		if h.Err == OK {
			tags["rep-ok:"+op.String()] = true
		}
		if mr, ok := body.(*MultiResponse); ok {
			failed := false
			for _, r := range mr.Results {
				failed = failed || r.Type == OpError
			}
			if failed {
				tags["rep-fail:"+op.String()] = true
			}
		}
		return annotationRoots{"ReplyHeader": &h, "resp": body}, true
	}
}

func TestGoldenFrames(t *testing.T) {
	cases := []struct {
		file             string
		checked, skipped int
		minAnnotations   int
	}{
		{"01-kazoo-session.txt", 46, 0, 300},
		{"02-java-client-session.txt", 62, 0, 360},
		// The request with the unknown opcode 999 cannot be decoded past its header.
		{"03-raw-edge-cases.txt", 52, 1, 260},
	}
	tags := map[string]bool{}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			res := runGoldenFile(t, c.file)
			if res.checked != c.checked || res.skipped != c.skipped {
				t.Errorf("checked %d frames and skipped %d, want %d and %d",
					res.checked, res.skipped, c.checked, c.skipped)
			}
			if res.annotations < c.minAnnotations {
				t.Errorf("compared %d annotated fields, want at least %d", res.annotations, c.minAnnotations)
			}
			if testing.Verbose() {
				var u []string
				for k, n := range res.unresolved {
					u = append(u, fmt.Sprintf("%s(%d)", k, n))
				}
				sort.Strings(u)
				t.Logf("%d frames, %d annotated fields compared; not compared: %s",
					res.checked, res.annotations, strings.Join(u, " "))
			}
			for k := range res.tags {
				tags[k] = true
			}
		})
	}
	want := []string{
		"connreq:44", "connreq:45", "connresp:36", "connresp:37",
		"req:create", "req:create2", "req:createContainer", "req:createTTL",
		"rep-ok:create", "rep-ok:create2", "rep-ok:createContainer", "rep-ok:createTTL",
		"req:getData", "rep-ok:getData", "req:exists", "rep:exists",
		"req:getChildren", "rep-ok:getChildren", "req:getChildren2", "rep-ok:getChildren2",
		"req:setData", "rep-ok:setData", "req:delete", "rep-ok:delete",
		"req:setACL", "rep-ok:setACL", "req:getACL", "rep-ok:getACL", "req:sync", "rep-ok:sync",
		"req:multi", "rep-ok:multi", "rep-fail:multi", "req:multiRead", "rep-fail:multiRead",
		"req:setWatches", "rep-ok:setWatches", "req:setWatches2", "rep-ok:setWatches2",
		"req:addWatch", "rep-ok:addWatch", "req:checkWatches", "rep-ok:checkWatches",
		"req:removeWatches", "rep-ok:removeWatches", "req:whoAmI", "rep-ok:whoAmI",
		"req:getEphemerals", "rep-ok:getEphemerals",
		"req:getAllChildrenNumber", "rep-ok:getAllChildrenNumber",
		"req:auth", "rep-ok:auth", "rep:auth", "notification", "req:ping", "rep-ok:ping",
		"req:closeSession", "rep-ok:closeSession",
	}
	for _, w := range want {
		if !tags[w] {
			t.Errorf("no golden frame covered %s", w)
		}
	}
}

// TestGoldenSpotValues pins a few decoded values, read off the annotations by hand, so that a
// broken annotation parser cannot hide a decoding bug.
func TestGoldenSpotValues(t *testing.T) {
	frames := parseGoldenFrames(t, "01-kazoo-session.txt")
	find := func(conn, n int) *goldenFrame {
		for _, f := range frames {
			if f.Conn == conn && f.N == n {
				return f
			}
		}
		t.Fatalf("no frame conn %d #%d", conn, n)
		return nil
	}
	var cr ConnectResponse
	if err := Unmarshal(find(1, 2).Bytes, &cr); err != nil {
		t.Fatal(err)
	}
	if cr.TimeOut != 10000 || cr.SessionID != 0x100000a4ed70000 || len(cr.Passwd) != 16 || !cr.HasReadOnly || cr.ReadOnly {
		t.Errorf("ConnectResponse = %+v", cr)
	}

	b := find(1, 3).Bytes
	var h RequestHeader
	var cq CreateRequest
	d := NewDecoder(b)
	h.Decode(d)
	cq.Decode(d)
	if d.Err() != nil || h != (RequestHeader{Xid: 1, Type: OpCreate}) || cq.Path != "/golden" ||
		string(cq.Data) != "hello" || len(cq.ACL) != 1 || cq.ACL[0] != OpenACLUnsafe[0] || cq.Flags != FlagPersistent {
		t.Errorf("create request = %+v %+v (err %v)", h, cq, d.Err())
	}

	b = find(1, 20).Bytes // the failed multi
	var rh ReplyHeader
	var mr MultiResponse
	d = NewDecoder(b)
	rh.Decode(d)
	mr.Decode(d)
	want := []MultiResult{{Type: OpError, Err: OK}, {Type: OpError, Err: ErrNoNode}}
	if d.Err() != nil || rh.Err != OK || len(mr.Results) != 2 ||
		mr.Results[0].Type != want[0].Type || mr.Results[0].Err != want[0].Err ||
		mr.Results[1].Type != want[1].Type || mr.Results[1].Err != want[1].Err {
		t.Errorf("failed multi = %+v %+v (err %v)", rh, mr, d.Err())
	}

	b = find(1, 14).Bytes // notification before the setData reply
	var ev WatcherEvent
	d = NewDecoder(b)
	rh.Decode(d)
	ev.Decode(d)
	if d.Err() != nil || rh.Xid != XidNotification || rh.Zxid != -1 ||
		ev != (WatcherEvent{Type: EventNodeDataChanged, State: StateSyncConnected, Path: "/golden"}) {
		t.Errorf("notification = %+v %+v (err %v)", rh, ev, d.Err())
	}
}

// logEntry is one entry of the binary txn log head.
type logEntry struct {
	offset int
	txn    []byte
}

func readLogHead(t testing.TB) (FileHeader, []logEntry) {
	t.Helper()
	b, err := os.ReadFile("testdata/log.1.head")
	if err != nil {
		t.Fatal(err)
	}
	var fh FileHeader
	n, err := UnmarshalPrefix(b, &fh)
	if err != nil {
		t.Fatal(err)
	}
	var out []logEntry
	for off := n; ; {
		if len(b)-off < 12 {
			t.Fatalf("log ends at %#x without the zero end record", off)
		}
		sum := binary.BigEndian.Uint64(b[off:])
		length := int(binary.BigEndian.Uint32(b[off+8:]))
		if length == 0 {
			break
		}
		start := off + 12
		if start+length+1 > len(b) || b[start+length] != 0x42 {
			t.Fatalf("entry at %#x: bad length %d or missing 0x42", off, length)
		}
		txn := b[start : start+length]
		if got := uint64(adler32.Checksum(txn)); got != sum {
			t.Fatalf("entry at %#x: checksum %#x, want %#x", off, got, sum)
		}
		out = append(out, logEntry{offset: off, txn: txn})
		off = start + length + 1
	}
	return fh, out
}

var entryLabelRE = regexp.MustCompile(`^zxid=0x([0-9a-f]+) type=(\S+)`)

func TestGoldenTxnLog(t *testing.T) {
	fh, entries := readLogHead(t)
	if fh != (FileHeader{Magic: LogMagic, Version: 2, DBID: 0}) {
		t.Errorf("file header = %+v", fh)
	}
	if got := Marshal(&fh); string(got[:4]) != "ZKLG" || len(got) != 16 {
		t.Errorf("file header encodes as %x", got)
	}
	annotated := parseGoldenTxns(t)
	if len(entries) != 60 || len(annotated) != 60 {
		t.Fatalf("%d entries in log.1.head, %d in 06-txnlog.txt, want 60", len(entries), len(annotated))
	}

	shown, annotations, multis, subTxns := 0, 0, 0, 0
	for i, e := range entries {
		a := annotated[i]
		if a.Offset != e.offset {
			t.Fatalf("entry %d: annotated at %#x, found at %#x", a.N, a.Offset, e.offset)
		}
		if a.Txn != nil {
			shown++
			if !bytes.Equal(a.Txn, e.txn) {
				t.Errorf("entry %d: annotated bytes differ from log.1.head", a.N)
			}
		}
		lt, err := DecodeTxn(e.txn)
		if err != nil {
			t.Errorf("entry %d: DecodeTxn: %v", a.N, err)
			continue
		}
		m := entryLabelRE.FindStringSubmatch(a.Label)
		if m == nil {
			t.Fatalf("entry %d: label %q", a.N, a.Label)
		}
		if zxid, _ := strconv.ParseInt(m[1], 16, 64); lt.Header.Zxid != zxid || lt.Header.Zxid != int64(i+1) {
			t.Errorf("entry %d: zxid %#x, label %s", a.N, lt.Header.Zxid, a.Label)
		}
		if lt.Header.Type.String() != m[2] {
			t.Errorf("entry %d: type %v, label %s", a.N, lt.Header.Type, a.Label)
		}
		// Error txns carry no digest; every other txn of this server does.
		if (lt.Digest == nil) != (lt.Header.Type == OpError) {
			t.Errorf("entry %d: %v txn with digest %v", a.N, lt.Header.Type, lt.Digest)
		}
		if got := EncodeTxn(nil, &lt); !bytes.Equal(got, e.txn) {
			t.Errorf("entry %d: EncodeTxn differs:\n got %x\nwant %x", a.N, got, e.txn)
		}

		roots := annotationRoots{"TxnHeader": &lt.Header, "txn": lt.Body, "TxnDigest": lt.Digest}
		lines := a.Lines
		if mt, ok := lt.Body.(*MultiTxn); ok {
			multis++
			lines = map[string]string{}
			for k, v := range a.Lines {
				lines[k] = v
			}
			for j, sub := range mt.Txns {
				body := NewTxnBody(sub.Type)
				if body == nil {
					t.Errorf("entry %d: sub-txn %d has unknown type %v", a.N, j, sub.Type)
					continue
				}
				if err := Unmarshal(sub.Data, body); err != nil {
					t.Errorf("entry %d: sub-txn %d (%v): %v", a.N, j, sub.Type, err)
					continue
				}
				if got := Marshal(body); !bytes.Equal(got, sub.Data) {
					t.Errorf("entry %d: sub-txn %d re-encodes as %x, want %x", a.N, j, got, sub.Data)
				}
				subTxns++
				// Annotations show the sub-record under txn.txns[j].data.
				prefix := fmt.Sprintf("txn.txns[%d].data.", j)
				root := fmt.Sprintf("sub%d", j)
				roots[root] = body
				for k, v := range a.Lines {
					if rest, ok := strings.CutPrefix(k, prefix); ok {
						delete(lines, k)
						lines[root+"."+rest] = v
					}
				}
			}
		}
		n, unresolved, errs := checkAnnotations(lines, roots)
		for _, err := range errs {
			t.Errorf("entry %d: annotation %v", a.N, err)
		}
		if testing.Verbose() && len(unresolved) > 0 {
			t.Logf("entry %d: not compared: %v", a.N, unresolved)
		}
		annotations += n
	}
	if shown != 17 || multis != 2 || subTxns != 5 || annotations < 200 {
		t.Errorf("%d entries shown, %d multis, %d sub-txns, %d annotations compared; want 17, 2, 5, >=200",
			shown, multis, subTxns, annotations)
	}
}

// The annotation checker must report a wrong value, or the golden tests could pass vacuously.
func TestAnnotationCheckerCatchesMismatch(t *testing.T) {
	req := &CreateRequest{Path: "/golden", Data: []byte("hello"), ACL: OpenACLUnsafe, Flags: 3}
	roots := annotationRoots{"req": req}
	good := map[string]string{
		"req.path": "'/golden'", "req.data": "'hello'", "req.flags": "3 (EPHEMERAL_SEQUENTIAL)",
		"req.acl[0].perms": "31 (READ|WRITE|CREATE|DELETE|ADMIN)", "req.acl[0].id.id": "'anyone'",
	}
	if n, unresolved, errs := checkAnnotations(good, roots); n != len(good) || len(unresolved) > 0 || len(errs) > 0 {
		t.Errorf("good annotations: %d compared, unresolved %v, errors %v", n, unresolved, errs)
	}
	for name, bad := range map[string]string{
		"req.path": "'/golden2'", "req.data": "'hellO'", "req.flags": "0x2", "req.acl[0].id.scheme": "'digest'",
	} {
		if _, _, errs := checkAnnotations(map[string]string{name: bad}, roots); len(errs) != 1 {
			t.Errorf("%s = %s: errors %v, want one", name, bad, errs)
		}
	}
}
