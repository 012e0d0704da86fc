package server_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// rawClient speaks the wire protocol frame by frame, for what go-zookeeper cannot express
// (persistent watches, whoAmI, malformed input) and for byte-level checks.
type rawClient struct {
	t       testing.TB
	nc      net.Conn
	xid     int32
	Session int64
	Passwd  []byte
	Timeout int32
	Events  []jute.WatcherEvent
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc}
}

// connectRaw opens a new session.
func connectRaw(t testing.TB, addr string) *rawClient {
	c := dialRaw(t, addr)
	resp, err := c.Handshake(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	if resp.SessionID == 0 {
		t.Fatalf("handshake: no session: %+v", resp)
	}
	return c
}

func (c *rawClient) writeFrame(b []byte) error {
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(b)))
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.nc.Write(append(l[:], b...))
	return err
}

func (c *rawClient) readFrame() ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	var l [4]byte
	if _, err := io.ReadFull(c.nc, l[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(l[:]))
	_, err := io.ReadFull(c.nc, b)
	return b, err
}

func (c *rawClient) Handshake(req *jute.ConnectRequest) (*jute.ConnectResponse, error) {
	if err := c.writeFrame(jute.Marshal(req)); err != nil {
		return nil, err
	}
	b, err := c.readFrame()
	if err != nil {
		return nil, err
	}
	var resp jute.ConnectResponse
	if err := jute.Unmarshal(b, &resp); err != nil {
		return nil, err
	}
	c.Session, c.Passwd, c.Timeout = resp.SessionID, resp.Passwd, resp.TimeOut
	return &resp, nil
}

// Send writes a request with the next xid and returns the xid.
func (c *rawClient) Send(op jute.OpCode, body jute.Record) int32 {
	c.xid++
	return c.SendXid(c.xid, op, body)
}

func (c *rawClient) SendXid(xid int32, op jute.OpCode, body jute.Record) int32 {
	e := jute.Encoder{}
	(&jute.RequestHeader{Xid: xid, Type: op}).Encode(&e)
	if body != nil {
		body.Encode(&e)
	}
	if err := c.writeFrame(e.Buf); err != nil {
		c.t.Fatalf("send %v: %v", op, err)
	}
	return xid
}

// Reply reads frames until the reply with xid, collecting notifications on the way, and
// decodes its body into resp when err is OK.
func (c *rawClient) Reply(xid int32, resp jute.Record) (jute.ReplyHeader, error) {
	for {
		b, err := c.readFrame()
		if err != nil {
			return jute.ReplyHeader{}, err
		}
		d := jute.NewDecoder(b)
		var h jute.ReplyHeader
		h.Decode(d)
		if d.Err() != nil {
			return h, d.Err()
		}
		if h.Xid == jute.XidNotification {
			var ev jute.WatcherEvent
			ev.Decode(d)
			c.Events = append(c.Events, ev)
			continue
		}
		if h.Xid != xid {
			return h, fmt.Errorf("reply xid %d, want %d", h.Xid, xid)
		}
		if h.Err == jute.OK && resp != nil {
			resp.Decode(d)
			if d.Err() != nil {
				return h, d.Err()
			}
			if d.Remaining() != 0 {
				return h, fmt.Errorf("%d trailing bytes in reply", d.Remaining())
			}
		}
		return h, nil
	}
}

// Call sends a request and waits for its reply.
func (c *rawClient) Call(op jute.OpCode, body, resp jute.Record) jute.ReplyHeader {
	c.t.Helper()
	h, err := c.Reply(c.Send(op, body), resp)
	if err != nil {
		c.t.Fatalf("%v: %v", op, err)
	}
	return h
}

// Closed reports whether the server closes the connection (reading EOF) within the timeout.
func (c *rawClient) Closed() bool {
	c.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 1024)
	for {
		_, err := c.nc.Read(buf)
		if err != nil {
			ne, ok := err.(net.Error)
			return !(ok && ne.Timeout())
		}
	}
}
