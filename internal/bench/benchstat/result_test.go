package benchstat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within reports whether got is within HDR's three-significant-digit precision of want.
func within(got, want float64) bool { return math.Abs(got-want) <= want*0.001+1 }

func TestRecorderPercentiles(t *testing.T) {
	r := NewRecorder(nil)
	for us := 1; us <= 10000; us++ {
		r.Record(time.Duration(us)*time.Microsecond, nil)
	}
	l := r.Latency()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"p50", l.P50, 5000}, {"p90", l.P90, 9000}, {"p99", l.P99, 9900},
		{"p99.9", l.P999, 9990}, {"max", l.Max, 10000}, {"mean", l.Mean, 5000.5},
	} {
		if !within(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if len(l.Spectrum) != len(spectrumPercentiles) {
		t.Fatalf("spectrum has %d points, want %d", len(l.Spectrum), len(spectrumPercentiles))
	}
	for i := 1; i < len(l.Spectrum); i++ {
		if l.Spectrum[i].Micros < l.Spectrum[i-1].Micros {
			t.Errorf("spectrum not monotonic at %v: %v", l.Spectrum[i].Percentile, l.Spectrum)
		}
	}
}

// errCode stands for a client library's error code, which the kind function given to
// NewRecorder names errors by.
type errCode int

func (c errCode) Error() string { return fmt.Sprintf("code %d", int(c)) }

func codeKind(err error) string {
	var c errCode
	if errors.As(err, &c) {
		return c.Error()
	}
	return ErrKind(err)
}

func TestRecorderMergeAndErrors(t *testing.T) {
	a, b := NewRecorder(codeKind), NewRecorder(codeKind)
	for range 90 {
		a.Record(100*time.Microsecond, nil)
	}
	for range 10 {
		b.Record(50*time.Millisecond, nil)
	}
	b.Record(0, errCode(1))
	b.Record(0, fmt.Errorf("read: %w: %w", errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: reset"), errCode(2)))
	b.Record(0, fmt.Errorf("wrapped: %w", errCode(1)))
	b.Record(2*time.Hour, nil) // beyond the histogram: clamped, still counted
	a.Merge(b)
	if a.Ops() != 101 || a.Errors() != 3 || a.clamps != 1 {
		t.Fatalf("ops %d errs %d clamps %d, want 101 3 1", a.Ops(), a.Errors(), a.clamps)
	}
	if k := a.ErrorKinds(); k["code 1"] != 2 || k["code 2"] != 1 || len(k) != 2 {
		t.Errorf("error kinds %v", k)
	}
	l := a.Latency()
	if !within(l.P50, 100) || !within(l.P99, 50000) || !within(l.Max, float64(histMax)) {
		// p50 in the fast group, p99 in the slow one, max clamped to the histogram's top.
		t.Errorf("merged latency %+v", l)
	}
	// Without a kind function, errors are named by ErrKind.
	r := NewRecorder(nil)
	r.Record(0, fmt.Errorf("put: %w", context.DeadlineExceeded))
	if k := r.ErrorKinds(); k["timeout"] != 1 || len(k) != 1 {
		t.Errorf("default kinds %v", k)
	}
}

func TestResultFill(t *testing.T) {
	r := NewRecorder(codeKind)
	for range 500 {
		r.Record(time.Millisecond, nil)
	}
	r.Record(0, errCode(103))
	var res Result
	res.Fill(r, 2*time.Second)
	if res.Ops != 500 || res.Errors != 1 || res.OpsPerSec != 250 || res.Seconds != 2 {
		t.Errorf("Fill: %+v", res)
	}
	if res.ErrorKinds["code 103"] != 1 {
		t.Errorf("error kinds %v", res.ErrorKinds)
	}
	// The result's counts are its own: the recorder may go on counting.
	r.Record(0, errCode(103))
	if res.ErrorKinds["code 103"] != 1 {
		t.Errorf("error kinds shared with the recorder: %v", res.ErrorKinds)
	}
	res.FillServer(ProcSample{OK: true, CPU: time.Second, RSS: 1 << 20}, ProcSample{OK: true, CPU: 2 * time.Second, RSS: 3 << 20})
	if res.ServerCPUSeconds != 1 || res.ServerCPUPerOpUS != 2000 || res.ServerRSSStart != 1<<20 || res.ServerRSSEnd != 3<<20 {
		t.Errorf("FillServer: %+v", res)
	}
	res.FillClient(1500 * time.Microsecond)
	if res.ClientCPUSeconds != 0.002 || res.ClientCPUPerOpUS != 3 {
		t.Errorf("FillClient: %v s, %v µs/op", res.ClientCPUSeconds, res.ClientCPUPerOpUS)
	}
	var empty Result
	empty.Fill(NewRecorder(nil), 0)
	empty.FillServer(ProcSample{}, ProcSample{OK: true})
	empty.FillClient(time.Second)
	if empty.OpsPerSec != 0 || empty.Latency.P99 != 0 || empty.ServerRSSEnd != 0 || empty.ClientCPUPerOpUS != 0 {
		t.Errorf("empty fill: %+v", empty)
	}
}

// The JSON names are the file format `zkbench compare` reads: an empty result writes only
// the fields without omitempty, under these names.
func TestResultJSONNames(t *testing.T) {
	b, err := json.Marshal(Result{Workload: "set"})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"workload":"set","ops":0,"errors":0,"seconds":0,"ops_per_sec":0,"latency_us":{"mean":0,"p50":0,"p90":0,"p99":0,"p999":0,"max":0}}`
	if string(b) != want {
		t.Errorf("empty result\n got %s\nwant %s", b, want)
	}
	r := NewRecorder(nil)
	r.Record(time.Millisecond, nil)
	var res Result
	res.Fill(r, time.Second)
	b, err = json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"spectrum":[{"p":0,"us":1000}`) {
		t.Errorf("spectrum's names: %s", b)
	}
}

func TestRound3(t *testing.T) {
	if got := Round3(2.0004999); got != 2 {
		t.Errorf("Round3(2.0004999) = %v", got)
	}
	if got := Round3(1.23456); got != 1.235 {
		t.Errorf("Round3(1.23456) = %v", got)
	}
}

// Network errors name their ports; counted by kind, a thousand refused connections are one
// kind, not a thousand.
func TestErrKindDropsAddresses(t *testing.T) {
	mk := func(port int, err error) error {
		return fmt.Errorf("connect to 127.0.0.1:2181: %w", &net.OpError{Op: "read", Net: "tcp",
			Source: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}, Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2181}, Err: err})
	}
	reset := &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}
	if a, b := ErrKind(mk(40000, reset)), ErrKind(mk(40001, reset)); a != b || a != syscall.ECONNRESET.Error() {
		t.Errorf("connection resets from two ports: kinds %q and %q, want both %q", a, b, syscall.ECONNRESET.Error())
	}
	if k := ErrKind(fmt.Errorf("connect to 127.0.0.1:2181: %w", io.EOF)); k != "connection closed by the server" {
		t.Errorf("EOF: kind %q", k)
	}
	if k := ErrKind(mk(40002, errors.New("i/o timeout"))); k != "read: i/o timeout" {
		t.Errorf("op error: kind %q", k)
	}
	if k := ErrKind(errors.New(strings.Repeat("x", 100))); len(k) != 80 {
		t.Errorf("long message: kind of %d bytes, want its first 80", len(k))
	}
}
