package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/refzk"
)

// mntrOnlyInZkd are the mntr keys zkd prints and ZooKeeper 3.8 does not, without the
// Prometheus provider (with it, promOnlyInZkd lists them).
var mntrOnlyInZkd = map[string]string{
	"trunc_count":         "zkd's: TRUNC syncs, beside ZooKeeper's diff_count and snap_count",
	"digest_resync_count": "zkd's: a learner's resyncs after a digest mismatch (ZooKeeper only counts the mismatch)",
}

// mntrMeasured are the summaries zkd measures as ZooKeeper does; the others (commit
// processor queues, Netty buffers, JVM pauses, ...) describe machinery zkd does not have
// and print 0. After the same load, each has been observed on both servers.
var mntrMeasured = []string{"fsynctime", "sync_processor_batch_size", "updatelatency", "readlatency"}

// mntrSummaryStat matches a summary line of the default provider: avg_, min_, max_, cnt_,
// sum_ and the percentiles.
var mntrSummaryStat = regexp.MustCompile(`^(avg|min|max|cnt|sum|p50|p95|p99|p999)_`)

// dumpFamilies are the families a Prometheus dump key may belong to: its name without
// labels, and that without the _count, _sum or _bucket of a summary's or histogram's
// samples (a counter's own name may end in _count).
func dumpFamilies(key string) []string {
	name, _, _ := strings.Cut(key, "{")
	out := []string{name}
	for _, suffix := range []string{"_count", "_sum", "_bucket"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			out = append(out, base)
		}
	}
	return out
}

// dumpAnyLabels are the families whose label values differ by nature: the garbage
// collectors' names (the JVM's "Copy" and "MarkSweepCompact", zkd's "go").
var dumpAnyLabels = []string{"jvm_gc_collection_seconds"}

// TestMntrMatchesZooKeeper runs Apache ZooKeeper 3.8 and zkd standalone, first with the
// default metrics provider and then with the Prometheus one, puts the same load on both and
// compares their mntr answers: the same keys up to the differences listed above (the
// default provider's avg_/min_/max_/cnt_/sum_/p*_ summary lines; the Prometheus
// provider's sample keys, `name{labels}`), the summaries zkd measures observed on both,
// and the per-namespace sets with the same counts and sizes.
func TestMntrMatchesZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, prom := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "prometheus"}[prom], func(t *testing.T) {
			zkdCfg := "4lw.commands.whitelist=*\nadmin.enableServer=false\n"
			if prom {
				zkdCfg += "metricsProvider.className=" + refzk.PrometheusProviderClass + "\n" +
					"metricsProvider.httpHost=127.0.0.1\n" +
					fmt.Sprintf("metricsProvider.httpPort=%d\n", freePort(t)) +
					"metricsProvider.exportJvmInfo=true\n"
			}
			ref := refzk.StartStandalone(t, refzk.Options{Prometheus: prom,
				Config: []string{"4lw.commands.whitelist=*", "metricsProvider.exportJvmInfo=true"}})
			p, _ := startFromZooCfg(t, t.TempDir(), zkdCfg)
			answers := map[string]map[string]string{}
			for _, s := range []struct{ name, addr string }{{"zookeeper", ref.Addr()}, {"zkd", p.addr}} {
				promLoad(t, s.addr)
				answers[s.name] = waitMntr(t, s.addr, func(m map[string]string) bool {
					// The load leaves one session and its connection, beside the one
					// asking; the closed session's connection may still be going away.
					one, two := "1", "2"
					if prom {
						one, two = "1.0", "2.0"
					}
					return m["num_alive_connections"] == two && m["global_sessions"] == one
				})
			}
			zkM, zkdM := answers["zookeeper"], answers["zkd"]
			if prom {
				compareDump(t, zkM, zkdM)
			} else {
				compareDefault(t, zkM, zkdM)
			}
		})
	}
}

// compareDefault compares the default provider's answers.
func compareDefault(t *testing.T, zkM, zkdM map[string]string) {
	for _, k := range sortedKeys(zkM) {
		if _, ok := zkdM[k]; !ok {
			t.Errorf("ZooKeeper's mntr prints %s (%s); zkd's does not", k, zkM[k])
		}
	}
	summaries := 0
	for _, k := range sortedKeys(zkdM) {
		if mntrSummaryStat.MatchString(k) {
			summaries++
		}
		if _, ok := zkM[k]; ok {
			continue
		}
		if _, ok := mntrOnlyInZkd[k]; !ok {
			t.Errorf("zkd's mntr prints %s (%s), which ZooKeeper 3.8's does not; list it with a reason", k, zkdM[k])
		}
	}
	for k, why := range mntrOnlyInZkd {
		if _, ok := zkdM[k]; !ok {
			t.Errorf("%s is listed as zkd's only (%s), but zkd does not print it", k, why)
		}
	}
	for _, n := range mntrMeasured {
		if zkM["cnt_"+n] == "0" || zkdM["cnt_"+n] == "0" {
			t.Errorf("cnt_%s: ZooKeeper %s, zkd %s after the same load; want both > 0", n, zkM["cnt_"+n], zkdM["cnt_"+n])
		}
	}
	for _, set := range []string{"read_per_namespace", "write_per_namespace"} {
		for _, stat := range []string{"cnt", "sum", "min", "max"} {
			k := stat + "_prom_" + set
			if zkM[k] != zkdM[k] || zkM[k] == "" {
				t.Errorf("%s: ZooKeeper %q, zkd %q after the same load", k, zkM[k], zkdM[k])
			}
		}
	}
	t.Logf("compared %d mntr lines, %d of them summary lines", len(zkdM), summaries)
}

// compareDump compares the Prometheus provider's answers: the sample keys of the families
// both export (the families only one exports are those TestPrometheusMatchesZooKeeper
// lists, the JVM's, and zkd's own zkd_* and go_*).
func compareDump(t *testing.T, zkM, zkdM map[string]string) {
	compared := func(k string) bool {
		for _, f := range dumpFamilies(k) {
			_, onlyZk := promOnlyInZooKeeper[f]
			_, onlyZkd := promOnlyInZkd[f]
			if onlyZk || onlyZkd || slices.Contains(dumpAnyLabels, f) || strings.HasPrefix(f, "zkd_") || strings.HasPrefix(f, "go_") {
				return false
			}
		}
		return true
	}
	// The families with label values of their own are compared by name.
	for _, f := range dumpAnyLabels {
		for _, suffix := range []string{"_count", "_sum"} {
			has := func(m map[string]string) bool {
				for k := range m {
					if strings.HasPrefix(k, f+suffix+"{") {
						return true
					}
				}
				return false
			}
			if has(zkM) != has(zkdM) {
				t.Errorf("%s%s: ZooKeeper prints it %v, zkd %v", f, suffix, has(zkM), has(zkdM))
			}
		}
	}
	for _, k := range sortedKeys(zkM) {
		if _, ok := zkdM[k]; !ok && compared(k) {
			t.Errorf("ZooKeeper's mntr prints %s (%s); zkd's does not", k, zkM[k])
		}
	}
	for _, k := range sortedKeys(zkdM) {
		if _, ok := zkM[k]; !ok && compared(k) {
			t.Errorf("zkd's mntr prints %s (%s), which ZooKeeper 3.8's does not", k, zkdM[k])
		}
		if mntrSummaryStat.MatchString(k) && !slices.Contains([]string{"avg_latency", "min_latency", "max_latency",
			"max_client_response_size", "min_client_response_size", "max_file_descriptor_count"}, k) {
			t.Errorf("zkd's mntr prints the default provider's %s with the Prometheus provider", k)
		}
	}
	for _, n := range mntrMeasured {
		for who, m := range map[string]map[string]string{"ZooKeeper": zkM, "zkd": zkdM} {
			if v := m[n+"_count"]; v == "" || v == "0.0" {
				t.Errorf("%s: %s_count = %q after the load; want > 0", who, n, v)
			}
		}
	}
	for _, k := range []string{`read_per_namespace_count{key="prom"}`, `read_per_namespace_sum{key="prom"}`,
		`write_per_namespace_count{key="prom"}`, `write_per_namespace_sum{key="prom"}`} {
		if zkM[k] != zkdM[k] || zkM[k] == "" {
			t.Errorf("%s: ZooKeeper %q, zkd %q after the same load", k, zkM[k], zkdM[k])
		}
	}
	t.Logf("compared %d of ZooKeeper's mntr lines with %d of zkd's", len(zkM), len(zkdM))
}

// waitMntr asks addr for mntr until ready holds (60 s at most) and returns that answer by
// key (without "zk_").
func waitMntr(t *testing.T, addr string, ready func(map[string]string) bool) map[string]string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		m := map[string]string{}
		for _, l := range strings.Split(fourLetter(addr, "mntr"), "\n") {
			if k, v, ok := strings.Cut(l, "\t"); ok {
				m[strings.TrimPrefix(k, "zk_")] = v
			}
		}
		if ready(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("mntr of %s: not ready after 60s (%d lines; num_alive_connections %q, global_sessions %q)",
				addr, len(m), m["num_alive_connections"], m["global_sessions"])
		}
		time.Sleep(100 * time.Millisecond)
	}
}
