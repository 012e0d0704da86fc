package config

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestMetricsProviderKeys(t *testing.T) {
	c := mustParse(t, `dataDir=/d
clientPort=2181
metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider
metricsProvider.httpHost=127.0.0.1
metricsProvider.httpPort=7001
metricsProvider.exportJvmInfo=FALSE
metricsProvider.numWorkerThreads=4
`)
	if !c.Metrics.Prometheus() {
		t.Fatalf("Prometheus() = false for %+v", c.Metrics)
	}
	if got := c.Metrics.HTTPAddr(); got != "127.0.0.1:7001" {
		t.Errorf("HTTPAddr() = %q", got)
	}
	if c.Metrics.ExportJvmInfo() {
		t.Errorf("exportJvmInfo=FALSE read as true")
	}
	if c.Metrics.Props["numWorkerThreads"] != "4" {
		t.Errorf("provider settings %v", c.Metrics.Props)
	}
	back := mustParse(t, c.String())
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip: %+v, want %+v", back.Metrics, c.Metrics)
	}
}

func TestMetricsProviderDefaults(t *testing.T) {
	c := mustParse(t, "dataDir=/d\nclientPort=2181\n")
	if c.Metrics.Prometheus() {
		t.Errorf("Prometheus endpoint on without metricsProvider.className")
	}
	c = mustParse(t, "dataDir=/d\nclientPort=2181\nmetricsProvider.className="+PrometheusMetricsProvider+"\n")
	// ZooKeeper's defaults: all interfaces, port 7000, JVM metrics on.
	if got := c.Metrics.HTTPAddr(); got != "0.0.0.0:7000" {
		t.Errorf("HTTPAddr() = %q, want ZooKeeper's 0.0.0.0:7000", got)
	}
	if !c.Metrics.ExportJvmInfo() {
		t.Errorf("exportJvmInfo defaults to false")
	}
	// Boolean.parseBoolean: only "true", in any case, is true.
	for v, want := range map[string]bool{"true": true, "True": true, "yes": false, "1": false} {
		c := mustParse(t, "dataDir=/d\nclientPort=2181\nmetricsProvider.exportJvmInfo="+v+"\n")
		if got := c.Metrics.ExportJvmInfo(); got != want {
			t.Errorf("exportJvmInfo=%s read as %v", v, got)
		}
	}
}

// TestMetricsProviderPrefixed: ZooKeeper reads metricsProvider.* from zoo.cfg only; a
// "zookeeper."-prefixed spelling becomes a system property nothing reads, so it is an
// unknown key, not a setting.
func TestMetricsProviderPrefixed(t *testing.T) {
	c := mustParse(t, "dataDir=/d\nclientPort=2181\nzookeeper.metricsProvider.className="+PrometheusMetricsProvider+"\nzookeeper.metricsProvider.httpPort=7001\n")
	if c.Metrics.Prometheus() || c.Metrics.Props != nil {
		t.Errorf("prefixed keys taken as settings: %+v", c.Metrics)
	}
	if want := []string{"zookeeper.metricsProvider.className", "zookeeper.metricsProvider.httpPort"}; !slices.Equal(c.Unknown, want) {
		t.Errorf("Unknown = %v, want %v", c.Unknown, want)
	}
}

func TestMetricsProviderInvalid(t *testing.T) {
	for _, tt := range []struct{ lines, key string }{
		{"metricsProvider.className=com.example.Nope", "metricsProvider.className"},
		{"metricsProvider.className=" + PrometheusMetricsProvider + "\nmetricsProvider.httpPort=x", "metricsProvider.httpPort"},
		{"metricsProvider.className=" + PrometheusMetricsProvider + "\nmetricsProvider.httpPort=70000", "metricsProvider.httpPort"},
		{"metricsProvider.className=" + PrometheusMetricsProvider + "\nmetricsProvider.maxQueueSize=0", "metricsProvider.maxQueueSize"},
		{"metricsProvider.className=" + PrometheusMetricsProvider + "\nmetricsProvider.workerShutdownTimeoutMs=1.5", "metricsProvider.workerShutdownTimeoutMs"},
	} {
		_, err := Parse(strings.NewReader("dataDir=/d\nclientPort=2181\n" + tt.lines + "\n"))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.key+"=") {
			t.Errorf("%q: err = %v, want one naming %s", tt.lines, err, tt.key)
		}
	}
	// The provider's settings are parsed by the provider: with the default one a bad port
	// stops nothing, as in ZooKeeper.
	if _, err := Parse(strings.NewReader("dataDir=/d\nclientPort=2181\nmetricsProvider.httpPort=x\n")); err != nil {
		t.Errorf("bad httpPort without the Prometheus provider: %v", err)
	}
}
