package server_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// The hot-path benchmarks measure the server's cost per request, end to end in one process:
// pipelined setData and getData of 1 KiB on a few connections. The client side allocates
// nothing per request (frames are encoded once, their xid patched, replies read into one
// buffer), so allocs/op is the server's. fsync is off: the figures are of the CPU path,
// not of the disk.

const hotConns, hotOutstanding, hotKeys = 4, 32, 256

func BenchmarkHotSetData1K(b *testing.B) {
	benchHot(b, func(path string, data []byte) (jute.OpCode, jute.Record) {
		return jute.OpSetData, &jute.SetDataRequest{Path: path, Data: data, Version: -1}
	})
}

func BenchmarkHotGetData1K(b *testing.B) {
	benchHot(b, func(path string, _ []byte) (jute.OpCode, jute.Record) {
		return jute.OpGetData, &jute.PathWatchRequest{Path: path}
	})
}

func benchHot(b *testing.B, req func(path string, data []byte) (jute.OpCode, jute.Record)) {
	srv := zktest.Start(b, zktest.WithConfig(func(c *server.Config) { c.NoSync = true }))
	data := make([]byte, 1024)
	setup := rawzk.Connect(b, srv.Addr())
	frames := make([][]byte, hotKeys)
	for i := range frames {
		path := fmt.Sprintf("/hot%04d", i)
		if h := setup.Call(jute.OpCreate, &jute.CreateRequest{Path: path, Data: data, ACL: jute.OpenACLUnsafe}, nil); h.Err != jute.OK {
			b.Fatalf("create %s: %v", path, h.Err)
		}
		op, body := req(path, data)
		e := jute.Encoder{Buf: []byte{0, 0, 0, 0}}
		(&jute.RequestHeader{Type: op}).Encode(&e)
		body.Encode(&e)
		binary.BigEndian.PutUint32(e.Buf, uint32(len(e.Buf)-4))
		frames[i] = e.Buf
	}
	clients := make([]*rawzk.Client, hotConns)
	for i := range clients {
		clients[i] = rawzk.Connect(b, srv.Addr())
	}
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	errs := make(chan error, hotConns)
	for ci, c := range clients {
		n := b.N / hotConns
		if ci == 0 {
			n += b.N % hotConns
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- hotConn(c, frames, ci, n)
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// hotConn sends n requests on c, hotOutstanding at a time, and reads their replies.
func hotConn(c *rawzk.Client, shared [][]byte, seed, n int) error {
	frames := make([][]byte, len(shared)) // its own: the xid is patched in place
	for i, f := range shared {
		frames[i] = append([]byte(nil), f...)
	}
	c.NC.SetDeadline(time.Now().Add(10 * time.Minute))
	errc := make(chan error, 1)
	window := make(chan struct{}, hotOutstanding)
	go func() {
		br := bufio.NewReaderSize(c.NC, 64<<10)
		buf := make([]byte, 4096)
		for i := 0; i < n; i++ {
			if _, err := io.ReadFull(br, buf[:4]); err != nil {
				errc <- err
				return
			}
			l := int(binary.BigEndian.Uint32(buf))
			if l > len(buf) {
				buf = make([]byte, l)
			}
			if _, err := io.ReadFull(br, buf[:l]); err != nil {
				errc <- err
				return
			}
			if code := jute.Code(binary.BigEndian.Uint32(buf[12:])); code != jute.OK {
				errc <- fmt.Errorf("reply: %v", code)
				return
			}
			<-window
		}
		errc <- nil
	}()
	bw := bufio.NewWriterSize(c.NC, 64<<10)
	for i := 0; i < n; i++ {
		select {
		case window <- struct{}{}:
		default:
			if err := bw.Flush(); err != nil {
				return err
			}
			window <- struct{}{}
		}
		f := frames[(seed*7919+i*31)%len(frames)]
		binary.BigEndian.PutUint32(f[4:], uint32(i+1)) // xid; frames are written, not kept
		if _, err := bw.Write(f); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return <-errc
}
