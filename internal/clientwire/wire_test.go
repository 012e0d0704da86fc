package clientwire

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// pair is a Conn and the server end of its socket.
func pair(t *testing.T, cfg Config) (*Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close(); srv.Close() })
	if cfg.MaxFrame == 0 {
		cfg.MaxFrame = jute.DefaultMaxBuffer
	}
	cfg.Addr = "srv"
	return New(nc, cfg), srv
}

func TestHandshakeSendReadKill(t *testing.T) {
	c, srv := pair(t, Config{})
	srv.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		b, err := jute.ReadFrame(srv, 1<<10)
		var req jute.ConnectRequest
		if err != nil || jute.Unmarshal(b, &req) != nil {
			return
		}
		jute.WriteFrame(srv, jute.Marshal(&jute.ConnectResponse{TimeOut: req.TimeOut, SessionID: 7, Passwd: make([]byte, 16)}))
	}()
	resp, err := c.Handshake(&jute.ConnectRequest{TimeOut: 3000, Passwd: make([]byte, 16)})
	if err != nil || resp.SessionID != 7 || resp.TimeOut != 3000 {
		t.Fatalf("handshake: %+v %v", resp, err)
	}

	c.SetTimeouts(10*time.Second, time.Hour)
	go c.WriteLoop()
	frames := [][]byte{[]byte("one"), []byte("two"), {}}
	for _, f := range frames {
		if err := c.Send(jute.AppendFrame(nil, f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range frames {
		got, err := jute.ReadFrame(srv, 1<<10)
		if err != nil || !bytes.Equal(got, f) {
			t.Fatalf("server read %q %v, want %q", got, err, f)
		}
	}

	// Replies reach the handler in order; its error ends the loop.
	stop := errors.New("enough")
	go func() {
		for _, f := range []string{"a", "b"} {
			jute.WriteFrame(srv, []byte(f))
		}
	}()
	var seen []string
	err = c.ReadLoop(func(f []byte) error {
		seen = append(seen, string(f))
		if len(seen) == 2 {
			return stop
		}
		return nil
	})
	if err != stop || strings.Join(seen, ",") != "a,b" {
		t.Fatalf("ReadLoop: %v after %q", err, seen)
	}

	cause := errors.New("done with it")
	c.Kill(cause)
	c.Kill(errors.New("second"))
	<-c.WriterDone()
	if err := c.Send([]byte{0, 0, 0, 0}); err != cause {
		t.Fatalf("Send after Kill: %v, want the first cause", err)
	}
	if c.Cause() != cause {
		t.Fatalf("Cause %v", c.Cause())
	}
	select {
	case <-c.Dead():
	default:
		t.Fatal("Dead not closed")
	}
}

func TestIdlePing(t *testing.T) {
	c, srv := pair(t, Config{})
	c.SetTimeouts(0, 20*time.Millisecond)
	go c.WriteLoop()
	defer c.Kill(nil)
	srv.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := jute.ReadFrame(srv, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	var h jute.RequestHeader
	if err := jute.Unmarshal(b, &h); err != nil || h.Xid != jute.XidPing || h.Type != jute.OpPing {
		t.Fatalf("idle connection sent %+v %v, want a ping", h, err)
	}
}

func TestReadFailures(t *testing.T) {
	t.Run("silence", func(t *testing.T) {
		c, _ := pair(t, Config{})
		c.SetTimeouts(30*time.Millisecond, 0)
		err := c.ReadLoop(func([]byte) error { return nil })
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !strings.Contains(err.Error(), "no reply from srv for 30ms") {
			t.Fatalf("silent server: %v", err)
		}
	})
	t.Run("oversized", func(t *testing.T) {
		c, srv := pair(t, Config{MaxFrame: 8})
		c.SetTimeouts(10*time.Second, 0)
		srv.Write([]byte{0, 0, 0, 9})
		err := c.ReadLoop(func([]byte) error { return nil })
		if !errors.Is(err, jute.ErrFrameSize) {
			t.Fatalf("oversized frame: %v", err)
		}
	})
	t.Run("bad ConnectResponse", func(t *testing.T) {
		c, srv := pair(t, Config{})
		go func() {
			jute.ReadFrame(srv, 1<<10)
			jute.WriteFrame(srv, []byte{1, 2})
		}()
		c.NetConn().SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Handshake(&jute.ConnectRequest{Passwd: make([]byte, 16)}); !errors.Is(err, ErrBadConnectResponse) {
			t.Fatalf("short response: %v", err)
		}
	})
}
