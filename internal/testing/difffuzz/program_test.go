package difffuzz

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/versiondiff"
	"github.com/zkd-io/zkd/jute"
)

// TestProgramFileRoundTrip: a program written and read back is the same program, for
// generated programs of every kind of step.
func TestProgramFileRoundTrip(t *testing.T) {
	kinds := map[Kind]int{}
	for seed := int64(1); seed <= 30; seed++ {
		p := Generate(seed, GenOptions{Ops: 200})
		var buf bytes.Buffer
		if err := p.Encode(&buf); err != nil {
			t.Fatal(err)
		}
		q, err := Parse(&buf)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for i := range p.Steps {
			p.Steps[i].Note = ""
			kinds[p.Steps[i].Kind]++
			if len(p.Steps[i].Body) == 0 {
				p.Steps[i].Body = nil
			}
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("seed %d: read back differs", seed)
		}
	}
	for _, k := range []Kind{Request, Raw, Open, Reconnect, Drop, Batch} {
		if kinds[k] == 0 {
			t.Errorf("no step of kind %d in 30 programs", k)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{
		"",
		"sessions a\na getData 00",
		"zkd-difffuzz 1\na getData 00",
		"zkd-difffuzz 1\nsessions a\na getData",
		"zkd-difffuzz 1\nsessions a\na nosuchop 00",
		"zkd-difffuzz 1\nsessions a\na getData zz",
		"zkd-difffuzz 1\nsessions a\na getData@x 00",
	} {
		if _, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("Parse(%q) accepted it", in)
		}
	}
}

// TestGenerateIsSeeded: a seed is a program, and programs cover every client opcode.
func TestGenerateIsSeeded(t *testing.T) {
	a, b := Generate(7, GenOptions{Ops: 200}), Generate(7, GenOptions{Ops: 200})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two programs")
	}
	if c := Generate(8, GenOptions{Ops: 200}); reflect.DeepEqual(a, c) {
		t.Fatal("two seeds gave one program")
	}
	seen := map[jute.OpCode]bool{}
	for seed := int64(1); seed <= 40; seed++ {
		for _, st := range Generate(seed, GenOptions{Ops: 200}).Steps {
			if st.Kind == Request {
				seen[st.Op] = true
			}
		}
	}
	for _, op := range jute.Ops() {
		if op.Request == nil || op.Internal || op.Ext != "" {
			continue // zkd's extension opcodes do not run against ZooKeeper
		}
		if !seen[op.Code] {
			t.Errorf("no %v request in 40 programs", op.Code)
		}
	}
}

// TestAcceptancesCiteRows: each acceptance names a row of the version table.
func TestAcceptancesCiteRows(t *testing.T) {
	rows := []string{"ZOOKEEPER-4655"} // explain's own, before the acceptances
	for _, a := range acceptances {
		rows = append(rows, a.row)
	}
	for _, row := range rows {
		if _, ok := versiondiff.Lookup(row); !ok {
			t.Errorf("acceptance %s has no row in internal/versiondiff", row)
		}
	}
}

func outcome(err jute.Code, lines ...string) Outcome {
	return Outcome{Lines: lines, Err: err, Replied: true}
}

func reqStep(sess string, op jute.OpCode, rec jute.Record) Step {
	return Step{Sess: sess, Kind: Request, Op: op, Body: jute.Marshal(rec)}
}

// TestExplain: the rows explain their own differences, and only those.
func TestExplain(t *testing.T) {
	exists := reqStep("a", jute.OpExists, &jute.PathWatchRequest{Path: "/fz/a", Watch: true})
	getData := reqStep("a", jute.OpGetData, &jute.PathWatchRequest{Path: "/fz/a"})
	ipv6 := reqStep("a", jute.OpCreate, &jute.CreateRequest{Path: "/fz/a", ACL: []jute.ACL{{Perms: 31, ID: jute.ID{Scheme: "ip", ID: "::1"}}}})
	ipv4 := reqStep("a", jute.OpCreate, &jute.CreateRequest{Path: "/fz/a", ACL: []jute.ACL{{Perms: 31, ID: jute.ID{Scheme: "ip", ID: "10.0.0.1"}}}})
	addWatch := reqStep("a", jute.OpAddWatch, &jute.AddWatchRequest{Path: "/fz/a", Mode: 0})
	setData := reqStep("b", jute.OpSetData, &jute.SetDataRequest{Path: "/fz/a", Version: -1})
	for _, tc := range []struct {
		name     string
		steps    []Step
		ref, zkd Outcome
		want     string
		stop     bool
	}{
		{"exists NOAUTH", []Step{exists}, outcome(0, "a: reply err=0"), outcome(jute.ErrNoAuth, "a: reply err=-102"), "ZOOKEEPER-2590", true},
		{"getData NOAUTH", []Step{getData}, outcome(0, "a: reply err=0"), outcome(jute.ErrNoAuth, "a: reply err=-102"), "", false},
		{"exists the other way", []Step{exists}, outcome(jute.ErrNoAuth, "x"), outcome(0, "y"), "", false},
		{"ipv6 ACL", []Step{ipv6}, outcome(jute.ErrInvalidACL, "x"), outcome(0, "y"), "ZOOKEEPER-4240", true},
		{"ipv4 ACL", []Step{ipv4}, outcome(jute.ErrInvalidACL, "x"), outcome(0, "y"), "", false},
		{"mixed modes", []Step{getData, addWatch, exists, setData},
			outcome(0, "b: reply err=0", "a event: NodeDataChanged /fz/a"),
			outcome(0, "b: reply err=0", "a event: NodeDataChanged /fz/a", "a event: NodeDataChanged /fz/a"), "ZOOKEEPER-4466", true},
		{"mixed modes, another session's line", []Step{getData, addWatch, exists, setData},
			outcome(0, "b: reply err=0"), outcome(0, "b: reply err=-101"), "", false},
		{"event zxids", []Step{getData, setData},
			outcome(0, "a event: NodeDataChanged /fz/a", "b: reply err=0 zxid=z+3"),
			outcome(0, "a event: NodeDataChanged /fz/a zxid=z+3", "b: reply err=0 zxid=z+3"), "ZOOKEEPER-4655", false},
		{"event zxid of no reply", []Step{getData, setData},
			outcome(0, "a event: NodeDataChanged /fz/a", "b: reply err=0 zxid=z+3"),
			outcome(0, "a event: NodeDataChanged /fz/a zxid=z+2", "b: reply err=0 zxid=z+3"), "", false},
		{"event zxids and mixed modes", []Step{getData, addWatch, exists, setData},
			outcome(0, "b: reply err=0 zxid=z+4", "a event: NodeDataChanged /fz/a"),
			outcome(0, "b: reply err=0 zxid=z+4", "a event: NodeDataChanged /fz/a zxid=z+4", "a event: NodeDataChanged /fz/a zxid=z+4"), "ZOOKEEPER-4466", true},
		{"one mode only", []Step{addWatch, setData},
			outcome(0, "b: reply err=0", "a event: NodeDataChanged /fz/a"), outcome(0, "b: reply err=0"), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Program{Sessions: []string{"a", "b"}, Steps: tc.steps}
			row, stop := explain(p, len(tc.steps)-1, tc.ref, tc.zkd)
			if row != tc.want || stop != tc.stop {
				t.Errorf("explain = %q, %v; want %q, %v", row, stop, tc.want, tc.stop)
			}
		})
	}
}
