package faultproxy

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

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

func start(t *testing.T) *Proxy {
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

func dial(t *testing.T, p *Proxy) net.Conn {
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
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
	roundTrip(t, c, "hello")
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
	roundTrip(t, c, "again")
	if p.Conns() != 2 || p.Accepted() != 2 {
		t.Fatalf("conns %d accepted %d", p.Conns(), p.Accepted())
	}
}

func TestBlackholeDropRefuse(t *testing.T) {
	p := start(t)
	c := dial(t, p)
	roundTrip(t, c, "a")
	p.SetBlackhole(true)
	c.Write([]byte("lost"))
	silent(t, c)
	p.SetBlackhole(false)
	roundTrip(t, c, "b")

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
	roundTrip(t, dial(t, p), "ok")
}

func TestDropWhilePaused(t *testing.T) {
	p := start(t)
	c := dial(t, p)
	roundTrip(t, c, "a")
	p.Pause()
	c.Write([]byte("stuck"))
	p.DropAll() // must not wait for Resume
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection survived DropAll")
	}
	p.SetTarget(echo(t))
	p.Resume()
	roundTrip(t, dial(t, p), "new target")
}
