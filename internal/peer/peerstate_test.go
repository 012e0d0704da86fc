package peer

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

type stateReport struct {
	sid int64
	up  bool
}

// A peer whose process is gone (its port refuses) is reported down on the next send, and
// up once a connection to its successor is made; a clean close alone reports nothing.
func TestTCPReportsPeerDownAndUp(t *testing.T) {
	reports := make(chan stateReport, 16)
	lnB := listen(t)
	addrB := lnB.Addr().String()
	a := newTCP(t, TCPConfig{ID: 1, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Peers: map[int64]string{2: addrB}, PeerState: func(sid int64, up bool) { reports <- stateReport{sid, up} }})
	b := newTCP(t, TCPConfig{ID: 2, Listener: lnB, Peers: map[int64]string{1: a.Addr().String()}})
	a.Send(2, []byte("hello"))
	if m := recvWithin(t, b); string(m.Payload) != "hello" {
		t.Fatalf("b received %q", m.Payload)
	}
	b.Close()
	// The connection breaks; the transport dials once to learn why, and is refused.
	if r := waitReport(t, reports); r != (stateReport{2, false}) {
		t.Fatalf("report = %+v, want sid 2 down", r)
	}
	// The port comes back: the next message connects and reports the peer up.
	lnB2, err := net.Listen("tcp", addrB)
	if err != nil {
		t.Skipf("cannot listen on %s again (taken meanwhile?): %v", addrB, err)
	}
	b2 := newTCP(t, TCPConfig{ID: 2, Listener: lnB2, Peers: map[int64]string{1: a.Addr().String()}})
	a.Send(2, []byte("again"))
	if r := waitReport(t, reports); r != (stateReport{2, true}) {
		t.Fatalf("report = %+v, want sid 2 up", r)
	}
	for i := 0; i < 3; i++ { // the last message sent may come first, again
		if m := recvWithin(t, b2); string(m.Payload) == "again" {
			return
		}
	}
	t.Fatal("b2 never received the message")
}

func waitReport(t *testing.T, ch <-chan stateReport) stateReport {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitLong):
		t.Fatal("no peer state report")
	}
	return stateReport{}
}

func TestPeerGone(t *testing.T) {
	refused := &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused", refused, true},
		{"reset", reset, true},
		{"wrapped refused", fmt.Errorf("x: %w", refused), true},
		{"timeout", &net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, false},
		{"clean close", errors.New("EOF"), false},
		{"refused by one address only", errors.Join(refused, errNotAllRefused), false},
		{"nil", nil, false},
	} {
		if got := peerGone(tt.err); got != tt.want {
			t.Errorf("%s: peerGone = %v, want %v", tt.name, got, tt.want)
		}
	}
}
