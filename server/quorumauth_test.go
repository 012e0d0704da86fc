package server_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/peer"
	"github.com/zkd-io/zkd/internal/sasl"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/server"
)

// quorumUsers is the QuorumServer section every member of these tests has.
var quorumUsers = map[string]string{"zkd": "quorum-secret"}

// quorumSASLFor is a member's quorum SASL setting logging in as zkd with pass: the keys
// enableSasl=true, learnerRequireSasl and serverRequireSasl as given.
func quorumSASLFor(learnerReq, serverReq bool, pass string) *peer.QuorumSASL {
	return &peer.QuorumSASL{
		LearnerRequired: learnerReq,
		ServerRequired:  serverReq,
		NewServer: func() (sasl.Server, error) {
			return sasl.NewServer(sasl.DigestMD5, sasl.ServerConfig{
				Service: sasl.QuorumService, Host: sasl.QuorumHost, Users: quorumUsers,
				Authorize: sasl.QuorumDigestAuthorize,
			})
		},
		NewClient: func() (sasl.Client, error) {
			return sasl.NewClient(sasl.DigestMD5, "zkd", pass, sasl.QuorumService, sasl.QuorumHost)
		},
	}
}

// logCount is a log sink that counts lines containing a text.
type logCount struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logCount) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logCount) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), sub)
}

// tcpEnsemble is an in-process ensemble whose members hold elections over TCP (the election
// port, where quorum SASL runs too), unlike startEnsemble's in-memory election.
type tcpEnsemble struct {
	t       *testing.T
	cfgs    []server.Config
	srvs    []*server.Server
	logs    []*logCount
	sasl    []*peer.QuorumSASL
	started []bool
}

func newTCPEnsemble(t *testing.T, qs []*peer.QuorumSASL) *tcpEnsemble {
	n := len(qs)
	ports := freePorts(t, 2*n)
	var peers []config.Member
	for i := 0; i < n; i++ {
		peers = append(peers, config.Member{ID: int64(i + 1), Host: "127.0.0.1", QuorumPort: ports[2*i], ElectionPort: ports[2*i+1]})
	}
	e := &tcpEnsemble{t: t, srvs: make([]*server.Server, n), sasl: qs}
	for i := 0; i < n; i++ {
		lc := &logCount{}
		var w io.Writer = lc
		if os.Getenv("ZKTEST_LOG") != "" {
			w = io.MultiWriter(lc, os.Stderr)
		}
		e.logs = append(e.logs, lc)
		e.cfgs = append(e.cfgs, server.Config{
			ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(), TickTime: 100, InitLimit: 20, SyncLimit: 10,
			ServerID: int64(i + 1), Peers: peers, PreAllocSize: 1 << 20, MaxSessionTimeout: 20000,
			Logger: slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})).With("sid", i+1),
		})
	}
	t.Cleanup(func() {
		for i := range e.srvs {
			e.stop(i)
		}
	})
	for i := range e.srvs {
		e.start(i)
	}
	return e
}

func (e *tcpEnsemble) start(i int) {
	cfg := e.cfgs[i]
	cfg.QuorumSASL = e.sasl[i]
	srv, err := server.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.srvs[i] = srv
}

func (e *tcpEnsemble) stop(i int) {
	if e.srvs[i] != nil {
		e.srvs[i].Close()
		e.srvs[i] = nil
	}
}

// restart stops member i and starts it again with quorum SASL setting q (a rolling
// configuration change), on the same ports and data.
func (e *tcpEnsemble) restart(i int, q *peer.QuorumSASL) {
	e.stop(i)
	e.sasl[i] = q
	e.start(i)
}

// waitServing waits until the members in want serve (one leader, the others followers).
func (e *tcpEnsemble) waitServing(what string, want ...int) {
	e.t.Helper()
	waitFor(e.t, what, func() bool {
		leaders := 0
		for _, i := range want {
			switch e.srvs[i].Mode() {
			case "leader":
				leaders++
			case "follower":
			default:
				return false
			}
		}
		return leaders == 1
	})
}

// replicates writes through each member in idx and reads every write back through each.
func (e *tcpEnsemble) replicates(tag string, idx ...int) {
	e.t.Helper()
	for _, i := range idx {
		c := connectTo(e.t, e.srvs[i].Addr())
		p := fmt.Sprintf("/%s-%d", tag, i)
		if _, err := c.Create(p, []byte(p), 0, open); err != nil {
			e.t.Fatalf("create %s through member %d (%s): %v", p, i+1, e.srvs[i].Mode(), err)
		}
		c.Close()
	}
	for _, i := range idx {
		c := connectTo(e.t, e.srvs[i].Addr())
		if _, err := c.Sync("/"); err != nil {
			e.t.Fatalf("sync on member %d: %v", i+1, err)
		}
		for _, w := range idx {
			p := fmt.Sprintf("/%s-%d", tag, w)
			if d, _, err := c.Get(p); err != nil || string(d) != p {
				e.t.Fatalf("member %d reading %s: %q %v", i+1, p, d, err)
			}
		}
		c.Close()
	}
}

// TestQuorumSASLEnsemble: with enableSasl, learnerRequireSasl and serverRequireSasl on every
// member, the ensemble elects (election port authenticated), syncs (quorum port
// authenticated) and replicates.
func TestQuorumSASLEnsemble(t *testing.T) {
	e := newTCPEnsemble(t, []*peer.QuorumSASL{
		quorumSASLFor(true, true, "quorum-secret"), quorumSASLFor(true, true, "quorum-secret"), quorumSASLFor(true, true, "quorum-secret"),
	})
	e.waitServing("the authenticated ensemble to serve", 0, 1, 2)
	e.replicates("sasl", 0, 1, 2)
	for i, l := range e.logs {
		if n := l.count("quorum SASL authentication failed"); n != 0 {
			t.Errorf("member %d logged %d authentication failures", i+1, n)
		}
	}
	leader := -1
	for i, s := range e.srvs {
		if s.Mode() == "leader" {
			leader = i
		}
	}
	waitFor(t, "the leader to log two authenticated learners (quorum port)", func() bool {
		return e.logs[leader].count("quorum learner authenticated with SASL") >= 2
	})
}

// TestQuorumSASLWrongPasswordCannotJoin: a member whose QuorumLearner password is wrong is
// refused by the others: the two good members form the ensemble, it never syncs.
func TestQuorumSASLWrongPasswordCannotJoin(t *testing.T) {
	// Sid 1 has the wrong password: the larger sids' election connections to it
	// authenticate (its QuorumServer users are right), so it learns who leads, and it is
	// the leader's quorum port that refuses it.
	e := newTCPEnsemble(t, []*peer.QuorumSASL{
		quorumSASLFor(true, true, "wrong"), quorumSASLFor(true, true, "quorum-secret"), quorumSASLFor(true, true, "quorum-secret"),
	})
	e.waitServing("the two members with the right password to serve", 1, 2)
	e.replicates("two", 1, 2)
	leader := 1
	if e.srvs[2].Mode() == "leader" {
		leader = 2
	}
	waitFor(t, "the leader to refuse sid 1 twice", func() bool {
		return e.logs[leader].count("quorum learner refused") >= 2
	})
	if m := e.srvs[0].Mode(); m != "" {
		t.Fatalf("the member with the wrong password serves as %q", m)
	}
	waitFor(t, "sid 1 to report failing to join the leader", func() bool {
		return e.logs[0].count("cannot authenticate to the leader") > 0
	})
}

// TestQuorumSASLRollingUpgrade: ZooKeeper's rolling upgrade to quorum SASL, one member at a
// time, the ensemble serving throughout: from no SASL to enableSasl (nobody authenticates,
// members with SASL accept those without), to learnerRequireSasl (members authenticate,
// still accepting those that do not), to serverRequireSasl (everyone must).
func TestQuorumSASLRollingUpgrade(t *testing.T) {
	e := newTCPEnsemble(t, []*peer.QuorumSASL{nil, nil, nil})
	all := []int{0, 1, 2}
	e.waitServing("the ensemble without SASL", all...)
	for _, step := range []struct {
		name                  string
		learnerReq, serverReq bool
	}{
		{"enableSasl", false, false},
		{"learnerRequireSasl", true, false},
		{"serverRequireSasl", true, true},
	} {
		for i := range e.srvs {
			e.restart(i, quorumSASLFor(step.learnerReq, step.serverReq, "quorum-secret"))
			e.waitServing(fmt.Sprintf("the ensemble after member %d moved to %s", i+1, step.name), all...)
			e.replicates(fmt.Sprintf("%s-%d", step.name, i), all...)
		}
	}
	// Every write of the upgrade is still there.
	c := connectTo(t, e.srvs[0].Addr())
	kids, _, err := c.Children("/")
	if err != nil || len(kids) != 1+3*3*3 {
		t.Fatalf("%d children of / after the upgrade: %v %v", len(kids), kids, err)
	}
}

// TestQuorumSASLRequiredRefusesMemberWithout: once every member requires SASL, a member
// without quorum SASL cannot join.
func TestQuorumSASLRequiredRefusesMemberWithout(t *testing.T) {
	e := newTCPEnsemble(t, []*peer.QuorumSASL{
		nil, quorumSASLFor(true, true, "quorum-secret"), quorumSASLFor(true, true, "quorum-secret"),
	})
	e.waitServing("the two members with SASL to serve", 1, 2)
	waitFor(t, "a refusal of the member without SASL", func() bool {
		return e.logs[1].count("authentication is required")+e.logs[2].count("authentication is required") >= 2
	})
	if m := e.srvs[0].Mode(); m != "" {
		t.Fatalf("the member without SASL serves as %q", m)
	}
}

// jaasQuorum is a JAAS file for ZooKeeper members of a mixed ensemble.
func jaasQuorum(t *testing.T, pass string) string {
	path := filepath.Join(t.TempDir(), "jaas.conf")
	text := fmt.Sprintf(`QuorumServer {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_zkd="quorum-secret";
};
QuorumLearner {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="zkd"
    password="%s";
};
`, pass)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var quorumSASLRefLines = []string{
	"quorum.auth.enableSasl=true", "quorum.auth.learnerRequireSasl=true", "quorum.auth.serverRequireSasl=true",
}

func TestMixedQuorumSASLZkdLeads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	jaas := jaasQuorum(t, "quorum-secret")
	members := startMixedOpts(t, map[int64]bool{3: true}, []int64{1, 3, 2}, func(c *server.Config) {
		c.QuorumSASL = quorumSASLFor(true, true, "quorum-secret")
	}, quorumSASLRefLines, []string{"-Djava.security.auth.login.config=" + jaas})
	if m := members[2].mode(t); m != "leader" {
		t.Fatalf("zkd (sid 3) is %q", m)
	}
	checkMixed(t, members)
	checkRefAuthenticated(t, members)
}

func TestMixedQuorumSASLZooKeeperLeads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	jaas := jaasQuorum(t, "quorum-secret")
	members := startMixedOpts(t, map[int64]bool{1: true, 2: true}, []int64{3, 1, 2}, func(c *server.Config) {
		c.QuorumSASL = quorumSASLFor(true, true, "quorum-secret")
	}, quorumSASLRefLines, []string{"-Djava.security.auth.login.config=" + jaas})
	if m := members[2].mode(t); m != "leader" {
		t.Fatalf("ZooKeeper (sid 3) is %q", m)
	}
	checkMixed(t, members)
	checkRefAuthenticated(t, members)
}

// checkRefAuthenticated checks in the ZooKeeper members' logs that quorum SASL ran: each
// authenticated to others as a learner and authenticated others as a server.
func checkRefAuthenticated(t *testing.T, members []*mixedMember) {
	t.Helper()
	for _, m := range members {
		if m.ref == nil {
			continue
		}
		b, err := os.ReadFile(m.ref.LogPath())
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"Successfully completed the authentication using SASL. learner addr",
			"Successfully completed the authentication using SASL. server addr",
		} {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("ZooKeeper %d's log has no %q", m.id, want)
			}
		}
		if bytes.Contains(b, []byte("Failed to authenticate using SASL")) {
			t.Errorf("ZooKeeper %d logged a failed authentication", m.id)
		}
	}
}

// TestMixedQuorumSASLWrongPassword: in a mixed ensemble with every requirement on, a member
// whose QuorumLearner password is wrong is refused by a leader of the other kind: a zkd
// member by a ZooKeeper leader, and a ZooKeeper member by a zkd leader.
func TestMixedQuorumSASLWrongPassword(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	refzk.Require(t)
	for _, tc := range []struct {
		name    string
		zkdIDs  map[int64]bool // sid 3 leads (started first with sid 2), sid 1 has the wrong password
		refused string         // what the leader logs when it refuses sid 1
	}{
		{"ZooKeeper leader refuses zkd", map[int64]bool{1: true, 2: true}, "Failed to authenticate using SASL"},
		{"zkd leader refuses ZooKeeper", map[int64]bool{2: true, 3: true}, "quorum learner refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ports := freePorts(t, 6)
			var peers []config.Member
			lines := append([]string{"initLimit=10", "syncLimit=5"}, quorumSASLRefLines...)
			for i := int64(1); i <= 3; i++ {
				q, e := ports[2*(i-1)], ports[2*(i-1)+1]
				peers = append(peers, config.Member{ID: i, Host: "127.0.0.1", QuorumPort: q, ElectionPort: e})
				lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i, q, e))
			}
			members := map[int64]*mixedMember{}
			var zkdLog *logCount
			for _, i := range []int64{3, 2, 1} {
				pass := "quorum-secret"
				if i == 1 {
					pass = "wrong"
				}
				m := &mixedMember{id: i}
				if tc.zkdIDs[i] {
					lc := &logCount{}
					var w io.Writer = lc
					if os.Getenv("ZKTEST_LOG") != "" {
						w = io.MultiWriter(lc, os.Stderr)
					}
					if i == 3 {
						zkdLog = lc
					}
					srv, err := server.New(server.Config{
						ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(), TickTime: 500, InitLimit: 10, SyncLimit: 5,
						ServerID: i, Peers: peers, PreAllocSize: 1 << 20, QuorumSASL: quorumSASLFor(true, true, pass),
						Logger: slog.New(slog.NewTextHandler(w, nil)).With("sid", i),
					})
					if err != nil {
						t.Fatal(err)
					}
					if err := srv.Start(); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { srv.Close() })
					m.zkd, m.addr = srv, srv.Addr()
				} else {
					m.ref = refzk.StartStandalone(t, refzk.Options{
						TickTime: 500, MyID: int(i), NoWait: true, Config: lines,
						SystemProperties: []string{"-Djava.security.auth.login.config=" + jaasQuorum(t, pass)},
					})
					m.addr = m.ref.Addr()
				}
				members[i] = m
				if i == 2 {
					waitFor(t, "sid 3 to lead sid 2", func() bool {
						return members[3].mode(t) == "leader" && members[2].mode(t) == "follower"
					})
				}
			}
			waitFor(t, "the leader to refuse sid 1 twice", func() bool {
				if zkdLog != nil {
					return zkdLog.count(tc.refused) >= 2
				}
				b, _ := os.ReadFile(members[3].ref.LogPath())
				return bytes.Count(b, []byte(tc.refused)) >= 2
			})
			if m := members[1].mode(t); m == "follower" || m == "leader" {
				t.Fatalf("sid 1, with the wrong password, serves as %q", m)
			}
			c := connectTo(t, members[2].addr)
			if _, err := c.Create("/still-serving", nil, 0, open); err != nil {
				t.Fatal(err)
			}
		})
	}
}
