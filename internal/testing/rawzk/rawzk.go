// Package rawzk is a frame-level ZooKeeper client for tests: it sends requests exactly as
// given and returns replies and notifications undecoded by any client library, for
// byte-level checks and for operations and malformed input other clients cannot express.
package rawzk

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// Client speaks the wire protocol frame by frame, for what go-zookeeper cannot express
// (persistent watches, whoAmI, malformed input) and for byte-level checks.
type Client struct {
	t       testing.TB
	NC      net.Conn
	xid     int32
	Session int64
	Passwd  []byte
	Timeout int32
	Events  []jute.WatcherEvent
}

func Dial(t testing.TB, addr string) *Client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &Client{t: t, NC: nc}
}

// Over makes a client of an established connection (a TLS one, say); it is closed when the
// test ends.
func Over(t testing.TB, nc net.Conn) *Client {
	t.Cleanup(func() { nc.Close() })
	return &Client{t: t, NC: nc}
}

// Connect opens a new session.
func Connect(t testing.TB, addr string) *Client {
	return Dial(t, addr).connect()
}

// ConnectOver is Connect on an established connection.
func ConnectOver(t testing.TB, nc net.Conn) *Client { return Over(t, nc).connect() }

func (c *Client) connect() *Client {
	t := c.t
	t.Helper()
	resp, err := c.Handshake(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	if resp.SessionID == 0 {
		t.Fatalf("handshake: no session: %+v", resp)
	}
	return c
}

// WriteFrame writes b as one frame; b itself may be anything, a malformed request included.
// To send a bad length prefix, write to NC.
func (c *Client) WriteFrame(b []byte) error {
	c.NC.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return jute.WriteFrame(c.NC, b)
}

// MaxFrame bounds the replies ReadFrame takes: far above anything a test provokes, so a
// larger length means the stream is out of step.
const MaxFrame = 64 << 20

// ReadFrame reads one frame.
func (c *Client) ReadFrame() ([]byte, error) {
	c.NC.SetReadDeadline(time.Now().Add(20 * time.Second))
	return jute.ReadFrame(c.NC, MaxFrame)
}

// Handshake sends a ConnectRequest and reads the response.
func (c *Client) Handshake(req *jute.ConnectRequest) (*jute.ConnectResponse, error) {
	if err := c.WriteFrame(jute.Marshal(req)); err != nil {
		return nil, err
	}
	b, err := c.ReadFrame()
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
func (c *Client) Send(op jute.OpCode, body jute.Record) int32 {
	c.xid++
	return c.SendXid(c.xid, op, body)
}

func (c *Client) SendXid(xid int32, op jute.OpCode, body jute.Record) int32 {
	if err := c.sendXid(xid, op, body); err != nil {
		c.t.Fatal(err)
	}
	return xid
}

// TrySend is Send for a test where the server may have closed the connection: the error
// is the caller's to judge.
func (c *Client) TrySend(op jute.OpCode, body jute.Record) (int32, error) {
	c.xid++
	return c.xid, c.sendXid(c.xid, op, body)
}

func (c *Client) sendXid(xid int32, op jute.OpCode, body jute.Record) error {
	e := jute.Encoder{}
	(&jute.RequestHeader{Xid: xid, Type: op}).Encode(&e)
	if body != nil {
		body.Encode(&e)
	}
	if err := c.WriteFrame(e.Buf); err != nil {
		return fmt.Errorf("send %v: %w", op, err)
	}
	return nil
}

// Reply reads frames until the reply with xid, collecting notifications on the way, and
// decodes its body into resp when err is OK.
func (c *Client) Reply(xid int32, resp jute.Record) (jute.ReplyHeader, error) {
	for {
		b, err := c.ReadFrame()
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
func (c *Client) Call(op jute.OpCode, body, resp jute.Record) jute.ReplyHeader {
	c.t.Helper()
	h, err := c.Reply(c.Send(op, body), resp)
	if err != nil {
		c.t.Fatalf("%v: %v", op, err)
	}
	return h
}

// Closed reports whether the server closes the connection (reading EOF) within the timeout.
func (c *Client) Closed() bool {
	c.NC.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 1024)
	for {
		_, err := c.NC.Read(buf)
		if err != nil {
			ne, ok := err.(net.Error)
			return !(ok && ne.Timeout())
		}
	}
}
