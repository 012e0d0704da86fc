package peer

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/sasl"
)

func quorumSASL(t *testing.T, learnerReq, serverReq bool, user, pass string) *QuorumSASL {
	users := map[string]string{"zkd": "s3cret", "other": "pw2"}
	return &QuorumSASL{
		LearnerRequired: learnerReq,
		ServerRequired:  serverReq,
		NewServer: func() (sasl.Server, error) {
			return sasl.NewServer(sasl.DigestMD5, sasl.ServerConfig{
				Service: sasl.QuorumService, Host: sasl.QuorumHost, Users: users,
				Authorize: sasl.QuorumDigestAuthorize,
			})
		},
		NewClient: func() (sasl.Client, error) {
			return sasl.NewClient(sasl.DigestMD5, user, pass, sasl.QuorumService, sasl.QuorumHost)
		},
		Timeout: waitLong,
		Logger:  testLogger(t),
	}
}

// exchange runs Learn on one end of a loopback TCP connection and Authenticate on the other,
// then checks that bytes written after the exchange arrive intact both ways.
func exchange(t *testing.T, learner, server *QuorumSASL) (learnErr, serveErr error) {
	t.Helper()
	ln := listen(t)
	defer ln.Close()
	type result struct {
		err error
		nc  net.Conn
		r   *bufio.Reader
	}
	srv := make(chan result, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			srv <- result{err: err}
			return
		}
		r := bufio.NewReader(nc)
		srv <- result{err: server.Authenticate(nc, r), nc: nc, r: r}
	}()
	cl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	learnErr = learner.Learn(cl)
	if learnErr == nil {
		// What the learner sends next: the quorum port's first packet.
		if _, err := cl.Write([]byte("FOLLOWERINFO..")); err != nil {
			t.Fatal(err)
		}
	} else {
		cl.Close()
	}
	res := <-srv
	if res.nc != nil {
		defer res.nc.Close()
	}
	if learnErr == nil && res.err == nil {
		res.nc.SetDeadline(time.Now().Add(waitLong))
		got := make([]byte, len("FOLLOWERINFO.."))
		if _, err := io.ReadFull(res.r, got); err != nil || string(got) != "FOLLOWERINFO.." {
			t.Fatalf("after the exchange the server read %q, %v", got, err)
		}
		res.nc.Write([]byte("LEADERINFO"))
		cl.SetDeadline(time.Now().Add(waitLong))
		got = make([]byte, len("LEADERINFO"))
		if _, err := io.ReadFull(cl, got); err != nil || string(got) != "LEADERINFO" {
			t.Fatalf("after the exchange the learner read %q, %v", got, err)
		}
	}
	return learnErr, res.err
}

func TestQuorumSASLExchange(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		learner, server      *QuorumSASL
		wantLearn, wantServe bool // want errors
	}{
		{"all required", quorumSASL(t, true, true, "zkd", "s3cret"), quorumSASL(t, true, true, "", ""), false, false},
		{"wrong password, required", quorumSASL(t, true, true, "zkd", "wrong"), quorumSASL(t, true, true, "", ""), true, true},
		{"unknown user, required", quorumSASL(t, true, true, "nobody", "s3cret"), quorumSASL(t, true, true, "", ""), true, true},
		// The server lets a failed learner through; the learner hangs up itself.
		{"wrong password, server not required", quorumSASL(t, true, true, "zkd", "wrong"), quorumSASL(t, true, false, "", ""), true, false},
		{"learner does not authenticate, server requires", quorumSASL(t, false, false, "", ""), quorumSASL(t, true, true, "", ""), false, true},
		{"nobody required (upgrade step 1)", quorumSASL(t, false, false, "", ""), quorumSASL(t, false, false, "", ""), false, false},
		{"learner required only (upgrade step 2)", quorumSASL(t, true, false, "zkd", "s3cret"), quorumSASL(t, true, false, "", ""), false, false},
		{"quorum SASL off on the learner", nil, quorumSASL(t, true, false, "", ""), false, false},
		{"quorum SASL off on the server", quorumSASL(t, false, false, "zkd", "s3cret"), nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			le, se := exchange(t, tc.learner, tc.server)
			if (le != nil) != tc.wantLearn || (se != nil) != tc.wantServe {
				t.Fatalf("learner error %v (want one: %v), server error %v (want one: %v)", le, tc.wantLearn, se, tc.wantServe)
			}
			for _, err := range []error{le, se} {
				if err != nil && !errors.Is(err, ErrQuorumAuth) {
					t.Errorf("error %v does not match ErrQuorumAuth", err)
				}
			}
		})
	}
}

// TestQuorumSASLPeerHangsUp: a peer that sends nothing and hangs up is refused when
// authentication is required, and taken as not authenticating otherwise.
func TestQuorumSASLPeerHangsUp(t *testing.T) {
	ln := listen(t)
	defer ln.Close()
	for _, required := range []bool{false, true} {
		b, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		a, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		err = quorumSASL(t, true, required, "", "").Authenticate(a, bufio.NewReader(a))
		a.Close()
		if (err != nil) != required {
			t.Errorf("required=%v: error %v", required, err)
		}
	}
}

// TestQuorumSASLTimeout: a learner that never answers the challenge does not hold the server
// past its timeout.
func TestQuorumSASLTimeout(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	q := quorumSASL(t, true, true, "", "")
	q.Timeout = 50 * time.Millisecond
	go func() {
		b.Write(AppendAuthPacket(nil, AuthPacket{Magic: QuorumAuthMagic, Token: []byte{}}))
		io.Copy(io.Discard, b) // reads the challenge, never answers
	}()
	done := make(chan error, 1)
	go func() { done <- q.Authenticate(a, bufio.NewReader(a)) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrQuorumAuth) {
			t.Fatalf("error %v", err)
		}
	case <-time.After(waitLong):
		t.Fatal("Authenticate did not time out")
	}
}

// TestQuorumAuthPacketBytes pins the encoding against ZooKeeper's: jute's long, int and
// buffer (null as -1), with the magic -0xa0dbcafecafe1234L as Java computes it.
func TestQuorumAuthPacketBytes(t *testing.T) {
	got := AppendAuthPacket(nil, AuthPacket{Magic: QuorumAuthMagic, Status: AuthSuccess, Token: []byte("ab")})
	want := []byte{0x5f, 0x24, 0x35, 0x01, 0x35, 0x01, 0xed, 0xcc, 0, 0, 0, 1, 0, 0, 0, 2, 'a', 'b'}
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x\nwant % x", got, want)
	}
	null := AppendAuthPacket(nil, AuthPacket{Magic: QuorumAuthMagic, Status: AuthError})
	if !bytes.Equal(null[8:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) {
		t.Fatalf("null token: % x", null)
	}
	for _, p := range []AuthPacket{{QuorumAuthMagic, AuthSuccess, []byte("ab")}, {QuorumAuthMagic, AuthError, nil}, {1, AuthInProgress, []byte{}}} {
		back, err := ReadAuthPacket(bytes.NewReader(AppendAuthPacket(nil, p)))
		if err != nil || back.Magic != p.Magic || back.Status != p.Status || !bytes.Equal(back.Token, p.Token) || (back.Token == nil) != (p.Token == nil) {
			t.Errorf("%+v came back as %+v, %v", p, back, err)
		}
	}
	for _, bad := range [][]byte{
		want[:15],
		append(bytes.Clone(want[:12]), 0xff, 0xff, 0xff, 0xfe),
		append(bytes.Clone(want[:12]), 0x00, 0x10, 0x00, 0x00),
		want[:17],
	} {
		if _, err := ReadAuthPacket(bytes.NewReader(bad)); !errors.Is(err, ErrAuthPacket) {
			t.Errorf("% x: error %v, want ErrAuthPacket", bad, err)
		}
	}
}

// TestTCPQuorumSASL: election transports with quorum SASL required exchange messages both
// ways; one with the wrong password never gets a connection in either direction.
func TestTCPQuorumSASL(t *testing.T) {
	ln1, ln2, ln3 := listen(t), listen(t), listen(t)
	peers := map[int64]string{1: ln1.Addr().String(), 2: ln2.Addr().String(), 3: ln3.Addr().String()}
	t1 := newTCP(t, TCPConfig{ID: 1, Listener: ln1, Peers: peers, QuorumSASL: quorumSASL(t, true, true, "zkd", "s3cret")})
	t2 := newTCP(t, TCPConfig{ID: 2, Listener: ln2, Peers: peers, QuorumSASL: quorumSASL(t, true, true, "zkd", "s3cret")})
	t3 := newTCP(t, TCPConfig{ID: 3, Listener: ln3, Peers: peers, QuorumSASL: quorumSASL(t, true, true, "zkd", "wrong")})
	t1.Send(2, []byte("1 to 2"))
	if m := recvWithin(t, t2); m.From != 1 || string(m.Payload) != "1 to 2" {
		t.Fatalf("received %+v", m)
	}
	t2.Send(1, []byte("2 to 1"))
	if m := recvWithin(t, t1); m.From != 2 || string(m.Payload) != "2 to 1" {
		t.Fatalf("received %+v", m)
	}
	// t3 is refused by t1 when it connects (larger sid) and cannot authenticate when
	// asked to connect back (smaller sid 1 connects to it... and hangs up, then t3 dials).
	t3.Send(1, []byte("3 to 1"))
	t1.Send(3, []byte("1 to 3"))
	// t2 hears from t1 again, so the transport is alive, while t3's messages never came.
	t1.Send(2, []byte("again"))
	if m := recvWithin(t, t2); string(m.Payload) != "again" {
		t.Fatalf("received %+v", m)
	}
	deadline := time.Now().Add(2 * time.Second) // a bounded observation window, not a sync
	for time.Now().Before(deadline) {
		select {
		case m := <-t1.Recv():
			t.Fatalf("t1 received %+v from a peer with the wrong password", m)
		case m := <-t3.Recv():
			t.Fatalf("t3 received %+v though it cannot authenticate", m)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if t1.Connected(3) || t3.Connected(1) {
		t.Error("a connection between 1 and 3 is up")
	}
}

// FuzzReadAuthPacket: any bytes decode or fail cleanly, and what decodes re-encodes to the
// bytes read.
func FuzzReadAuthPacket(f *testing.F) {
	f.Add(AppendAuthPacket(nil, AuthPacket{Magic: QuorumAuthMagic, Status: AuthInProgress, Token: []byte("realm=\"x\"")}))
	f.Add(AppendAuthPacket(nil, AuthPacket{Magic: QuorumAuthMagic, Status: AuthError}))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadAuthPacket(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrAuthPacket) {
				t.Fatalf("error %v does not match ErrAuthPacket", err)
			}
			return
		}
		if enc := AppendAuthPacket(nil, p); !bytes.Equal(enc, data[:len(enc)]) {
			t.Fatalf("re-encoded % x, read % x", enc, data[:len(enc)])
		}
	})
}

// FuzzQuorumSASLServer: whatever a connecting peer sends, the accepting side ends with an
// answer (nil or an error), never a panic or a hang.
func FuzzQuorumSASLServer(f *testing.F) {
	open := AppendAuthPacket(nil, AuthPacket{Magic: QuorumAuthMagic, Token: []byte{}})
	f.Add(open, true)
	f.Add(append(open, AppendAuthPacket(nil, AuthPacket{Magic: QuorumAuthMagic, Token: []byte(`username="zkd",realm="zk-quorum-sasl-md5",nonce="x",nc=00000001,cnonce="y",digest-uri="zookeeper-quorum/zk-quorum-sasl-md5",response=0123456789abcdef0123456789abcdef,qop=auth`)})...), false)
	f.Add([]byte("FOLLOWERINFO"), false)
	f.Fuzz(func(t *testing.T, data []byte, required bool) {
		q := &QuorumSASL{
			ServerRequired: required,
			NewServer: func() (sasl.Server, error) {
				return sasl.NewServer(sasl.DigestMD5, sasl.ServerConfig{
					Service: sasl.QuorumService, Host: sasl.QuorumHost, Users: map[string]string{"zkd": "pw"},
					Authorize: sasl.QuorumDigestAuthorize,
				})
			},
			Timeout: 5 * time.Second,
			Logger:  discardLogger,
		}
		c := &scriptConn{r: bytes.NewReader(data)}
		err := q.Authenticate(c, bufio.NewReader(c))
		if err != nil && !errors.Is(err, ErrQuorumAuth) {
			t.Fatalf("error %v does not match ErrQuorumAuth", err)
		}
	})
}

var discardLogger = slog.New(slog.DiscardHandler)

// scriptConn is a net.Conn that reads a script and discards what is written.
type scriptConn struct {
	net.Conn
	r io.Reader
}

func (c *scriptConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *scriptConn) Write(b []byte) (int, error) { return len(b), nil }
func (c *scriptConn) SetDeadline(time.Time) error { return nil }
func (c *scriptConn) RemoteAddr() net.Addr        { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (c *scriptConn) Close() error                { return nil }

// FuzzQuorumSASLLearner: whatever the server answers, the connecting side ends with nil or an
// ErrQuorumAuth, never a panic or a hang, and never nil: a script cannot hold the rspauth
// that proves knowing the password, which depends on the learner's random cnonce.
func FuzzQuorumSASLLearner(f *testing.F) {
	f.Add(AppendAuthPacket(nil, AuthPacket{Magic: QuorumAuthMagic, Status: AuthInProgress,
		Token: []byte(`realm="zk-quorum-sasl-md5",nonce="abc",charset=utf-8,algorithm=md5-sess`)}))
	f.Add(AppendAuthPacket(nil, AuthPacket{Magic: QuorumAuthMagic, Status: AuthError, Token: []byte{}}))
	f.Add(AppendAuthPacket(nil, AuthPacket{Magic: QuorumAuthMagic, Status: AuthSuccess, Token: []byte("rspauth=00")}))
	f.Fuzz(func(t *testing.T, data []byte) {
		q := &QuorumSASL{
			LearnerRequired: true,
			NewClient: func() (sasl.Client, error) {
				return sasl.NewClient(sasl.DigestMD5, "zkd", "pw", sasl.QuorumService, sasl.QuorumHost)
			},
			Logger: discardLogger,
		}
		err := q.Learn(&scriptConn{r: bytes.NewReader(data)})
		if !errors.Is(err, ErrQuorumAuth) {
			t.Fatalf("error %v does not match ErrQuorumAuth", err)
		}
	})
}
