package nemesis

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/faultnet"
	"github.com/zkd-io/zkd/internal/testing/portlock"
	"github.com/zkd-io/zkd/internal/testing/proc"
	"github.com/zkd-io/zkd/internal/testing/refzk"
)

// Targets: which server the ensemble runs.
const (
	TargetZkd       = "zkd"
	TargetZooKeeper = "zookeeper"
)

// process is one running member.
type process interface {
	addr() string
	// signal sends SIGSTOP or SIGCONT.
	signal(sig syscall.Signal) error
	// kill sends SIGKILL and waits until the process is reaped.
	kill()
	exited() bool
	logTail(lines int) string
	logText() string
}

// Cluster is an ensemble of real server processes on 127.0.0.1 whose quorum and election
// traffic runs through one faultnet bridge per ordered pair of members, so that one member
// can be cut off from the others while clients still reach it.
type Cluster struct {
	t        testing.TB
	target   string
	bin      string // zkd binary
	tick     int
	n        int
	dirs     []string
	cfgs     [][]string // zoo.cfg lines per member: its own view of server.N
	ports    []int      // zkd: client port per member (zookeeper: chosen by refzk at each start)
	bridges  [][][2]*faultnet.Bridge
	mu       sync.Mutex
	procs    []process // nil while down
	isolated int       // member cut off from the others, or -1
}

// StartCluster starts n members of target (TargetZkd runs the binary bin) and waits until
// one leads and the others follow.
func StartCluster(t testing.TB, target, bin string, n, tick int) (*Cluster, error) {
	c := &Cluster{t: t, target: target, bin: bin, tick: tick, n: n, isolated: -1}
	if target == TargetZooKeeper {
		if ok, why := refzk.Available(); !ok {
			return nil, fmt.Errorf("reference ZooKeeper not available: %s", why)
		}
	}
	// Below the ephemeral range and locked machine-wide: a port from a listener on :0 was
	// taken by another test's outgoing connection before a member bound it (a flake in CI).
	free := func() (int, error) {
		port, lock, err := portlock.Reserve()
		if err != nil {
			return 0, fmt.Errorf("choosing a port: %w", err)
		}
		t.Cleanup(func() { lock.Close() })
		return port, nil
	}
	quorum, election := make([]int, n), make([]int, n)
	c.ports = make([]int, n)
	for i := range n {
		var err error
		for _, p := range []*int{&quorum[i], &election[i], &c.ports[i]} {
			if *p, err = free(); err != nil {
				return nil, err
			}
		}
	}
	// bridges[a][b] carries a's connections to b's quorum ([0]) and election ([1]) ports.
	c.bridges = make([][][2]*faultnet.Bridge, n)
	for a := range n {
		c.bridges[a] = make([][2]*faultnet.Bridge, n)
		for b := range n {
			if a == b {
				continue
			}
			for k, port := range []int{quorum[b], election[b]} {
				br, err := faultnet.New("", fmt.Sprintf("127.0.0.1:%d", port))
				if err != nil {
					return nil, fmt.Errorf("bridge: %w", err)
				}
				t.Cleanup(func() { br.Close() })
				c.bridges[a][b][k] = br
			}
		}
	}
	for a := range n {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "myid"), []byte(strconv.Itoa(a+1)+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("myid: %w", err)
		}
		c.dirs = append(c.dirs, dir)
		var lines []string
		for b := range n {
			q, e := fmt.Sprintf("127.0.0.1:%d", quorum[b]), fmt.Sprint(election[b])
			if a != b {
				q = c.bridges[a][b][0].Addr()
				_, e, _ = net.SplitHostPort(c.bridges[a][b][1].Addr())
			}
			lines = append(lines, fmt.Sprintf("server.%d=%s:%s", b+1, q, e))
		}
		c.cfgs = append(c.cfgs, lines)
	}
	c.procs = make([]process, n)
	for i := range n {
		if err := c.Start(i); err != nil {
			return nil, err
		}
	}
	if err := c.WaitHealthy(90 * time.Second); err != nil {
		return nil, err
	}
	return c, nil
}

// Start (re)starts member i on its data directory.
func (c *Cluster) Start(i int) error { return c.StartEnv(i, nil) }

// StartEnv is Start with variables added to a zkd member's environment (ZooKeeper
// members ignore them).
func (c *Cluster) StartEnv(i int, env []string) error {
	var p process
	var err error
	switch c.target {
	case TargetZkd:
		p, err = c.startZkd(i, env)
	case TargetZooKeeper:
		p = c.startZooKeeper(i)
	default:
		err = fmt.Errorf("unknown target %q", c.target)
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.procs[i] = p
	c.mu.Unlock()
	return nil
}

func (c *Cluster) startZkd(i int, env []string) (process, error) {
	cfg := filepath.Join(c.dirs[i], "zoo.cfg")
	lines := append([]string{
		fmt.Sprintf("tickTime=%d", c.tick), "initLimit=10", "syncLimit=5",
		"dataDir=" + c.dirs[i], fmt.Sprintf("clientPort=%d", c.ports[i]), "clientPortAddress=127.0.0.1",
		"maxClientCnxns=0", "4lw.commands.whitelist=*", "preAllocSize=1024",
	}, c.cfgs[i]...)
	if err := os.WriteFile(cfg, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("zoo.cfg: %w", err)
	}
	return spawnZkd(c.t, c.bin, fmt.Sprintf("127.0.0.1:%d", c.ports[i]), filepath.Join(c.dirs[i], "zkd.log"), env,
		"--config", cfg, "--log-level", "info")
}

func (c *Cluster) startZooKeeper(i int) process {
	s := refzk.StartStandalone(c.t, refzk.Options{
		TickTime: c.tick,
		DataDir:  c.dirs[i],
		MyID:     i + 1,
		Config:   append([]string{"preAllocSize=1024"}, c.cfgs[i]...),
		NoWait:   true,
	})
	return &zkProc{s: s}
}

// N is the number of members.
func (c *Cluster) N() int { return c.n }

// Members are the members' client addresses, "" for those that are down.
func (c *Cluster) Members() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, c.n)
	for i, p := range c.procs {
		if p != nil {
			out[i] = p.addr()
		}
	}
	return out
}

// Addr is member i's client address, or "" while it is down.
func (c *Cluster) Addr(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.procs[i] == nil {
		return ""
	}
	return c.procs[i].addr()
}

// Mode is what member i's srvr reports as Mode ("leader", "follower", ...), or "" when it
// does not answer.
func (c *Cluster) Mode(i int) string {
	addr := c.Addr(i)
	if addr == "" {
		return ""
	}
	return srvrMode(addr)
}

func srvrMode(addr string) string {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := nc.Write([]byte("srvr")); err != nil {
		return ""
	}
	b, _ := io.ReadAll(nc)
	for _, l := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(l, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// Roles returns the leader (-1 if none) and the followers among the members in skip's
// complement.
func (c *Cluster) Roles(skip map[int]bool) (leader int, followers []int) {
	leader = -1
	for i := range c.n {
		if skip[i] {
			continue
		}
		switch c.Mode(i) {
		case "leader":
			leader = i
		case "follower":
			followers = append(followers, i)
		}
	}
	return leader, followers
}

// WaitHealthy waits until every member serves: one leader, the rest followers.
func (c *Cluster) WaitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		l, f := c.Roles(nil)
		if l >= 0 && len(f) == c.n-1 {
			return nil
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			fmt.Fprintf(&b, "the ensemble did not serve with all %d members within %v (leader %d, followers %v)", c.n, timeout, l+1, f)
			for i := range c.n {
				c.mu.Lock()
				p := c.procs[i]
				c.mu.Unlock()
				if p != nil {
					fmt.Fprintf(&b, "\n--- server %d (mode %q, exited %v)\n%s", i+1, c.Mode(i), p.exited(), p.logTail(25))
				}
			}
			return errors.New(b.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Kill sends SIGKILL to member i and waits until it is gone.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	p := c.procs[i]
	c.procs[i] = nil
	c.mu.Unlock()
	if p != nil {
		p.kill()
	}
}

// Signal sends SIGSTOP or SIGCONT to member i.
func (c *Cluster) Signal(i int, sig syscall.Signal) error {
	c.mu.Lock()
	p := c.procs[i]
	c.mu.Unlock()
	if p == nil {
		return fmt.Errorf("server %d is down", i+1)
	}
	return p.signal(sig)
}

// Isolate cuts member i off from the others' quorum and election traffic: bytes are held,
// so both sides see silence. With reset, the connections open now are also closed, so both
// sides see them drop at once.
func (c *Cluster) Isolate(i int, reset bool) {
	c.mu.Lock()
	c.isolated = i
	c.mu.Unlock()
	for _, br := range c.pairBridges(i) {
		br.SetMode(faultnet.Pause)
		if reset {
			br.DropAll()
		}
	}
}

// Heal ends an isolation. The connections the bridges held are closed first: what they
// hold is stale, and the members reconnect.
func (c *Cluster) Heal() {
	c.mu.Lock()
	i := c.isolated
	c.isolated = -1
	c.mu.Unlock()
	if i < 0 {
		return
	}
	for _, br := range c.pairBridges(i) {
		br.DropAll()
		br.SetMode(faultnet.Pass)
	}
}

func (c *Cluster) pairBridges(i int) []*faultnet.Bridge {
	var out []*faultnet.Bridge
	for j := range c.n {
		if j != i {
			out = append(out, c.bridges[i][j][0], c.bridges[i][j][1], c.bridges[j][i][0], c.bridges[j][i][1])
		}
	}
	return out
}

// DataDir is member i's dataDir (its txn log is in DataDir/version-2).
func (c *Cluster) DataDir(i int) string { return c.dirs[i] }

// Logs returns each running member's whole log, for scanning after a run.
func (c *Cluster) Logs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, c.n)
	for i, p := range c.procs {
		if p != nil {
			out[i] = p.logText()
		}
	}
	return out
}

// LogTail is the end of member i's log.
func (c *Cluster) LogTail(i, lines int) string {
	c.mu.Lock()
	p := c.procs[i]
	c.mu.Unlock()
	if p == nil {
		return "(down)"
	}
	return p.logTail(lines)
}

// Close kills every member.
func (c *Cluster) Close() {
	for i := range c.n {
		c.Kill(i)
	}
}

// zkdProc is a zkd process whose output goes to a file.
type zkdProc struct {
	p       *proc.Proc
	address string
	logPath string
}

// spawnZkd starts bin with args; its stdout and stderr are appended to logPath. The process
// is killed when the test ends, and by the kernel if the test binary dies first.
func spawnZkd(t testing.TB, bin, addr, logPath string, env []string, args ...string) (*zkdProc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("zkd log: %w", err)
	}
	defer f.Close() // the child has its own copy
	fmt.Fprintf(f, "=== nemesis: start %s\n", strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
		fmt.Fprintf(f, "=== nemesis: environment %s\n", strings.Join(env, " "))
	}
	cmd.Stdout, cmd.Stderr = f, f
	p, err := proc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting zkd: %w", err)
	}
	zp := &zkdProc{p: p, address: addr, logPath: logPath}
	t.Cleanup(zp.kill)
	return zp, nil
}

func (p *zkdProc) addr() string                    { return p.address }
func (p *zkdProc) signal(sig syscall.Signal) error { return p.p.Signal(sig) }
func (p *zkdProc) kill()                           { p.p.Kill(time.Minute) }
func (p *zkdProc) exited() bool                    { return p.p.Exited() }

func (p *zkdProc) logText() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func (p *zkdProc) logTail(n int) string { return tailLines(p.logText(), n) }

func tailLines(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// zkProc is an Apache ZooKeeper member run by refzk.
type zkProc struct{ s *refzk.Server }

func (p *zkProc) addr() string { return p.s.Addr() }

func (p *zkProc) signal(sig syscall.Signal) error { return p.s.Signal(sig) }
func (p *zkProc) kill()                           { p.s.Kill() }
func (p *zkProc) exited() bool                    { return p.s.Exited() }

func (p *zkProc) logText() string {
	b, err := os.ReadFile(p.s.LogPath())
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func (p *zkProc) logTail(n int) string { return tailLines(p.logText(), n) }
