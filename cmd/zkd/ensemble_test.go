package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/testing/faultnet"
)

type procEnsemble struct {
	t       *testing.T
	procs   []*proc
	dirs    []string
	addrs   []string
	cfgs    []string
	bridges []*faultnet.Bridge // per server: what the others dial for its quorum port
}

// startProcEnsemble starts n zkd processes on loopback from zoo.cfg files, as an operator
// would (server.N lines, dataDir/myid).
func startProcEnsemble(t *testing.T, n int, tick int) *procEnsemble {
	return startProcEnsembleOpts(t, n, tick, false)
}

// startProcEnsembleOpts can route every quorum connection through a faultnet bridge: each
// server listens on its real quorum port, and the others' configs name the bridge.
func startProcEnsembleOpts(t *testing.T, n int, tick int, bridged bool) *procEnsemble {
	return startProcEnsembleCfg(t, n, tick, bridged, nil)
}

// startProcEnsembleCfg is startProcEnsembleOpts with extra zoo.cfg lines for every server.
func startProcEnsembleCfg(t *testing.T, n int, tick int, bridged bool, extra []string) *procEnsemble {
	if testing.Short() {
		t.Skip("starts processes")
	}
	ports := make([]int, 3*n)
	var lns []net.Listener
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	for _, ln := range lns {
		ln.Close()
	}
	e := &procEnsemble{t: t}
	quorumAddr := func(self, i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[3*(i-1)+1]) }
	if bridged {
		for i := 1; i <= n; i++ {
			b, err := faultnet.New("", fmt.Sprintf("127.0.0.1:%d", ports[3*(i-1)+1]))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			e.bridges = append(e.bridges, b)
		}
		quorumAddr = func(self, i int) string {
			if self == i {
				return fmt.Sprintf("127.0.0.1:%d", ports[3*(i-1)+1])
			}
			return e.bridges[i-1].Addr()
		}
	}
	for i := 1; i <= n; i++ {
		var servers []string
		for j := 1; j <= n; j++ {
			servers = append(servers, fmt.Sprintf("server.%d=%s:%d", j, quorumAddr(i, j), ports[3*(j-1)+2]))
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "myid"), []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(dir, "zoo.cfg")
		lines := append([]string{
			fmt.Sprintf("tickTime=%d", tick), "initLimit=10", "syncLimit=5",
			"dataDir=" + dir, fmt.Sprintf("clientPort=%d", ports[3*(i-1)]), "clientPortAddress=127.0.0.1",
			"maxClientCnxns=0", "4lw.commands.whitelist=*", "preAllocSize=1024",
			// Every extension on: the clients here are stock ones (go-zookeeper), which
			// must see exactly ZooKeeper.
			allExtensions,
		}, servers...)
		lines = append(lines, extra...)
		if err := os.WriteFile(cfg, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		e.dirs = append(e.dirs, dir)
		e.cfgs = append(e.cfgs, cfg)
		e.addrs = append(e.addrs, fmt.Sprintf("127.0.0.1:%d", ports[3*(i-1)]))
		e.procs = append(e.procs, nil)
	}
	for i := 0; i < n; i++ {
		e.start(i)
	}
	e.waitQuorum(n)
	return e
}

func (e *procEnsemble) start(i int) {
	e.procs[i] = spawn(e.t, e.addrs[i], []string{"--config", e.cfgs[i], "--log-level", "info"})
}

// waitQuorum waits until one leader and want-1 followers serve among the live servers.
func (e *procEnsemble) waitQuorum(want int) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		leaders, followers := 0, 0
		for _, p := range e.procs {
			if p == nil {
				continue
			}
			switch p.mode() {
			case "leader":
				leaders++
			case "follower":
				followers++
			}
		}
		if leaders == 1 && leaders+followers >= want {
			return
		}
		if time.Now().After(deadline) {
			var logs []string
			for i, p := range e.procs {
				if p != nil {
					logs = append(logs, fmt.Sprintf("--- server %d (%s)\n%s", i+1, p.mode(), tail(p.logText(), 20)))
				}
			}
			e.t.Fatalf("no quorum of %d within 60s:\n%s", want, strings.Join(logs, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (e *procEnsemble) leader() int {
	for i, p := range e.procs {
		if p != nil && p.mode() == "leader" {
			return i
		}
	}
	return -1
}

func connectAll(t *testing.T, addrs []string) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect(addrs, 4*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return c
			}
		case <-deadline:
			t.Fatal("no session")
		}
	}
}

// TestProcessEnsembleKillLeader kills the leader of a 3-process ensemble with SIGKILL under
// a write load, measures the time until writes succeed again, checks that no acknowledged
// write is lost, and that the killed server rejoins and catches up.
func TestProcessEnsembleKillLeader(t *testing.T) {
	e := startProcEnsemble(t, 3, 200)
	var mu sync.Mutex
	acked := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		c := connectAll(t, e.addrs)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := fmt.Sprintf("/w%d-%d", w, i)
				if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err == nil {
					mu.Lock()
					acked[p] = true
					mu.Unlock()
				} else if !errors.Is(err, zk.ErrNodeExists) {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}(w)
	}
	waitCount := func(n int) {
		deadline := time.Now().Add(60 * time.Second)
		for {
			mu.Lock()
			got := len(acked)
			mu.Unlock()
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d writes acknowledged, want %d", got, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitCount(100)
	old := e.leader()
	killed := time.Now()
	e.procs[old].kill()
	e.procs[old] = nil
	// Failover: a fresh client's write through a survivor succeeds again.
	var survivors []string
	for i, a := range e.addrs {
		if i != old {
			survivors = append(survivors, a)
		}
	}
	probe := connectAll(t, survivors)
	for {
		if _, err := probe.Create(fmt.Sprintf("/probe-%d", time.Now().UnixNano()), nil, 0, zk.WorldACL(zk.PermAll)); err == nil {
			break
		}
		if time.Since(killed) > 60*time.Second {
			t.Fatal("no write succeeded within 60s of killing the leader")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("failover: a write succeeded %v after SIGKILL of the leader (tickTime 200ms)", time.Since(killed).Round(time.Millisecond))
	mu.Lock()
	before := len(acked)
	mu.Unlock()
	waitCount(before + 50)
	close(stop)
	wg.Wait()

	e.start(old)
	e.waitQuorum(3)
	c := connectAll(t, []string{e.addrs[old]})
	if _, err := c.Sync("/"); err != nil {
		t.Fatal(err)
	}
	kids, _, err := c.Children("/")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, k := range kids {
		have["/"+k] = true
	}
	mu.Lock()
	defer mu.Unlock()
	for p := range acked {
		if !have[p] {
			t.Fatalf("acknowledged %s missing on the rejoined server", p)
		}
	}
	t.Logf("%d acknowledged writes, all present after the leader was killed and rejoined", len(acked))
	_ = syscall.SIGKILL
}

// TestPausedLeaderServesNoStaleRead: the leader is paused (SIGSTOP) and its followers'
// connections to it are cut on their side only, so they elect a new leader and accept a
// write while the old one, when it resumes, still believes it leads (it hears only
// silence, within syncLimit). A client of the old leader then does sync + read. ZooKeeper
// 3.8's leader answers sync alone, and the read is stale; zkd's sync needs a quorum to
// answer a ping sent after it, so the client gets the new value or an error, never the
// old one. Whether the resumed leader handles the sync before its first tick notices the
// lost quorum is a race: with ZooKeeper's rule (sync answered alone) this test failed in 2
// of 5 runs, so it guards the rule without proving it every time; internal/nemesis checks
// sync + read at volume.
func TestPausedLeaderServesNoStaleRead(t *testing.T) {
	e := startProcEnsembleOpts(t, 3, 500, true)
	old := e.leader()
	c := connectAll(t, e.addrs)
	if _, err := c.Create("/x", []byte("old"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	// A client session on the old leader, with a long timeout and no pings of its own.
	raw := dialRawSession(t, e.addrs[old])
	if err := e.procs[old].Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer e.procs[old].Signal(syscall.SIGCONT)
	e.bridges[old].Sever()
	var others []string
	for i, a := range e.addrs {
		if i != old {
			others = append(others, a)
		}
	}
	c2 := connectAll(t, others)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := c2.Set("/x", []byte("new"), -1); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the others did not take writes while the leader was paused")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Sent while the old leader is still paused, so the requests wait in its socket and
	// reach it as it resumes, before it can notice it lost its followers.
	syncXid, getXid, err := raw.sendSyncAndGet("/x")
	e.procs[old].Signal(syscall.SIGCONT)
	var val string
	if err == nil {
		val, err = raw.syncAndGetReplies(syncXid, getXid)
	}
	if err == nil && val == "old" {
		t.Fatal("the resumed old leader answered sync and served a stale read")
	}
	t.Logf("sync+read on the resumed old leader: value %q, err %v", val, err)
}

// TestProcessEnsembleFive: five processes survive losing the leader and a follower at
// once (three of five is still a quorum); both come back and catch up.
func TestProcessEnsembleFive(t *testing.T) {
	e := startProcEnsemble(t, 5, 200)
	c := connectAll(t, e.addrs)
	for i := 0; i < 20; i++ {
		if _, err := c.Create(fmt.Sprintf("/a%d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	l := e.leader()
	f := (l + 1) % 5
	e.procs[l].kill()
	e.procs[f].kill()
	e.procs[l], e.procs[f] = nil, nil
	e.waitQuorum(3)
	var alive []string
	for i, a := range e.addrs {
		if i != l && i != f {
			alive = append(alive, a)
		}
	}
	c2 := connectAll(t, alive)
	for i := 0; i < 20; i++ {
		if _, err := c2.Create(fmt.Sprintf("/b%d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	e.start(l)
	e.start(f)
	e.waitQuorum(5)
	for _, i := range []int{l, f} {
		ci := connectAll(t, []string{e.addrs[i]})
		for j := 0; j < 20; j++ {
			for _, p := range []string{fmt.Sprintf("/a%d", j), fmt.Sprintf("/b%d", j)} {
				if ok, _, err := ci.Exists(p); err != nil || !ok {
					t.Fatalf("server %d after restart misses %s: %v %v", i+1, p, ok, err)
				}
			}
		}
	}
}
