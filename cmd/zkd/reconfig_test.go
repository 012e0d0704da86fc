package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/config"
)

const rcSuperPw = "r3config"

// rcNode is one zkd process of a reconfigurable ensemble, with its own zoo.cfg.
type rcNode struct {
	id                       int
	client, quorum, election int
	dir, cfg                 string
	p                        *proc
}

func (n *rcNode) addr() string { return fmt.Sprintf("127.0.0.1:%d", n.client) }

// line is the node's server.N line as a reconfig names it: ports, role and client address.
func (n *rcNode) line(role string) string {
	return fmt.Sprintf("server.%d=127.0.0.1:%d:%d:%s;127.0.0.1:%d", n.id, n.quorum, n.election, role, n.client)
}

type rcEnsemble struct {
	t     *testing.T
	nodes []*rcNode // index id-1
}

// newRCEnsemble reserves ports for n servers; none is configured or started yet.
func newRCEnsemble(t *testing.T, n int) *rcEnsemble {
	if testing.Short() {
		t.Skip("starts processes")
	}
	e := &rcEnsemble{t: t}
	for i := 1; i <= n; i++ {
		e.nodes = append(e.nodes, &rcNode{id: i, client: freePort(t), quorum: freePort(t), election: freePort(t), dir: t.TempDir()})
		e.nodes[i-1].cfg = filepath.Join(e.nodes[i-1].dir, "zoo.cfg")
	}
	return e
}

// configure writes node id's zoo.cfg naming members as participants, as an operator
// writes it: the initial members name each other, a server about to join by reconfig
// names the current members and itself.
func (e *rcEnsemble) configure(id int, members []int) {
	n := e.nodes[id-1]
	lines := []string{
		"tickTime=300", "initLimit=20", "syncLimit=10", "dataDir=" + n.dir,
		fmt.Sprintf("clientPort=%d", n.client), "clientPortAddress=127.0.0.1",
		"maxClientCnxns=0", "4lw.commands.whitelist=*", "preAllocSize=1024",
		"reconfigEnabled=true", "DigestAuthenticationProvider.superDigest=" + auth.DigestID("super", rcSuperPw),
	}
	for _, m := range members {
		lines = append(lines, e.nodes[m-1].line("participant"))
	}
	if err := os.WriteFile(filepath.Join(n.dir, "myid"), []byte(strconv.Itoa(id)), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(n.cfg, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *rcEnsemble) start(id int) {
	n := e.nodes[id-1]
	n.p = spawn(e.t, n.addr(), []string{"--config", n.cfg, "--log-level", "info"})
}

func (e *rcEnsemble) stop(id int) {
	n := e.nodes[id-1]
	n.p.stop(e.t)
	n.p = nil
}

func (e *rcEnsemble) leader() int {
	for _, n := range e.nodes {
		if n.p != nil && n.p.mode() == "leader" {
			return n.id
		}
	}
	return 0
}

// waitFor polls cond until it holds, failing the test with the live servers' log tails
// after a generous deadline.
func (e *rcEnsemble) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			var logs []string
			for _, n := range e.nodes {
				if n.p != nil {
					logs = append(logs, fmt.Sprintf("--- server %d (%s)\n%s", n.id, n.p.mode(), tail(n.p.logText(), 25)))
				}
			}
			e.t.Fatalf("timed out waiting for %s:\n%s", what, strings.Join(logs, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// config reads /zookeeper/config through a session of node id alone; "" when it does not
// answer.
func (e *rcEnsemble) config(id int) (string, *zk.Stat) {
	c, ev, err := zk.Connect([]string{e.nodes[id-1].addr()}, 4*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		return "", nil
	}
	defer c.Close()
	deadline := time.After(5 * time.Second)
	for connected := false; !connected; {
		select {
		case ev := <-ev:
			connected = ev.State == zk.StateHasSession
		case <-deadline:
			return "", nil
		}
	}
	data, st, err := c.Get("/zookeeper/config")
	if err != nil {
		return "", nil
	}
	return string(data), st
}

// waitConfig waits until every node of ids serves the configuration want (its text without
// the version line) and returns its version.
func (e *rcEnsemble) waitConfig(ids []int, want []string) int64 {
	e.t.Helper()
	slices.Sort(want)
	var version int64
	for _, id := range ids {
		e.waitFor(fmt.Sprintf("server %d to serve the configuration %q", id, want), func() bool {
			text, st := e.config(id)
			if st == nil {
				return false
			}
			lines, v := splitConfig(text)
			if !slices.Equal(lines, want) || (version != 0 && v != version) || st.Mzxid != v {
				return false
			}
			version = v
			return true
		})
	}
	return version
}

// splitConfig returns the server lines of a /zookeeper/config, sorted, and its version.
func splitConfig(text string) ([]string, int64) {
	var lines []string
	var v int64
	for _, l := range strings.Split(text, "\n") {
		if s, ok := strings.CutPrefix(l, "version="); ok {
			v, _ = strconv.ParseInt(s, 16, 64)
		} else if l != "" {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines, v
}

func (e *rcEnsemble) superConn(ids ...int) *zk.Conn {
	var addrs []string
	for _, id := range ids {
		addrs = append(addrs, e.nodes[id-1].addr())
	}
	c := connectAll(e.t, addrs)
	if err := c.AddAuth("digest", []byte("super:"+rcSuperPw)); err != nil {
		e.t.Fatal(err)
	}
	return c
}

// reconfig runs an incremental reconfig, retrying while the ensemble is between leaders
// (ZooKeeper's clients do the same: a reconfig is not idempotent, so a retry that finds its
// change already made is accepted by the caller's check of the result).
func (e *rcEnsemble) reconfig(c *zk.Conn, joining, leaving []string) {
	e.t.Helper()
	var err error
	e.waitFor(fmt.Sprintf("reconfig +%q -%q", joining, leaving), func() bool {
		_, err = c.IncrementalReconfig(joining, leaving, -1)
		if err != nil {
			e.t.Logf("reconfig +%q -%q: %v", joining, leaving, err)
		}
		return err == nil
	})
}

// writeLedger is a client load whose acknowledged creates are remembered, to be read back.
type writeLedger struct {
	mu    sync.Mutex
	acked []string
	stop  chan struct{}
	wg    sync.WaitGroup
}

// startLoad runs workers writers, each pipelining up to 4 creates on one session to addrs.
func startLoad(t *testing.T, addrs []string, workers int) *writeLedger {
	l := &writeLedger{stop: make(chan struct{})}
	for w := 0; w < workers; w++ {
		c := connectAll(t, addrs)
		for g := 0; g < 4; g++ {
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				for i := 0; ; i++ {
					select {
					case <-l.stop:
						return
					default:
					}
					p := fmt.Sprintf("/load-%d-%d-%d", w, g, i)
					if _, err := c.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll)); err == nil {
						l.mu.Lock()
						l.acked = append(l.acked, p)
						l.mu.Unlock()
					} else {
						// Not acknowledged: the write may or may not have happened.
						select {
						case <-l.stop:
							return
						case <-time.After(20 * time.Millisecond):
						}
					}
				}
			}()
		}
	}
	t.Cleanup(l.halt)
	return l
}

func (l *writeLedger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

func (l *writeLedger) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// waitProgress waits until the load made n more acknowledged writes: the ensemble serves
// writes again after a step.
func (e *rcEnsemble) waitProgress(l *writeLedger, n int) {
	e.t.Helper()
	base := l.count()
	e.waitFor(fmt.Sprintf("%d more acknowledged writes (have %d)", n, base), func() bool { return l.count() >= base+n })
}

// checkLedger reads every acknowledged write back through each of ids after a sync.
func (e *rcEnsemble) checkLedger(l *writeLedger, ids []int) {
	e.t.Helper()
	l.halt()
	for _, id := range ids {
		c := connectAll(e.t, []string{e.nodes[id-1].addr()})
		if _, err := c.Sync("/"); err != nil {
			e.t.Fatalf("sync on server %d: %v", id, err)
		}
		kids, _, err := c.Children("/")
		if err != nil {
			e.t.Fatalf("children of / on server %d: %v", id, err)
		}
		have := map[string]bool{}
		for _, k := range kids {
			have["/"+k] = true
		}
		l.mu.Lock()
		for _, p := range l.acked {
			if !have[p] {
				l.mu.Unlock()
				e.t.Fatalf("acknowledged write %s missing on server %d", p, id)
			}
		}
		l.mu.Unlock()
	}
	e.t.Logf("%d acknowledged writes, all present on servers %v", l.count(), ids)
}

func (e *rcEnsemble) lines(role map[int]string) []string {
	var out []string
	for id, r := range role {
		out = append(out, e.nodes[id-1].line(r))
	}
	return out
}

// checkFiles checks what a reconfig leaves next to node id's zoo.cfg, as ZooKeeper leaves
// it: the zoo.cfg as first written in zoo.cfg.bak, the zoo.cfg pointing at
// zoo.cfg.dynamic.<version> with the server lines moved there (and clientPort gone, as the
// configuration names the client address), no proposal left in zoo.cfg.dynamic.next.
func (e *rcEnsemble) checkFiles(id int, version int64, want []string) {
	e.t.Helper()
	n := e.nodes[id-1]
	dyn := config.DynamicConfigPath(n.cfg, version)
	e.waitFor(fmt.Sprintf("server %d's zoo.cfg to point at %s", id, dyn), func() bool {
		b, err := os.ReadFile(n.cfg)
		return err == nil && strings.Contains(string(b), "dynamicConfigFile="+dyn+"\n")
	})
	static, err := os.ReadFile(n.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, l := range strings.Split(string(static), "\n") {
		if strings.HasPrefix(l, "server.") || strings.HasPrefix(l, "clientPort=") {
			e.t.Errorf("server %d's zoo.cfg still has %q after a reconfig:\n%s", id, l, static)
		}
	}
	if !strings.Contains(string(static), "reconfigEnabled=true") {
		e.t.Errorf("server %d's zoo.cfg lost its settings:\n%s", id, static)
	}
	bak, err := os.ReadFile(n.cfg + ".bak")
	if err != nil || !strings.Contains(string(bak), "server.") {
		e.t.Errorf("server %d's zoo.cfg.bak: %q, %v", id, bak, err)
	}
	dynText, err := os.ReadFile(dyn)
	if err != nil {
		e.t.Fatal(err)
	}
	got := strings.Split(string(dynText), "\n")
	slices.Sort(got)
	w := slices.Clone(want)
	slices.Sort(w)
	if !slices.Equal(got, w) {
		e.t.Errorf("server %d's %s:\n%s\nwant the lines %q", id, dyn, dynText, w)
	}
	if _, err := os.Stat(n.cfg + config.NextDynamicConfigSuffix); !errors.Is(err, os.ErrNotExist) {
		e.t.Errorf("server %d: %s left behind: %v", id, n.cfg+config.NextDynamicConfigSuffix, err)
	}
	c, err := config.Load(n.cfg)
	if err != nil {
		e.t.Fatalf("loading server %d's rewritten zoo.cfg: %v", id, err)
	}
	if c.DynamicVersion != version {
		e.t.Errorf("server %d's zoo.cfg loads version %x, want %x", id, c.DynamicVersion, version)
	}
}

// TestProcessReconfig: zkd processes started from zoo.cfg files with reconfigEnabled grow
// 3 -> 5 and shrink back to 3 while a pipelining client load runs, remove their leader
// (and take it back), swap a participant for an observer and back; no acknowledged write
// is lost. Every step rewrites the zoo.cfg and its dynamic file as ZooKeeper does, and a
// restarted member comes back with the configuration from them.
func TestProcessReconfig(t *testing.T) {
	e := newRCEnsemble(t, 5)
	for id := 1; id <= 3; id++ {
		e.configure(id, []int{1, 2, 3})
		e.start(id)
	}
	all3 := map[int]string{1: "participant", 2: "participant", 3: "participant"}
	v0 := e.waitConfig([]int{1, 2, 3}, e.lines(all3))
	if v0&0xffffffff != 0 {
		t.Fatalf("first configuration version %x: want the first epoch's zxid", v0)
	}
	load := startLoad(t, []string{e.nodes[0].addr(), e.nodes[1].addr(), e.nodes[2].addr()}, 2)
	e.waitProgress(load, 50)

	// Grow 3 -> 5: the new servers start from the members plus themselves and follow
	// without a vote until the reconfig adds them.
	for _, id := range []int{4, 5} {
		e.configure(id, []int{1, 2, 3, id})
		e.start(id)
	}
	e.waitFor("servers 4 and 5 to follow", func() bool {
		return e.nodes[3].p.mode() == "follower" && e.nodes[4].p.mode() == "follower"
	})
	su := e.superConn(1, 2, 3)
	e.reconfig(su, []string{e.nodes[3].line("participant"), e.nodes[4].line("participant")}, nil)
	all5 := map[int]string{1: "participant", 2: "participant", 3: "participant", 4: "participant", 5: "participant"}
	v1 := e.waitConfig([]int{1, 2, 3, 4, 5}, e.lines(all5))
	for id := 1; id <= 5; id++ {
		e.checkFiles(id, v1, e.lines(all5))
	}
	e.waitProgress(load, 50)

	// Shrink 5 -> 3.
	e.reconfig(su, nil, []string{"4", "5"})
	v2 := e.waitConfig([]int{1, 2, 3}, e.lines(all3))
	if v2 <= v1 {
		t.Fatalf("version %x after shrinking, %x before", v2, v1)
	}
	e.checkFiles(2, v2, e.lines(all3))
	e.waitProgress(load, 50)
	e.stop(4)
	e.stop(5)

	// Remove the leader: another member leads, the old one is left out, then taken back.
	lead := e.leader()
	if lead == 0 {
		t.Fatal("no leader")
	}
	var others []int
	for id := 1; id <= 3; id++ {
		if id != lead {
			others = append(others, id)
		}
	}
	su2 := e.superConn(others...)
	e.reconfig(su2, nil, []string{strconv.Itoa(lead)})
	rest := map[int]string{others[0]: "participant", others[1]: "participant"}
	e.waitConfig(others, e.lines(rest))
	e.waitFor("a new leader", func() bool { l := e.leader(); return l != 0 && l != lead })
	e.waitProgress(load, 50)
	e.reconfig(su2, []string{e.nodes[lead-1].line("participant")}, nil)
	e.waitConfig([]int{1, 2, 3}, e.lines(all3))
	e.waitProgress(load, 50)

	// Swap a follower for an observer and back.
	obs := 0
	for id := 1; id <= 3 && obs == 0; id++ {
		if e.nodes[id-1].p.mode() == "follower" {
			obs = id
		}
	}
	if obs == 0 {
		t.Fatal("no follower")
	}
	e.reconfig(su2, []string{e.nodes[obs-1].line("observer")}, nil)
	swapped := map[int]string{1: "participant", 2: "participant", 3: "participant"}
	swapped[obs] = "observer"
	e.waitConfig([]int{1, 2, 3}, e.lines(swapped))
	e.waitFor(fmt.Sprintf("server %d to observe", obs), func() bool { return e.nodes[obs-1].p.mode() == "observer" })
	e.waitProgress(load, 50)
	e.reconfig(su2, []string{e.nodes[obs-1].line("participant")}, nil)
	vLast := e.waitConfig([]int{1, 2, 3}, e.lines(all3))
	e.waitFor(fmt.Sprintf("server %d to follow again", obs), func() bool { return e.nodes[obs-1].p.mode() == "follower" })
	e.waitProgress(load, 50)
	e.checkLedger(load, []int{1, 2, 3})

	// A restarted member reads the configuration back from its rewritten zoo.cfg and
	// dynamic file.
	for id := 1; id <= 3; id++ {
		e.checkFiles(id, vLast, e.lines(all3))
	}
	e.stop(obs)
	e.start(obs)
	if got := e.waitConfig([]int{obs}, e.lines(all3)); got != vLast {
		t.Fatalf("restarted server %d serves version %x, want %x", obs, got, vLast)
	}
	e.waitFor(fmt.Sprintf("restarted server %d to follow", obs), func() bool { return e.nodes[obs-1].p.mode() == "follower" })
}
