package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
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
	"github.com/zkd-io/zkd/internal/testing/portlock"
	"github.com/zkd-io/zkd/internal/testing/refzk"
)

const rcSuperPw = "r3config"

// rcNode is one server of a reconfigurable ensemble, a zkd process or an Apache ZooKeeper,
// with its own zoo.cfg and data directory.
type rcNode struct {
	id                       int
	client, quorum, election int
	dir, cfg                 string
	p                        *proc
	// java makes the node an Apache ZooKeeper (ref, started by internal/refzk, which picks
	// the client port) instead of a zkd process (p).
	java   bool
	ref    *refzk.Server
	refCfg []string // the ZooKeeper's zoo.cfg lines beside refzk's
}

func (n *rcNode) addr() string { return fmt.Sprintf("127.0.0.1:%d", n.client) }

func (n *rcNode) running() bool { return n.p != nil || n.ref != nil }

// mode is what srvr reports as Mode, "" when the node does not serve.
func (n *rcNode) mode() string {
	switch {
	case n.p != nil:
		return n.p.mode()
	case n.ref != nil:
		out, err := n.ref.Command("srvr")
		if err != nil {
			return ""
		}
		for _, l := range strings.Split(out, "\n") {
			if m, ok := strings.CutPrefix(l, "Mode: "); ok {
				return m
			}
		}
	}
	return ""
}

func (n *rcNode) logTail() string {
	if n.p != nil {
		return tail(n.p.logText(), 25)
	}
	b, err := os.ReadFile(n.ref.LogPath())
	if err != nil {
		return err.Error()
	}
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, "Processing srvr command") {
			keep = append(keep, l)
		}
	}
	return tail(strings.Join(keep, "\n"), 40)
}

// line is the node's server.N line as a reconfig names it: ports, role and client address.
func (n *rcNode) line(role string) string {
	return fmt.Sprintf("server.%d=127.0.0.1:%d:%d:%s;127.0.0.1:%d", n.id, n.quorum, n.election, role, n.client)
}

// plain is the node's server.N line without a client address, as /zookeeper/config prints
// a member whose zoo.cfg line had none.
func (n *rcNode) plain() string {
	return fmt.Sprintf("server.%d=127.0.0.1:%d:%d:participant", n.id, n.quorum, n.election)
}

type rcEnsemble struct {
	t     *testing.T
	nodes []*rcNode // index id-1
	// plain leaves the client addresses out of the zoo.cfg server lines (a ZooKeeper's
	// client port is known only once it runs).
	plain bool
}

// reservePort locks a loopback port below the ephemeral range for the whole test: the
// servers bind their quorum and election ports late (and again on a restart), which a
// port from the ephemeral range could lose to one of the load's outgoing connections.
func reservePort(t *testing.T) int {
	p, lock, err := portlock.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	return p
}

// newRCEnsemble reserves ports for n servers, the java ones Apache ZooKeeper; none is
// configured or started yet.
func newRCEnsemble(t *testing.T, n int, java map[int]bool) *rcEnsemble {
	if testing.Short() {
		t.Skip("starts processes")
	}
	e := &rcEnsemble{t: t}
	for i := 1; i <= n; i++ {
		e.nodes = append(e.nodes, &rcNode{id: i, client: reservePort(t), quorum: reservePort(t), election: reservePort(t), dir: t.TempDir(), java: java[i]})
		e.nodes[i-1].cfg = filepath.Join(e.nodes[i-1].dir, "zoo.cfg")
	}
	return e
}

// configure writes node id's zoo.cfg naming members as participants, as an operator
// writes it: the initial members name each other, a server about to join by reconfig
// names the current members and itself.
func (e *rcEnsemble) configure(id int, members []int) {
	n := e.nodes[id-1]
	settings := []string{
		"initLimit=20", "syncLimit=10", "reconfigEnabled=true",
		"DigestAuthenticationProvider.superDigest=" + auth.DigestID("super", rcSuperPw),
	}
	for _, m := range members {
		if e.plain {
			settings = append(settings, e.nodes[m-1].plain())
		} else {
			settings = append(settings, e.nodes[m-1].line("participant"))
		}
	}
	if n.java {
		n.refCfg = settings
		return
	}
	lines := append([]string{
		"tickTime=300", "dataDir=" + n.dir,
		fmt.Sprintf("clientPort=%d", n.client), "clientPortAddress=127.0.0.1",
		"maxClientCnxns=0", "4lw.commands.whitelist=*", "preAllocSize=1024",
	}, settings...)
	if err := os.WriteFile(filepath.Join(n.dir, "myid"), []byte(strconv.Itoa(id)), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(n.cfg, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *rcEnsemble) start(id int) {
	n := e.nodes[id-1]
	if !n.java {
		n.p = spawn(e.t, n.addr(), []string{"--config", n.cfg, "--log-level", "info"})
		return
	}
	n.ref = refzk.StartStandalone(e.t, refzk.Options{
		TickTime: 300, MyID: id, NoWait: true, DataDir: n.dir, Config: n.refCfg,
	})
	_, port, err := net.SplitHostPort(n.ref.Addr())
	if err != nil {
		e.t.Fatal(err)
	}
	if n.client, err = strconv.Atoi(port); err != nil {
		e.t.Fatal(err)
	}
	n.cfg = n.ref.ConfigPath()
}

func (e *rcEnsemble) stop(id int) {
	n := e.nodes[id-1]
	if n.p != nil {
		n.p.stop(e.t)
	}
	if n.ref != nil {
		n.ref.Stop()
	}
	n.p, n.ref = nil, nil
}

func (e *rcEnsemble) leader() int {
	for _, n := range e.nodes {
		if n.running() && n.mode() == "leader" {
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
				if n.running() {
					logs = append(logs, fmt.Sprintf("--- server %d (%s)\n%s", n.id, n.mode(), n.logTail()))
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

// waitConfig waits until every node of ids serves the configuration want (its server
// lines) and returns its version. The members must serve it byte for byte, with the same
// Stat where both kinds of server make it alike.
func (e *rcEnsemble) waitConfig(ids []int, want []string) int64 {
	e.t.Helper()
	want = slices.Sorted(slices.Values(want))
	var first string
	var firstStat *zk.Stat
	firstID := 0
	for _, id := range ids {
		var text string
		var st *zk.Stat
		e.waitFor(fmt.Sprintf("server %d to serve the configuration %q", id, want), func() bool {
			text, st = e.config(id)
			if st == nil {
				return false
			}
			lines, v := splitConfig(text)
			return slices.Equal(lines, want) && st.Mzxid == v
		})
		if firstID == 0 {
			first, firstStat, firstID = text, st, id
			continue
		}
		if text != first {
			e.t.Fatalf("/zookeeper/config of server %d:\n%s\nof server %d:\n%s", id, text, firstID, first)
		}
		if d := statDiff(st, firstStat); d != "" {
			e.t.Errorf("Stat of /zookeeper/config: server %d vs %d: %s", id, firstID, d)
		}
	}
	_, v := splitConfig(first)
	return v
}

// statDiff names the fields of a /zookeeper/config Stat that differ. mtime is left out:
// each member stamps the node with its own clock when it activates a configuration
// (ZKDatabase.initConfigInZKDatabase, Time.currentWallTime); so are ctime, czxid and
// pzxid: each server makes the node at start.
func statDiff(a, b *zk.Stat) string {
	var d []string
	if a.Mzxid != b.Mzxid {
		d = append(d, fmt.Sprintf("mzxid %x != %x", a.Mzxid, b.Mzxid))
	}
	if a.Version != b.Version {
		d = append(d, fmt.Sprintf("version %d != %d", a.Version, b.Version))
	}
	if a.DataLength != b.DataLength {
		d = append(d, fmt.Sprintf("dataLength %d != %d", a.DataLength, b.DataLength))
	}
	return strings.Join(d, ", ")
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

// reconfig runs an incremental reconfig. A member whose role the reconfig ends (a
// follower of a removed leader) closes its clients' connections, which can lose the
// answer: after an error it checks, through a sync and a read, whether the change was
// made, and sends the request again only if not.
func (e *rcEnsemble) reconfig(c *zk.Conn, joining, leaving []string) {
	e.t.Helper()
	made := func() bool {
		if _, err := c.Sync("/zookeeper/config"); err != nil {
			return false
		}
		data, _, err := c.Get("/zookeeper/config")
		if err != nil {
			return false
		}
		lines, _ := splitConfig(string(data))
		for _, l := range joining {
			if !slices.Contains(lines, l) {
				return false
			}
		}
		for _, id := range leaving {
			if slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "server."+id+"=") }) {
				return false
			}
		}
		return true
	}
	e.waitFor(fmt.Sprintf("reconfig +%q -%q", joining, leaving), func() bool {
		_, err := c.IncrementalReconfig(joining, leaving, -1)
		if err == nil {
			return true
		}
		e.t.Logf("reconfig +%q -%q: %v", joining, leaving, err)
		return made()
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

// checkFiles checks what a reconfig leaves next to node id's zoo.cfg, as ZooKeeper leaves
// it: the zoo.cfg as first written in zoo.cfg.bak, the zoo.cfg pointing at
// zoo.cfg.dynamic.<version> with the server lines moved there (and clientPort gone when the
// configuration names the node's client address), no proposal left in zoo.cfg.dynamic.next,
// and config.Load reading the configuration back.
func (e *rcEnsemble) checkFiles(id int, version int64, want []string) {
	e.t.Helper()
	n := e.nodes[id-1]
	dyn := config.DynamicConfigPath(n.cfg, version)
	e.waitFor(fmt.Sprintf("server %d's zoo.cfg to point at %s", id, dyn), func() bool {
		b, err := os.ReadFile(n.cfg)
		if err != nil {
			return false
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "dynamicConfigFile="); ok {
				named, errA := os.Stat(v)
				want, errB := os.Stat(dyn)
				return errA == nil && errB == nil && os.SameFile(named, want)
			}
		}
		return false
	})
	static, err := os.ReadFile(n.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	namesClient := slices.ContainsFunc(want, func(l string) bool {
		return strings.HasPrefix(l, fmt.Sprintf("server.%d=", id)) && strings.Contains(l, ";")
	})
	for _, l := range strings.Split(string(static), "\n") {
		if strings.HasPrefix(l, "server.") || (namesClient && strings.HasPrefix(l, "clientPort=")) {
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

// rcState is the configuration a scenario expects: each member's server line.
type rcState map[int]string

func (s rcState) lines() []string {
	var out []string
	for _, l := range s {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

func (s rcState) ids() []int {
	var out []int
	for id := range s {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// scenario runs the reconfigurations of issue 13 on a running 3-member ensemble (members
// 1-3, configured by configure) while a pipelining client load writes through them: the
// joiners start from the members plus themselves and are added (grow), then removed
// (shrink); member swap, which must be a follower, becomes an observer and a participant
// again; the leader is removed, another member takes over, and the old leader is added
// back. Every member serves the same /zookeeper/config, byte for byte, after each step, and
// no acknowledged write is lost. It returns the last state and its version.
func (e *rcEnsemble) scenario(joiners []int, swap int) (rcState, int64) {
	t := e.t
	t.Helper()
	began := time.Now()
	step := func(what string) {
		t.Logf("%s at %v", what, time.Since(began).Round(time.Millisecond))
	}
	cur := rcState{}
	for id := 1; id <= 3; id++ {
		if e.plain {
			cur[id] = e.nodes[id-1].plain()
		} else {
			cur[id] = e.nodes[id-1].line("participant")
		}
	}
	v0 := e.waitConfig(cur.ids(), cur.lines())
	if v0&0xffffffff != 0 {
		t.Fatalf("first configuration version %x: want the first epoch's zxid", v0)
	}
	load := startLoad(t, []string{e.nodes[0].addr(), e.nodes[1].addr(), e.nodes[2].addr()}, 2)
	e.waitProgress(load, 30)

	step("load running")
	// Grow: the joiners follow without a vote until the reconfig adds them.
	var joining, leaving []string
	for _, id := range joiners {
		e.configure(id, []int{1, 2, 3, id})
		e.start(id)
	}
	for _, id := range joiners {
		e.waitFor(fmt.Sprintf("server %d to follow", id), func() bool { return e.nodes[id-1].mode() == "follower" })
		joining = append(joining, e.nodes[id-1].line("participant"))
		leaving = append(leaving, strconv.Itoa(id))
	}
	su := e.superConn(1, 2, 3)
	e.reconfig(su, joining, nil)
	grown := maps.Clone(cur)
	for _, id := range joiners {
		grown[id] = e.nodes[id-1].line("participant")
	}
	v1 := e.waitConfig(grown.ids(), grown.lines())
	for _, id := range grown.ids() {
		e.checkFiles(id, v1, grown.lines())
	}
	e.waitProgress(load, 30)

	step("grown")
	// Shrink back.
	e.reconfig(su, nil, leaving)
	v2 := e.waitConfig(cur.ids(), cur.lines())
	if v2 <= v1 {
		t.Fatalf("version %x after shrinking, %x before", v2, v1)
	}
	e.waitProgress(load, 30)
	for _, id := range joiners {
		e.stop(id)
	}

	step("shrunk")
	// Swap a follower for an observer and back.
	if m := e.nodes[swap-1].mode(); m != "follower" {
		t.Fatalf("server %d to swap is %q", swap, m)
	}
	e.reconfig(su, []string{e.nodes[swap-1].line("observer")}, nil)
	cur[swap] = e.nodes[swap-1].line("observer")
	e.waitConfig(cur.ids(), cur.lines())
	e.waitFor(fmt.Sprintf("server %d to observe", swap), func() bool { return e.nodes[swap-1].mode() == "observer" })
	e.waitProgress(load, 30)
	e.reconfig(su, []string{e.nodes[swap-1].line("participant")}, nil)
	cur[swap] = e.nodes[swap-1].line("participant")
	e.waitConfig(cur.ids(), cur.lines())
	e.waitFor(fmt.Sprintf("server %d to follow again", swap), func() bool { return e.nodes[swap-1].mode() == "follower" })
	e.waitProgress(load, 30)

	step("swapped and back")
	// Remove the leader: another member leads; then the old leader is taken back.
	lead := e.leader()
	if lead == 0 {
		t.Fatal("no leader")
	}
	var others []int
	for _, id := range cur.ids() {
		if id != lead {
			others = append(others, id)
		}
	}
	su2 := e.superConn(others...)
	e.reconfig(su2, nil, []string{strconv.Itoa(lead)})
	without := maps.Clone(cur)
	delete(without, lead)
	e.waitConfig(without.ids(), without.lines())
	e.waitFor("a new leader", func() bool { l := e.leader(); return l != 0 && l != lead })
	e.waitProgress(load, 30)
	e.reconfig(su2, []string{e.nodes[lead-1].line("participant")}, nil)
	cur[lead] = e.nodes[lead-1].line("participant")
	vLast := e.waitConfig(cur.ids(), cur.lines())
	e.waitProgress(load, 30)
	step("leader removed and back")
	e.checkLedger(load, cur.ids())
	for _, id := range cur.ids() {
		e.checkFiles(id, vLast, cur.lines())
	}
	return cur, vLast
}

// TestProcessReconfig: zkd processes started from zoo.cfg files with reconfigEnabled grow
// 3 -> 5 and shrink back to 3 while a pipelining client load runs, swap a participant for
// an observer and back, remove their leader (and take it back); no acknowledged write is
// lost. Every step rewrites the zoo.cfg and its dynamic file as ZooKeeper does, and a
// restarted member comes back with the configuration from them.
func TestProcessReconfig(t *testing.T) {
	e := newRCEnsemble(t, 5, nil)
	for id := 1; id <= 3; id++ {
		e.configure(id, []int{1, 2, 3})
		e.start(id)
	}
	e.waitFor("a leader", func() bool { return e.leader() != 0 })
	t.Logf("started")
	swap := 1
	if e.leader() == 1 {
		swap = 2
	}
	cur, vLast := e.scenario([]int{4, 5}, swap)
	began := time.Now()

	// A restarted member reads the configuration back from its rewritten zoo.cfg and
	// dynamic file.
	e.stop(swap)
	e.start(swap)
	if got := e.waitConfig([]int{swap}, cur.lines()); got != vLast {
		t.Fatalf("restarted server %d serves version %x, want %x", swap, got, vLast)
	}
	e.waitFor(fmt.Sprintf("restarted server %d to follow", swap), func() bool { return e.nodes[swap-1].mode() == "follower" })
	t.Logf("server %d restarted in %v", swap, time.Since(began).Round(time.Millisecond))
	// So does a whole ensemble restarted at once, where no leader remembers it for them.
	for _, id := range cur.ids() {
		e.stop(id)
	}
	for _, id := range cur.ids() {
		e.start(id)
	}
	if got := e.waitConfig(cur.ids(), cur.lines()); got != vLast {
		t.Fatalf("the restarted ensemble serves version %x, want %x", got, vLast)
	}
	t.Logf("ensemble restarted at %v", time.Since(began).Round(time.Millisecond))
}
