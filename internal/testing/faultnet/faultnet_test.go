package faultnet

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, msg string, wait time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	buf := make([]byte, len(msg))
	_, err := io.ReadFull(c, buf)
	return string(buf), err
}

func TestBridgeModes(t *testing.T) {
	b, err := New("", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, "hello", 10*time.Second); err != nil || got != "hello" {
		t.Fatalf("pass: %q %v", got, err)
	}
	b.SetMode(Blackhole)
	if _, err := roundTrip(c, "lost", 200*time.Millisecond); err == nil {
		t.Fatal("blackhole delivered")
	}
	b.SetMode(Pause)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("held"))
	time.Sleep(50 * time.Millisecond) // give a broken bridge the chance to leak it
	b.SetMode(Pass)
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "held" {
		t.Fatalf("pause then pass: %q %v", buf, err)
	}
	b.DropAll()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(buf); err == nil {
		t.Fatal("connection survived DropAll")
	}
}

func TestSever(t *testing.T) {
	srvLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srvLn.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := srvLn.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	b, err := New("", srvLn.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-accepted
	defer s.Close()
	b.Sever()
	buf := make([]byte, 1)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(buf); err == nil {
		t.Fatal("client side survived Sever")
	}
	// The server side hears nothing: no data, no EOF.
	s.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, err = s.Read(buf)
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("server side saw %v, want silence", err)
	}
}

// echo starts a server that echoes every connection.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func start(t *testing.T) *Bridge {
	p, err := Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func dial(t *testing.T, p *Bridge) net.Conn {
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func echoTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != msg {
		t.Fatalf("echo %q: %q %v", msg, buf, err)
	}
}

// silent checks that nothing arrives for a while (a pass can only be wrong in the lenient
// direction: bytes arriving later than the window).
func silent(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	b := make([]byte, 1)
	if n, err := c.Read(b); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes, %v; want silence", n, err)
	}
}

func TestForwardPauseResume(t *testing.T) {
	p := start(t)
	c := dial(t, p)
	echoTrip(t, c, "hello")
	p.Pause()
	if _, err := c.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	silent(t, c)
	c2 := dial(t, p) // new connections are paused too
	c2.Write([]byte("x"))
	silent(t, c2)
	p.Resume()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "held" {
		t.Fatalf("after resume: %q %v", buf, err)
	}
	echoTrip(t, c, "again")
	if p.Conns() != 2 || p.Accepted() != 2 {
		t.Fatalf("conns %d accepted %d", p.Conns(), p.Accepted())
	}
}

func TestBlackholeDropRefuse(t *testing.T) {
	p := start(t)
	c := dial(t, p)
	echoTrip(t, c, "a")
	p.SetMode(Discard)
	c.Write([]byte("lost"))
	silent(t, c)
	p.SetMode(Pass)
	echoTrip(t, c, "b")

	p.DropAll()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection survived DropAll")
	}

	p.SetRefuse(true)
	r := dial(t, p)
	r.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.Read(make([]byte, 1)); err == nil {
		t.Fatal("refused connection stayed open")
	}
	p.SetRefuse(false)
	echoTrip(t, dial(t, p), "ok")
}

func TestDropWhilePaused(t *testing.T) {
	p := start(t)
	c := dial(t, p)
	echoTrip(t, c, "a")
	p.Pause()
	c.Write([]byte("stuck"))
	p.DropAll() // must not wait for Resume
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection survived DropAll")
	}
	p.SetTarget(echo(t))
	p.Resume()
	echoTrip(t, dial(t, p), "new target")
}

// TestCloseUnderBlackholeAndDiscard: a Blackhole swallows a close, Discard passes it.
func TestCloseUnderBlackholeAndDiscard(t *testing.T) {
	for _, tc := range []struct {
		mode  Mode
		heard bool
	}{{Blackhole, false}, {Discard, true}} {
		srvLn, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer srvLn.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := srvLn.Accept()
			if err == nil {
				accepted <- c
			}
		}()
		b, err := Start(srvLn.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		s := <-accepted
		defer s.Close()
		b.SetMode(tc.mode)
		c.Close()
		s.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err = s.Read(make([]byte, 1))
		if timedOut := errors.Is(err, os.ErrDeadlineExceeded); timedOut == tc.heard {
			t.Errorf("mode %d: server side read %v after the client closed; want the close heard: %v", tc.mode, err, tc.heard)
		}
	}
}
