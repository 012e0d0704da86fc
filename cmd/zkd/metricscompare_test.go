package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/zkd-io/zkd/internal/metrics"
	"github.com/zkd-io/zkd/internal/testing/refzk"
)

// promOnlyInZooKeeper are the families ZooKeeper 3.8's provider exports that zkd does not,
// each with the reason. zkd exports the jvm_* names dashboards chart (memory, threads, GC)
// from the Go runtime; the rest of the Java client's hotspot exports describe a JVM.
var promOnlyInZooKeeper = map[string]string{
	"jvm_buffer_pool_capacity_bytes":        "NIO buffer pools: a JVM's",
	"jvm_buffer_pool_used_buffers":          "NIO buffer pools: a JVM's",
	"jvm_buffer_pool_used_bytes":            "NIO buffer pools: a JVM's",
	"jvm_classes_loaded":                    "class loading: a JVM's",
	"jvm_classes_loaded_total":              "class loading: a JVM's",
	"jvm_classes_unloaded_total":            "class loading: a JVM's",
	"jvm_info":                              "the JVM's version and vendor",
	"jvm_memory_bytes_init":                 "the JVM's initial heap (-Xms); Go has none",
	"jvm_memory_pool_allocated_bytes_total": "per JVM memory pool (eden, old gen, metaspace...)",
	"jvm_memory_pool_bytes_committed":       "per JVM memory pool",
	"jvm_memory_pool_bytes_init":            "per JVM memory pool",
	"jvm_memory_pool_bytes_max":             "per JVM memory pool",
	"jvm_memory_pool_bytes_used":            "per JVM memory pool",
	"jvm_threads_daemon":                    "daemon threads: a JVM's",
	"jvm_threads_deadlocked_monitor":        "monitor deadlocks: a JVM's",
	"jvm_threads_peak":                      "the JVM's thread peak",
	"jvm_threads_started_total":             "the JVM's threads started",
	"jvm_threads_state":                     "per Java thread state",
}

// promOnlyInZkd are the families zkd exports that ZooKeeper 3.8's provider does not (besides
// zkd_* and go_*, zkd's own), each with the reason.
var promOnlyInZkd = map[string]string{
	"restore_error_count":                  "ZooKeeper 3.9 (the admin restore command); zkd exports 3.9's names",
	"restore_rate_limited_count":           "ZooKeeper 3.9",
	"restore_time":                         "ZooKeeper 3.9",
	"snapshot_error_count":                 "ZooKeeper 3.9 (the admin snapshot command)",
	"snapshot_rate_limited_count":          "ZooKeeper 3.9",
	"trunc_count":                          "zkd's: TRUNC syncs, beside ZooKeeper's diff_count and snap_count",
	"digest_resync_count":                  "zkd's: a learner's resyncs after a digest mismatch",
	"process_network_receive_bytes_total":  "client_golang's process collector; the Java client has no such export",
	"process_network_transmit_bytes_total": "client_golang's process collector",
	"process_virtual_memory_max_bytes":     "client_golang's process collector",
}

// promSameValue are the gauges whose values must be equal on both servers after the same
// load: the state the load leaves behind, not how fast it was served.
var promSameValue = []string{
	"znode_count", "ephemerals_count", "watch_count", "approximate_data_size",
	"global_sessions", "local_sessions", "num_alive_connections", "outstanding_requests",
}

// TestPrometheusMatchesZooKeeper runs Apache ZooKeeper 3.8 with its own Prometheus provider
// (built from source by refzk) and zkd with the same metricsProvider keys, puts the same
// load on both, and compares the scrapes: every family ZooKeeper exports is in zkd's with
// the same type, label names and quantiles, except the differences listed above; and the
// state gauges agree.
func TestPrometheusMatchesZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	metricsCfg := func(port int) string {
		return "metricsProvider.className=" + refzk.PrometheusProviderClass + "\n" +
			"metricsProvider.httpHost=127.0.0.1\n" +
			fmt.Sprintf("metricsProvider.httpPort=%d\n", port) +
			"metricsProvider.exportJvmInfo=true\n"
	}
	ref := refzk.StartStandalone(t, refzk.Options{Prometheus: true,
		Config: []string{"metricsProvider.exportJvmInfo=true"}})
	mport := freePort(t)
	p, _ := startFromZooCfg(t, t.TempDir(), metricsCfg(mport))
	servers := []struct{ name, addr, url string }{
		{"zookeeper", ref.Addr(), "http://" + ref.MetricsAddr() + "/metrics"},
		{"zkd", p.addr, fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)},
	}
	scrapes := map[string]promScrape{}
	for _, s := range servers {
		promLoad(t, s.addr)
		// The load leaves one session (and its connection) open; the closed session's
		// connection may still be going away.
		scrapes[s.name] = waitScrape(t, s.url, func(sc promScrape) bool {
			return sc.value("num_alive_connections") == 1 && sc.value("global_sessions") == 1
		})
	}
	zkS, zkdS := scrapes["zookeeper"], scrapes["zkd"]

	for _, name := range sortedKeys(zkS) {
		zf := zkS[name]
		if why, ok := promOnlyInZooKeeper[name]; ok {
			if _, has := zkdS[name]; has {
				t.Errorf("%s is listed as ZooKeeper's only (%s), but zkd exports it: drop it from the list", name, why)
			}
			continue
		}
		df, ok := zkdS[name]
		if !ok {
			if len(zf.GetMetric()) == 0 {
				// A labelled set with no key observed yet: the Java client writes its
				// HELP and TYPE lines, client_golang writes nothing until a series
				// exists. Neither has a series for PromQL.
				continue
			}
			t.Errorf("ZooKeeper exports %s (%s, %d series); zkd does not", name, zf.GetType(), len(zf.GetMetric()))
			continue
		}
		if zf.GetType() != df.GetType() {
			t.Errorf("%s: ZooKeeper's type %s, zkd's %s", name, zf.GetType(), df.GetType())
			continue
		}
		if zl, dl := labelNames(zf), labelNames(df); len(zf.GetMetric()) > 0 && len(df.GetMetric()) > 0 && !slices.Equal(zl, dl) {
			t.Errorf("%s: ZooKeeper's labels %v, zkd's %v", name, zl, dl)
		}
		if zf.GetType() == dto.MetricType_SUMMARY {
			if zq, dq := quantiles(zf), quantiles(df); !slices.Equal(zq, dq) {
				t.Errorf("%s: ZooKeeper's quantiles %v, zkd's %v", name, zq, dq)
			}
		}
		if keys := labelValues(zf, "key"); len(keys) > 0 && !slices.Equal(keys, labelValues(df, "key")) {
			t.Errorf("%s: ZooKeeper's keys %v, zkd's %v", name, keys, labelValues(df, "key"))
		}
	}
	for _, name := range sortedKeys(zkdS) {
		if _, ok := zkS[name]; ok || strings.HasPrefix(name, "zkd_") || strings.HasPrefix(name, "go_") {
			continue
		}
		if _, ok := promOnlyInZkd[name]; !ok {
			t.Errorf("zkd exports %s (%s), which ZooKeeper 3.8 does not; list it with a reason", name, zkdS[name].GetType())
		}
	}
	for name, why := range promOnlyInZkd {
		if _, ok := zkdS[name]; !ok {
			t.Errorf("%s is listed as zkd's only (%s), but zkd does not export it", name, why)
		}
		if _, ok := zkS[name]; ok {
			t.Errorf("%s is listed as zkd's only (%s), but ZooKeeper exports it", name, why)
		}
	}

	// The per-namespace sets count and size each read and write the same way.
	for _, name := range []string{"read_per_namespace", "write_per_namespace"} {
		if zc, dc := summaryTotals(zkS[name], "prom"), summaryTotals(zkdS[name], "prom"); zc != dc {
			t.Errorf("%s{key=\"prom\"}: ZooKeeper (count, sum) %v, zkd %v after the same load", name, zc, dc)
		}
	}
	for _, name := range promSameValue {
		if zv, dv := zkS.value(name), zkdS.value(name); zv != dv {
			t.Errorf("%s: ZooKeeper %v, zkd %v after the same load", name, zv, dv)
		}
	}
	t.Logf("compared %d ZooKeeper families with %d of zkd's", len(zkS), len(zkdS))
}

// promLoad puts the comparison's load on a server: a few creates (one ephemeral left
// behind), sets, gets and watches of each kind, one watch fired, and a second session that
// creates an ephemeral and closes. Every step waits for its reply, so both servers end in
// the same state.
func promLoad(t *testing.T, addr string) {
	t.Helper()
	c := connectZK(t, addr)
	t.Cleanup(c.Close)
	acl := zk.WorldACL(zk.PermAll)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s on %s: %v", what, addr, err)
		}
	}
	_, err := c.Create("/prom", []byte("root"), 0, acl)
	must("create /prom", err)
	for i := range 5 {
		path := fmt.Sprintf("/prom/n%d", i)
		_, err := c.Create(path, []byte("v0"), 0, acl)
		must("create "+path, err)
		_, err = c.Set(path, []byte(fmt.Sprintf("value %d", i)), -1)
		must("set "+path, err)
		_, _, _, err = c.GetW(path)
		must("getw "+path, err)
	}
	_, _, _, err = c.ChildrenW("/prom")
	must("childrenw /prom", err)
	_, _, _, err = c.ExistsW("/prom/absent")
	must("existsw /prom/absent", err)
	_, err = c.Create("/prom/eph", nil, zk.FlagEphemeral, acl)
	must("create /prom/eph", err)

	other := connectZK(t, addr)
	_, err = other.Create("/prom/eph-other", []byte("x"), zk.FlagEphemeral, acl)
	must("create /prom/eph-other", err)
	_, _, _, err = other.GetW("/prom/n0")
	must("getw from the second session", err)
	// Fires c's data watch on /prom/n0 (and other's, which goes with its session).
	_, err = other.Set("/prom/n0", []byte("changed"), -1)
	must("set /prom/n0", err)
	other.Close()

	// Wait until the watch fired on c (a sync round trip orders it before this reply).
	_, err = c.Sync("/prom")
	must("sync", err)
	_, _, err = c.Get("/prom/n1")
	must("get", err)
}

type promScrape map[string]*dto.MetricFamily

// value is the first series of a gauge or counter family, -1 when there is none.
func (s promScrape) value(name string) float64 {
	f, ok := s[name]
	if !ok || len(f.GetMetric()) == 0 {
		return -1
	}
	m := f.GetMetric()[0]
	if m.GetGauge() != nil {
		return m.GetGauge().GetValue()
	}
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetUntyped().GetValue()
}

// waitScrape scrapes url until ready holds (60 s at most) and returns that scrape.
func waitScrape(t *testing.T, url string, ready func(promScrape) bool) promScrape {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		sc, err := scrapeFamilies(url)
		if err == nil && ready(sc) {
			return sc
		}
		if time.Now().After(deadline) {
			t.Fatalf("scrape %s: not ready after 60s (err %v; num_alive_connections %v, global_sessions %v)",
				url, err, sc.value("num_alive_connections"), sc.value("global_sessions"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func scrapeFamilies(url string) (promScrape, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", url, err)
	}
	return fams, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// labelNames are the label names of a family's series (the text format's quantile and le
// are not labels of the parsed series).
func labelNames(f *dto.MetricFamily) []string {
	var out []string
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			out = append(out, l.GetName())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func labelValues(f *dto.MetricFamily, name string) []string {
	var out []string
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				out = append(out, l.GetValue())
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func quantiles(f *dto.MetricFamily) []float64 {
	var out []float64
	for _, m := range f.GetMetric() {
		for _, q := range m.GetSummary().GetQuantile() {
			out = append(out, q.GetQuantile())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// summaryTotals is the count and sum of f's series with key="key"; zeros when there is none.
func summaryTotals(f *dto.MetricFamily, key string) [2]float64 {
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "key" && l.GetValue() == key {
				return [2]float64{float64(m.GetSummary().GetSampleCount()), m.GetSummary().GetSampleSum()}
			}
		}
	}
	return [2]float64{}
}

// TestPrometheusEmptyFamiliesMatchZooKeeper compares the TYPE lines of fresh servers'
// scrapes, which the text parser would drop for a family without samples: every family
// ZooKeeper 3.8's provider declares (its labelled sets with no key yet included: ack_latency,
// learner_handler_qp_*, the quota_*_per_namespace sets) is declared by zkd with the same
// type, and the sets ZooKeeper writes without samples have none in zkd either.
func TestPrometheusEmptyFamiliesMatchZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	ref := refzk.StartStandalone(t, refzk.Options{Prometheus: true,
		Config: []string{"metricsProvider.exportJvmInfo=false"}})
	mport := freePort(t)
	startFromZooCfg(t, t.TempDir(), "metricsProvider.className="+refzk.PrometheusProviderClass+"\n"+
		"metricsProvider.httpHost=127.0.0.1\n"+
		fmt.Sprintf("metricsProvider.httpPort=%d\n", mport)+
		"metricsProvider.exportJvmInfo=false\n")
	rawScrape := func(url string) string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			resp, err := http.Get(url)
			if err == nil {
				b, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				if rerr == nil && resp.StatusCode == http.StatusOK {
					return string(b)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("scrape %s: %v", url, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	zkText := rawScrape("http://" + ref.MetricsAddr() + "/metrics")
	zkdText := rawScrape(fmt.Sprintf("http://127.0.0.1:%d/metrics", mport))
	zkTypes, zkdTypes := metrics.TypeLines(zkText), metrics.TypeLines(zkdText)
	hasSample := func(text, name string) bool {
		for _, line := range strings.Split(text, "\n") {
			if rest, ok := strings.CutPrefix(line, name); ok && (strings.HasPrefix(rest, " ") ||
				strings.HasPrefix(rest, "{") || strings.HasPrefix(rest, "_count") || strings.HasPrefix(rest, "_sum")) {
				return true
			}
		}
		return false
	}
	empty := 0
	for _, name := range sortedKeys(zkTypes) {
		if _, ok := promOnlyInZooKeeper[name]; ok {
			continue
		}
		if zkdTypes[name] != zkTypes[name] {
			t.Errorf("ZooKeeper declares %s %s, zkd %q", name, zkTypes[name], zkdTypes[name])
			continue
		}
		if !hasSample(zkText, name) {
			empty++
			if hasSample(zkdText, name) {
				t.Errorf("%s: ZooKeeper writes no sample on a fresh server, zkd does", name)
			}
		}
	}
	for _, name := range []string{"ack_latency", "learner_handler_qp_size", "learner_handler_qp_time_ms",
		"quota_exceeded_error_per_namespace", "quota_count_limit_per_namespace",
		"quota_bytes_limit_per_namespace", "quota_count_usage_per_namespace", "quota_bytes_usage_per_namespace"} {
		if _, ok := zkTypes[name]; !ok {
			t.Errorf("ZooKeeper does not declare %s on a fresh server", name)
		}
	}
	t.Logf("%d ZooKeeper families, %d without samples", len(zkTypes), empty)
}

// TestPrometheusWildcardHostAsZooKeeper: with metricsProvider.httpHost=0.0.0.0 (the
// default) ZooKeeper's provider, bound by the JVM on a dual-stack socket, serves IPv4 and
// IPv6 clients alike; zkd's endpoint answers the same loopback addresses as it does.
func TestPrometheusWildcardHostAsZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	ref := refzk.StartStandalone(t, refzk.Options{Prometheus: true,
		Config: []string{"metricsProvider.httpHost=0.0.0.0", "metricsProvider.exportJvmInfo=false"}})
	_, refPort, _ := strings.Cut(ref.MetricsAddr(), ":")
	mport := freePort(t)
	startFromZooCfg(t, t.TempDir(), "metricsProvider.className="+refzk.PrometheusProviderClass+"\n"+
		"metricsProvider.httpHost=0.0.0.0\n"+
		fmt.Sprintf("metricsProvider.httpPort=%d\n", mport)+
		"metricsProvider.exportJvmInfo=false\n")
	answers := func(host, port string) bool {
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, err := http.Get("http://" + host + ":" + port + "/metrics")
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK
			}
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, host := range []string{"127.0.0.1", "[::1]"} {
		zk, zkd := answers(host, refPort), answers(host, fmt.Sprint(mport))
		t.Logf("%s: ZooKeeper answers %v, zkd %v", host, zk, zkd)
		if zk != zkd {
			t.Errorf("httpHost=0.0.0.0, GET from %s: ZooKeeper answers %v, zkd %v", host, zk, zkd)
		}
		if host == "127.0.0.1" && !zkd {
			t.Errorf("zkd's endpoint on 0.0.0.0 does not answer 127.0.0.1")
		}
	}
}
