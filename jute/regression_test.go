package jute

import (
	"reflect"
	"testing"
)

// Regression tests for bugs found by the golden, round-trip and fuzz tests.

func knownBug(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("regression: "+format, args...)
}

// TxnHeader is long clientId + int cxid + long zxid + long time + int type = 32 bytes; the
// 06-txnlog.txt createSession txns are 48 bytes = 32 + 4 (timeOut) + 12 (digest).
func TestRegressionTxnHeaderSize(t *testing.T) {
	if n := len(Marshal(&TxnHeader{})); n != 32 {
		t.Fatalf("TxnHeader encodes in %d bytes", n)
	}
	if TxnHeaderSize != 32 {
		knownBug(t, "TxnHeaderSize = %d, want 32", TxnHeaderSize)
	}
}

// A MultiTxn whose vector is null (-1) decodes to nil Txns, which Encode writes as count 0,
// which decodes to an empty slice: decode/encode/decode is not stable (found by FuzzDecodeTxn).
func TestRegressionMultiTxnNullVector(t *testing.T) {
	b := mustHex("0000000000000001" + "00000000" + "0000000000000005" + "0000000000000000" + "0000000e" + "ffffffff")
	lt, err := DecodeTxn(b)
	if err != nil {
		t.Fatal(err)
	}
	lt2, err := DecodeTxn(EncodeTxn(nil, &lt))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(lt2, lt) {
		knownBug(t, "null MultiTxn vector: decoded %#v, after re-encoding %#v", lt.Body, lt2.Body)
	}
}

// Decoding into a record that already holds a value must not keep the old value's optional-part
// flags: a replay loop reusing a CreateTxn would otherwise re-encode it without parentCVersion.
func TestRegressionDecodeIntoReusedRecord(t *testing.T) {
	var bugs []string

	var c CreateTxn
	if err := Unmarshal(Marshal(&CreateTxn{Path: "/a", V0: true}), &c); err != nil {
		t.Fatal(err)
	}
	want := CreateTxn{Path: "/b", ParentCVersion: 7}
	if err := Unmarshal(Marshal(&want), &c); err != nil {
		t.Fatal(err)
	}
	if c.V0 {
		bugs = append(bugs, "CreateTxn keeps V0")
	}

	var cr ConnectRequest
	if err := Unmarshal(Marshal(&ConnectRequest{HasReadOnly: true, ReadOnly: true}), &cr); err != nil {
		t.Fatal(err)
	}
	if err := Unmarshal(Marshal(&ConnectRequest{}), &cr); err != nil {
		t.Fatal(err)
	}
	if cr.ReadOnly {
		bugs = append(bugs, "ConnectRequest keeps ReadOnly")
	}

	var cs CloseSessionTxn
	if err := Unmarshal(nil, &cs); err != nil || !cs.NoBody {
		t.Fatalf("empty CloseSessionTxn: %+v %v", cs, err)
	}
	if err := Unmarshal(Marshal(&CloseSessionTxn{Paths2Delete: []string{"/x"}}), &cs); err != nil {
		t.Fatal(err)
	}
	if cs.NoBody {
		bugs = append(bugs, "CloseSessionTxn keeps NoBody")
	}
	if len(bugs) > 0 {
		knownBug(t, "%v", bugs)
	}
}
