package zk

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

// Encoding benchmarks measure building a request frame, the work every call does on the
// caller's goroutine before it is queued.

func BenchmarkEncodeGetData(b *testing.B) {
	c := &Conn{chroot: "/app"}
	b.ReportAllocs()
	for b.Loop() {
		c.encode(readSpec(jute.OpGetData, "/some/node/path", kindData, false), &jute.GetDataResponse{})
	}
}

func BenchmarkEncodeCreate(b *testing.B) {
	c := &Conn{}
	data := make([]byte, 128)
	acl := OpenACL()
	b.ReportAllocs()
	for b.Loop() {
		c.encode(createSpec("/some/node/path", data, acl, ModePersistent, 0, false, false), &jute.CreateResponse{})
	}
}

func BenchmarkEncodeSet1K(b *testing.B) {
	c := &Conn{}
	data := make([]byte, 1024)
	b.ReportAllocs()
	b.SetBytes(1024)
	for b.Loop() {
		c.encode(setSpec("/some/node/path", data, AnyVersion), &jute.SetDataResponse{})
	}
}

func BenchmarkEncodeMulti10(b *testing.B) {
	c := &Conn{}
	ops := make([]Op, 10)
	for i := range ops {
		ops[i] = &SetOp{Path: "/some/node/path", Data: make([]byte, 32), Version: AnyVersion}
	}
	b.ReportAllocs()
	for b.Loop() {
		m, size, _ := c.multiRequest(ops)
		c.encode(spec{op: jute.OpMulti, raw: true, body: record(m), size: size}, &jute.MultiResponse{})
	}
}

// echoServer is a minimal server that answers every request at once with the same getData
// reply, so round-trip benchmarks measure the client rather than a server.
func echoServer(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	b.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				serveEcho(nc)
			}()
		}
	}()
	return ln.Addr().String()
}

func serveEcho(nc net.Conn) {
	br := bufio.NewReaderSize(nc, 64<<10)
	bw := bufio.NewWriterSize(nc, 64<<10)
	read := func() []byte {
		var hdr [4]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return nil
		}
		f := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(br, f); err != nil {
			return nil
		}
		return f
	}
	if read() == nil {
		return
	}
	resp := jute.ConnectResponse{TimeOut: 30000, SessionID: 1, Passwd: make([]byte, 16), HasReadOnly: true}
	e := jute.Encoder{Buf: make([]byte, 4)}
	resp.Encode(&e)
	putLen(e.Buf)
	bw.Write(e.Buf)
	bw.Flush()
	reply := jute.Encoder{Buf: make([]byte, 4)}
	(&jute.ReplyHeader{}).Encode(&reply)
	(&jute.GetDataResponse{Data: []byte("value")}).Encode(&reply)
	putLen(reply.Buf)
	for {
		f := read()
		if f == nil {
			return
		}
		copy(reply.Buf[4:8], f[0:4]) // echo the xid
		bw.Write(reply.Buf)
		if br.Buffered() == 0 {
			if bw.Flush() != nil {
				return
			}
		}
	}
}

func benchConn(b *testing.B, addr string) *Conn {
	c, err := Connect(context.Background(), addr, WithLogger(testLogger(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func zkdConn(b *testing.B) *Conn {
	s := startZKD(b)
	c := benchConn(b, s.Addr())
	if _, err := c.Create(context.Background(), "/bench", []byte("value"), OpenACL(), ModePersistent); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkRoundTrip is one blocking Get at a time: the latency of the whole path.
func BenchmarkRoundTrip(b *testing.B) {
	for _, bc := range []struct {
		name string
		conn func(*testing.B) *Conn
	}{
		{"echo", func(b *testing.B) *Conn { return benchConn(b, echoServer(b)) }},
		{"zkd", zkdConn},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := bc.conn(b)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := c.Get(ctx, "/bench"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPipelined is many goroutines sharing one connection: requests are pipelined and
// written in batches, so this is the client's throughput.
func BenchmarkPipelined(b *testing.B) {
	for _, bc := range []struct {
		name string
		conn func(*testing.B) *Conn
	}{
		{"echo", func(b *testing.B) *Conn { return benchConn(b, echoServer(b)) }},
		{"zkd", zkdConn},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := bc.conn(b)
			ctx := context.Background()
			b.ReportAllocs()
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, _, err := c.Get(ctx, "/bench"); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkGo issues requests from one goroutine with Go, without waiting, with up to 1000
// in flight.
func BenchmarkGo(b *testing.B) {
	c := benchConn(b, echoServer(b))
	ctx := context.Background()
	inFlight := make(chan *Pending[[]byte], 1000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p := range inFlight {
			p.Wait(ctx)
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		inFlight <- goGet(ctx, c, "/bench")
	}
	close(inFlight)
	<-done
}
