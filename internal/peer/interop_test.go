//go:build linux

package peer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/election"
	"github.com/zkd-io/zkd/internal/testing/portlock"
	"github.com/zkd-io/zkd/internal/testing/proc"
	"github.com/zkd-io/zkd/internal/testing/refzk"
)

// The interop test puts one Go election member into an ensemble with two Apache ZooKeeper 3.8
// servers. internal/refzk only starts standalone servers, so the ensemble start is here: a
// trimmed copy of refzk's process handling (class path, log4j config, process group,
// parent-death signal, port locks shared with refzk).

var zkJars = []string{"zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-log4j12.jar", "log4j-1.2.jar"}

const zkLog4j = `log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
`

type zkProc struct {
	sid     int64
	logPath string
	client  int
	proc    *proc.Proc
}

func (z *zkProc) logTail() string {
	b, err := os.ReadFile(z.logPath)
	if err != nil {
		return err.Error()
	}
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

func (z *zkProc) srvr() string {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(z.client)), 2*time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "srvr")
	out, _ := io.ReadAll(c)
	return string(out)
}

// startZK starts ensemble member sid with the given server lines.
func startZK(t *testing.T, sid int64, client int, serverLines []string) *zkProc {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintf("%d\n", sid)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := append([]string{
		// initLimit*tickTime is how long a follower of the silent Go leader stays
		// FOLLOWING: a minute, well past the second JVM's start.
		"tickTime=2000", "initLimit=30", "syncLimit=5",
		"dataDir=" + data,
		"clientPort=" + strconv.Itoa(client), "clientPortAddress=127.0.0.1",
		"admin.enableServer=false", "maxClientCnxns=0", "4lw.commands.whitelist=*",
	}, serverLines...)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(strings.Join(cfg, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log4j.properties"), []byte(zkLog4j), 0o644); err != nil {
		t.Fatal(err)
	}
	cp := []string{dir}
	if env := os.Getenv(refzk.EnvClassPath); env != "" {
		cp = append(cp, env)
	} else {
		for _, j := range zkJars {
			cp = append(cp, filepath.Join("/usr/share/java", j))
		}
	}
	args := append([]string(nil), refzk.DefaultJavaOpts...)
	// Bound the resend back-off so that a server that started early does not sleep through
	// the test.
	args = append(args, "-Dzookeeper.fastleader.maxNotificationInterval=4000",
		"-cp", strings.Join(cp, ":"), "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath)
	z := &zkProc{sid: sid, logPath: filepath.Join(dir, "server.log"), client: client}
	logFile, err := os.Create(z.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command("java", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	z.proc, err = proc.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := z.proc.Kill(30 * time.Second); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("--- ZooKeeper %d log (tail) ---\n%s", sid, z.logTail())
		}
	})
	return z
}

// reserveZKPort picks a free port below the ephemeral range, locked against other test
// processes the way refzk locks its ports, and held until the test ends.
func reserveZKPort(t *testing.T) int {
	t.Helper()
	port, lock, err := portlock.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	return port
}

// zkConfigText is what ZooKeeper sends as its config in notifications for a static
// majority config (QuorumMaj.toString): one line per server, then the version in hex.
func zkConfigText(lines []string) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l + ":participant\n")
	}
	b.WriteString("version=0")
	return b.Bytes()
}

// probe asks ZooKeeper servers for their state the way an observer would: a notification
// from a sid that is not a voter is always answered with the server's current vote and state.
type probe struct {
	tr *TCP
}

func newProbe(t *testing.T, peers map[int64]string) *probe {
	return &probe{tr: newTCP(t, TCPConfig{ID: 100, Peers: peers, MinBackoff: 50 * time.Millisecond})}
}

// waitFor asks every server in want until each answered with the wanted state and leader.
func (p *probe) waitFor(t *testing.T, deadline time.Time, want map[int64]election.ServerState, leader int64) {
	t.Helper()
	got := map[int64]election.Notification{}
	good := func(sid int64) bool {
		n, seen := got[sid]
		return seen && n.State == want[sid] && n.Leader == leader && n.ElectionEpoch == 1
	}
	ok := func() bool {
		for sid := range want {
			if !good(sid) {
				return false
			}
		}
		return true
	}
	ask := (&election.Notification{State: election.Looking, Leader: math.MinInt64, Zxid: math.MinInt64,
		ElectionEpoch: 1, PeerEpoch: math.MinInt64}).Marshal()
	for !ok() && time.Now().Before(deadline) {
		for sid := range want {
			if !good(sid) {
				p.tr.Send(sid, ask)
			}
		}
		tick := time.After(200 * time.Millisecond)
	collect:
		for {
			select {
			case <-tick:
				break collect
			case m := <-p.tr.Recv():
				n, err := election.Unmarshal(m.From, m.Payload)
				if err != nil {
					t.Errorf("probe: %v", err)
					continue
				}
				got[m.From] = n
			}
		}
	}
	if !ok() {
		t.Fatalf("ZooKeeper servers' answers %+v; want %v with leader %d in round 1", got, want, leader)
	}
}

// silentLeader serves a quorum port the way a leader that never answers would: it accepts
// learners, reports the sid in each one's first packet (which must be FOLLOWERINFO), and
// keeps the connection open, so that a ZooKeeper follower stays FOLLOWING until its
// initLimit runs out instead of going back to LOOKING at once.
func silentLeader(t *testing.T, ln net.Listener) <-chan int64 {
	sids := make(chan int64, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				// QuorumPacket: int type, long zxid, buffer data (int length + LearnerInfo,
				// which starts with the long sid).
				var b [24]byte
				if _, err := io.ReadFull(c, b[:]); err != nil {
					return
				}
				if typ := int32(binary.BigEndian.Uint32(b[0:])); typ != 11 {
					t.Errorf("first packet on the quorum port has type %d, want FOLLOWERINFO (11)", typ)
					return
				}
				sids <- int64(binary.BigEndian.Uint64(b[16:]))
				io.Copy(io.Discard, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return sids
}

// TestInteropWithZooKeeper runs a Go election member in a 3-server ensemble with two Apache
// ZooKeeper 3.8 servers; all logs are empty, so sid 3 must lead. FLE elects the best of the
// servers that are up, and JVMs start seconds apart on a loaded machine, so the ZooKeeper
// servers start one at a time: the first elects with the Go member, the second joins the
// established ensemble and must learn the same leader, in the same round, from the answers of
// both.
func TestInteropWithZooKeeper(t *testing.T) {
	refzk.Require(t)
	cases := []struct {
		name          string
		goSid         int64
		first, second int64
	}{
		// The Go member has the largest sid: it wins; ZooKeeper follows it, connecting to a
		// quorum port that accepts and stays silent.
		{"go member leads", 3, 1, 2},
		// The Go member has the smallest sid: ZooKeeper connects to it and it follows 3.
		{"go member follows", 1, 3, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			deadline := time.Now().Add(50 * time.Second)
			goLn := listen(t)
			goQuorum := listen(t)
			type ports struct{ client, quorum, election int }
			ps := map[int64]ports{}
			var lines []string
			peers := map[int64]string{}
			for sid := int64(1); sid <= 3; sid++ {
				p := ports{client: reserveZKPort(t), quorum: reserveZKPort(t), election: reserveZKPort(t)}
				if sid == tc.goSid {
					p.election = goLn.Addr().(*net.TCPAddr).Port
					p.quorum = goQuorum.Addr().(*net.TCPAddr).Port
				}
				ps[sid] = p
				lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", sid, p.quorum, p.election))
				peers[sid] = fmt.Sprintf("127.0.0.1:%d", p.election)
			}
			cfgText := zkConfigText(lines)
			learners := silentLeader(t, goQuorum)

			tr := newTCP(t, TCPConfig{ID: tc.goSid, Listener: goLn, Peers: peers})
			e := election.New(election.Config{ID: tc.goSid, Voters: []int64{1, 2, 3}, ConfigText: cfgText})
			m := startMember(t, e, tr, 0, 0)
			zks := map[int64]*zkProc{}
			zks[tc.first] = startZK(t, tc.first, ps[tc.first].client, lines)

			var d election.Decision
			select {
			case d = <-m.decided:
			case <-time.After(time.Until(deadline)):
				t.Fatal("the Go member decided nothing")
			}
			wantState := election.Following
			if tc.goSid == 3 {
				wantState = election.Leading
			}
			if want := (election.Decision{State: wantState, Leader: 3, ElectionEpoch: 1}); d != want {
				t.Fatalf("Go member decided %+v, want %+v", d, want)
			}

			zks[tc.second] = startZK(t, tc.second, ps[tc.second].client, lines)
			if tc.goSid == 3 {
				// Both ZooKeeper servers take the Go member for their leader: they connect
				// to its quorum port and introduce themselves.
				joined := map[int64]bool{}
				for len(joined) < 2 {
					select {
					case sid := <-learners:
						joined[sid] = true
					case <-time.After(time.Until(deadline)):
						t.Fatalf("learners on the Go member's quorum port: %v, want 1 and 2", joined)
					}
				}
			}

			// ZooKeeper agrees, in round 1.
			want := map[int64]election.ServerState{}
			zkPeers := map[int64]string{}
			for _, sid := range []int64{tc.first, tc.second} {
				want[sid] = election.Following
				if sid == 3 {
					want[sid] = election.Leading
				}
				zkPeers[sid] = peers[sid]
			}
			newProbe(t, zkPeers).waitFor(t, deadline, want, 3)

			// ZooKeeper's notifications parse, and its config text is what zkd sends.
			m.mu.Lock()
			seen := append([]election.Notification(nil), m.seen...)
			m.mu.Unlock()
			from := map[int64]bool{}
			for _, n := range seen {
				from[n.From] = true
				if n.Version != election.CurrentVersion || !bytes.Equal(n.Config, cfgText) {
					t.Errorf("notification from %d: version %d config %q; want version 2 and %q", n.From, n.Version, n.Config, cfgText)
				}
			}
			for sid := range zks {
				if !from[sid] {
					t.Errorf("no notification from ZooKeeper %d", sid)
				}
			}

			if tc.goSid == 1 {
				// ZooKeeper 2 and 3 form a working quorum under the leader all three chose.
				var out string
				for time.Now().Before(deadline) {
					if out = zks[3].srvr(); strings.Contains(out, "Mode: leader") {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				if !strings.Contains(out, "Mode: leader") {
					t.Errorf("ZooKeeper 3 srvr: %q, want Mode: leader", out)
				}
			}
		})
	}
}
