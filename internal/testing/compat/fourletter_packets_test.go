package compat

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

var srvrPackets = regexp.MustCompile(`(?m)^Received: (\d+)\nSent: (\d+)$`)

// TestCompatFourLetterPacketCounts: a four-letter word counts in srvr's Received and Sent
// (and mntr's zk_packets_received / zk_packets_sent) as ZooKeeper counts it: one packet
// received (and 4 bytes in bytes_received_count) for a known word, whitelisted or not, and
// one packet sent per chunk of the answer NIOServerCnxn writes (8192 chars), so a short
// answer is one and mntr's is two or more; an unknown word counts nothing. srst resets both
// counters after counting itself received, so the srvr after it reads the same on both.
func TestCompatFourLetterPacketCounts(t *testing.T) {
	refzk.Require(t)
	allowed := []string{"srvr", "ruok", "stat", "conf", "envi", "cons", "wchs", "isro", "dirs", "gtmk", "mntr", "crst", "srst"}
	opts := refOptions("")
	opts.Config = append(opts.Config, "4lw.commands.whitelist="+strings.Join(allowed, ","))
	ref := refzk.StartStandalone(t, opts)
	z := zktest.Start(t, zkdConfig("", func(c *server.Config) { c.FourLetterWhitelist = allowed }))
	ask := func(addr, cmd string) string {
		t.Helper()
		out := flwProbe(addr, []byte(cmd))
		s, err := strconv.Unquote(strings.TrimSuffix(out, "; closed"))
		if err != nil {
			if cmd == "xxxx" {
				return out
			}
			t.Fatalf("%s on %s: %s", cmd, addr, out)
		}
		return s
	}
	counts := func(addr string) (recv, sent int) {
		t.Helper()
		out := ask(addr, "srvr")
		m := srvrPackets.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("srvr on %s: no Received/Sent in %q", addr, out)
		}
		recv, _ = strconv.Atoi(m[1])
		sent, _ = strconv.Atoi(m[2])
		return recv, sent
	}
	// deltas asks word between two srvrs and returns what word added (srvr counts itself
	// received before it answers, and its own answer as sent after).
	type delta struct{ recv, sent, answerLen int }
	deltas := func(addr, word string) delta {
		r0, s0 := counts(addr)
		answer := ask(addr, word)
		r1, s1 := counts(addr)
		return delta{r1 - r0 - 1, s1 - s0 - 1, len([]rune(answer))}
	}
	// conf is left out: a server of zktest has no zoo.cfg text to answer it with.
	for _, word := range []string{"srvr", "ruok", "stat", "envi", "cons", "wchs", "isro", "dirs",
		"gtmk", "mntr", "dump", "xxxx", "crst"} {
		zk, zd := deltas(ref.Addr(), word), deltas(z.Addr(), word)
		t.Logf("%s: ZooKeeper +%d received +%d sent (%d chars), zkd +%d +%d (%d chars)",
			word, zk.recv, zk.sent, zk.answerLen, zd.recv, zd.sent, zd.answerLen)
		if zk.recv != zd.recv {
			t.Errorf("%s: ZooKeeper counts %d packets received, zkd %d", word, zk.recv, zd.recv)
		}
		// The packets sent follow each answer's length: 8192-char chunks.
		for _, d := range []struct {
			name string
			d    delta
		}{{"ZooKeeper", zk}, {"zkd", zd}} {
			want := 0
			if word != "xxxx" {
				want = (d.d.answerLen + 8191) / 8192
			}
			if d.d.sent != want {
				t.Errorf("%s: %s counts %d packets sent for a %d-char answer, want %d", word, d.name, d.d.sent, d.d.answerLen, want)
			}
		}
		if zk.answerLen/8192 == zd.answerLen/8192 && zk.sent != zd.sent {
			t.Errorf("%s: ZooKeeper counts %d packets sent, zkd %d", word, zk.sent, zd.sent)
		}
	}
	if zk, zd := deltas(ref.Addr(), "mntr"), deltas(z.Addr(), "mntr"); zk.sent < 2 || zd.sent < 2 {
		t.Errorf("mntr: ZooKeeper counts %d packets sent, zkd %d, want 2 or more (an answer over 8192 chars)", zk.sent, zd.sent)
	}
	// bytes_received_count: 4 for each word (mntr, then srvr between the two mntrs).
	bytesReceived := func(addr string) int {
		t.Helper()
		for _, line := range strings.Split(ask(addr, "mntr"), "\n") {
			if v, ok := strings.CutPrefix(line, "zk_bytes_received_count\t"); ok {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("mntr on %s: %q", addr, line)
				}
				return int(n)
			}
		}
		t.Fatalf("mntr on %s: no zk_bytes_received_count", addr)
		return 0
	}
	for _, s := range []struct{ name, addr string }{{"ZooKeeper", ref.Addr()}, {"zkd", z.Addr()}} {
		b0 := bytesReceived(s.addr)
		counts(s.addr)
		if b1 := bytesReceived(s.addr); b1-b0 != 8 {
			t.Errorf("%s: bytes_received_count +%d over mntr and srvr, want 8", s.name, b1-b0)
		}
	}
	// srst resets the counters after counting itself: the next srvr counts only itself.
	ask(ref.Addr(), "srst")
	ask(z.Addr(), "srst")
	zr, zs := counts(ref.Addr())
	dr, ds := counts(z.Addr())
	if zr != dr || zs != ds {
		t.Errorf("srvr after srst: ZooKeeper Received %d Sent %d, zkd %d %d", zr, zs, dr, ds)
	}
	// srst zeroes bytes_received_count too; srvr and the mntr reading it add 4 bytes each.
	if zb, db := bytesReceived(ref.Addr()), bytesReceived(z.Addr()); zb != 8 || db != 8 {
		t.Errorf("bytes_received_count over srvr and mntr after srst: ZooKeeper %d, zkd %d, want 8", zb, db)
	}
}
