package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/bench/benchstat"
	"github.com/zkd-io/zkd/jute"
)

// echoServer is a minimal, cheap server for measuring zkbench's own cost: it answers the
// handshake, then every request with an OK header and a getData-shaped body of dataSize
// bytes (data, then a zero Stat), writing the replies to what it has read in one write.
type echoServer struct {
	ln       net.Listener
	dataSize int
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func newEchoServer(tb testing.TB, dataSize int) *echoServer {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &echoServer{ln: ln, dataSize: dataSize}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, nc)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(nc)
			}()
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *echoServer) serve(nc net.Conn) {
	r := bufio.NewReaderSize(nc, 64<<10)
	if _, err := readFrame(r, nil, 1<<20); err != nil {
		return
	}
	e := jute.Encoder{Buf: make([]byte, 4)}
	(&jute.ConnectResponse{TimeOut: 30000, SessionID: 0x1234, Passwd: make([]byte, 16)}).Encode(&e)
	binary.BigEndian.PutUint32(e.Buf, uint32(len(e.Buf)-4))
	if _, err := nc.Write(e.Buf); err != nil {
		return
	}
	body := jute.Encoder{}
	(&jute.GetDataResponse{Data: make([]byte, s.dataSize)}).Encode(&body)
	var out []byte
	for {
		// Peek and Discard, not readFrame, so that the server allocates nothing and
		// testing.AllocsPerRun counts the client's allocations only.
		l, err := r.Peek(4)
		if err != nil {
			return
		}
		n := 4 + int(binary.BigEndian.Uint32(l))
		if n < 12 || n > r.Size() {
			return
		}
		b, err := r.Peek(n)
		if err != nil {
			return
		}
		xid := binary.BigEndian.Uint32(b[4:])
		op := jute.OpCode(int32(binary.BigEndian.Uint32(b[8:])))
		r.Discard(n)
		size := jute.ReplyHeaderSize
		if op == jute.OpGetData && int32(xid) != jute.XidPing {
			size += len(body.Buf)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(size))
		out = binary.BigEndian.AppendUint32(out, xid)
		out = binary.BigEndian.AppendUint64(out, 1)
		out = binary.BigEndian.AppendUint32(out, 0)
		if size > jute.ReplyHeaderSize {
			out = append(out, body.Buf...)
		}
		if r.Buffered() == 0 || len(out) > 32<<10 {
			if _, err := nc.Write(out); err != nil {
				return
			}
			out = out[:0]
		}
	}
}

// pipelineRig is one benchmark's sessions and workers, driving getData against an
// echoServer the way runPipelined does, without the measured window around it.
type pipelineRig struct {
	b     *bench
	conns []*conn
}

func newPipelineRig(tb testing.TB, clients, outstanding int) *pipelineRig {
	tb.Helper()
	srv := newEchoServer(tb, 1024)
	b := &bench{cfg: config{
		servers: []string{srv.ln.Addr().String()}, clients: clients, outstanding: outstanding,
		keys: 10000, dataSize: 1024, sessionTimeout: 30 * time.Second, seed: 1,
	}, wl: &workload{name: "get"}}
	b.keys = keyPaths("/zkbench/keys", b.cfg.keys)
	conns, err := b.openSessions(context.Background(), clients, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { closeSessions(conns) })
	return &pipelineRig{b: b, conns: conns}
}

// run issues ops measured getData requests over the rig's sessions and waits for them all.
func (r *pipelineRig) run(tb testing.TB, ops int64) {
	b := r.b
	b.cfg.ops = ops
	b.issued.Store(0)
	b.phase.Store(phaseMeasure)
	workers := b.newWorkers(len(r.conns), r.conns)
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.pipeline(keyGen(opGet))
		}()
	}
	wg.Wait()
	var done int64
	for _, w := range workers {
		done += w.rec.Ops()
		if w.rec.Errors() != 0 {
			tb.Fatalf("worker %d: %d errors %v", w.id, w.rec.Errors(), w.rec.ErrorKinds())
		}
	}
	if done != ops {
		tb.Fatalf("%d ops done, want %d", done, ops)
	}
}

// BenchmarkPipelineGet is zkbench's own cost per getData of 1 KB, against a server that
// costs next to nothing: go test -bench PipelineGet -benchmem ./internal/bench/
func BenchmarkPipelineGet(b *testing.B) {
	r := newPipelineRig(b, 8, 32)
	r.run(b, 10000) // warm up: buffers and pending queues reach their size
	b.ReportAllocs()
	b.ResetTimer()
	start := benchstat.SelfCPU()
	r.run(b, int64(b.N))
	b.StopTimer()
	b.ReportMetric(float64((benchstat.SelfCPU()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// TestKeyRequestMatchesJute checks the hand-encoded key requests against the jute records
// they stand for.
func TestKeyRequestMatchesJute(t *testing.T) {
	b := &bench{keyDir: "/zkbench/keys", data: payload(100)}
	for _, i := range []int{0, 7, 9999, 12345678, 123456789} {
		path := keyPath(b.keyDir, i)
		for _, tc := range []struct {
			op  jute.OpCode
			rec jute.Record
		}{
			{jute.OpGetData, &jute.GetDataRequest{Path: path}},
			{jute.OpExists, &jute.ExistsRequest{Path: path}},
			{jute.OpSetData, &jute.SetDataRequest{Path: path, Data: b.data, Version: -1}},
		} {
			var got, want call
			got.frame = []byte("stale bytes of an earlier request, longer than none")
			b.keyRequest(&got, tc.op, i)
			want.setRequest(tc.op, tc.rec)
			if string(got.frame) != string(want.frame) || got.op != tc.op {
				t.Errorf("key %d op %v:\n got %q\nwant %q", i, tc.op, got.frame, want.frame)
			}
		}
	}
}

// maxAllocsPerRequest is what a getData costs zkbench in allocations once its sessions
// are warm: nothing. Raise it only knowing why.
const maxAllocsPerRequest = 0.01

// TestPipelineAllocs guards the per-request path (encode, queue, write, read, match,
// record, re-issue) against allocation regressions. It counts the allocations of a run of
// many requests less those of a run of few, so that what a run costs once (workers,
// recorders, calls) cancels out; the echo server allocates nothing.
func TestPipelineAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	r := newPipelineRig(t, 4, 32)
	const few, many = 2000, 22000
	small := testing.AllocsPerRun(3, func() { r.run(t, few) })
	large := testing.AllocsPerRun(3, func() { r.run(t, many) })
	per := (large - small) / (many - few)
	t.Logf("allocations: %.0f per run of %d, %.0f per run of %d: %.4f per request", small, few, large, many, per)
	if per > maxAllocsPerRequest {
		t.Errorf("%.4f allocations per request, want at most %v", per, maxAllocsPerRequest)
	}
}
