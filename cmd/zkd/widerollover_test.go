package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// roleLines counts the lines a zkd process logs when it takes a role after an election
// ("leading", "following"): an election shows as one more.
var roleLines = regexp.MustCompile(`msg="?(leading|following)[" ]`)

// srvrZxid is the Zxid line of srvr.
func srvrZxid(addr string) int64 {
	for _, l := range strings.Split(fourLetter(addr, "srvr"), "\n") {
		if v, ok := strings.CutPrefix(l, "Zxid: "); ok {
			z, err := strconv.ParseInt(strings.TrimSpace(v), 0, 64)
			if err == nil {
				return z
			}
		}
	}
	return -1
}

// TestProcessEnsembleWideRolloverWithoutElection runs three zkd processes with
// zkd.extensions=wide and their zxid counters starting 14 short of the end
// (zkd.test.zxidCounterStart), writes across several ends of the counter from every
// member's clients, and checks that no election ran (the same leader, no new
// leading/following line in any log, no client disconnected), that the leader's srvr zxid
// moved through the epochs, and that every acknowledged write is on every member.
func TestProcessEnsembleWideRolloverWithoutElection(t *testing.T) {
	e := startProcEnsembleCfg(t, 3, 200, false, []string{"zkd.extensions=wide", "zkd.test.zxidCounterStart=0xfffffff0"})
	leader := e.leader()
	var mu sync.Mutex
	var disconnects []string
	var clients []*zk.Conn
	for i, a := range e.addrs {
		c, ev, err := zk.Connect([]string{a}, 10*time.Second, zk.WithLogger(quietLogger{}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		deadline := time.Now().Add(30 * time.Second)
		for c.State() != zk.StateHasSession {
			if time.Now().After(deadline) {
				t.Fatalf("no session on member %d", i+1)
			}
			time.Sleep(20 * time.Millisecond)
		}
		go func(i int) {
			for x := range ev {
				if x.State == zk.StateDisconnected {
					mu.Lock()
					disconnects = append(disconnects, fmt.Sprintf("member %d", i+1))
					mu.Unlock()
				}
			}
		}(i)
		clients = append(clients, c)
	}
	if _, err := clients[0].Create("/start", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	startZxid := srvrZxid(e.addrs[leader])
	roles := make([]int, len(e.procs))
	for i, p := range e.procs {
		roles[i] = len(roleLines.FindAllString(p.logText(), -1))
		if roles[i] == 0 {
			t.Fatalf("member %d logged no role line; the log's format changed:\n%s", i+1, tail(p.logText(), 10))
		}
	}
	const perClient = 40 // 120 writes: eight ends of the counter
	var wg sync.WaitGroup
	errs := make(chan error, len(clients))
	for i, c := range clients {
		wg.Add(1)
		go func(i int, c *zk.Conn) {
			defer wg.Done()
			for j := 0; j < perClient; j++ {
				p := fmt.Sprintf("/w%d-%d", i, j)
				if _, err := c.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll)); err != nil {
					errs <- fmt.Errorf("create %s on member %d: %w", p, i+1, err)
					return
				}
			}
		}(i, c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := e.leader(); got != leader {
		t.Fatalf("leader moved from member %d to %d", leader+1, got+1)
	}
	for i, p := range e.procs {
		if n := len(roleLines.FindAllString(p.logText(), -1)); n != roles[i] {
			t.Fatalf("member %d took a role %d more times: an election ran\n%s", i+1, n-roles[i], tail(p.logText(), 30))
		}
	}
	mu.Lock()
	if len(disconnects) > 0 {
		t.Fatalf("clients disconnected: %v", disconnects)
	}
	mu.Unlock()
	endZxid := srvrZxid(e.addrs[leader])
	if endZxid>>32 < startZxid>>32+5 {
		t.Fatalf("leader's zxid went from 0x%x to 0x%x: want five new epochs at least", startZxid, endZxid)
	}
	if n := strings.Count(e.procs[leader].logText(), "rolled over into a new epoch"); n < 5 {
		t.Fatalf("leader logged %d rollovers", n)
	}
	for i, c := range clients {
		if _, err := c.Sync("/"); err != nil {
			t.Fatal(err)
		}
		for w := range clients {
			var prev int64
			for j := 0; j < perClient; j++ {
				p := fmt.Sprintf("/w%d-%d", w, j)
				d, st, err := c.Get(p)
				if err != nil || string(d) != p {
					t.Fatalf("member %d reading %s: %q %v", i+1, p, d, err)
				}
				if st.Czxid <= prev {
					t.Fatalf("%s czxid 0x%x after 0x%x", p, st.Czxid, prev)
				}
				prev = st.Czxid
			}
		}
	}
	t.Logf("leader zxid 0x%x -> 0x%x over %d writes, no election", startZxid, endZxid, perClient*len(clients))
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
