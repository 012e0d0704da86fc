package metrics

import (
	"compress/gzip"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// zkEmptySets is what ZooKeeper 3.8.0's Prometheus provider writes for its labelled sets
// on a fresh standalone server, recorded from its /metrics (refzk, Options.Prometheus):
// HELP (the name) and TYPE lines, and no sample, not even a zero count.
var zkEmptySets = []string{
	"# HELP ack_latency ack_latency\n# TYPE ack_latency summary\n",
	"# HELP learner_handler_qp_size learner_handler_qp_size\n# TYPE learner_handler_qp_size summary\n",
	"# HELP learner_handler_qp_time_ms learner_handler_qp_time_ms\n# TYPE learner_handler_qp_time_ms summary\n",
	"# HELP read_per_namespace read_per_namespace\n# TYPE read_per_namespace summary\n",
	"# HELP write_per_namespace write_per_namespace\n# TYPE write_per_namespace summary\n",
	"# HELP quota_exceeded_error_per_namespace quota_exceeded_error_per_namespace\n# TYPE quota_exceeded_error_per_namespace counter\n",
	"# HELP quota_count_limit_per_namespace quota_count_limit_per_namespace\n# TYPE quota_count_limit_per_namespace gauge\n",
	"# HELP quota_bytes_limit_per_namespace quota_bytes_limit_per_namespace\n# TYPE quota_bytes_limit_per_namespace gauge\n",
	"# HELP quota_count_usage_per_namespace quota_count_usage_per_namespace\n# TYPE quota_count_usage_per_namespace gauge\n",
	"# HELP quota_bytes_usage_per_namespace quota_bytes_usage_per_namespace\n# TYPE quota_bytes_usage_per_namespace gauge\n",
}

func get(t *testing.T, url string, gz bool) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if gz {
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("Accept-Encoding gzip answered with Content-Encoding %q", resp.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", url, resp.Status, err)
	}
	return string(b)
}

// TestEmptySetsAsZooKeeper: the labelled sets with no series yet are in the scrape as
// ZooKeeper writes them, so that a dashboard finds the family; once a key is observed the
// family has its series and is written once.
func TestEmptySetsAsZooKeeper(t *testing.T) {
	r := New(Options{})
	url := serve(t, r)
	for _, gz := range []bool{false, true} {
		body := get(t, url, gz)
		for _, want := range zkEmptySets {
			if !strings.Contains(body, want) {
				t.Errorf("gzip %v: scrape lacks ZooKeeper's\n%s", gz, want)
			}
		}
		// The parser drops families without samples; it must still accept the scrape.
		p := expfmt.NewTextParser(model.LegacyValidation)
		if _, err := p.TextToMetricFamilies(strings.NewReader(body)); err != nil {
			t.Fatalf("gzip %v: scrape does not parse: %v", gz, err)
		}
		types := TypeLines(body)
		if types["ack_latency"] != "summary" || types["close_session_prep_time"] != "summary" || types["quota_exceeded_error_per_namespace"] != "counter" {
			t.Errorf("gzip %v: TYPE lines %v", gz, types)
		}
	}

	r.AckLatency(2, 3)
	body := get(t, url, false)
	if n := strings.Count(body, "# TYPE ack_latency summary\n"); n != 1 {
		t.Errorf("ack_latency TYPE written %d times once observed:\n%s", n, body)
	}
	if !strings.Contains(body, `ack_latency_count{key="2"} 1`) {
		t.Errorf("ack_latency lacks the observed key's series")
	}
	if !strings.Contains(body, "# TYPE learner_handler_qp_size summary\n") {
		t.Errorf("learner_handler_qp_size lost while ack_latency has series")
	}
}

// TestServeWildcard: ZooKeeper's default host, 0.0.0.0, serves every interface, IPv6
// loopback included (as the JVM binds it), and the endpoint is named by the host given.
func TestServeWildcard(t *testing.T) {
	ep, err := New(Options{}).Serve("0.0.0.0:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	host, port, _ := net.SplitHostPort(ep.Addr())
	if host != "0.0.0.0" {
		t.Errorf("Addr %s, want the host given, 0.0.0.0", ep.Addr())
	}
	get(t, "http://127.0.0.1:"+port+"/metrics", false)
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Logf("no IPv6 loopback here (%v): [::1] not tried", err)
	} else {
		ln.Close()
		get(t, "http://[::1]:"+port+"/metrics", false)
	}
}
