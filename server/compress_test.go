package server_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/chcompress"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

// chClient is a compressed session at the frame level, as ClickHouse's client speaks it:
// the handshake in plain frames, everything after in compressed blocks.
type chClient struct {
	t  *testing.T
	nc net.Conn
	zr *chcompress.Reader
	zw chcompress.Writer
}

func dialCompressed(t *testing.T, addr string) (*chClient, *jute.ConnectResponse) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	req := &jute.ConnectRequest{ProtocolVersion: jute.ProtocolVersionCompressed, TimeOut: 10000, Passwd: make([]byte, 16)}
	if err := jute.WriteFrame(nc, jute.Marshal(req)); err != nil {
		t.Fatal(err)
	}
	c := &chClient{t: t, nc: nc}
	// The ConnectResponse is plain; it is read byte-exactly so no compressed byte is lost.
	var resp jute.ConnectResponse
	frame, err := jute.ReadFrame(nc, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := jute.Unmarshal(frame, &resp); err != nil {
		t.Fatal(err)
	}
	c.zr = chcompress.NewReader(nc)
	return c, &resp
}

func (c *chClient) send(xid int32, op jute.OpCode, body jute.Record) {
	c.t.Helper()
	p := jute.Marshal(&jute.RequestHeader{Xid: xid, Type: op})
	if body != nil {
		p = append(p, jute.Marshal(body)...)
	}
	if err := c.zw.Write(c.nc, jute.AppendFrame(nil, p)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *chClient) read(resp jute.Record) (jute.ReplyHeader, error) {
	frame, err := jute.ReadFrame(c.zr, 16<<20)
	if err != nil {
		return jute.ReplyHeader{}, err
	}
	d := jute.NewDecoder(frame)
	var h jute.ReplyHeader
	h.Decode(d)
	if resp != nil && h.Err == jute.OK {
		resp.Decode(d)
	}
	return h, d.Err()
}

func compressServer(t *testing.T) *zktest.Server {
	return zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.Extensions = ext.Of(ext.LargeReplies)
		c.JuteMaxBuffer = 4 << 20
	}))
}

// TestCompressedSessionRoundTrip: a client that asks for version 10 gets it, and big and
// small values, a watch's event and pings cross the compressed session intact.
func TestCompressedSessionRoundTrip(t *testing.T) {
	ctx := context.Background()
	srv := compressServer(t)
	c, err := zk.Connect(ctx, srv.Addr(), zk.WithCompression())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Compressed() {
		t.Fatal("the server did not grant the compressed session")
	}
	r := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 3<<20)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	values := map[string][]byte{
		"/small":  []byte("v"),
		"/empty":  nil,
		"/text":   bytes.Repeat([]byte("compress me "), 200000),
		"/random": random,
	}
	for p, v := range values {
		if _, err := c.Create(ctx, p, v, zk.OpenACL(), 0); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	for p, v := range values {
		got, _, err := c.Get(ctx, p)
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("get %s: %d bytes, %v; want %d", p, len(got), err, len(v))
		}
	}

	_, _, ev, err := c.GetW(ctx, "/small")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(ctx, "/small", []byte("w"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-ev:
		if e.Type != zk.EventNodeDataChanged || e.Path != "/small" {
			t.Fatalf("watch event %v", e)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no watch event over the compressed session")
	}

	// Pings, at the frame level: each is answered with xid -2.
	raw, resp := dialCompressed(t, srv.Addr())
	if resp.ProtocolVersion != jute.ProtocolVersionCompressed || resp.SessionID == 0 {
		t.Fatalf("ConnectResponse %+v, want version 10", resp)
	}
	for range 3 {
		raw.send(jute.XidPing, jute.OpPing, nil)
		h, err := raw.read(nil)
		if err != nil || h.Xid != jute.XidPing || h.Err != jute.OK {
			t.Fatalf("ping: %+v %v", h, err)
		}
	}
	raw.send(1, jute.OpGetData, &jute.GetDataRequest{Path: "/text"})
	var gd jute.GetDataResponse
	if h, err := raw.read(&gd); err != nil || h.Err != jute.OK || !bytes.Equal(gd.Data, values["/text"]) {
		t.Fatalf("raw getData: %+v %v, %d bytes", h, err, len(gd.Data))
	}
}

// TestCompressedSessionBadChecksum: a block whose checksum does not match closes that
// connection; another compressed session goes on.
func TestCompressedSessionBadChecksum(t *testing.T) {
	ctx := context.Background()
	srv := compressServer(t)
	c, err := zk.Connect(ctx, srv.Addr(), zk.WithCompression())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	raw, _ := dialCompressed(t, srv.Addr())
	block := raw.zw.AppendBlocks(nil, jute.AppendFrame(nil, jute.Marshal(&jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing})))
	block[3] ^= 0x40 // in the checksum
	if _, err := raw.nc.Write(block); err != nil {
		t.Fatal(err)
	}
	if h, err := raw.read(nil); err == nil {
		t.Fatalf("the server answered a damaged block: %+v", h)
	}

	if _, err := c.Create(ctx, "/after", []byte("ok"), zk.OpenACL(), 0); err != nil {
		t.Fatalf("the other session: %v", err)
	}
	if got, _, err := c.Get(ctx, "/after"); err != nil || string(got) != "ok" {
		t.Fatalf("the other session: %q %v", got, err)
	}
}

// TestCompressedSessionDisabled: without the extension version 10 is answered as ZooKeeper
// answers it, version 0 and plain frames; the client asking for compression goes on
// uncompressed.
func TestCompressedSessionDisabled(t *testing.T) {
	ctx := context.Background()
	srv := zktest.Start(t)
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	req := &jute.ConnectRequest{ProtocolVersion: jute.ProtocolVersionCompressed, TimeOut: 10000, Passwd: make([]byte, 16)}
	if err := jute.WriteFrame(nc, jute.Marshal(req)); err != nil {
		t.Fatal(err)
	}
	frame, err := jute.ReadFrame(nc, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var resp jute.ConnectResponse
	if err := jute.Unmarshal(frame, &resp); err != nil || resp.ProtocolVersion != 0 || resp.SessionID == 0 {
		t.Fatalf("ConnectResponse %+v %v, want version 0", resp, err)
	}
	if err := jute.WriteFrame(nc, jute.Marshal(&jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing})); err != nil {
		t.Fatal(err)
	}
	if _, err := jute.ReadFrame(nc, 1<<20); err != nil {
		t.Fatalf("plain ping after version 10 on a server without the extension: %v", err)
	}

	c, err := zk.Connect(ctx, srv.Addr(), zk.WithCompression())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Compressed() {
		t.Fatal("compressed without the extension")
	}
	if _, err := c.Create(ctx, "/x", []byte("v"), zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
}
