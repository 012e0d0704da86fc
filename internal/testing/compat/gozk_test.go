package compat

import (
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// testGoZookeeper runs a client we did not write, go-zookeeper/zk, through the same sequence
// against both servers and compares what it reports: results, errors, Stats and watch events,
// including the watches it re-registers (setWatches) after a reconnect.
func testGoZookeeper(t *testing.T, targets []target) {
	var got [][]string
	for _, tgt := range targets {
		got = append(got, goZKScript(t, tgt.addr))
	}
	compareLines(t, targets, got)
}

// compareLines reports the first differing lines of two transcripts, with context.
func compareLines(t *testing.T, targets []target, got [][]string) {
	t.Helper()
	ref, other := got[0], got[1]
	n := max(len(ref), len(other))
	bad := 0
	for i := 0; i < n; i++ {
		var a, b string
		if i < len(ref) {
			a = ref[i]
		}
		if i < len(other) {
			b = other[i]
		}
		if a != b {
			t.Errorf("line %d:\n--- %s\n    %s\n+++ %s\n    %s", i+1, targets[0].name, a, targets[1].name, b)
			if bad++; bad >= 10 {
				break
			}
		}
	}
	if t.Failed() || os.Getenv("ZKD_COMPAT_VERBOSE") != "" {
		t.Logf("%s transcript:\n%s", targets[0].name, strings.Join(ref, "\n"))
	}
}

// gate is a go-zookeeper dialer whose connections the test can cut, and whose next dial it
// can hold back, to force a reconnect at a known point.
type gate struct {
	mu   sync.Mutex
	last net.Conn
	hold chan struct{}
}

func (g *gate) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	g.mu.Lock()
	h := g.hold
	g.mu.Unlock()
	if h != nil {
		<-h
	}
	nc, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		g.mu.Lock()
		g.last = nc
		g.mu.Unlock()
	}
	return nc, err
}

// cut closes the current connection and holds the next dial until release.
func (g *gate) cut() (release func()) {
	h := make(chan struct{})
	g.mu.Lock()
	g.hold = h
	nc := g.last
	g.mu.Unlock()
	nc.Close()
	return func() {
		g.mu.Lock()
		g.hold = nil
		g.mu.Unlock()
		close(h)
	}
}

func goZKConnect(t *testing.T, addr string, g *gate) *zk.Conn {
	t.Helper()
	dial := (&gate{}).dial
	if g != nil {
		dial = g.dial
	}
	c, _, err := zk.Connect([]string{addr}, 20*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)), zk.WithDialer(dial))
	if err != nil {
		t.Fatalf("go-zookeeper connect: %v", err)
	}
	t.Cleanup(c.Close)
	waitState(t, c, zk.StateHasSession)
	return c
}

func waitState(t *testing.T, c *zk.Conn, want zk.State) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for c.State() != want {
		if time.Now().After(deadline) {
			t.Fatalf("go-zookeeper: state %v after 60s, want %v", c.State(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// goZKScript is the go-zookeeper sequence; it returns one line per observation.
func goZKScript(t *testing.T, addr string) []string {
	g := &gate{}
	c1 := goZKConnect(t, addr, g)
	c2 := goZKConnect(t, addr, nil)
	var out []string
	var base int64
	z := func(v int64) string {
		if v <= 0 {
			return fmt.Sprint(v)
		}
		return fmt.Sprintf("z%+d", v-base)
	}
	owner := func(v int64) string {
		switch v {
		case 0:
			return "0"
		case c1.SessionID():
			return "c1"
		case c2.SessionID():
			return "c2"
		}
		return fmt.Sprintf("unknown(%#x)", v)
	}
	st := func(s *zk.Stat) string {
		if s == nil {
			return "nil"
		}
		return fmt.Sprintf("{cz=%s mz=%s pz=%s v=%d cv=%d av=%d eph=%s len=%d nc=%d}", z(s.Czxid), z(s.Mzxid), z(s.Pzxid),
			s.Version, s.Cversion, s.Aversion, owner(s.EphemeralOwner), s.DataLength, s.NumChildren)
	}
	errs := func(err error) string {
		if err == nil {
			return "ok"
		}
		return err.Error()
	}
	log := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	// ev waits for one event on a watch channel.
	ev := func(name string, ch <-chan zk.Event) {
		select {
		case e := <-ch:
			log("%s: event %v %s err=%v", name, e.Type, e.Path, e.Err)
		case <-time.After(30 * time.Second):
			log("%s: no event within 30s", name)
		}
	}
	// quiet checks a watch channel has nothing pending. A sync on the watching connection
	// first: go-zookeeper delivers a notification before it handles later replies.
	quiet := func(name string, c *zk.Conn, ch <-chan zk.Event) {
		c.Sync("/")
		select {
		case e := <-ch:
			log("%s: unexpected event %v %s", name, e.Type, e.Path)
		default:
		}
	}
	acl := zk.WorldACL(zk.PermAll)

	p, err := c1.Create("/gz", []byte("root"), 0, acl)
	_, s, _ := c1.Exists("/gz")
	if s != nil {
		base = s.Czxid - 1
	}
	log("create /gz: %q %s", p, errs(err))
	p, err = c1.Create("/gz", nil, 0, acl)
	log("create /gz again: %q %s", p, errs(err))
	for i := 0; i < 2; i++ {
		p, err = c1.Create("/gz/seq-", []byte{byte(i)}, zk.FlagSequence, acl)
		log("create sequential: %q %s", p, errs(err))
	}
	p, err = c1.Create("/gz/eph", nil, zk.FlagEphemeral, acl)
	log("create ephemeral: %q %s", p, errs(err))
	p, err = c2.Create("/gz/eph2", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	log("c2 create ephemeral sequential: %q %s", p, errs(err))
	p, err = c1.CreateContainer("/gz/ctr", nil, zk.FlagContainer, acl)
	log("create container: %q %s", p, errs(err))
	p, err = c1.CreateTTL("/gz/ttl", nil, zk.FlagTTL, acl, time.Hour)
	log("create ttl: %q %s", p, errs(err))
	p, err = c1.CreateTTL("/gz/ttl0", nil, zk.FlagTTL, acl, 0)
	log("create ttl 0: %q %s", p, errs(err))
	d, s, err := c1.Get("/gz")
	log("get /gz: %q %s %s", d, st(s), errs(err))
	s, err = c1.Set("/gz", []byte("v1"), 0)
	log("set v0: %s %s", st(s), errs(err))
	s, err = c1.Set("/gz", []byte("v2"), 0)
	log("set stale: %s %s", st(s), errs(err))
	kids, s, err := c1.Children("/gz")
	sort.Strings(kids)
	log("children /gz: %q %s %s", kids, st(s), errs(err))
	_, _, err = c1.Get("/gz/none")
	log("get missing: %s", errs(err))
	ok, s, err := c1.Exists("/gz/none")
	log("exists missing: %v %s %s", ok, st(s), errs(err))
	err = c1.Delete("/gz", -1)
	log("delete non-empty: %s", errs(err))
	err = c1.Delete("/gz/seq-0000000000", 3)
	log("delete bad version: %s", errs(err))

	// Watches fired by the other session.
	_, _, wData, err := c1.GetW("/gz")
	log("getW: %s", errs(err))
	_, _, wKids, err := c1.ChildrenW("/gz")
	log("childrenW: %s", errs(err))
	_, _, wNew, err := c1.ExistsW("/gz/new")
	log("existsW missing: %s", errs(err))
	_, err = c2.Set("/gz", []byte("by c2"), -1)
	log("c2 set: %s", errs(err))
	ev("data watch", wData)
	_, err = c2.Create("/gz/new", nil, 0, acl)
	log("c2 create /gz/new: %s", errs(err))
	ev("exist watch", wNew)
	ev("child watch", wKids)
	_, _, wNew, _ = c1.GetW("/gz/new")
	_, _, wKids, _ = c1.ChildrenW("/gz")
	err = c2.Delete("/gz/new", -1)
	log("c2 delete /gz/new: %s", errs(err))
	ev("data watch on deleted", wNew)
	ev("child watch on delete", wKids)

	// multi
	res, err := c1.Multi(
		&zk.CreateRequest{Path: "/gz/m1", Data: []byte("1"), Acl: acl},
		&zk.SetDataRequest{Path: "/gz/m1", Data: []byte("2"), Version: 0},
		&zk.CheckVersionRequest{Path: "/gz/m1", Version: 1},
		&zk.CreateRequest{Path: "/gz/mseq-", Acl: acl, Flags: zk.FlagSequence},
		&zk.DeleteRequest{Path: "/gz/seq-0000000000", Version: -1},
	)
	log("multi: %s %s", multiRes(res, st), errs(err))
	res, err = c1.Multi(
		&zk.CreateRequest{Path: "/gz/m2", Acl: acl},
		&zk.CheckVersionRequest{Path: "/gz/m1", Version: 7},
		&zk.DeleteRequest{Path: "/gz/m1", Version: -1},
	)
	log("failing multi: %s %s", multiRes(res, st), errs(err))
	ok, _, _ = c1.Exists("/gz/m2")
	log("m2 exists after failed multi: %v", ok)

	// ACLs and auth.
	err = c1.AddAuth("digest", []byte("gz:pw"))
	log("addAuth: %s", errs(err))
	p, err = c1.Create("/gz/private", []byte("p"), 0, zk.DigestACL(zk.PermAll, "gz", "pw"))
	log("create digest ACL: %q %s", p, errs(err))
	p, err = c1.Create("/gz/mine", []byte("m"), 0, zk.AuthACL(zk.PermAll))
	log("create auth ACL: %q %s", p, errs(err))
	a, s, err := c1.GetACL("/gz/mine")
	log("getACL owner: %v %s %s", a, st(s), errs(err))
	a, s, err = c2.GetACL("/gz/mine")
	log("getACL other: %v %s %s", a, st(s), errs(err))
	_, _, err = c2.Get("/gz/private")
	log("get other: %s", errs(err))
	s, err = c1.SetACL("/gz/private", zk.WorldACL(zk.PermRead), 0)
	log("setACL: %s %s", st(s), errs(err))
	s, err = c1.SetACL("/gz/private", zk.WorldACL(zk.PermRead), 0)
	log("setACL stale: %s %s", st(s), errs(err))
	_, err = c1.Create("/gz/bad", nil, 0, []zk.ACL{})
	log("create empty ACL: %s", errs(err))
	p, err = c1.Sync("/gz")
	log("sync: %q %s", p, errs(err))

	// A reconnect: go-zookeeper re-registers its watches with setWatches, relative to the
	// last zxid it saw; changes made meanwhile fire at once.
	_, _, wData, _ = c1.GetW("/gz")
	_, _, wKids, _ = c1.ChildrenW("/gz")
	_, _, wNew, _ = c1.ExistsW("/gz/later")
	_, _, wSame, _ := c1.GetW("/gz/m1")
	release := g.cut()
	waitState(t, c1, zk.StateConnecting)
	_, err = c2.Set("/gz", []byte("while away"), -1)
	log("c2 set while c1 is away: %s", errs(err))
	_, err = c2.Create("/gz/later", nil, 0, acl)
	log("c2 create while c1 is away: %s", errs(err))
	release()
	waitState(t, c1, zk.StateHasSession)
	ev("data watch after reconnect", wData)
	ev("exist watch after reconnect", wNew)
	ev("child watch after reconnect", wKids)
	quiet("unchanged data watch after reconnect", c1, wSame)
	_, err = c2.Set("/gz/m1", []byte("now"), -1)
	log("c2 set m1: %s", errs(err))
	ev("re-registered data watch", wSame)
	ok, s, err = c1.Exists("/gz/eph")
	log("ephemeral survives the reconnect: %v %s %s", ok, st(s), errs(err))

	// The other session ends: its ephemeral goes.
	_, _, wEph, _ := c1.ExistsW("/gz/eph20000000003")
	_, _, wKids, _ = c1.ChildrenW("/gz")
	c2.Close()
	ev("ephemeral of closed session", wEph)
	ev("children after session close", wKids)
	kids, s, err = c1.Children("/gz")
	sort.Strings(kids)
	log("children /gz: %q %s %s", kids, st(s), errs(err))
	c1.Close()
	return out
}

func multiRes(res []zk.MultiResponse, st func(*zk.Stat) string) string {
	parts := make([]string, len(res))
	for i, r := range res {
		e := "ok"
		if r.Error != nil {
			e = r.Error.Error()
		}
		parts[i] = fmt.Sprintf("{%q %s %s}", r.String, st(r.Stat), e)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
