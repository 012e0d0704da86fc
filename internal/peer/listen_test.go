package peer

import (
	"errors"
	"net"
	"testing"
)

// TestListenAll: one listener accepts on every address and Close stops all of them.
func TestListenAll(t *testing.T) {
	ln, err := ListenAll([]string{"127.0.0.1:0", "127.0.0.2:0"})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := ln.(*multiListener)
	if !ok {
		t.Fatalf("two addresses gave a %T", ln)
	}
	var addrs []string
	for _, l := range m.lns {
		addrs = append(addrs, l.Addr().String())
	}
	if ln.Addr().String() != addrs[0] {
		t.Errorf("Addr = %s, want the first address %s", ln.Addr(), addrs[0])
	}
	for _, a := range addrs {
		nc, err := net.Dial("tcp", a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if got.LocalAddr().String() != a {
			t.Errorf("accepted on %s, dialled %s", got.LocalAddr(), a)
		}
		got.Close()
		nc.Close()
	}
	ln.Close()
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
	for _, a := range addrs {
		if nc, err := net.Dial("tcp", a); err == nil {
			nc.Close()
			t.Errorf("%s still listens after Close", a)
		}
	}
}

// TestListenAllFailsWhole: a bind failure on any address closes those already bound.
func TestListenAllFailsWhole(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if _, err := ListenAll([]string{"127.0.0.1:0", busy.Addr().String()}); err == nil {
		t.Fatal("ListenAll succeeded on a taken address")
	}
}
