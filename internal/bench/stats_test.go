package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/bench/benchstat"
	"github.com/zkd-io/zkd/jute"
)

// within reports whether got is within HDR's three-significant-digit precision of want.
func within(got, want float64) bool { return math.Abs(got-want) <= want*0.001+1 }

// zkbench's recorders count errors by ZooKeeper code, however wrapped, and otherwise as
// internal/bench/benchstat does.
func TestRecorderErrorKinds(t *testing.T) {
	a, b := newRecorder(), newRecorder()
	for range 90 {
		a.record(100*time.Microsecond, nil)
	}
	b.record(0, jute.ErrNoNode)
	b.record(0, fmt.Errorf("read: %w: %w", errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: reset"), jute.ErrConnectionLoss))
	b.record(0, fmt.Errorf("wrapped: %w", jute.ErrNoNode))
	b.record(0, fmt.Errorf("connect to 127.0.0.1:2181: %w", io.EOF))
	b.record(0, fmt.Errorf("request: %w", context.DeadlineExceeded))
	a.merge(b)
	if a.Ops() != 90 || a.Errors() != 5 {
		t.Fatalf("ops %d errors %d, want 90 5", a.Ops(), a.Errors())
	}
	want := map[string]int64{"zk: node does not exist": 2, "zk: connection loss": 1, "connection closed by the server": 1, "timeout": 1}
	if k := a.ErrorKinds(); len(k) != len(want) {
		t.Errorf("error kinds %v, want %v", k, want)
	} else {
		for n, c := range want {
			if k[n] != c {
				t.Errorf("error kinds %v, want %v", k, want)
				break
			}
		}
	}
	if got := errorSummary(a.ErrorKinds()); got != "zk: node does not exist: 2; connection closed by the server: 1; timeout: 1; zk: connection loss: 1" {
		t.Errorf("errorSummary = %q", got)
	}
}

func TestResultFill(t *testing.T) {
	r := newRecorder()
	for range 500 {
		r.record(time.Millisecond, nil)
	}
	r.record(0, jute.ErrBadVersion)
	var res Result
	res.fill(r, 2*time.Second)
	if res.Ops != 500 || res.Errors != 1 || res.OpsPerSec != 250 || res.Seconds != 2 || !within(res.Latency.P50, 1000) {
		t.Errorf("fill: %+v", res)
	}
	if res.ErrorKinds["zk: bad version"] != 1 {
		t.Errorf("error kinds %v", res.ErrorKinds)
	}
	if res.base() != "" {
		t.Errorf("base of no workload: %q", res.base())
	}
	res.Workload = "set-64x32"
	res.Of = "set"
	if res.base() != "set" {
		t.Errorf("base of a run recorded under another name: %q", res.base())
	}
}

// zkbench's Result is internal/bench/benchstat's, which etcdbench writes: the same JSON both ways.
func TestResultJSONIsBenchstats(t *testing.T) {
	r := newRecorder()
	r.record(3*time.Millisecond, nil)
	r.record(0, jute.ErrNoNode)
	res := Result{Label: "zkd", Workload: "get", Of: "get", Clients: 2, Params: map[string]string{"x": "1"}, BytesPerZnode: 1.5, Note: "n"}
	res.fill(r, time.Second)
	res.stats().FillServer(procSample{OK: true, CPU: time.Second, RSS: 1 << 20}, procSample{OK: true, CPU: 2 * time.Second, RSS: 2 << 20})
	ours, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := json.Marshal(benchstat.Result(res))
	if err != nil {
		t.Fatal(err)
	}
	if string(ours) != string(theirs) {
		t.Errorf("zkbench's JSON\n%s\ndiffers from benchstat's\n%s", ours, theirs)
	}
	var back Result
	dec := json.NewDecoder(bytes.NewReader(ours))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil || back.Of != "get" || back.ServerRSSEnd != 2<<20 || back.ErrorKinds["zk: node does not exist"] != 1 {
		t.Errorf("read back: %+v, %v", back, err)
	}
}
