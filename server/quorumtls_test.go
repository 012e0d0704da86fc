package server_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/peer"
	"github.com/zkd-io/zkd/internal/tlsconf"
	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
	"github.com/zkd-io/zkd/server"
)

// Quorum TLS (sslQuorum, portUnification, ssl.quorum.*): ensembles whose election and
// learner connections are TLS, of zkd alone and of zkd with Apache ZooKeeper.

// quorumTLS is what cmd/zkd makes of ssl.quorum.* keys naming keystore and truststore
// (JKS, with tlstest's password): sslQuorum makes the member dial TLS, portUnification
// makes its listeners take plaintext too.
func quorumTLS(t *testing.T, keystore, truststore string, sslQuorum, portUnification bool) *peer.TLS {
	t.Helper()
	st, err := tlsconf.Parse(map[string]string{
		"keyStore.location": keystore, "keyStore.password": tlstest.Password,
		"trustStore.location": truststore, "trustStore.password": tlstest.Password,
	}, tlsconf.QuorumPrefix)
	if err != nil {
		t.Fatal(err)
	}
	qt, err := peer.NewTLS(st, sslQuorum, portUnification, nil)
	if err != nil {
		t.Fatal(err)
	}
	get := qt.Server.GetConfigForClient
	qt.Server.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		tlsHellos.add(hello.Conn.LocalAddr())
		return get(hello)
	}
	return qt
}

// tlsHellos counts the TLS handshakes each listening port was asked for, so tests can
// tell that a connection was TLS.
var tlsHellos = &helloCounts{n: map[int]int{}}

type helloCounts struct {
	mu sync.Mutex
	n  map[int]int
}

func (h *helloCounts) add(a net.Addr) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n[a.(*net.TCPAddr).Port]++
}

func (h *helloCounts) get(port int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[port]
}

// tcpMember is one in-process member of an ensemble that elects over TCP.
type tcpMember struct {
	cfg server.Config
	srv *server.Server
	log *syncBuffer
}

func (m *tcpMember) mode() string {
	if m.srv == nil {
		return ""
	}
	return m.srv.Mode()
}

func (m *tcpMember) start(t *testing.T) {
	t.Helper()
	srv, err := server.New(m.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	m.srv = srv
	m.cfg.ListenAddr = srv.Addr() // a restart serves on the same port
}

func (m *tcpMember) stop() {
	if m.srv != nil {
		m.srv.Close()
		m.srv = nil
	}
}

// startTCPEnsemble starts n zkd members electing on their TCP election ports; tlsFor gives
// member i's quorum TLS.
func startTCPEnsemble(t *testing.T, n int, tlsFor func(i int) *peer.TLS) []*tcpMember {
	return startTCPEnsembleFull(t, n, func(i int, c *server.Config) { c.QuorumTLS = tlsFor(i) })
}

// startTCPEnsembleConfig starts n plaintext members; f adjusts each configuration.
func startTCPEnsembleConfig(t *testing.T, n int, f func(*server.Config)) []*tcpMember {
	return startTCPEnsembleFull(t, n, func(_ int, c *server.Config) {
		if f != nil {
			f(c)
		}
	})
}

func startTCPEnsembleFull(t *testing.T, n int, f func(i int, c *server.Config)) []*tcpMember {
	ports := freePorts(t, 2*n)
	var peers []config.Member
	for i := range n {
		peers = append(peers, config.Member{ID: int64(i + 1), Host: "127.0.0.1", QuorumPort: ports[2*i], ElectionPort: ports[2*i+1]})
	}
	var members []*tcpMember
	for i := range n {
		m := &tcpMember{log: &syncBuffer{}}
		var h slog.Handler = slog.NewTextHandler(m.log, &slog.HandlerOptions{Level: slog.LevelInfo})
		if os.Getenv("ZKTEST_LOG") != "" {
			h = slog.NewTextHandler(io.MultiWriter(m.log, os.Stderr), &slog.HandlerOptions{Level: slog.LevelDebug})
		}
		m.cfg = server.Config{
			ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(), TickTime: 200, InitLimit: 20, SyncLimit: 10,
			ServerID: int64(i + 1), Peers: peers, PreAllocSize: 1 << 20, Logger: slog.New(h).With("sid", i+1),
			MaxSessionTimeout: 20000,
			// Every extension on (the clients are stock ones); f may narrow the set.
			Extensions: allExtensions,
		}
		f(i, &m.cfg)
		members = append(members, m)
	}
	t.Cleanup(func() {
		for _, m := range members {
			m.stop()
		}
	})
	for _, m := range members {
		m.start(t)
	}
	return members
}

// waitTCPServing waits until the running members (all of want) have one leader and the
// others follow it.
func waitTCPServing(t *testing.T, members []*tcpMember, want ...int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("members %v to elect and sync", want), func() bool {
		leaders, followers := 0, 0
		for _, i := range want {
			switch members[i].mode() {
			case "leader":
				leaders++
			case "follower":
				followers++
			}
		}
		return leaders == 1 && leaders+followers == len(want)
	})
}

// writeAndReadEverywhere writes a node through each member of idx and reads all of them back
// through every one.
func writeAndReadEverywhere(t *testing.T, members []*tcpMember, tag string, idx ...int) {
	t.Helper()
	var clients []*zk.Conn
	for _, i := range idx {
		c := connectTo(t, members[i].srv.Addr())
		clients = append(clients, c)
		p := fmt.Sprintf("/%s-%d", tag, i)
		if _, err := c.Create(p, []byte(p), 0, open); err != nil {
			t.Fatalf("create %s through member %d (%s): %v", p, i+1, members[i].mode(), err)
		}
	}
	for n, c := range clients {
		if _, err := c.Sync("/"); err != nil {
			t.Fatal(err)
		}
		for _, i := range idx {
			p := fmt.Sprintf("/%s-%d", tag, i)
			if d, _, err := c.Get(p); err != nil || string(d) != p {
				t.Fatalf("member %d reading %s: %q %v", idx[n]+1, p, d, err)
			}
		}
	}
}

func leaderOf(members []*tcpMember) int {
	for i, m := range members {
		if m.mode() == "leader" {
			return i
		}
	}
	return -1
}

// TestQuorumTLSEnsemble: three zkd members with sslQuorum elect, replicate writes, survive
// the leader's death and take it back when it restarts, all over TLS.
func TestQuorumTLSEnsemble(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	members := startTCPEnsemble(t, 3, func(int) *peer.TLS {
		return quorumTLS(t, pki.Server.JKS, pki.TrustJKS, true, false)
	})
	waitTCPServing(t, members, 0, 1, 2)
	writeAndReadEverywhere(t, members, "first", 0, 1, 2)
	l := leaderOf(members)
	// The learners' connections to the leader were TLS, and so were the election
	// channels each member accepted from a larger sid.
	if n := tlsHellos.get(members[l].cfg.Peers[l].QuorumPort); n < 2 {
		t.Fatalf("the leader's quorum port saw %d TLS handshakes, want one per follower", n)
	}
	for i := range 2 {
		if n := tlsHellos.get(members[i].cfg.Peers[i].ElectionPort); n < 1 {
			t.Fatalf("member %d's election port saw no TLS handshake", i+1)
		}
	}
	// A plaintext learner is refused by the leader's quorum port, with a log line.
	nc, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(members[l].cfg.Peers[l].QuorumPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// The start of a FOLLOWERINFO packet: type 11, then a zxid.
	if _, err := nc.Write([]byte{0, 0, 0, 11, 0, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := nc.Read(make([]byte, 64)); err == nil {
		t.Fatalf("the leader answered a plaintext learner with %d bytes", n)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the leader kept a plaintext learner's connection open")
	}
	waitFor(t, "the leader to log the refused learner", func() bool {
		return strings.Contains(members[l].log.String(), "learner connection rejected")
	})

	members[l].stop()
	var rest []int
	for i := range members {
		if i != l {
			rest = append(rest, i)
		}
	}
	waitTCPServing(t, members, rest...)
	writeAndReadEverywhere(t, members, "after-failover", rest...)

	members[l].start(t)
	waitTCPServing(t, members, 0, 1, 2)
	writeAndReadEverywhere(t, members, "rejoined", 0, 1, 2)
	c := connectTo(t, members[l].srv.Addr())
	for _, i := range rest {
		p := fmt.Sprintf("/after-failover-%d", i)
		if ok, _, err := c.Exists(p); err != nil || !ok {
			t.Fatalf("the restarted member lacks %s: %v %v", p, ok, err)
		}
	}
	for i, m := range members {
		// (Only the plaintext learner above was to be refused.)
		if s := m.log.String(); strings.Contains(s, "election connection rejected") ||
			strings.Contains(s, "TLS connection to the leader failed") {
			t.Errorf("member %d refused or failed a TLS connection:\n%s", i+1, s)
		}
	}
}

// TestQuorumTLSWrongCA: a member whose certificate another CA signed (and that trusts the
// ensemble's CA) cannot join; the others serve without it and log why.
func TestQuorumTLSWrongCA(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	members := startTCPEnsemble(t, 3, func(i int) *peer.TLS {
		if i == 2 {
			return quorumTLS(t, pki.OtherCA.JKS, pki.TrustJKS, true, false)
		}
		return quorumTLS(t, pki.Server.JKS, pki.TrustJKS, true, false)
	})
	waitTCPServing(t, members, 0, 1)
	writeAndReadEverywhere(t, members, "without-3", 0, 1)
	waitFor(t, "a member to log the refused certificate", func() bool {
		for _, m := range members[:2] {
			if s := m.log.String(); strings.Contains(s, "election connection rejected") &&
				strings.Contains(s, "certificate") {
				return true
			}
		}
		return false
	})
	if m := members[2].mode(); m == "leader" || m == "follower" {
		t.Fatalf("the member with another CA's certificate is %s", m)
	}
}

// TestQuorumPortUnification: the rolling upgrade's middle step. Every member has
// portUnification; member 2 has sslQuorum too and dials TLS, members 1 and 3 dial
// plaintext, so member 1's election port takes a TLS peer (2) and a plaintext one (3), and
// the leader's quorum port takes whichever its learners use.
func TestQuorumPortUnification(t *testing.T) {
	pki := tlstest.New(t, t.TempDir())
	members := startTCPEnsemble(t, 3, func(i int) *peer.TLS {
		return quorumTLS(t, pki.Server.PKCS12, pki.TrustPKCS12, i == 1, true)
	})
	waitTCPServing(t, members, 0, 1, 2)
	writeAndReadEverywhere(t, members, "unified", 0, 1, 2)
	// Member 3 dials plaintext only, so its serving shows plaintext was taken; member 2's
	// channel to member 1 was TLS.
	if n := tlsHellos.get(members[0].cfg.Peers[0].ElectionPort); n < 1 {
		t.Fatal("member 1's election port saw no TLS handshake from member 2")
	}
	// Then members 1 and 3 restart with sslQuorum added, and member 2 without
	// portUnification (the upgrade's last step, on one member): everything is TLS now.
	for _, i := range []int{0, 2, 1} {
		members[i].stop()
		members[i].cfg.QuorumTLS = quorumTLS(t, pki.Server.PKCS12, pki.TrustPKCS12, true, i != 1)
		members[i].start(t)
		waitTCPServing(t, members, 0, 1, 2)
	}
	writeAndReadEverywhere(t, members, "all-tls", 0, 1, 2)
}
