package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPrometheusEndpointFromZooCfg: ZooKeeper's metricsProvider.* keys in zoo.cfg start the
// /metrics endpoint where they say, with the JVM-info metrics switched as they say.
func TestPrometheusEndpointFromZooCfg(t *testing.T) {
	dir := t.TempDir()
	mport := freePort(t)
	p, _ := startFromZooCfg(t, dir, fmt.Sprintf(`metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider
metricsProvider.httpHost=127.0.0.1
metricsProvider.httpPort=%d
metricsProvider.exportJvmInfo=false
`, mport))

	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)
	var body string
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			if strings.Contains(body, "\nznode_count ") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no znode_count at %s (err %v):\n%s\nlog:\n%s", url, err, body, p.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{"# TYPE fsynctime summary", "# TYPE commit_count counter", "# TYPE znode_count gauge"} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	if strings.Contains(body, "process_cpu_seconds_total") {
		t.Errorf("process metrics exported with exportJvmInfo=false")
	}
	p.stop(t)
}
