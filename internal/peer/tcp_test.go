package peer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

const waitLong = 15 * time.Second // generous: the CI machine is slow; nothing waits this long when all is well

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func newTCP(t *testing.T, cfg TCPConfig) *TCP {
	t.Helper()
	if cfg.Listener == nil && cfg.ListenAddr == "" {
		cfg.ListenAddr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	tr, err := NewTCP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// testLogger logs through t, so that a transport's story shows with a failure (or -v). Every
// transport is closed, which waits for its goroutines, before its test ends.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func recvWithin(t *testing.T, tr Transport) Message {
	t.Helper()
	select {
	case m, ok := <-tr.Recv():
		if !ok {
			t.Fatal("Recv channel closed")
		}
		return m
	case <-time.After(waitLong):
		t.Fatal("no message received")
	}
	return Message{}
}

func frame(payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

func readFrame(t *testing.T, r io.Reader) []byte {
	t.Helper()
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		t.Fatalf("reading a frame: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatalf("reading a frame: %v", err)
	}
	return b
}

func dialRaw(t *testing.T, addr string, first []byte) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, waitLong)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(waitLong))
	if _, err := c.Write(first); err != nil {
		t.Fatal(err)
	}
	return c
}

// expectClosed waits for the transport to close c (EOF or reset).
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(waitLong))
	var b [1]byte
	_, err := c.Read(b[:])
	if err == nil {
		t.Fatal("connection still open: read a byte")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("connection still open after the timeout")
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	tests := []struct {
		name      string
		b         []byte
		wantSid   int64
		wantAddrs []string
	}{
		{"v1", AppendHeader(nil, ProtocolVersionV1, 3, "10.0.0.3:3888"), 3, []string{"10.0.0.3:3888"}},
		{"v2 with several addresses", AppendHeader(nil, ProtocolVersionV2, 4, "a:1|[::1]:2|0.0.0.0:3"), 4, []string{"a:1", "[::1]:2"}},
		{"legacy: the first long is the sid", binary.BigEndian.AppendUint64(nil, 7), 7, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sid, addrs, err := ReadHeader(bytes.NewReader(tt.b))
			if err != nil || sid != tt.wantSid || strings.Join(addrs, ",") != strings.Join(tt.wantAddrs, ",") {
				t.Errorf("ReadHeader = %d %q %v; want %d %q", sid, addrs, err, tt.wantSid, tt.wantAddrs)
			}
		})
	}
	v1 := AppendHeader(nil, ProtocolVersionV1, 1, "h:2")
	want := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 'h', ':', '2'}
	if !bytes.Equal(v1, want) {
		t.Errorf("AppendHeader = % x, want % x", v1, want)
	}
}

func TestReadHeaderRejects(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
	}{
		{"unknown version", AppendHeader(nil, -3, 1, "h:1")},
		{"empty address", AppendHeader(nil, ProtocolVersionV1, 1, "")},
		{"address too long", AppendHeader(nil, ProtocolVersionV1, 1, strings.Repeat("x", MaxAddressLen+1))},
		{"no port", AppendHeader(nil, ProtocolVersionV1, 1, "host")},
		{"bad port", AppendHeader(nil, ProtocolVersionV1, 1, "host:http")},
		{"truncated", AppendHeader(nil, ProtocolVersionV1, 1, "host:1")[:15]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := ReadHeader(bytes.NewReader(tt.b)); !errors.Is(err, ErrHeader) {
				t.Errorf("ReadHeader error = %v, want ErrHeader", err)
			}
		})
	}
}

// TestLargerSidKeepsItsConnection: a peer with a larger sid connects, its messages are
// delivered, and ours to it go back over the same connection.
func TestLargerSidKeepsItsConnection(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header []byte
	}{
		{"v1", AppendHeader(nil, ProtocolVersionV1, 9, "127.0.0.1:1")},
		{"v2", AppendHeader(nil, ProtocolVersionV2, 9, "127.0.0.1:1|127.0.0.2:1")},
		{"legacy", binary.BigEndian.AppendUint64(nil, 9)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTCP(t, TCPConfig{ID: 2})
			// Header and first message in one write: the transport must not lose what it
			// buffered past the header.
			c := dialRaw(t, tr.Addr().String(), append(tc.header, frame([]byte("hello"))...))
			if m := recvWithin(t, tr); m.From != 9 || string(m.Payload) != "hello" {
				t.Fatalf("received %+v", m)
			}
			tr.Send(9, []byte("back"))
			if got := readFrame(t, c); string(got) != "back" {
				t.Fatalf("got %q", got)
			}
			if !tr.Connected(9) {
				t.Error("Connected(9) = false")
			}
		})
	}
}

// TestSmallerSidIsConnectedBack: a smaller sid's connection is closed and the transport
// connects back to the address in its header, sending its own header and queued messages.
func TestSmallerSidIsConnectedBack(t *testing.T) {
	fake := listen(t)
	defer fake.Close()
	tr := newTCP(t, TCPConfig{ID: 5})
	tr.Send(1, []byte("queued"))
	c := dialRaw(t, tr.Addr().String(), AppendHeader(nil, ProtocolVersionV1, 1, fake.Addr().String()))
	expectClosed(t, c)
	fake.(*net.TCPListener).SetDeadline(time.Now().Add(waitLong))
	back, err := fake.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	back.SetDeadline(time.Now().Add(waitLong))
	r := bufio.NewReader(back)
	sid, addrs, err := ReadHeader(r)
	if err != nil || sid != 5 || len(addrs) != 1 || addrs[0] != tr.Addr().String() {
		t.Fatalf("connect-back header: sid %d addrs %q err %v", sid, addrs, err)
	}
	if got := readFrame(t, r); string(got) != "queued" {
		t.Fatalf("got %q", got)
	}
	// Messages from the smaller sid arrive on the connection we opened.
	back.Write(frame([]byte("from 1")))
	if m := recvWithin(t, tr); m.From != 1 || string(m.Payload) != "from 1" {
		t.Fatalf("received %+v", m)
	}
}

// TestSmallerSideHangsUpAndWaits: sending to a larger sid connects, sends the header, hangs
// up, and delivers once the peer connects back.
func TestSmallerSideHangsUpAndWaits(t *testing.T) {
	fake := listen(t)
	defer fake.Close()
	tr := newTCP(t, TCPConfig{ID: 1, Peers: map[int64]string{8: fake.Addr().String()}, ConnectBackWait: time.Minute})
	tr.Send(8, []byte("first"))
	tr.Send(8, []byte("second")) // the queue holds one: "first" is dropped
	fake.(*net.TCPListener).SetDeadline(time.Now().Add(waitLong))
	in, err := fake.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	in.SetDeadline(time.Now().Add(waitLong))
	r := bufio.NewReader(in)
	sid, addrs, err := ReadHeader(r)
	if err != nil || sid != 1 || len(addrs) != 1 || addrs[0] != tr.Addr().String() {
		t.Fatalf("header: %d %q %v", sid, addrs, err)
	}
	if _, err := r.ReadByte(); err == nil {
		t.Fatal("the smaller sid kept its connection")
	}
	c := dialRaw(t, tr.Addr().String(), AppendHeader(nil, ProtocolVersionV1, 8, fake.Addr().String()))
	if got := readFrame(t, c); string(got) != "second" {
		t.Fatalf("got %q, want the latest message only", got)
	}
}

func TestBadConnectionsAreClosed(t *testing.T) {
	tr := newTCP(t, TCPConfig{ID: 2})
	for _, tc := range []struct {
		name  string
		first []byte
	}{
		{"unknown version", AppendHeader(nil, -7, 9, "127.0.0.1:1")},
		{"zero-length address", AppendHeader(nil, ProtocolVersionV1, 9, "")},
		{"our own sid", AppendHeader(nil, ProtocolVersionV1, 2, "127.0.0.1:1")},
		{"zero-length message", append(AppendHeader(nil, ProtocolVersionV1, 9, "127.0.0.1:1"), 0, 0, 0, 0)},
		{"oversized message", binary.BigEndian.AppendUint32(AppendHeader(nil, ProtocolVersionV1, 9, "127.0.0.1:1"), MaxMessageSize+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, tr.Addr().String(), tc.first)
			expectClosed(t, c)
		})
	}
	// A message of exactly the maximum size is fine.
	c := dialRaw(t, tr.Addr().String(), AppendHeader(nil, ProtocolVersionV1, 9, "127.0.0.1:1"))
	big := bytes.Repeat([]byte{7}, MaxMessageSize)
	c.Write(frame(big))
	if m := recvWithin(t, tr); !bytes.Equal(m.Payload, big) {
		t.Fatalf("got %d bytes", len(m.Payload))
	}
}

// TestNewConnectionReplacesOldAndResendsLast: a second connection from the same sid
// replaces the first, and the last message sent is sent again on it.
func TestNewConnectionReplacesOldAndResendsLast(t *testing.T) {
	tr := newTCP(t, TCPConfig{ID: 2})
	hdr := AppendHeader(nil, ProtocolVersionV1, 9, "127.0.0.1:1")
	c1 := dialRaw(t, tr.Addr().String(), append(hdr, frame([]byte("x"))...))
	recvWithin(t, tr)
	tr.Send(9, []byte("vote"))
	if got := readFrame(t, c1); string(got) != "vote" {
		t.Fatalf("got %q", got)
	}
	c2 := dialRaw(t, tr.Addr().String(), hdr)
	if got := readFrame(t, c2); string(got) != "vote" {
		t.Fatalf("new connection started with %q, want the last message", got)
	}
	expectClosed(t, c1)
}

// TestReconnectAfterBreak: when the connection to a smaller sid breaks, the next message
// makes the transport connect again.
func TestReconnectAfterBreak(t *testing.T) {
	fake := listen(t)
	defer fake.Close()
	fake.(*net.TCPListener).SetDeadline(time.Now().Add(waitLong))
	tr := newTCP(t, TCPConfig{ID: 9, Peers: map[int64]string{3: fake.Addr().String()}, MinBackoff: 10 * time.Millisecond})
	for i := range 3 {
		msg := fmt.Sprintf("m%d", i)
		tr.Send(3, []byte(msg))
		c, err := fake.Accept()
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(waitLong))
		r := bufio.NewReader(c)
		if sid, _, err := ReadHeader(r); err != nil || sid != 9 {
			t.Fatalf("header: %d %v", sid, err)
		}
		if got := readFrame(t, r); string(got) != msg {
			t.Fatalf("got %q, want %q", got, msg)
		}
		c.Close()
		// Wait until the transport noticed, so that the next Send needs a new connection.
		deadline := time.Now().Add(waitLong)
		for tr.Connected(3) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if tr.Connected(3) {
			t.Fatal("transport did not notice the broken connection")
		}
	}
}

// TestOneConnectionPerPair: three transports that all talk to each other end up with one
// connection per pair, opened by the larger sid.
func TestOneConnectionPerPair(t *testing.T) {
	ids := []int64{1, 2, 3}
	lns := map[int64]net.Listener{}
	peers := map[int64]string{}
	for _, id := range ids {
		lns[id] = listen(t)
		peers[id] = lns[id].Addr().String()
	}
	trs := map[int64]*TCP{}
	for _, id := range ids {
		trs[id] = newTCP(t, TCPConfig{ID: id, Listener: lns[id], Peers: peers, MinBackoff: 20 * time.Millisecond, ConnectBackWait: 200 * time.Millisecond})
	}
	consistent := func() error {
		for _, a := range ids {
			for _, b := range ids {
				if a >= b {
					continue
				}
				small, large := trs[a], trs[b]
				small.mu.Lock()
				sc := small.links[b].conn
				small.mu.Unlock()
				large.mu.Lock()
				lc := large.links[a].conn
				large.mu.Unlock()
				if sc == nil || lc == nil {
					return fmt.Errorf("pair %d-%d: connections %v %v", a, b, sc, lc)
				}
				if sc.nc.LocalAddr().String() != lc.nc.RemoteAddr().String() || sc.nc.RemoteAddr().String() != lc.nc.LocalAddr().String() {
					return fmt.Errorf("pair %d-%d: two different connections", a, b)
				}
				if sc.nc.LocalAddr().String() != peers[a] {
					return fmt.Errorf("pair %d-%d: opened by the smaller sid (it arrives at %s, not at %s)", a, b, sc.nc.LocalAddr(), peers[a])
				}
			}
		}
		return nil
	}
	// Simultaneous connection attempts can leave a pair without a connection (in ZooKeeper
	// too); traffic repairs it. So keep sending until every server heard from every other and
	// the connections agree.
	heard := map[[2]int64]bool{}
	deadline := time.Now().Add(waitLong)
	err := errors.New("no round yet")
	for (len(heard) < len(ids)*len(ids) || err != nil) && time.Now().Before(deadline) {
		for _, from := range ids {
			for _, to := range ids {
				trs[from].Send(to, []byte(fmt.Sprintf("%d>%d", from, to)))
			}
		}
		tick := time.After(100 * time.Millisecond)
	drain:
		for {
			select {
			case <-tick:
				break drain
			case m := <-trs[1].Recv():
				heard[check(t, m, 1)] = true
			case m := <-trs[2].Recv():
				heard[check(t, m, 2)] = true
			case m := <-trs[3].Recv():
				heard[check(t, m, 3)] = true
			}
		}
		err = consistent()
	}
	if len(heard) < len(ids)*len(ids) {
		t.Fatalf("only heard %v", heard)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func check(t *testing.T, m Message, to int64) [2]int64 {
	t.Helper()
	if want := fmt.Sprintf("%d>%d", m.From, to); string(m.Payload) != want {
		t.Errorf("server %d: message %q from %d", to, m.Payload, m.From)
	}
	return [2]int64{m.From, to}
}

func TestSendToSelfLoopsBack(t *testing.T) {
	tr := newTCP(t, TCPConfig{ID: 4})
	tr.Send(4, []byte("me"))
	if m := recvWithin(t, tr); m.From != 4 || string(m.Payload) != "me" {
		t.Fatalf("got %+v", m)
	}
}

func TestRecvQueueDropsOldest(t *testing.T) {
	tr := newTCP(t, TCPConfig{ID: 4, RecvQueueLen: 2})
	for _, s := range []string{"a", "b", "c"} {
		tr.Send(4, []byte(s))
	}
	if a, b := recvWithin(t, tr), recvWithin(t, tr); string(a.Payload) != "b" || string(b.Payload) != "c" {
		t.Fatalf("got %q %q, want b c", a.Payload, b.Payload)
	}
}

func TestCloseStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		fake := listen(t)
		defer fake.Close()
		a := newTCP(t, TCPConfig{ID: 1})
		b := newTCP(t, TCPConfig{ID: 2, Peers: map[int64]string{1: a.Addr().String(), 7: fake.Addr().String(), 8: "127.0.0.1:1"}})
		b.Send(1, []byte("x"))
		recvWithin(t, a)
		b.Send(7, []byte("to a peer that never answers"))
		b.Send(8, []byte("to a peer that is not there"))
		b.Send(99, []byte("to a peer without an address"))
		// A connection that never sends its header, and one from a larger sid.
		dialRaw(t, a.Addr().String(), nil)
		dialRaw(t, a.Addr().String(), AppendHeader(nil, ProtocolVersionV1, 5, "127.0.0.1:1"))
		for _, tr := range []*TCP{a, b} {
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			if err := tr.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if _, ok := <-tr.Recv(); ok {
				// Drain what arrived before Close; the channel must end closed.
				for range tr.Recv() {
				}
			}
			tr.Send(1, []byte("after close")) // must not panic
		}
	}()
	deadline := time.Now().Add(waitLong)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before, %d after Close:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
