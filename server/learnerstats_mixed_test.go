package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/server"
)

// TestObserversMatchZooKeeper asks Apache ZooKeeper 3.8's AdminServer and zkd's, each
// leading an ensemble with a zkd observer, for observers (and orst): the answers must
// have the same keys with the same JSON types, and the values that do not depend on time
// or ports must be equal. Each ensemble is sid 1 (the other kind) and sid 2, which leads
// (equal zxids: the higher sid), and the zkd observer sid 3.
func TestObserversMatchZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	refzk.Require(t)
	answers := map[string]map[string]any{}
	for _, refLeads := range []bool{true, false} {
		name := "zkd"
		if refLeads {
			name = "zookeeper"
		}
		t.Run(name, func(t *testing.T) {
			answers[name] = observersFromMixedLeader(t, refLeads)
		})
	}
	if t.Failed() {
		return
	}
	ref, got := answers["zookeeper"], answers["zkd"]
	if rs, gs := jsonShape(ref), jsonShape(got); !slices.Equal(rs, gs) {
		t.Errorf("observers' shapes differ:\nzookeeper %v\nzkd       %v", rs, gs)
	}
	norm := func(a map[string]any) string {
		o := a["observers"].([]any)[0].(map[string]any)
		remote := regexp.MustCompile(`^/127\.0\.0\.1:\d+$`).MatchString(fmt.Sprint(o["remote_socket_address"]))
		est, _ := strconv.ParseInt(fmt.Sprint(o["established"]), 10, 64)
		recent := time.Since(time.UnixMilli(est)) < 10*time.Minute && est <= time.Now().UnixMilli()
		return fmt.Sprintf("command=%v error=%v synced=%v sid=%v remote=%v established=%v requests=%v last_zxid=%v",
			a["command"], a["error"], a["synced_observers"], o["sid"], remote, recent, o["requests"], o["last_zxid"])
	}
	if r, g := norm(ref), norm(got); r != g {
		t.Errorf("observers differ:\nzookeeper %s\nzkd       %s", r, g)
	}
	t.Logf("ZooKeeper: %v\nzkd: %v", ref, got)
}

// jsonShape lists an answer's key paths with their JSON types.
func jsonShape(v any) []string {
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(path+"/"+k, e)
			}
		case []any:
			out = append(out, path+":array")
			for _, e := range v {
				walk(path+"/[]", e)
			}
		case nil:
			out = append(out, path+":null")
		case string:
			out = append(out, path+":string")
		case bool:
			out = append(out, path+":bool")
		default:
			out = append(out, path+":number")
		}
	}
	walk("", v)
	slices.Sort(out)
	return slices.Compact(out)
}

// observersFromMixedLeader runs the ensemble and returns the leader's observers answer
// after three writes through the observer and an orst, so the counts that remain
// (requests 0, last_zxid) are the same on both kinds of leader.
func observersFromMixedLeader(t *testing.T, refLeads bool) map[string]any {
	ports := freePorts(t, 6)
	var peers []config.Member
	var lines []string
	for i := int64(1); i <= 3; i++ {
		q, e := ports[2*(i-1)], ports[2*(i-1)+1]
		obs := i == 3
		peers = append(peers, config.Member{ID: i, Host: "127.0.0.1", QuorumPort: q, ElectionPort: e, Observer: obs})
		l := fmt.Sprintf("server.%d=127.0.0.1:%d:%d", i, q, e)
		if obs {
			l += ":observer"
		}
		lines = append(lines, l)
	}
	addrs := map[int64]string{}
	modes := map[int64]func() string{}
	var adminBase string
	startZkd := func(id int64, admin bool) {
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		if os.Getenv("ZKTEST_LOG") != "" {
			logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("sid", id)
		}
		cfg := server.Config{
			ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(), TickTime: 500, InitLimit: 10, SyncLimit: 5,
			ServerID: id, Peers: peers, PreAllocSize: 1 << 20, Logger: logger,
		}
		if admin {
			cfg.AdminAddr = "127.0.0.1:0"
		}
		srv, err := server.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		addrs[id], modes[id] = srv.Addr(), srv.Mode
		if admin {
			adminBase = "http://" + srv.AdminAddr() + "/commands"
		}
	}
	startRef := func(id int64, admin bool) {
		cfg := append([]string{"initLimit=10", "syncLimit=5"}, lines...)
		ref := refzk.StartStandalone(t, refzk.Options{TickTime: 500, MyID: int(id), NoWait: true, Config: cfg, AdminServer: admin})
		addrs[id] = ref.Addr()
		modes[id] = func() string { return refMode(ref) }
		if admin {
			adminBase = "http://" + ref.AdminAddr() + "/commands"
		}
		t.Cleanup(func() {
			if t.Failed() {
				if b, err := os.ReadFile(ref.LogPath()); err == nil {
					t.Logf("ZooKeeper %d's log (the end):\n%s", id, b[max(0, len(b)-6000):])
				}
			}
		})
		ep := peers[id-1].ElectionPort
		waitFor(t, "ZooKeeper's election port", func() bool {
			c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ep)), time.Second)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
	if refLeads {
		startRef(2, true)
		startZkd(1, false)
	} else {
		startRef(1, false)
		startZkd(2, true)
	}
	waitFor(t, "sid 2 to lead", func() bool { return modes[2]() == "leader" && modes[1]() == "follower" })
	startZkd(3, false)
	waitFor(t, "the observer to serve", func() bool { return modes[3]() == "observer" })
	waitFor(t, "the leader to list its observer", func() bool {
		a := adminJSON(t, adminBase, "observers")
		list, _ := a["observers"].([]any)
		return len(list) == 1
	})

	c := connectTo(t, addrs[3])
	var last int64
	for i := 0; i < 3; i++ {
		p, err := c.Create(fmt.Sprintf("/o%d", i), nil, 0, open)
		if err != nil {
			t.Fatal(err)
		}
		_, st, err := c.Exists(p)
		if err != nil {
			t.Fatal(err)
		}
		last = st.Czxid
	}
	waitFor(t, "the leader to have sent the last write", func() bool {
		o := adminJSON(t, adminBase, "observers")["observers"].([]any)[0].(map[string]any)
		return fmt.Sprint(o["last_zxid"]) == strconv.FormatInt(last, 10) && fmt.Sprint(o["requests"]) != "0"
	})
	if a := adminJSON(t, adminBase, "orst"); a["error"] != nil {
		t.Fatalf("orst: %v", a)
	}
	var a map[string]any
	// A PING after the reset carries the last zxid again; wait for one on both.
	waitFor(t, "a ping after orst", func() bool {
		a = adminJSON(t, adminBase, "obsr")
		o := a["observers"].([]any)[0].(map[string]any)
		return fmt.Sprint(o["last_zxid"]) == strconv.FormatInt(last, 10)
	})
	return a
}
