package faultnet

import (
	"io"
	"net"
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
