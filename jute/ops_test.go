package jute

import (
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand"
	"reflect"
	"regexp"
	"strconv"
	"testing"
)

// zooDefs is ZooDefs.OpCode with Request.op2String's names, copied from Apache ZooKeeper
// (zookeeper-server/.../ZooDefs.java and server/Request.java): the table must agree with it,
// since the numbers are the wire and the names are what logs, 4lw and clients print.
var zooDefs = map[string]int32{
	"notification": 0, "create": 1, "delete": 2, "exists": 3, "getData": 4, "setData": 5,
	"getACL": 6, "setACL": 7, "getChildren": 8, "sync": 9, "ping": 11, "getChildren2": 12,
	"check": 13, "multi": 14, "create2": 15, "reconfig": 16, "checkWatches": 17,
	"removeWatches": 18, "createContainer": 19, "deleteContainer": 20, "createTTL": 21,
	"multiRead": 22, "auth": 100, "setWatches": 101, "sasl": 102, "getEphemerals": 103,
	"getAllChildrenNumber": 104, "setWatches2": 105, "addWatch": 106, "whoAmI": 107,
	"createSession": -10, "closeSession": -11, "error": -1,
}

// extOps are the extensions' opcodes: ClickHouse Keeper's (ClickHouse's
// src/Common/ZooKeeper/ZooKeeperConstants.h) and zkd's own.
var extOps = map[string]int32{
	"filteredList": 500, "checkNotExists": 501, "createIfNotExists": 502, "removeRecursive": 503,
	"createWithParents": 1500, "listPage": 1030, "addWatchSince": 1040, "setMaxBuffer": 1050,
}

func TestOpTableMatchesZooDefs(t *testing.T) {
	seen := map[string]bool{}
	for _, op := range Ops() {
		if seen[op.Name] {
			t.Errorf("name %q used by two rows", op.Name)
		}
		seen[op.Name] = true
		defs := zooDefs
		if op.Ext != "" {
			defs = extOps
			if op.Write && LoggedType(op.Code) == op.Code || op.Write && LookupOp(LoggedType(op.Code)).Ext != "" {
				t.Errorf("%s: an extension's write must be logged as one of ZooKeeper's txn types", op.Name)
			}
		}
		want, ok := defs[op.Name]
		switch {
		case !ok:
			t.Errorf("row %d: ZooKeeper has no opcode named %q", int32(op.Code), op.Name)
		case want != int32(op.Code):
			t.Errorf("%s is %d, ZooKeeper's is %d", op.Name, int32(op.Code), want)
		}
		if got := op.Code.String(); got != op.Name {
			t.Errorf("OpCode(%d).String() = %q, row says %q", int32(op.Code), got, op.Name)
		}
		if LookupOp(op.Code).Name != op.Name {
			t.Errorf("LookupOp(%d) is not the %s row", int32(op.Code), op.Name)
		}
	}
	for name := range zooDefs {
		if !seen[name] {
			t.Errorf("no row for ZooKeeper's %s", name)
		}
	}
	for name := range extOps {
		if !seen[name] {
			t.Errorf("no row for the extension opcode %s", name)
		}
	}
}

// Every OpCode constant declared in the package must have a row, and every row a constant.
func TestOpTableCoversConstants(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[OpCode]string{}
	for _, f := range pkgs["jute"].Files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "OpCode" {
					continue
				}
				for i, name := range vs.Names {
					v, err := constInt(vs.Values[i])
					if err != nil {
						t.Fatalf("%s: %v", name.Name, err)
					}
					consts[OpCode(v)] = name.Name
				}
			}
		}
	}
	if len(consts) < 30 {
		t.Fatalf("found only %d OpCode constants; is the parser looking at the right files?", len(consts))
	}
	for code, name := range consts {
		if LookupOp(code) == nil {
			t.Errorf("%s (%d) has no row in the opcode table", name, int32(code))
		}
	}
	for _, op := range Ops() {
		if _, ok := consts[op.Code]; !ok {
			t.Errorf("row %s has no OpCode constant", op.Name)
		}
	}
}

func constInt(e ast.Expr) (int64, error) {
	neg := false
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.SUB {
		neg, e = true, u.X
	}
	lit, ok := e.(*ast.BasicLit)
	if !ok {
		return 0, strconv.ErrSyntax
	}
	v, err := strconv.ParseInt(lit.Value, 0, 32)
	if neg {
		v = -v
	}
	return v, err
}

func TestLookupOpOutsideTable(t *testing.T) {
	for _, o := range []OpCode{10, 23, 99, 108, 127, -2, -9, -12, -16, -17, 1 << 30, -1 << 31, 1<<31 - 1} {
		if r := LookupOp(o); r != nil {
			t.Errorf("LookupOp(%d) = %s row", int32(o), r.Name)
		}
		if _, ok := NewRequestBody(o); ok {
			t.Errorf("NewRequestBody(%d) ok", int32(o))
		}
		if got, want := o.String(), "op("+strconv.Itoa(int(o))+")"; got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

var lastOpRE = regexp.MustCompile(`^[A-Z0-9]{4,6}$`)

// The columns must not contradict each other.
func TestOpTableConsistent(t *testing.T) {
	for _, op := range Ops() {
		fail := func(msg string) { t.Errorf("%s: %s", op.Name, msg) }
		if op.LastOp != "" && !lastOpRE.MatchString(op.LastOp) {
			fail("LastOp " + op.LastOp + " is not a cons abbreviation")
		}
		if op.Request == nil && !op.Internal {
			fail("clients may send it but it has no request layout")
		}
		if op.Multi != NotInMulti && op.Request == nil {
			fail("allowed in multi without a request layout")
		}
		if (op.Multi == InMulti) != (op.Write && op.Multi != NotInMulti) {
			fail("multi holds writes and multiRead reads")
		}
		if op.Write && op.Txn == nil {
			fail("a write with no txn record")
		}
		if !op.Write && op.Txn != nil {
			fail("a read with a txn record")
		}
		if op.PermOnParent && op.Perm == 0 {
			fail("PermOnParent without Perm")
		}
		if op.Perm&^PermAll != 0 {
			fail("Perm has bits outside PermAll")
		}
	}
}

// fillRecord gives rec random contents that survive a round trip, keeping the parts its
// constructor chose (SetWatches' V2).
func fillRecord(r *rand.Rand, rec Record) Record {
	switch v := rec.(type) {
	case *MultiRequest:
		return randMultiRequest(r)
	case *MultiResponse:
		return randMultiResponse(r)
	case *MultiTxn:
		return randMultiTxn(r)
	case *SetWatches:
		v2 := v.V2
		fill(r, reflect.ValueOf(v))
		v.V2 = v2
		if !v2 {
			v.PersistentWatches, v.PersistentRecursiveWatches = nil, nil
		}
		return v
	}
	fill(r, reflect.ValueOf(rec))
	fixTxnBody(rec)
	return rec
}

// Each row's constructors decode exactly what their records encode.
func TestOpTableRecordsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, op := range Ops() {
		cols := []struct {
			name string
			ctor func() Record
		}{{"Request", op.Request}, {"Response", op.Response}, {"Txn", op.Txn}}
		for _, col := range cols {
			if col.ctor == nil || col.ctor() == nil {
				continue
			}
			for i := 0; i < 100; i++ {
				rec := fillRecord(r, col.ctor())
				b := Marshal(rec)
				got := col.ctor()
				if err := Unmarshal(b, got); err != nil {
					t.Fatalf("%s %s: decoding %x into %T: %v", op.Name, col.name, b, got, err)
				}
				javaRoundTripRecord(rec)
				if !reflect.DeepEqual(got, rec) {
					t.Fatalf("%s %s: round trip of %x:\n got %#v\nwant %#v", op.Name, col.name, b, got, rec)
				}
				if b2 := Marshal(got); !sameAfterJavaRoundTrip(b2, b) {
					t.Fatalf("%s %s: re-encoding differs: %x, want %x", op.Name, col.name, b2, b)
				}
			}
		}
	}
}

// MultiRequest and MultiResponse accept exactly the ops the table allows in a multi.
func TestMultiAcceptsTableOps(t *testing.T) {
	codes := []OpCode{499, 504, 507, 997, 1499, 1501}
	for code := OpCode(-20); code <= 200; code++ {
		codes = append(codes, code)
	}
	for code := range extOps {
		codes = append(codes, OpCode(extOps[code]))
	}
	for _, code := range codes {
		row := LookupOp(code)
		allowed := row != nil && row.Multi != NotInMulti

		var body Record = &PathRequest{Path: "/a"}
		if allowed {
			body = row.Request()
		}
		req := Marshal(&MultiRequest{Ops: []MultiOp{{Type: code, Body: body}}})
		if err := Unmarshal(req, &MultiRequest{}); (err == nil) != allowed {
			t.Errorf("multi request with %v: err = %v, allowed in table = %v", code, err, allowed)
		}

		if code == OpError {
			continue // a failed result, allowed whatever the table says
		}
		res := MultiResult{Type: code}
		if allowed && row.Response != nil {
			res.Body = row.Response()
		}
		// ClickHouse Keeper's multiRead answers exists and filteredList (as 12) too.
		if b, ok := keeperReadResult(code); ok {
			allowed, res.Body = true, b
		}
		resp := Marshal(&MultiResponse{Results: []MultiResult{res}})
		if err := Unmarshal(resp, &MultiResponse{}); (err == nil) != allowed {
			t.Errorf("multi result of %v: err = %v, allowed in table = %v", code, err, allowed)
		}
	}
}
