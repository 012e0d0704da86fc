package admin

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// golden reads the real ZooKeeper 3.8.0 answer to cmd (see testdata/README.md).
func golden(t *testing.T, cmd string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + cmd + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// same fails with the first differing line, which is far easier to read than two dumps.
func same(t *testing.T, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("line %d differs:\n got %q\nwant %q\n(%d bytes vs %d)", i+1, gl, wl, len(got), len(want))
		}
	}
	t.Fatalf("outputs differ: %q vs %q", got, want)
}

const goldenVersion = "3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC"

// goldenLatency reproduces the capture's "0/5.7195/33": 469 ms over 82 requests.
var goldenLatency = Summary{Count: 82, Sum: 469, Min: 0, Max: 33}

func goldenStats(received, sent int64) ServerStats {
	return ServerStats{
		Version:         goldenVersion,
		Mode:            "standalone",
		Latency:         goldenLatency,
		PacketsReceived: received,
		PacketsSent:     sent,
		Connections:     2,
		Outstanding:     0,
		Zxid:            0x2f,
		NodeCount:       17,
	}
}

func TestSrvrGolden(t *testing.T) {
	same(t, Srvr(goldenStats(92, 96)), golden(t, "srvr"))
}

func TestStatGolden(t *testing.T) {
	conns := []ConnInfo{
		{Remote: "/127.0.0.1:57746", Interest: 1, Received: 7, Sent: 7, SessionID: 0x100000a4ed70009, LastOp: "GETC"},
		{Remote: "/127.0.0.1:57776", Interest: 0, Received: 1},
	}
	same(t, Stat(goldenStats(93, 97), conns), golden(t, "stat"))
}

func TestConsGolden(t *testing.T) {
	conns := []ConnInfo{
		{Remote: "/127.0.0.1:57802", Received: 1, LastCxid: -1},
		{
			Remote: "/127.0.0.1:57746", Interest: 1, Received: 7, Sent: 7,
			SessionID: 0x100000a4ed70009, LastOp: LastOp(12),
			Established: time.UnixMilli(1795337739877), Timeout: 10000,
			LastCxid: 6, LastZxid: 0x2f, LastResponse: 706853,
			LastLatency: 4, MinLatency: 0, AvgLatency: 3, MaxLatency: 8,
		},
	}
	same(t, Cons(conns), golden(t, "cons"))
}

func TestConfGolden(t *testing.T) {
	conf := []KV{
		{"clientPort", "25181"}, {"secureClientPort", "-1"},
		{"dataDir", "<local-path>"}, {"dataDirSize", "67109337"},
		{"dataLogDir", "<local-path>"}, {"dataLogSize", "67109337"},
		{"tickTime", "2000"}, {"maxClientCnxns", "60"},
		{"minSessionTimeout", "4000"}, {"maxSessionTimeout", "40000"},
		{"clientPortListenBacklog", "-1"}, {"serverId", "0"},
	}
	same(t, Conf(conf), golden(t, "conf"))
}

func TestSmallAnswersGolden(t *testing.T) {
	for _, tc := range []struct{ cmd, got string }{
		{"ruok", Ruok},
		{"dirs", Dirs(67109337, 67109337)},
		{"wchs", Wchs(1, 1, 1)},
		{"wchc", Wchc(map[int64][]string{0x100000a4ed70009: {"/w4"}})},
		{"wchp", Wchp(map[string][]int64{"/w4": {0x100000a4ed70009}})},
		{"isro", Isro(false)},
		{"gtmk", Gtmk(DefaultTraceMask)},
		{"crst", Crst},
		{"srst", Srst},
	} {
		t.Run(tc.cmd, func(t *testing.T) { same(t, tc.got, golden(t, tc.cmd)) })
	}
}

func TestDumpGolden(t *testing.T) {
	at := func(hms string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04:05", "2026-11-22 "+hms, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	d := DumpInfo{
		// Deliberately out of order: dump sorts buckets by deadline.
		SessionSets: []SessionSet{
			{Expire: at("08:56:09"), Sessions: []int64{0x100000a4ed70008, 0x100000a4ed70006, 0x100000a4ed70007}},
			{Expire: at("08:55:43")},
			{Expire: at("08:56:17")},
			{Expire: at("08:55:51"), Sessions: []int64{0x100000a4ed70009}},
			{Expire: at("08:55:45")},
			{Expire: at("08:56:07"), Sessions: []int64{0x100000a4ed70004, 0x100000a4ed70005}},
		},
		Ephemerals: []SessionEphemerals{
			{SessionID: 0x100000a4ed70009, Paths: []string{"/w4/e"}},
			{SessionID: 0x100000a4ed70004, Paths: []string{"/raw/eph"}},
		},
		ConnSets: []ConnSet{
			{Expire: at("08:56:23")},
			{Expire: at("08:55:43")},
			{Expire: at("08:55:53"), Conns: []ConnRef{
				{Remote: "/127.0.0.1:57840"},
				{Remote: "/127.0.0.1:57746", SessionID: 0x100000a4ed70009},
			}},
			{Expire: at("08:56:13")},
		},
	}
	same(t, Dump(d), golden(t, "dump"))
}

// TestMntrGolden renders the capture's values and expects the capture. The values are read
// back from the capture itself, so this checks the key set, order and number formats; the
// averages are recomputed from sum and count, which checks ZooKeeper's rounding on every
// summary in the capture.
func TestMntrGolden(t *testing.T) {
	want := golden(t, "mntr")
	vals := map[string]string{}
	var order []string
	sc := bufio.NewScanner(strings.NewReader(want))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if !ok || !strings.HasPrefix(k, "zk_") {
			t.Fatalf("bad mntr line %q", sc.Text())
		}
		k = strings.TrimPrefix(k, "zk_")
		vals[k] = v
		order = append(order, k)
	}
	num := func(k string) int64 {
		t.Helper()
		v, ok := vals[k]
		if !ok {
			t.Fatalf("capture has no %s", k)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		return n
	}
	summary := func(name string, percentiles bool) Summary {
		s := Summary{Count: num("cnt_" + name), Sum: num("sum_" + name), Min: num("min_" + name), Max: num("max_" + name)}
		if percentiles {
			s.P50, s.P95, s.P99, s.P999 = num("p50_"+name), num("p95_"+name), num("p99_"+name), num("p999_"+name)
		}
		return s
	}

	s := ServerStats{
		Version:                   vals["version"],
		Mode:                      vals["server_state"],
		Latency:                   goldenLatency,
		PacketsReceived:           num("packets_received"),
		PacketsSent:               num("packets_sent"),
		Connections:               int(num("num_alive_connections")),
		Outstanding:               num("outstanding_requests"),
		NodeCount:                 int(num("znode_count")),
		EphemeralsCount:           int(num("ephemerals_count")),
		WatchCount:                int(num("watch_count")),
		GlobalSessions:            num("global_sessions"),
		LocalSessions:             num("local_sessions"),
		ApproximateDataSize:       num("approximate_data_size"),
		OpenFileDescriptors:       num("open_file_descriptor_count"),
		MaxFileDescriptors:        num("max_file_descriptor_count"),
		Uptime:                    num("uptime"),
		ResponseSize:              BufferStats{Last: num("last_client_response_size"), Min: num("min_client_response_size"), Max: num("max_client_response_size")},
		AuthFailed:                num("auth_failed_count"),
		NonMTLSRemoteConns:        num("non_mtls_remote_conn_count"),
		NonMTLSLocalConns:         num("non_mtls_local_conn_count"),
		OutstandingTLSHandshakes:  num("outstanding_tls_handshake"),
		ConnectionDropProbability: 0,
		Counters:                  map[string]int64{},
		Summaries:                 map[string]Summary{},
	}
	for _, n := range counterNames {
		s.Counters[n] = num(n)
	}
	for _, n := range summaryNames {
		s.Summaries[n] = summary(n, false)
	}
	for _, n := range percentileSummaryNames {
		s.Summaries[n] = summary(n, true)
	}
	for _, k := range order {
		name, ok := strings.CutPrefix(k, "avg_")
		if !ok {
			continue
		}
		if ns, ok := strings.CutSuffix(name, "_read_per_namespace"); ok {
			s.ReadPerNamespace = append(s.ReadPerNamespace, NamedSummary{ns, summary(name, false)})
		}
		if ns, ok := strings.CutSuffix(name, "_write_per_namespace"); ok {
			s.WritePerNamespace = append(s.WritePerNamespace, NamedSummary{ns, summary(name, false)})
		}
	}
	same(t, Mntr(s), want)
}

// TestEnviKeys checks that the keys zkd shares with ZooKeeper come in ZooKeeper's order.
func TestEnviKeys(t *testing.T) {
	want := golden(t, "envi")
	zkKeys := map[string]int{}
	for i, line := range strings.Split(strings.TrimSuffix(want, "\n"), "\n")[1:] {
		k, _, _ := strings.Cut(line, "=")
		zkKeys[k] = i
	}
	got := Envi(Env(EnvInfo{Version: goldenVersion, GOOS: "linux", GOARCH: "arm64", MemFree: 5 << 20, MemMax: -1, MemTotal: 64<<20 + 1}))
	if !strings.HasPrefix(got, "Environment:\nzookeeper.version="+goldenVersion+"\nhost.name=<NA>\n") {
		t.Fatalf("envi starts %q", got[:min(len(got), 120)])
	}
	for _, l := range []string{"os.name=Linux\n", "os.arch=aarch64\n", "os.memory.free=5MB\n", "os.memory.max=<NA>\n", "os.memory.total=64MB\n"} {
		if !strings.Contains(got, l) {
			t.Errorf("envi lacks %q:\n%s", l, got)
		}
	}
	last, shared := -1, 0
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n")[1:] {
		k, _, _ := strings.Cut(line, "=")
		if i, ok := zkKeys[k]; ok {
			shared++
			if i < last {
				t.Errorf("key %s out of ZooKeeper's order", k)
			}
			last = i
		}
	}
	if shared < 10 {
		t.Errorf("only %d keys shared with ZooKeeper's envi", shared)
	}
}
