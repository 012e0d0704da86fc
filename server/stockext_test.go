package server_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// stockTranscript plays a stock client's (go-zookeeper's) workload on addr and returns what
// the client saw, one line per answer or event, with the fields that vary between two runs
// (times, session ids) left out. Every op the client has is there, with its error cases.
func stockTranscript(t *testing.T, addr string) string {
	t.Helper()
	c, _ := connect(t, addr, 10*time.Second)
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	stat := func(s *zk.Stat) string {
		if s == nil {
			return "nil"
		}
		return fmt.Sprintf("czxid=%d mzxid=%d pzxid=%d ver=%d cver=%d aver=%d eph=%t len=%d nchild=%d",
			s.Czxid, s.Mzxid, s.Pzxid, s.Version, s.Cversion, s.Aversion, s.EphemeralOwner != 0, s.DataLength, s.NumChildren)
	}
	ev := func(name string, ch <-chan zk.Event) {
		e := waitEvent(t, ch)
		line("%s event type=%v path=%s err=%v", name, e.Type, e.Path, e.Err)
	}
	acl := zk.WorldACL(zk.PermAll)

	for _, p := range []string{"/", "/zookeeper", "/keeper-like"} {
		kids, s, err := c.Children(p)
		line("children %s %v %s %v", p, kids, stat(s), err)
	}
	_, _, dataW, err := c.ExistsW("/s")
	line("existsW /s %v", err)
	p, err := c.Create("/s", []byte("one"), 0, acl)
	line("create /s %s %v", p, err)
	ev("existsW /s", dataW)
	_, err = c.Create("/s", nil, 0, acl)
	line("create /s again %v", err)
	_, err = c.Create("/nope/child", nil, 0, acl)
	line("create without parent %v", err)
	_, _, childW, err := c.ChildrenW("/s")
	line("childrenW /s %v", err)
	for i := 0; i < 3; i++ {
		p, err := c.Create("/s/q-", []byte{byte(i)}, zk.FlagSequence, acl)
		line("create seq %s %v", p, err)
	}
	ev("childrenW /s", childW)
	p, err = c.Create("/s/e", nil, zk.FlagEphemeral, acl)
	line("create ephemeral %s %v", p, err)
	p, err = c.CreateContainer("/c", nil, zk.FlagContainer, acl)
	line("create container %s %v", p, err)
	p, err = c.CreateTTL("/ttl", nil, zk.FlagTTL, acl, time.Hour)
	line("create ttl %s %v", p, err)
	data, s, getW, err := c.GetW("/s")
	line("getW /s %q %s %v", data, stat(s), err)
	s, err = c.Set("/s", []byte("two"), 5)
	line("set bad version %s %v", stat(s), err)
	s, err = c.Set("/s", []byte("two"), 0)
	line("set /s %s %v", stat(s), err)
	ev("getW /s", getW)
	kids, s, err := c.Children("/s")
	line("children /s %v %s %v", kids, stat(s), err)
	resp, err := c.Multi(
		&zk.CreateRequest{Path: "/m", Data: []byte("m"), Acl: acl},
		&zk.CheckVersionRequest{Path: "/s", Version: 1},
		&zk.SetDataRequest{Path: "/m", Data: []byte("n"), Version: 0},
	)
	line("multi ok %d %v", len(resp), err)
	for _, r := range resp {
		line("  %s %s %v", r.String, stat(r.Stat), r.Error)
	}
	resp, err = c.Multi(
		&zk.CreateRequest{Path: "/m2", Acl: acl},
		&zk.DeleteRequest{Path: "/absent", Version: -1},
	)
	line("multi failing %d %v", len(resp), err)
	for _, r := range resp {
		line("  %s %v", r.String, r.Error)
	}
	err = c.Delete("/s", -1)
	line("delete non-empty %v", err)
	for _, n := range []string{"/s/q-0000000000", "/s/q-0000000001", "/s/q-0000000002", "/s/e", "/s"} {
		line("delete %s %v", n, c.Delete(n, -1))
	}
	a, s, err := c.GetACL("/m")
	line("getACL /m %v %s %v", a, stat(s), err)
	s, err = c.SetACL("/m", zk.DigestACL(zk.PermRead, "u", "p"), 0)
	line("setACL /m %s %v", stat(s), err)
	_, _, err = c.Get("/m")
	line("get /m without auth %v", err)
	line("addAuth %v", c.AddAuth("digest", []byte("u:p")))
	data, _, err = c.Get("/m")
	line("get /m with auth %q %v", data, err)
	_, err = c.Sync("/m")
	line("sync %v", err)
	for _, p := range []string{"/keeper-like", "/zookeeper/quota"} {
		ok, s, err := c.Exists(p)
		line("exists %s %t %s %v", p, ok, stat(s), err)
	}
	_, _, err = c.Get("/zookeeper/config")
	line("get /zookeeper/config %v", errors.Is(err, zk.ErrNoNode))
	kids, _, err = c.Children("/")
	line("children / %v %v", kids, err)
	return b.String()
}

// TestStockClientSeesNoExtension: go-zookeeper's answers and events from a server with every
// extension on equal those from a server with none, op for op. The go-zookeeper, kazoo and
// zkCli.sh suites run against servers with every extension on (startStock, the compat
// suite's zkdConfig); this is the one comparison with a server that has none.
func TestStockClientSeesNoExtension(t *testing.T) {
	base := func(c *server.Config) { c.ExtendedTypes = true }
	none := zktest.Start(t, zktest.WithConfig(base))
	all := zktest.Start(t, zktest.WithConfig(base), zktest.WithConfig(func(c *server.Config) { c.Extensions = ext.Of(ext.All...) }))
	want := stockTranscript(t, none.Addr())
	got := stockTranscript(t, all.Addr())
	if got != want {
		t.Fatalf("a stock client sees a difference with every extension on:\n--- none\n%s\n--- all\n%s", want, got)
	}
	if strings.Count(want, "\n") < 40 {
		t.Fatalf("transcript too short to mean anything:\n%s", want)
	}
	t.Logf("transcript:\n%s", want)
}
