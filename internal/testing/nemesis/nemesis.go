package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zkd-io/zkd/internal/clientwire"
	"github.com/zkd-io/zkd/internal/testing/linearize"
	"github.com/zkd-io/zkd/jute"
)

// Config is one nemesis run.
type Config struct {
	Target         string // TargetZkd or TargetZooKeeper
	ZkdBinary      string // TargetZkd: the zkd executable
	Seed           int64  // the fault schedule, the request mix and the members clients pick follow from it
	Duration       time.Duration
	Clients        int // 0 means 8
	Keys           int // 0 means 32
	Depth          int // requests each client keeps outstanding; 0 means 12
	TickTime       int // ms; 0 means 250
	SessionTimeout time.Duration
	Kinds          []Kind // the faults to inject; nil means all
	// CheckTimeout bounds porcupine per key; 0 means 2 minutes.
	CheckTimeout time.Duration
	// DumpDir, when set, receives porcupine's visualisation of a non-linearizable key.
	DumpDir string
	Logf    func(format string, args ...any)
}

// Result is what a run found.
type Result struct {
	Seed     int64
	Schedule []Fault
	Injected [numKinds]int
	// Damaged counts the damage faults by class; DiskErrorsFired the disk-error faults
	// whose failpoint fired before the member was restarted healthy.
	Damaged         [numDamageClasses]int
	DiskErrorsFired int
	Stats           Stats
	Checked         int // replies the FIFO and zxid checks looked at
	Violations      []Violation
	// TimedOut lists the keys porcupine could not decide in time (not violations).
	TimedOut []string
	Final    []FinalRead
}

// Summary is one line about the run.
func (r *Result) Summary() string {
	byCheck := map[string]int{}
	for _, v := range r.Violations {
		byCheck[v.Check]++
	}
	var inj []string
	for k := range numKinds {
		inj = append(inj, fmt.Sprintf("%s=%d", k, r.Injected[k]))
	}
	var dmg []string
	for c := range numDamageClasses {
		dmg = append(dmg, fmt.Sprintf("%s=%d", c, r.Damaged[c]))
	}
	inj = append(inj, "("+strings.Join(dmg, " ")+")", fmt.Sprintf("disk-errors-fired=%d", r.DiskErrorsFired))
	var vio []string
	for _, c := range []string{"fifo", "zxid", "linearizability", "lost-write", "server"} {
		vio = append(vio, fmt.Sprintf("%s=%d", c, byCheck[c]))
	}
	s := fmt.Sprintf("seed %d: %d requests (%d ops for porcupine, %d unknown), %d replies checked, %d sessions (%d expired), %d connections; faults %s; violations %s",
		r.Seed, r.Stats.Requests, r.Stats.Ops, r.Stats.Unknown, r.Checked, r.Stats.Sessions, r.Stats.Expired, r.Stats.Conns,
		strings.Join(inj, " "), strings.Join(vio, " "))
	if len(r.TimedOut) > 0 {
		s += fmt.Sprintf("; porcupine timed out on %v", r.TimedOut)
	}
	return s
}

// Run starts a 3-member ensemble, loads it with cfg.Clients pipelining clients while the
// schedule's faults are injected one at a time for cfg.Duration, heals everything, reads
// every key from a fresh session and checks the history. An error means the run could not
// be carried out (the ensemble did not start or did not recover); violations are in the
// Result.
func Run(t testing.TB, cfg Config) (*Result, error) {
	if cfg.Clients == 0 {
		cfg.Clients = 8
	}
	if cfg.Keys == 0 {
		cfg.Keys = 32
	}
	if cfg.Depth == 0 {
		cfg.Depth = 12
	}
	if cfg.TickTime == 0 {
		cfg.TickTime = 250
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 4 * time.Second
	}
	if cfg.Kinds == nil {
		cfg.Kinds = []Kind{Kill, Pause, Partition, TornLog}
	}
	if cfg.CheckTimeout == 0 {
		cfg.CheckTimeout = 2 * time.Minute
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	res := &Result{Seed: cfg.Seed}
	// A fault takes its gap, its duration and the wait for recovery: about 6-10 s.
	res.Schedule = Schedule(cfg.Seed, int(cfg.Duration/(4*time.Second))+len(cfg.Kinds), cfg.Kinds)
	logf("nemesis: target %s, seed %d, %v of load, %d clients x %d outstanding, %d keys, tickTime %dms, session timeout %v; schedule (faults run while time is left):\n%s",
		cfg.Target, cfg.Seed, cfg.Duration, cfg.Clients, cfg.Depth, cfg.Keys, cfg.TickTime, cfg.SessionTimeout, FormatSchedule(res.Schedule))

	cl, err := StartCluster(t, cfg.Target, cfg.ZkdBinary, 3, cfg.TickTime)
	if err != nil {
		return res, err
	}
	defer cl.Close()
	keys := make([]string, cfg.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("/nemesis-%d", i)
	}
	if err := createKeys(cl, keys); err != nil {
		return res, err
	}

	rec := NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration)
	defer cancel()
	var wg sync.WaitGroup
	for i := range cfg.Clients {
		c := NewClient(ClientConfig{ID: i + 1, Seed: uint64(cfg.Seed), Members: cl.Members, Keys: keys,
			Depth: cfg.Depth, SessionTimeout: cfg.SessionTimeout, Recorder: rec})
		wg.Go(func() { c.Run(ctx) })
	}
	faultErr := runFaults(ctx, cl, cfg, res, rec, logf)
	wg.Wait()
	// Heal whatever a cut-short fault left, and wait for every member to serve.
	cl.Heal()
	for i := range cl.N() {
		if cl.Addr(i) == "" {
			if err := cl.Start(i); err != nil {
				return res, err
			}
		} else {
			cl.Signal(i, syscall.SIGCONT)
		}
	}
	if err := cl.WaitHealthy(120 * time.Second); err != nil {
		return res, fmt.Errorf("after healing: %w", err)
	}
	if faultErr != nil {
		return res, faultErr
	}

	final, finalOps, err := finalReads(cl, keys, rec)
	if err != nil {
		return res, err
	}
	res.Final = final
	conns, ops, writes, st := rec.Snapshot()
	res.Stats = st
	for _, c := range conns {
		for _, ev := range c.Events {
			if ev.Dir == Received {
				res.Checked++
			}
		}
	}
	res.Violations = append(res.Violations, CheckFIFO(conns)...)
	res.Violations = append(res.Violations, CheckZxid(conns)...)
	lin, timedOut := CheckLinearizable(ops, finalOps, cfg.CheckTimeout, cfg.DumpDir)
	res.Violations = append(res.Violations, lin...)
	res.TimedOut = timedOut
	res.Violations = append(res.Violations, CheckNoLostWrites(writes, final)...)
	for i, l := range cl.Logs() {
		for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
			if strings.Contains(l, bad) {
				res.Violations = append(res.Violations, Violation{Check: "server", Msg: fmt.Sprintf("server %d logged %q:\n%s", i+1, bad, around(l, bad, 40))})
			}
		}
	}
	if len(res.Violations) > 0 && cfg.DumpDir != "" {
		if err := os.MkdirAll(cfg.DumpDir, 0o755); err == nil {
			for i, l := range cl.Logs() {
				os.WriteFile(filepath.Join(cfg.DumpDir, fmt.Sprintf("server-%d.log", i+1)), []byte(l), 0o644)
			}
			os.WriteFile(filepath.Join(cfg.DumpDir, "connections.txt"), []byte(FormatConns(conns)), 0o644)
			os.WriteFile(filepath.Join(cfg.DumpDir, "ops.txt"), []byte(FormatOps(append(ops, finalOps...))), 0o644)
			logf("nemesis: server logs and visualisations kept in %s", cfg.DumpDir)
		}
	}
	return res, nil
}

// around is the part of log from the first line containing s, n lines long.
func around(log, s string, n int) string {
	i := strings.Index(log, s)
	if j := strings.LastIndexByte(log[:i], '\n'); j >= 0 {
		i = j + 1
	}
	lines := strings.SplitN(log[i:], "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// runFaults injects the schedule's faults one at a time until ctx ends. It returns an
// error when the ensemble does not recover from a fault.
func runFaults(ctx context.Context, cl *Cluster, cfg Config, res *Result, rec *Recorder, logf func(string, ...any)) error {
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x74656172))
	wait := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	for i, f := range res.Schedule {
		if !wait(f.Gap) {
			return nil
		}
		if err := cl.WaitHealthy(90 * time.Second); err != nil {
			return fmt.Errorf("before fault %d: %w", i+1, err)
		}
		if ctx.Err() != nil {
			return nil
		}
		leader, followers := cl.Roles(nil)
		target := leader
		if !f.Leader && len(followers) > 0 {
			target = followers[f.Follower%len(followers)]
		}
		if target < 0 {
			continue
		}
		role := "follower"
		if target == leader {
			role = "leader"
		}
		at := rec.now().Round(100 * time.Millisecond)
		res.Injected[f.Kind]++
		switch f.Kind {
		case Kill:
			cl.Kill(target)
			logf("nemesis: t=%v fault %d: kill -9 server %d (%s)", at, i+1, target+1, role)
			wait(f.Dur)
			if err := cl.Start(target); err != nil {
				return err
			}
		case Pause:
			if err := cl.Signal(target, syscall.SIGSTOP); err != nil {
				return err
			}
			logf("nemesis: t=%v fault %d: SIGSTOP server %d (%s) for %v", at, i+1, target+1, role, f.Dur)
			wait(f.Dur)
			if err := cl.Signal(target, syscall.SIGCONT); err != nil {
				return err
			}
		case Partition:
			cl.Isolate(target, f.Reset)
			logf("nemesis: t=%v fault %d: isolate server %d (%s) for %v (reset %v)", at, i+1, target+1, role, f.Dur, f.Reset)
			wait(f.Dur)
			cl.Heal()
		case Damaged:
			cl.Kill(target)
			if cfg.Target == TargetZooKeeper {
				// ZooKeeper refuses to start on damage (or, on a zeroed entry, serves
				// without the txns after it): there is nothing to compare but a kill.
				logf("nemesis: t=%v fault %d: kill -9 server %d (%s), no damage for ZooKeeper", at, i+1, target+1, role)
			} else {
				what, err := Damage(cl.DataDir(target), f.Damage, r)
				if err != nil {
					return err
				}
				res.Damaged[f.Damage]++
				logf("nemesis: t=%v fault %d: kill -9 server %d (%s), %s", at, i+1, target+1, role, what)
			}
			wait(f.Dur)
			if err := cl.Start(target); err != nil {
				return err
			}
		case DiskError:
			cl.Kill(target)
			if cfg.Target == TargetZooKeeper {
				logf("nemesis: t=%v fault %d: kill -9 server %d (%s), no failpoints in ZooKeeper", at, i+1, target+1, role)
				wait(f.Dur)
				if err := cl.Start(target); err != nil {
					return err
				}
				break
			}
			logf("nemesis: t=%v fault %d: restart server %d (%s) with %s=%s for %v", at, i+1, target+1, role, failpointsEnv, f.Failpoint, f.Dur)
			logPath := filepath.Join(cl.DataDir(target), "zkd.log")
			before := fileSize(logPath)
			if err := cl.StartEnv(target, []string{failpointsEnv + "=" + f.Failpoint}); err != nil {
				return err
			}
			wait(f.Dur)
			cl.Kill(target)
			if fired, err := logHas(logPath, before, "injected fault"); err != nil {
				return err
			} else if fired {
				res.DiskErrorsFired++
				logf("nemesis: fault %d: the failpoint fired", i+1)
			}
			if err := cl.Start(target); err != nil {
				return err
			}
		case TornLog:
			cl.Kill(target)
			tear := f.Tear
			if cfg.Target == TargetZooKeeper && tear == TearGarble {
				// ZooKeeper refuses to start on a log entry whose checksum fails
				// ("CRC check failed"); it only recovers from a torn tail.
				tear = TearCut
			}
			what, err := TearLog(cl.DataDir(target), tear, r)
			if err != nil {
				return err
			}
			logf("nemesis: t=%v fault %d: kill -9 server %d (%s), %s", at, i+1, target+1, role, what)
			wait(f.Dur)
			if err := cl.Start(target); err != nil {
				return err
			}
		}
	}
	return nil
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// logHas says whether the file at path holds s after offset from.
func logHas(path string, from int64, s string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	return strings.Contains(string(b[min(from, int64(len(b))):]), s), nil
}

// failpointsEnv is cmd/zkd's variable that arms storage failpoints.
const failpointsEnv = "ZKD_FAILPOINTS"

// createKeys creates the registers, empty (version 0), through any member.
func createKeys(cl *Cluster, keys []string) error {
	s, err := dialSession(cl)
	if err != nil {
		return err
	}
	defer s.close()
	for _, k := range keys {
		h, err := s.call(jute.OpCreate, &jute.CreateRequest{Path: k, Data: []byte{}, ACL: []jute.ACL{{Perms: 31, ID: jute.ID{Scheme: "world", ID: "anyone"}}}}, &jute.CreateResponse{})
		if err != nil {
			return fmt.Errorf("create %s: %w", k, err)
		}
		if h.Err != jute.OK {
			return fmt.Errorf("create %s: %w", k, h.Err)
		}
	}
	return nil
}

// finalReads reads every key after a sync from a fresh session, trying the members in turn
// for up to a minute. The reads also go to porcupine, after everything else.
func finalReads(cl *Cluster, keys []string, rec *Recorder) ([]FinalRead, []porcupine.Operation, error) {
	deadline := time.Now().Add(60 * time.Second)
	var lastErr error
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		var final []FinalRead
		var ops []porcupine.Operation
		if attempt > 0 {
			time.Sleep(200 * time.Millisecond) // a member may still be settling
		}
		s, err := dialSessionTo(cl.Addr(attempt % cl.N()))
		if err != nil {
			lastErr = err
			continue
		}
		for _, k := range keys {
			call := rec.now()
			v, ver, err := s.syncRead(k)
			if err != nil {
				lastErr = fmt.Errorf("final read of %s: %w", k, err)
				break
			}
			final = append(final, FinalRead{Key: k, Value: v, Version: ver})
			ops = append(ops, porcupine.Operation{ClientId: 0, Call: int64(call), Return: int64(rec.now()),
				Input: linearize.Input{Key: k, Kind: linearize.Get}, Output: linearize.Output{Value: v, Version: ver}})
		}
		s.close()
		if len(final) == len(keys) {
			return final, ops, nil
		}
	}
	return nil, nil, fmt.Errorf("no final reads within 60s: %w", lastErr)
}

// session is a plain one-request-at-a-time session for setting up and reading back: the
// shared client connection (internal/clientwire) used synchronously, without its loops.
type session struct {
	wc  *clientwire.Conn
	xid int32
}

func dialSession(cl *Cluster) (*session, error) {
	var lastErr error
	for attempt := 0; attempt < 30; attempt++ {
		s, err := dialSessionTo(cl.Addr(attempt % cl.N()))
		if err == nil {
			return s, nil
		}
		lastErr = err
		time.Sleep(200 * time.Millisecond)
	}
	return nil, lastErr
}

func dialSessionTo(addr string) (*session, error) {
	if addr == "" {
		return nil, errors.New("member down")
	}
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	wc := clientwire.New(nc, clientwire.Config{Addr: addr, MaxFrame: maxFrame})
	resp, err := wc.Handshake(&jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16), HasReadOnly: true})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	if resp.SessionID == 0 {
		nc.Close()
		return nil, fmt.Errorf("handshake with %s: %+v", addr, resp)
	}
	return &session{wc: wc}, nil
}

func (s *session) call(op jute.OpCode, req, resp jute.Record) (jute.ReplyHeader, error) {
	s.xid++
	e := jute.Encoder{}
	(&jute.RequestHeader{Xid: s.xid, Type: op}).Encode(&e)
	if req != nil {
		req.Encode(&e)
	}
	if err := s.wc.WriteFrame(e.Buf); err != nil {
		return jute.ReplyHeader{}, err
	}
	for {
		b, err := s.wc.ReadFrame()
		if err != nil {
			return jute.ReplyHeader{}, err
		}
		d := jute.NewDecoder(b)
		var h jute.ReplyHeader
		h.Decode(d)
		if h.Xid == jute.XidNotification {
			continue
		}
		if h.Xid != s.xid {
			return h, fmt.Errorf("reply xid %d, want %d", h.Xid, s.xid)
		}
		if h.Err == jute.OK && resp != nil {
			resp.Decode(d)
		}
		return h, d.Err()
	}
}

func (s *session) syncRead(key string) (string, int32, error) {
	h, err := s.call(jute.OpSync, &jute.SyncRequest{Path: key}, &jute.SyncResponse{})
	if err == nil && h.Err != jute.OK {
		err = h.Err
	}
	if err != nil {
		return "", 0, fmt.Errorf("sync: %w", err)
	}
	var r jute.GetDataResponse
	h, err = s.call(jute.OpGetData, &jute.GetDataRequest{Path: key}, &r)
	if err == nil && h.Err != jute.OK {
		err = h.Err
	}
	if err != nil {
		return "", 0, fmt.Errorf("getData: %w", err)
	}
	return string(r.Data), r.Stat.Version, nil
}

func (s *session) close() {
	s.call(jute.OpCloseSession, nil, nil)
	s.wc.Kill(nil)
}

// BuildZkd compiles cmd/zkd into dir, with the race detector when race is set.
func BuildZkd(dir string, race bool) (string, error) {
	bin := filepath.Join(dir, "zkd")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "github.com/zkd-io/zkd/cmd/zkd")...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("go build: %w", err)
	}
	return bin, nil
}
