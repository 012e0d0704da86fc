package zk

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/zkd-io/zkd/internal/sasl"
	"github.com/zkd-io/zkd/internal/testing/faultnet"
	"github.com/zkd-io/zkd/internal/testing/krbtest"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// saslACL grants everything to the sasl id user.
func saslACL(user string) []ACL { return []ACL{{Perms: PermAll, ID: ID{Scheme: "sasl", ID: user}}} }

// saslServer is a zkd whose DIGEST-MD5 users can change while it runs, counting exchanges
// and able to hold them at their first step.
type saslServer struct {
	*zktest.Server
	mu      sync.Mutex
	users   map[string]string
	started atomic.Int32
	gate    chan struct{} // when set, the next exchange's first step waits on it
	entered chan struct{} // closed when an exchange waits on gate
}

func startSASLServer(t *testing.T, users map[string]string) *saslServer {
	t.Helper()
	s := &saslServer{users: users}
	s.Server = zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.AuthProviders.SASL = true
		c.NewSASLServer = func() (server.SASLServer, error) {
			s.started.Add(1)
			s.mu.Lock()
			users := s.users
			gate, entered := s.gate, s.entered
			s.gate, s.entered = nil, nil
			s.mu.Unlock()
			x, err := sasl.NewServer(sasl.DigestMD5, sasl.ServerConfig{Users: users})
			if err != nil || gate == nil {
				return x, err
			}
			return &gatedSASL{Server: x, gate: gate, entered: entered}, nil
		}
	}))
	return s
}

func (s *saslServer) setUsers(users map[string]string) {
	s.mu.Lock()
	s.users = users
	s.mu.Unlock()
}

// hold makes the next exchange wait at its first step until the returned release is
// called; entered is closed once it waits.
func (s *saslServer) hold(t *testing.T) (entered <-chan struct{}, release func()) {
	gate, in := make(chan struct{}), make(chan struct{})
	s.mu.Lock()
	s.gate, s.entered = gate, in
	s.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return in, release
}

type gatedSASL struct {
	sasl.Server
	gate    chan struct{}
	entered chan struct{}
	once    sync.Once
}

func (g *gatedSASL) Step(tok []byte) ([]byte, error) {
	g.once.Do(func() {
		close(g.entered)
		<-g.gate
	})
	return g.Server.Step(tok)
}

func proxyTo(t *testing.T, addr string) *faultnet.Bridge {
	t.Helper()
	p, err := faultnet.Start(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

var saslUsers = map[string]string{"bob": "secret", "alice": "alice-pw"}

func TestSASLDigest(t *testing.T) {
	srv := startSASLServer(t, saslUsers)
	ctx := testCtx(t)
	bob := dial(t, srv.Addr(), WithDigestSASL("bob", "secret"))
	if _, err := bob.Create(ctx, "/bob", []byte("b"), saslACL("bob"), ModePersistent); err != nil {
		t.Fatalf("create with sasl ACL: %v", err)
	}
	if d, _, err := bob.Get(ctx, "/bob"); err != nil || string(d) != "b" {
		t.Fatalf("bob reads /bob: %q, %v", d, err)
	}
	ids, err := bob.WhoAmI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ids, ClientInfo{AuthScheme: "sasl", User: "bob"}) {
		t.Fatalf("WhoAmI %v: no sasl:bob", ids)
	}

	alice := dial(t, srv.Addr(), WithDigestSASL("alice", "alice-pw"))
	if _, _, err := alice.Get(ctx, "/bob"); !errors.Is(err, ErrNoAuth) {
		t.Fatalf("alice reads /bob: %v, want ErrNoAuth", err)
	}
	anon := dial(t, srv.Addr())
	if _, _, err := anon.Get(ctx, "/bob"); !errors.Is(err, ErrNoAuth) {
		t.Fatalf("anonymous reads /bob: %v, want ErrNoAuth", err)
	}
	if n := srv.started.Load(); n != 2 {
		t.Fatalf("%d SASL exchanges, want 2", n)
	}
}

func TestSASLWrongPassword(t *testing.T) {
	srv := startSASLServer(t, saslUsers)
	for _, tc := range []struct{ name, user, pass string }{
		{"wrong password", "bob", "nope"},
		{"unknown user", "mallory", "secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Connect(testCtx(t), srv.Addr(), WithLogger(testLogger(t)), WithDigestSASL(tc.user, tc.pass))
			if err == nil {
				c.Close()
				t.Fatal("Connect succeeded")
			}
			if !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("Connect: %v, want ErrAuthFailed", err)
			}
		})
	}
}

// TestSASLNotConfigured: a server without SASL refuses the exchange; the client does not
// retry forever.
func TestSASLNotConfigured(t *testing.T) {
	srv := zktest.Start(t)
	_, err := Connect(testCtx(t), srv.Addr(), WithLogger(testLogger(t)), WithDigestSASL("bob", "secret"))
	if !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("Connect: %v, want ErrAuthFailed", err)
	}
}

// TestSASLReconnect: after a dropped connection the session resumes on a new connection,
// which authenticates again, so the sasl ACL still lets the session in.
func TestSASLReconnect(t *testing.T) {
	srv := startSASLServer(t, saslUsers)
	p := proxyTo(t, srv.Addr())
	ctx := testCtx(t)
	c := dial(t, p.Addr(), WithDigestSASL("bob", "secret"))
	rec := recordStates(c)
	id := c.SessionID()
	if _, err := c.Create(ctx, "/n", []byte("x"), saslACL("bob"), ModePersistent); err != nil {
		t.Fatal(err)
	}
	p.DropAll()
	rec.waitFor(t, StateConnected, 2)
	if c.SessionID() != id {
		t.Fatalf("session 0x%x after reconnect, want 0x%x", c.SessionID(), id)
	}
	if _, err := c.Set(ctx, "/n", []byte("y"), -1); err != nil {
		t.Fatalf("set after reconnect: %v", err)
	}
	if n := srv.started.Load(); n != 2 {
		t.Fatalf("%d SASL exchanges, want 2", n)
	}
}

// TestSASLRequestsWaitForExchange: requests issued while the exchange of a new connection
// is in progress are sent only after it succeeded; had any gone ahead, the server would
// have refused it (NOAUTH) before the connection had the sasl id.
func TestSASLRequestsWaitForExchange(t *testing.T) {
	srv := startSASLServer(t, saslUsers)
	p := proxyTo(t, srv.Addr())
	ctx := testCtx(t)
	c := dial(t, p.Addr(), WithDigestSASL("bob", "secret"))
	if _, err := c.Create(ctx, "/n", []byte("x"), saslACL("bob"), ModePersistent); err != nil {
		t.Fatal(err)
	}
	_, _, watch, err := c.GetW(ctx, "/n")
	if err != nil {
		t.Fatal(err)
	}

	entered, release := srv.hold(t)
	p.DropAll()
	<-entered
	const n = 20
	gets := make([]*Pending[[]byte], n)
	for i := range n {
		gets[i] = goGet(ctx, c, "/n")
	}
	authed := goErr(ctx, func(ctx context.Context) error { return c.AddAuth(ctx, "digest", []byte("u:p")) })
	for _, g := range gets {
		select {
		case <-g.Done():
			_, err := g.Wait(ctx)
			t.Fatalf("a request completed during the SASL exchange: %v", err)
		default:
		}
	}
	release()
	for _, g := range gets {
		if _, err := g.Wait(ctx); err != nil {
			t.Fatalf("request after the exchange: %v", err)
		}
	}
	if _, err := authed.Wait(ctx); err != nil {
		t.Fatalf("AddAuth after the exchange: %v", err)
	}
	// The watch was re-armed after the exchange too.
	other := dial(t, srv.Addr(), WithDigestSASL("bob", "secret"))
	if _, err := other.Set(ctx, "/n", []byte("z"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-watch:
		if ev.Type != EventNodeDataChanged {
			t.Fatalf("watch event %v", ev)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no watch event after the reconnect")
	}
}

// TestSASLCloseDuringExchange: Close does not wait for an exchange the server never
// answers.
func TestSASLCloseDuringExchange(t *testing.T) {
	srv := startSASLServer(t, saslUsers)
	p := proxyTo(t, srv.Addr())
	c := dial(t, p.Addr(), WithDigestSASL("bob", "secret"))
	entered, _ := srv.hold(t)
	p.DropAll()
	<-entered
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("Close hangs during the SASL exchange")
	}
	if _, _, err := c.Get(testCtx(t), "/"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
}

// TestSASLAuthFailedOnReconnect: credentials the server no longer accepts end the session
// at the next connection: StateAuthFailed, and every waiting or later call fails with
// ErrAuthFailed.
func TestSASLAuthFailedOnReconnect(t *testing.T) {
	srv := startSASLServer(t, saslUsers)
	p := proxyTo(t, srv.Addr())
	ctx := testCtx(t)
	c := dial(t, p.Addr(), WithDigestSASL("bob", "secret"))
	rec := recordStates(c)
	srv.setUsers(map[string]string{"bob": "changed"})
	entered, release := srv.hold(t)
	p.DropAll()
	<-entered
	queued := goGet(ctx, c, "/")
	release()
	rec.waitFor(t, StateAuthFailed, 1)
	if _, err := queued.Wait(ctx); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("queued request: %v, want ErrAuthFailed", err)
	}
	if _, _, err := c.Get(ctx, "/"); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("Get after AuthFailed: %v, want ErrAuthFailed", err)
	}
	if got := c.State(); got != StateAuthFailed {
		t.Fatalf("state %v", got)
	}
	if n := rec.count(StateConnected); n != 1 {
		t.Fatalf("%d connected events, want 1: %v", n, rec.states())
	}
}

// TestSASLMechanismFailure: an error of the client's mechanism ends the session as an
// AUTHFAILED does.
func TestSASLMechanismFailure(t *testing.T) {
	srv := startSASLServer(t, saslUsers)
	boom := errors.New("no ticket")
	_, err := Connect(testCtx(t), srv.Addr(), WithLogger(testLogger(t)),
		WithSASL("TEST", func(string) (SASLClient, error) { return nil, boom }))
	if !errors.Is(err, ErrAuthFailed) || !errors.Is(err, boom) {
		t.Fatalf("Connect: %v, want ErrAuthFailed wrapping %v", err, boom)
	}
}

// TestSASLApacheZK logs in to ZooKeeper 3.8 configured with a JAAS Server section and the
// SASLAuthenticationProvider, as its documentation describes.
func TestSASLApacheZK(t *testing.T) {
	refzk.Require(t)
	jaas := filepath.Join(t.TempDir(), "jaas.conf")
	if err := os.WriteFile(jaas, []byte(`Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_bob="secret";
};
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ref := refzk.StartStandalone(t, refzk.Options{
		Config:           []string{"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"},
		SystemProperties: []string{"-Djava.security.auth.login.config=" + jaas},
	})
	ctx := testCtx(t)
	bob := dial(t, ref.Addr(), WithDigestSASL("bob", "secret"))
	if _, err := bob.Create(ctx, "/bob", []byte("b"), saslACL("bob"), ModePersistent); err != nil {
		t.Fatalf("create with sasl ACL: %v", err)
	}
	if _, err := bob.Set(ctx, "/bob", []byte("c"), -1); err != nil {
		t.Fatalf("set: %v", err)
	}
	anon := dial(t, ref.Addr())
	if _, _, err := anon.Get(ctx, "/bob"); !errors.Is(err, ErrNoAuth) {
		t.Fatalf("anonymous reads /bob: %v, want ErrNoAuth", err)
	}
	_, err := Connect(testCtx(t), ref.Addr(), WithLogger(testLogger(t)), WithDigestSASL("bob", "wrong"))
	if !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("wrong password: %v, want ErrAuthFailed", err)
	}
}

func FuzzSASLReply(f *testing.F) {
	enc := func(h jute.ReplyHeader, body jute.Record) []byte {
		e := jute.Encoder{}
		h.Encode(&e)
		if body != nil {
			body.Encode(&e)
		}
		return e.Buf
	}
	f.Add(enc(jute.ReplyHeader{Xid: 1}, &jute.SASLToken{Token: []byte("realm=x")}))
	f.Add(enc(jute.ReplyHeader{Xid: 1}, &jute.SASLToken{}))
	f.Add(enc(jute.ReplyHeader{Xid: 1, Err: jute.ErrAuthFailed}, &jute.SASLToken{}))
	f.Add(enc(jute.ReplyHeader{Xid: 2}, &jute.SASLToken{Token: []byte{1}}))
	f.Add([]byte{0, 0, 0, 1})
	c := &Conn{}
	c.cfg.saslMech = "TEST"
	f.Fuzz(func(t *testing.T, frame []byte) {
		tok, err := c.saslReply(&wire{}, frame, 1)
		if err != nil {
			if tok != nil {
				t.Fatalf("token %x with error %v", tok, err)
			}
			return
		}
		var h jute.ReplyHeader
		d := jute.Decoder{B: frame}
		h.Decode(&d)
		if h.Xid != 1 || h.Err != jute.OK {
			t.Fatalf("accepted reply header %+v", h)
		}
	})
}

// TestSASLKerberos logs in with GSSAPI, tickets from a loopback MIT KDC, to zkd serving the
// service principal zookeeper/localhost.
func TestSASLKerberos(t *testing.T) {
	kdc := krbtest.Start(t)
	conf, err := krbconfig.Load(kdc.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := keytab.Load(kdc.ServiceKeytab)
	if err != nil {
		t.Fatal(err)
	}
	ckt, err := keytab.Load(kdc.ClientKeytab)
	if err != nil {
		t.Fatal(err)
	}
	kc := krbclient.NewWithKeytab("client", krbtest.Realm, ckt, conf, krbclient.DisablePAFXFAST(true))
	t.Cleanup(kc.Destroy)
	srv := zktest.Start(t, zktest.WithKerberos(svc, krbtest.ServicePrincipal))
	_, port, err := net.SplitHostPort(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)

	// The default service principal: zookeeper/ + the host of the connect string.
	c := dial(t, net.JoinHostPort("localhost", port), WithKerberosSASL(kc, ""))
	if _, err := c.Create(ctx, "/k", nil, saslACL(krbtest.ClientPrincipal), ModePersistent); err != nil {
		t.Fatalf("create with sasl ACL: %v", err)
	}
	ids, err := c.WhoAmI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ids, ClientInfo{AuthScheme: "sasl", User: krbtest.ClientPrincipal}) {
		t.Fatalf("WhoAmI %v", ids)
	}

	// A named principal, through a proxy on 127.0.0.1; a reconnect authenticates again.
	p := proxyTo(t, srv.Addr())
	c2 := dial(t, p.Addr(), WithKerberosSASL(kc, "zookeeper/localhost"))
	rec := recordStates(c2)
	p.DropAll()
	rec.waitFor(t, StateConnected, 2)
	if _, err := c2.Set(ctx, "/k", []byte("v"), -1); err != nil {
		t.Fatalf("set after reconnect: %v", err)
	}

	// A ticket for a principal the server does not have.
	_, err = Connect(testCtx(t), p.Addr(), WithLogger(testLogger(t)), WithKerberosSASL(kc, "zookeeper/nosuchhost"))
	if !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("unknown service principal: %v, want ErrAuthFailed", err)
	}
}
