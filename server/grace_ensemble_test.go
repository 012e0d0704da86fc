package server_test

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/testing/faultnet"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
)

// graceEnsemble is a three-member ensemble whose quorum connections each go through a
// bridge of their own (bridges[from][to], member indexes), so a test can pause or cut the
// link between two members while clients still reach both.
type graceEnsemble struct {
	*testEnsemble
	bridges map[int]map[int]*faultnet.Bridge
}

func startGraceEnsemble(t *testing.T, on bool, tune func(*server.Config)) *graceEnsemble {
	t.Helper()
	g := &graceEnsemble{bridges: map[int]map[int]*faultnet.Bridge{}}
	var mu sync.Mutex
	g.testEnsemble = startEnsembleConfig(t, 3, func(c *server.Config) {
		c.Extensions = ext.Set{} // off: ZooKeeper's session rules
		if on {
			c.Extensions = ext.Of(ext.SessionGrace)
		}
		if tune != nil {
			tune(c)
		}
		from := int(c.ServerID - 1)
		peers := append(c.Peers[:0:0], c.Peers...)
		mu.Lock()
		defer mu.Unlock()
		g.bridges[from] = map[int]*faultnet.Bridge{}
		for i, p := range peers {
			if p.ID == c.ServerID {
				continue
			}
			b, port := bridgeAvoiding(t, fmt.Sprintf("127.0.0.1:%d", p.QuorumPort), c.Peers)
			g.bridges[from][i] = b
			peers[i].QuorumPort = port
		}
		c.Peers = peers
	})
	g.waitServing()
	return g
}

// bridgeAvoiding starts a bridge to target on a port none of peers was given: the members
// listen on those only once they start, and a bridge must not take one meanwhile.
func bridgeAvoiding(t *testing.T, target string, peers []config.Member) (*faultnet.Bridge, int) {
	for {
		b, err := faultnet.Start(target)
		if err != nil {
			t.Fatal(err)
		}
		_, ps, _ := net.SplitHostPort(b.Addr())
		port, _ := strconv.Atoi(ps)
		taken := false
		for _, p := range peers {
			taken = taken || p.QuorumPort == port || p.ElectionPort == port
		}
		if !taken {
			t.Cleanup(func() { b.Close() })
			return b, port
		}
		defer b.Close() // held until the end, so the next try gets another port
	}
}

// link sets the mode of the links between members a and b, both ways.
func (g *graceEnsemble) link(a, b int, m faultnet.Mode) {
	g.bridges[a][b].SetMode(m)
	g.bridges[b][a].SetMode(m)
}

func (g *graceEnsemble) follower(not int) int {
	for i, m := range g.modes() {
		if m == "follower" && i != not {
			return i
		}
	}
	g.t.Fatal("no follower")
	return -1
}

// graceSession is one session driven by hand: opened, used and resumed on the servers a
// test names, so that what the client sends, and to whom, is the test's choice.
type graceSession struct {
	id      int64
	passwd  []byte
	timeout int32
	mu      sync.Mutex
	c       *rawzk.Client
}

var errSessionExpired = errors.New("session expired")

func openGraceSession(t *testing.T, addr string, timeout int32) *graceSession {
	t.Helper()
	c := rawzk.Dial(t, addr)
	resp, err := c.Handshake(&jute.ConnectRequest{TimeOut: timeout, Passwd: make([]byte, 16)})
	if err != nil || resp.SessionID == 0 {
		t.Fatalf("open a session on %s: %v %+v", addr, err, resp)
	}
	return &graceSession{id: resp.SessionID, passwd: resp.Passwd, timeout: timeout, c: c}
}

// resume reconnects the session on addr; errSessionExpired when the server says so.
func (s *graceSession) resume(t *testing.T, addr string) error {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	c := rawzk.Over(t, nc)
	resp, err := c.Handshake(&jute.ConnectRequest{TimeOut: s.timeout, SessionID: s.id, Passwd: s.passwd})
	if err != nil {
		nc.Close()
		return err
	}
	if resp.TimeOut <= 0 || resp.SessionID != s.id {
		nc.Close()
		return errSessionExpired
	}
	s.mu.Lock()
	s.c.NC.Close()
	s.c = c
	s.mu.Unlock()
	return nil
}

// call sends one request on the session's current connection.
func (s *graceSession) call(op jute.OpCode, body, resp jute.Record) (jute.Code, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	xid, err := s.c.TrySend(op, body)
	if err != nil {
		return 0, err
	}
	h, err := s.c.Reply(xid, resp)
	return h.Err, err
}

func (s *graceSession) create(t *testing.T, path string) {
	t.Helper()
	code, err := s.call(jute.OpCreate, &jute.CreateRequest{Path: path, ACL: jute.OpenACLUnsafe, Flags: jute.FlagEphemeral}, &jute.CreateResponse{})
	if err != nil || code != jute.OK {
		t.Fatalf("create %s: %v %v", path, code, err)
	}
}

// heartbeat sends an exists("/") every 200 ms on the session's connection, as a client's
// pings do. When the connection's server closes it, it resumes the session on fallback
// and reports how that went (nil: the session lived), then goes on heartbeating there if
// it did. stop ends it.
func (s *graceSession) heartbeat(t *testing.T, fallback func() string) (result <-chan error, stop func()) {
	out := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		resumed := false
		for {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := s.call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}, &jute.StatResponse{}); err != nil {
				if resumed {
					return
				}
				err := s.resume(t, fallback())
				out <- err
				if err != nil {
					return
				}
				resumed = true
			}
		}
	}()
	var once sync.Once
	return out, func() { once.Do(func() { close(done) }) }
}

// exists asks a fresh session on addr whether path exists.
func existsOn(t *testing.T, addr, path string) bool {
	t.Helper()
	c := rawzk.Connect(t, addr)
	defer c.NC.Close()
	return c.Call(jute.OpExists, &jute.PathWatchRequest{Path: path}, &jute.StatResponse{}).Err == jute.OK
}

func graceModes(t *testing.T, f func(t *testing.T, on bool)) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		t.Run(name, func(t *testing.T) { f(t, on) })
	}
}

// TestSessionGraceLeaderChange: the leader stops, and the new leader cannot sync its
// follower (their link is held) for longer than the sessions' timeout. As ZooKeeper's leader
// does when a quorum first follows it, the new leader gives every session its full timeout
// then, so a client that reconnects at once keeps its session in both modes. A client that
// comes back only after that timeout lost its session without session-grace; with it the
// time the ensemble could not serve (here more than the timeout) is added, up to the
// timeout, and the session lives.
func TestSessionGraceLeaderChange(t *testing.T) {
	const timeout = 3000
	graceModes(t, func(t *testing.T, on bool) {
		g := startGraceEnsemble(t, on, func(c *server.Config) { c.InitLimit = 60 })
		old := g.leaderIndex()
		f := g.follower(old)
		prompt := openGraceSession(t, g.addrs()[f], timeout)
		prompt.create(t, "/prompt")
		late := openGraceSession(t, g.addrs()[f], timeout)
		late.create(t, "/late")

		// Hold every quorum link, then stop the leader: the others elect one of them, which
		// cannot sync its follower while the links are held (if the follower gives up and
		// they elect again, initLimit later, the ensemble stays without service as long).
		for a := range g.bridges {
			for b := range g.bridges[a] {
				g.bridges[a][b].Pause()
			}
		}
		g.stop(old)
		next := -1
		waitFor(t, "a new leader that cannot sync yet", func() bool {
			for i, m := range g.members {
				if i != old && m.srv != nil && server.RoleMode(m.srv) == "leader" {
					next = i
					return true
				}
			}
			return false
		})
		elected := time.Now()
		waitFor(t, "longer than the sessions' timeout", func() bool {
			return time.Since(elected) > timeout*time.Millisecond+time.Second
		})
		for a := range g.bridges {
			for b := range g.bridges[a] {
				g.bridges[a][b].Resume()
			}
		}
		waitFor(t, "the new leader to serve with its follower", func() bool {
			modes := g.modes()
			return modes[next] == "leader" && modes[3-old-next] == "follower"
		})
		serving := time.Now()
		addr := g.addrs()[next]

		if err := prompt.resume(t, addr); err != nil {
			t.Fatalf("a session resumed as soon as the ensemble served again: %v", err)
		}
		waitFor(t, "half the timeout after the leader served", func() bool {
			return time.Since(serving) > timeout*time.Millisecond/2
		})
		if code, err := prompt.call(jute.OpExists, &jute.PathWatchRequest{Path: "/prompt"}, &jute.StatResponse{}); err != nil || code != jute.OK {
			t.Fatalf("the promptly resumed session lost its ephemeral: %v %v", code, err)
		}

		waitFor(t, "the timeout to pass since the leader served", func() bool {
			return time.Since(serving) > timeout*time.Millisecond+500*time.Millisecond
		})
		if !on {
			waitFor(t, "the late session to expire", func() bool { return !existsOn(t, addr, "/late") })
			if err := late.resume(t, addr); !errors.Is(err, errSessionExpired) {
				t.Fatalf("the late session resumed: %v, want it expired (ZooKeeper's behaviour)", err)
			}
			return
		}
		if err := late.resume(t, addr); err != nil {
			t.Fatalf("the late session, within its timeout plus the time without service: %v", err)
		}
		if code, err := late.call(jute.OpExists, &jute.PathWatchRequest{Path: "/late"}, &jute.StatResponse{}); err != nil || code != jute.OK {
			t.Fatalf("the late session lost its ephemeral: %v %v", code, err)
		}
	})
}

// TestSessionGracePartitionedFollower: a follower is cut off from the leader (no byte
// either way) while its client keeps heartbeating to it. The follower serves the client
// until it notices, after syncLimit (6 s here), that its leader is gone; then it stops
// serving and closes the client's connection, and the client resumes its session on the
// leader. The session's timeout (2 s) is shorter than that: without session-grace the
// leader, which heard nothing from the follower, expires the session meanwhile, as
// ZooKeeper's does; with it the leader holds the sessions of a silent learner, gives them
// their full timeout when it drops the learner, and the session survives the partition and
// its healing.
func TestSessionGracePartitionedFollower(t *testing.T) {
	graceModes(t, func(t *testing.T, on bool) {
		g := startGraceEnsemble(t, on, func(c *server.Config) { c.SyncLimit = 60 })
		l := g.leaderIndex()
		f := g.follower(l)
		c := openGraceSession(t, g.addrs()[f], 2000)
		c.create(t, "/mine")
		result, stop := c.heartbeat(t, func() string { return g.addrs()[l] })
		defer stop()

		g.link(f, l, faultnet.Blackhole)
		g.link(f, 3-l-f, faultnet.Blackhole)
		if on {
			waitFor(t, "the leader to hold the silent follower's session", func() bool { return server.GraceHeld(g.members[l].srv) > 0 })
		}
		var err error
		waitFor(t, "the follower to drop its client and the client to resume", func() bool {
			select {
			case err = <-result:
				return true
			default:
				return false
			}
		})
		g.link(f, l, faultnet.Pass)
		g.link(f, 3-l-f, faultnet.Pass)
		g.waitServing()
		if !on {
			if !errors.Is(err, errSessionExpired) {
				t.Fatalf("resumed after the partition: %v, want expired (ZooKeeper's behaviour)", err)
			}
			if existsOn(t, g.addrs()[l], "/mine") {
				t.Fatal("the expired session's ephemeral is still there")
			}
			return
		}
		if err != nil {
			t.Fatalf("the session that heartbeated to its follower throughout: %v", err)
		}
		for i := range g.members {
			if !existsOn(t, g.addrs()[i], "/mine") {
				t.Fatalf("member %d lost the session's ephemeral", i)
			}
		}
	})
}

// TestSessionGraceStalledFollower: the leader hears nothing from a follower for longer than
// a session's timeout, but less than syncLimit, and then hears again everything it held
// back: from the leader's side the follower stalled (a GC pause), while its client kept
// heartbeating to it. Without session-grace the leader expires the session during the
// stall; with it the session waits for the follower's reports, lives, and still expires
// once its client goes silent.
func TestSessionGraceStalledFollower(t *testing.T) {
	graceModes(t, func(t *testing.T, on bool) {
		g := startGraceEnsemble(t, on, func(c *server.Config) { c.SyncLimit = 80 })
		l := g.leaderIndex()
		f := g.follower(l)
		c := openGraceSession(t, g.addrs()[f], 2000)
		c.create(t, "/mine")
		result, stop := c.heartbeat(t, func() string { return g.addrs()[l] })
		defer stop()

		g.link(f, l, faultnet.Pause)
		if on {
			waitFor(t, "the leader to hold the stalled follower's session", func() bool { return server.GraceHeld(g.members[l].srv) > 0 })
		} else {
			waitFor(t, "the session to expire during the stall", func() bool { return !existsOn(t, g.addrs()[l], "/mine") })
		}
		g.link(f, l, faultnet.Pass)
		if !on {
			return
		}
		waitFor(t, "the leader to release the session", func() bool { return server.GraceHeld(g.members[l].srv) == 0 })
		if !existsOn(t, g.addrs()[l], "/mine") {
			t.Fatal("the session expired for its follower's stall")
		}
		select {
		case err := <-result:
			t.Fatalf("the follower dropped its client: %v", err)
		default:
		}
		stop()
		waitFor(t, "the silent session to expire", func() bool { return !existsOn(t, g.addrs()[l], "/mine") })
	})
}
