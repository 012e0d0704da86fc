package admin

import (
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/jute"
)

func TestLookup(t *testing.T) {
	// The bytes a client sends, as in the capture ("72 75 6f 6b" for ruok).
	if got := Code("ruok"); got != 0x72756f6b {
		t.Fatalf("Code(ruok) = %#x", got)
	}
	want := []string{"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "hash", "isro", "mntr",
		"ruok", "srst", "srvr", "stat", "stmk", "wchc", "wchp", "wchs"}
	if got := Commands(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Commands() = %v", got)
	}
	for _, c := range want {
		got, ok := Lookup(Code(c))
		if !ok || got != c {
			t.Errorf("Lookup(Code(%q)) = %q, %v", c, got, ok)
		}
	}
	for _, n := range []int32{0, 45, 1 << 20, -1, TelnetClose, Code("icfg"), Code("sysp"), Code("RUOK"), Code("ruo")} {
		if c, ok := Lookup(n); ok {
			t.Errorf("Lookup(%#x) = %q, want no command", n, c)
		}
	}
}

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		cmd      string
		list     []string
		readOnly bool
		want     bool
	}{
		{"srvr", nil, false, true},
		{"srvr", []string{"ruok"}, false, true},
		{"ruok", nil, false, false},
		{"ruok", []string{"srvr"}, false, false},
		{"ruok", []string{"srvr", "ruok"}, false, true},
		{"ruok", []string{" ruok "}, false, true},
		{"mntr", []string{"*"}, false, true},
		{"hash", []string{"*"}, false, true},
		{"nope", []string{"*"}, false, false},
		{"isro", nil, false, false},
		{"isro", nil, true, true},
		{"stat", nil, true, false},
	} {
		if got := Allowed(tc.cmd, tc.list, tc.readOnly); got != tc.want {
			t.Errorf("Allowed(%q, %q, %v) = %v, want %v", tc.cmd, tc.list, tc.readOnly, got, tc.want)
		}
	}
}

func TestRefusals(t *testing.T) {
	if got := NotInWhitelist("mntr"); got != "mntr is not executed because it is not in the whitelist.\n" {
		t.Errorf("NotInWhitelist = %q", got)
	}
	for _, tc := range []struct {
		cmd, text string
		ok        bool
	}{
		{"ruok", "", false},
		{"envi", "", false},
		{"gtmk", "", false},
		{"stmk", "", false},
		{"isro", "null", true},
		{"hash", "This ZooKeeper instance is not currently serving requests", true},
		{"srvr", "This ZooKeeper instance is not currently serving requests\n", true},
		{"wchc", "This ZooKeeper instance is not currently serving requests\n", true},
	} {
		text, ok := NotServing(tc.cmd)
		if text != tc.text || ok != tc.ok {
			t.Errorf("NotServing(%q) = %q, %v; want %q, %v", tc.cmd, text, ok, tc.text, tc.ok)
		}
	}
}

func TestJavaDouble(t *testing.T) {
	// Expected strings printed by Java 17's Double.toString.
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {5.7195, "5.7195"}, {84.75, "84.75"},
		{41, "41.0"}, {1e7, "1.0E7"}, {12345678.9, "1.23456789E7"}, {0.001, "0.001"},
		{0.0009, "9.0E-4"}, {1e-5, "1.0E-5"}, {123456.7891, "123456.7891"}, {0.2561, "0.2561"},
		{1.0 / 3, "0.3333333333333333"}, {100, "100.0"}, {9999999, "9999999.0"},
		{math.MaxFloat64, "1.7976931348623157E308"}, {1e21, "1.0E21"}, {0.002, "0.002"},
		{-2.5, "-2.5"}, {math.NaN(), "NaN"}, {math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
	} {
		if got := javaDouble(tc.f); got != tc.want {
			t.Errorf("javaDouble(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestJavaAvg(t *testing.T) {
	// Expected strings from Java 17: new BigDecimal((double) sum / count).setScale(4,
	// HALF_UP).doubleValue(), printed with Double.toString.
	for _, tc := range []struct {
		sum, count int64
		want       string
	}{
		{469, 82, "5.7195"}, {21, 82, "0.2561"}, {339, 4, "84.75"}, {67, 9, "7.4444"},
		{41, 5, "8.2"}, {2, 4, "0.5"}, {0, 15, "0.0"}, {47, 47, "1.0"}, {41, 1, "41.0"},
		{1, 20000, "1.0E-4"}, {2469, 20000, "0.1235"}, {24691, 200000, "0.1235"},
		{12345, 100000, "0.1235"}, {200015, 100000, "2.0002"}, {1, 3, "0.3333"},
		{2, 3, "0.6667"}, {10, 3, "3.3333"}, {100000000, 3, "3.33333333333E7"},
		{123456789012, 7, "1.76366841445714E10"}, {-7, 3, "-2.3333"}, {-1, 20000, "-1.0E-4"},
		{5, 0, "0.0"}, {math.MaxInt64, 1, "9.223372036854776E18"}, {99999999, 10, "9999999.9"},
		{1, 1000, "0.001"}, {1, 10000, "1.0E-4"}, {1, 100000, "0.0"}, {7, 16, "0.4375"},
		{1, 8, "0.125"}, {3, 16, "0.1875"},
		// Exact binary ties: HALF_UP, not half-even.
		{1, 32, "0.0313"}, {3, 32, "0.0938"}, {-1, 32, "-0.0313"}, {5, 32, "0.1563"},
	} {
		if got := javaDouble(javaAvg(tc.sum, tc.count)); got != tc.want {
			t.Errorf("avg(%d/%d) = %q, want %q", tc.sum, tc.count, got, tc.want)
		}
	}
}

func TestFormatRemote(t *testing.T) {
	// Expected strings printed by Java 17's InetSocketAddress.toString.
	for _, tc := range []struct{ in, want string }{
		{"127.0.0.1:57746", "/127.0.0.1:57746"},
		{"[::1]:2181", "/[0:0:0:0:0:0:0:1]:2181"},
		{"[fe80::1%1]:2181", "/[fe80:0:0:0:0:0:0:1%1]:2181"},
		{"[::ffff:10.0.0.1]:2181", "/10.0.0.1:2181"},
		{"[2001:db8::abcd:0:1]:2181", "/[2001:db8:0:0:0:abcd:0:1]:2181"},
	} {
		if got := FormatRemote(netip.MustParseAddrPort(tc.in)); got != tc.want {
			t.Errorf("FormatRemote(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSummaryAndBufferStats(t *testing.T) {
	var s Summary
	if s.min() != 0 || s.max() != 0 || s.Avg() != 0 {
		t.Fatalf("empty summary reads %d/%v/%d", s.min(), s.Avg(), s.max())
	}
	for _, v := range []int64{5, 2, 9} {
		s.Add(v)
	}
	if s != (Summary{Count: 3, Sum: 16, Min: 2, Max: 9}) || javaDouble(s.Avg()) != "5.3333" {
		t.Fatalf("summary = %+v avg %v", s, s.Avg())
	}
	b := NewBufferStats()
	if b.String() != "-1/-1/-1" {
		t.Fatalf("fresh BufferStats = %s", b)
	}
	for _, v := range []int64{25, 16, 162, 25} {
		b.Add(v)
	}
	if b.String() != "25/16/162" {
		t.Fatalf("BufferStats = %s", b)
	}
}

func TestSrvrRoles(t *testing.T) {
	s := goldenStats(1, 2)
	s.Mode = "read-only"
	got := Srvr(s)
	if !strings.HasPrefix(got, "Zookeeper version: "+goldenVersion+"\nREAD-ONLY mode; serving only read-only clients\nLatency") {
		t.Errorf("read-only srvr:\n%s", got)
	}
	s = goldenStats(1, 2)
	s.Mode = "leader"
	if got := Srvr(s); !strings.HasSuffix(got, "Mode: leader\nNode count: 17\nProposal sizes last/min/max: -1/-1/-1\n") {
		t.Errorf("leader srvr without proposals:\n%s", got)
	}
	s.ProposalSizes = &BufferStats{100, 36, 4096}
	if got := Srvr(s); !strings.HasSuffix(got, "\nProposal sizes last/min/max: 100/36/4096\n") {
		t.Errorf("leader srvr:\n%s", got)
	}
	s = goldenStats(1, 2)
	s.Zxid = -1
	if got := Srvr(s); !strings.Contains(got, "\nZxid: 0xffffffffffffffff\n") {
		t.Errorf("negative zxid:\n%s", got)
	}
	if got := Stat(goldenStats(1, 2), nil); !strings.Contains(got, "\nClients:\n\nLatency") {
		t.Errorf("stat without clients:\n%s", got)
	}
}

func TestConsDetails(t *testing.T) {
	c := ConnInfo{
		Remote: "/[0:0:0:0:0:0:0:1]:40000", Interest: 5, Queued: 2, Received: 3, Sent: 1,
		SessionID: -2, LastOp: "NA", Established: time.UnixMilli(1000), Timeout: 4000,
		LastCxid: -1, LastZxid: -1,
	}
	want := " /[0:0:0:0:0:0:0:1]:40000[5](queued=2,recved=3,sent=1,sid=0xfffffffffffffffe,lop=NA,est=1000,to=4000,lzxid=0xffffffffffffffff,lresp=0,llat=0,minlat=0,avglat=0,maxlat=0)\n\n"
	if got := Cons([]ConnInfo{c}); got != want {
		t.Errorf("Cons:\n got %q\nwant %q", got, want)
	}
	if got := Cons(nil); got != "\n" {
		t.Errorf("Cons(nil) = %q", got)
	}
}

func TestLastOp(t *testing.T) {
	for op, want := range map[jute.OpCode]string{
		jute.OpGetChildren2: "GETC", jute.OpCreateTTL: "CREA", jute.OpPing: "PING",
		jute.OpCloseSession: "CLOS", jute.OpWhoAmI: "HOMI", jute.OpGetAllChildrenNumber: "GETACN",
		jute.OpAuth: "NA", jute.OpError: "NA", 999: "NA",
	} {
		if got := LastOp(op); got != want {
			t.Errorf("LastOp(%d) = %q, want %q", op, got, want)
		}
	}
}

func TestWatchesSorted(t *testing.T) {
	got := Wchc(map[int64][]string{3: {"/b", "/a"}, 1: {"/z"}})
	if want := "0x1\n\t/z\n0x3\n\t/a\n\t/b\n\n"; got != want {
		t.Errorf("Wchc = %q, want %q", got, want)
	}
	got = Wchp(map[string][]int64{"/b": {2, 1}, "/a": {0x10}})
	if want := "/a\n\t0x10\n/b\n\t0x1\n\t0x2\n\n"; got != want {
		t.Errorf("Wchp = %q, want %q", got, want)
	}
	if got := Wchc(nil); got != "\n" {
		t.Errorf("Wchc(nil) = %q", got)
	}
}

func TestHashAndMasks(t *testing.T) {
	if got := Hash([]ZxidDigest{{0x2e, 1234567}, {0x2f, 42}}); got != "2e: 1234567\n2f: 42\n" {
		t.Errorf("Hash = %q", got)
	}
	if got := Hash(nil); got != "" {
		t.Errorf("Hash(nil) = %q", got)
	}
	if Gtmk(306) != "306" || Stmk(-1) != "-1" || Isro(true) != "ro" {
		t.Error("mask/isro answers wrong")
	}
}

func TestMntrExtras(t *testing.T) {
	s := goldenStats(1, 2)
	s.Mode, s.PeerState = "leader", "leading - broadcast"
	s.ResponseSize = NewBufferStats()
	s.ConnectionDropProbability = 0.25
	s.RoleGauges = []Gauge{{"learners", 2}, {"synced_followers", 2}}
	s.Counters = map[string]int64{"response_bytes": 7, "zkd_extra_b": 2, "zkd_extra_a": 1}
	s.Summaries = map[string]Summary{"readlatency": {Count: 2, Sum: 3, Min: 1, Max: 2, P50: 1, P999: 2}, "zkd_sum": {Count: 1, Sum: 4, Min: 4, Max: 4}}
	got := Mntr(s)
	for _, want := range []string{
		"zk_version\t" + goldenVersion + "\nzk_server_state\tleader\nzk_peer_state\tleading - broadcast\nzk_ephemerals_count\t0\n",
		"zk_last_client_response_size\t-1\n",
		"zk_connection_drop_probability\t0.25\n",
		"zk_non_mtls_local_conn_count\t0\nzk_learners\t2\nzk_synced_followers\t2\nzk_proposal_count\t0\n",
		"zk_response_bytes\t7\n",
		"zk_revalidate_count\t0\nzk_zkd_extra_a\t1\nzk_zkd_extra_b\t2\nzk_avg_socket_closing_time\t0.0\n",
		"zk_sum_startup_snap_load_time\t0\nzk_avg_zkd_sum\t4.0\nzk_min_zkd_sum\t4\nzk_max_zkd_sum\t4\nzk_cnt_zkd_sum\t1\nzk_sum_zkd_sum\t4\nzk_avg_prep_processor_queue_time_ms\t0.0\n",
		"zk_avg_readlatency\t1.5\nzk_min_readlatency\t1\nzk_max_readlatency\t2\nzk_cnt_readlatency\t2\nzk_sum_readlatency\t3\nzk_p50_readlatency\t1\nzk_p95_readlatency\t0\nzk_p99_readlatency\t0\nzk_p999_readlatency\t2\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("mntr lacks %q", want)
		}
	}
	if strings.Count(got, "readlatency") != 9 {
		t.Errorf("readlatency printed %d times", strings.Count(got, "readlatency"))
	}
	if !strings.HasSuffix(got, "zk_p999_write_commitproc_time_ms\t0\n") {
		t.Errorf("mntr without namespaces ends %q", got[len(got)-60:])
	}
}

// srvr, mntr and envi name the compatible release first (tools parse it), then this build.
func TestVersionNamesBuild(t *testing.T) {
	if !strings.HasPrefix(Version, CompatibleRelease+"-zkd-") || !strings.Contains(Version, ", built on ") {
		t.Errorf("Version %q: want %s-zkd-<build>, built on <date>", Version, CompatibleRelease)
	}
}
