package server_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// healthy checks that a fresh session can still write and read.
func healthy(t *testing.T, addr string, name string) {
	t.Helper()
	c := rawzk.Connect(t, addr)
	if h := c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/" + name, Data: []byte("ok"), ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{}); h.Err != jute.OK {
		t.Fatalf("create after bad input: %v", h.Err)
	}
	var gd jute.GetDataResponse
	if h := c.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/" + name}, &gd); h.Err != jute.OK || string(gd.Data) != "ok" {
		t.Fatalf("get after bad input: %v %q", h.Err, gd.Data)
	}
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	srv := zktest.Start(t)
	bystander := rawzk.Connect(t, srv.Addr())
	cases := []struct {
		name string
		send func(c *rawzk.Client)
	}{
		{"oversized length", func(c *rawzk.Client) {
			c.NC.Write([]byte{0x00, 0x20, 0x00, 0x00}) // 2 MiB > jute.maxbuffer
		}},
		{"negative length", func(c *rawzk.Client) {
			c.NC.Write([]byte{0xff, 0xff, 0xff, 0xf0})
		}},
		{"garbage connect", func(c *rawzk.Client) {
			c.WriteFrame([]byte("this is not a ConnectRequest at all"))
		}},
		{"short connect", func(c *rawzk.Client) {
			c.WriteFrame([]byte{0, 0, 0, 0, 1})
		}},
		{"truncated frame then close", func(c *rawzk.Client) {
			c.NC.Write([]byte{0, 0, 0, 100, 1, 2, 3})
		}},
		{"header too short after handshake", func(c *rawzk.Client) {
			if _, err := c.Handshake(&jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)}); err != nil {
				t.Fatal(err)
			}
			c.WriteFrame([]byte{1, 2, 3})
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := rawzk.Dial(t, srv.Addr())
			tc.send(c)
			if tc.name == "truncated frame then close" {
				c.NC.Close()
			} else if !c.Closed() {
				t.Fatal("connection stayed open")
			}
			healthy(t, srv.Addr(), fmt.Sprintf("after%d", i))
			if h := bystander.Call(jute.OpExists, &jute.ExistsRequest{Path: "/"}, &jute.ExistsResponse{}); h.Err != jute.OK {
				t.Fatalf("bystander session broken: %v", h.Err)
			}
		})
	}
}

func TestUnparsableBodies(t *testing.T) {
	srv := zktest.Start(t)
	c := rawzk.Connect(t, srv.Addr())
	// A getData body that is cut short: MARSHALLINGERROR, connection stays usable.
	e := jute.Encoder{}
	(&jute.RequestHeader{Xid: 7, Type: jute.OpGetData}).Encode(&e)
	e.Int(50) // a path length with no path behind it
	c.WriteFrame(e.Buf)
	h, err := c.Reply(7, nil)
	if err != nil || h.Err != jute.ErrMarshallingError {
		t.Fatalf("bad read body: %+v %v", h, err)
	}
	// The same for a write: it still consumes a zxid, as in ZooKeeper.
	before := c.Call(jute.OpExists, &jute.ExistsRequest{Path: "/"}, &jute.ExistsResponse{}).Zxid
	e = jute.Encoder{}
	(&jute.RequestHeader{Xid: 8, Type: jute.OpCreate}).Encode(&e)
	e.Int(-5)
	c.WriteFrame(e.Buf)
	h, err = c.Reply(8, nil)
	if err != nil || h.Err != jute.ErrMarshallingError || h.Zxid != before+1 {
		t.Fatalf("bad write body: %+v %v (zxid before %d)", h, err, before)
	}
	if h := c.Call(jute.OpExists, &jute.ExistsRequest{Path: "/"}, &jute.ExistsResponse{}); h.Err != jute.OK {
		t.Fatalf("connection unusable after bad bodies: %v", h.Err)
	}
}

func TestUnknownOpcode(t *testing.T) {
	srv := zktest.Start(t)
	for _, op := range []jute.OpCode{999, jute.OpCheck, jute.OpDeleteContainer, jute.OpCreateSession} {
		c := rawzk.Connect(t, srv.Addr())
		h, err := c.Reply(c.Send(op, &jute.CheckVersionRequest{Path: "/", Version: 0}), nil)
		if err != nil || h.Err != jute.ErrUnimplemented || h.Zxid != -1 {
			t.Fatalf("op %v: %+v %v", op, h, err)
		}
		if !c.Closed() {
			t.Fatalf("op %v: connection stayed open", op)
		}
	}
	healthy(t, srv.Addr(), "alive")
}

// TestSlowReaderIsCut checks the wait-free promise: a client that stops reading is
// disconnected once its unsent replies pass the limit, and other clients go on.
func TestSlowReaderIsCut(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.MaxOutgoingBytes = 4 << 20 }))
	w := rawzk.Connect(t, srv.Addr())
	big := make([]byte, 512<<10)
	if h := w.Call(jute.OpCreate, &jute.CreateRequest{Path: "/big", Data: big, ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{}); h.Err != jute.OK {
		t.Fatal(h.Err)
	}
	slow := rawzk.Connect(t, srv.Addr())
	// 200 reads of 512 KiB = 100 MiB of replies, never read.
	go func() {
		for i := 0; i < 200; i++ {
			e := jute.Encoder{}
			(&jute.RequestHeader{Xid: int32(i + 1), Type: jute.OpGetData}).Encode(&e)
			(&jute.GetDataRequest{Path: "/big"}).Encode(&e)
			var l [4]byte
			binary.BigEndian.PutUint32(l[:], uint32(len(e.Buf)))
			slow.NC.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := slow.NC.Write(append(l[:], e.Buf...)); err != nil {
				return
			}
		}
	}()
	// Meanwhile another client works normally.
	for i := 0; i < 200; i++ {
		if h := w.Call(jute.OpSetData, &jute.SetDataRequest{Path: "/big", Data: []byte{byte(i)}, Version: -1}, &jute.SetDataResponse{}); h.Err != jute.OK {
			t.Fatalf("set %d: %v", i, h.Err)
		}
		if i == 0 {
			// Put the big data back for the slow reader's later reads.
			w.Call(jute.OpSetData, &jute.SetDataRequest{Path: "/big", Data: big, Version: -1}, &jute.SetDataResponse{})
		}
	}
	if !slow.Closed() {
		t.Fatal("slow reader was never disconnected")
	}
	healthy(t, srv.Addr(), "after-slow")
}

// TestOutstandingLimitDoesNotDeadlock pipelines far more requests than the global limit.
func TestOutstandingLimitDoesNotDeadlock(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.GlobalOutstandingLimit = 8 }))
	c := rawzk.Connect(t, srv.Addr())
	const n = 2000
	go func() {
		for i := 0; i < n; i++ {
			if i%2 == 0 {
				c.SendXid(int32(i+1), jute.OpCreate, &jute.CreateRequest{Path: fmt.Sprintf("/n%d", i), ACL: jute.OpenACLUnsafe})
			} else {
				c.SendXid(int32(i+1), jute.OpExists, &jute.ExistsRequest{Path: fmt.Sprintf("/n%d", i-1)})
			}
		}
	}()
	for i := 0; i < n; i++ {
		var resp jute.Record = &jute.CreateResponse{}
		if i%2 == 1 {
			resp = &jute.ExistsResponse{}
		}
		h, err := c.Reply(int32(i+1), resp)
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		// FIFO per session: each exists sees the create sent just before it.
		if h.Err != jute.OK {
			t.Fatalf("reply %d: %v", i, h.Err)
		}
	}
}

// TestCloseTwice: Close may be called again (a test's cleanup after the test's own) and
// returns without panicking.
func TestCloseTwice(t *testing.T) {
	srv := zktest.Start(t)
	s := srv.Server
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
