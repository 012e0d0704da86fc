package bench

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/bench/benchstat"
	"github.com/zkd-io/zkd/internal/clientwire"
	"github.com/zkd-io/zkd/jute"
)

// BenchmarkPipelineGetClientwire is BenchmarkPipelineGet on the shared client loop
// (internal/clientwire) instead of zkbench's own conn: the same echo server, sessions and
// depth, getData frames built the same way, a reply matched to the oldest request and
// answered by a new one. It is the evidence for conn's doc comment: go test -bench
// 'PipelineGet' -benchmem ./internal/bench/
func BenchmarkPipelineGetClientwire(b *testing.B) {
	const clients, outstanding = 8, 32
	srv := newEchoServer(b, 1024)
	bn := &bench{keyDir: "/zkbench/keys"}
	type sess struct {
		wc      *clientwire.Conn
		mu      sync.Mutex
		calls   []call // a ring of outstanding requests: one is free again once answered
		head    int
		xid     int32
		done    chan struct{}
		readErr chan error
	}
	var issued, completed atomic.Int64
	var total int64
	sessions := make([]*sess, clients)
	for i := range sessions {
		nc, err := net.Dial("tcp", srv.ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		s := &sess{wc: clientwire.New(nc, clientwire.Config{MaxFrame: maxReply, ReadBuffer: 256 << 10}),
			calls: make([]call, outstanding), readErr: make(chan error, 1)}
		if _, err := s.wc.Handshake(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}); err != nil {
			b.Fatal(err)
		}
		s.wc.SetTimeouts(0, 0)
		go s.wc.WriteLoop()
		b.Cleanup(func() { s.wc.Kill(nil) })
		sessions[i] = s
	}
	// send issues the next request in slot k, under s.mu.
	send := func(s *sess, k int) bool {
		if issued.Add(1) > total {
			return false
		}
		c := &s.calls[k]
		bn.keyRequest(c, jute.OpGetData, int(issued.Load()%10000))
		s.xid++
		binary.BigEndian.PutUint32(c.frame[4:], uint32(s.xid))
		return s.wc.Send(c.frame) == nil
	}
	run := func(n int64) {
		issued.Store(0)
		completed.Store(0)
		total = n
		var wg sync.WaitGroup
		for _, s := range sessions {
			s.done = make(chan struct{})
			inflight := 0
			s.mu.Lock()
			for k := range outstanding {
				if send(s, k) {
					inflight++
				}
			}
			s.head = 0
			s.mu.Unlock()
			if inflight == 0 {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.wc.ReadLoop(func(f []byte) error {
					_ = time.Now() // as zkbench stamps each read
					s.mu.Lock()
					k := s.head
					s.head = (s.head + 1) % outstanding
					if int32(binary.BigEndian.Uint32(f)) != int32(binary.BigEndian.Uint32(s.calls[k].frame[4:])) {
						s.mu.Unlock()
						return errProtocol
					}
					more := send(s, k)
					s.mu.Unlock()
					completed.Add(1)
					if !more {
						inflight--
						if inflight == 0 {
							return errClosed
						}
					}
					return nil
				})
				if err != errClosed {
					s.readErr <- err
				}
			}()
		}
		wg.Wait()
		for _, s := range sessions {
			select {
			case err := <-s.readErr:
				b.Fatal(err)
			default:
			}
		}
		if completed.Load() != n {
			b.Fatalf("%d of %d done", completed.Load(), n)
		}
	}
	run(10000)
	b.ReportAllocs()
	b.ResetTimer()
	start := benchstat.SelfCPU()
	run(int64(b.N))
	b.StopTimer()
	b.ReportMetric(float64((benchstat.SelfCPU()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
