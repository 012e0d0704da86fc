package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
)

// The Prometheus metrics part of the settings: zoo.cfg's metricsProvider.* keys.

// Metrics provider class names ZooKeeper ships; zkd implements both.
const (
	// DefaultMetricsProvider keeps the metrics for mntr only; no endpoint.
	DefaultMetricsProvider = "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider"
	// PrometheusMetricsProvider serves /metrics on metricsProvider.httpHost:httpPort.
	PrometheusMetricsProvider = "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider"
)

// Defaults of ZooKeeper's Prometheus provider.
const (
	DefaultMetricsHTTPHost = "0.0.0.0"
	DefaultMetricsHTTPPort = 7000
)

// MetricsConfig is the metricsProvider.* keys as ZooKeeper's QuorumPeerConfig reads them:
// metricsProvider.className names the provider and every other metricsProvider.X is handed
// to it as X. They are zoo.cfg keys only: ZooKeeper reads no system property for them, so
// "zookeeper.metricsProvider.httpPort" is an unknown key (a system property nothing reads)
// for zkd as for ZooKeeper. The zero value is ZooKeeper's default provider.
type MetricsConfig struct {
	ClassName string            // "" = DefaultMetricsProvider
	Props     map[string]string // the provider's settings by X; nil when there are none
}

// setMetricsKey applies key when it is a metricsProvider.* key.
func (m *MetricsConfig) setMetricsKey(key, v string) bool {
	if key == "metricsProvider.className" {
		m.ClassName = v
		return true
	}
	sub, ok := strings.CutPrefix(key, "metricsProvider.")
	if !ok {
		return false
	}
	if m.Props == nil {
		m.Props = make(map[string]string)
	}
	m.Props[sub] = v
	return true
}

// Prometheus reports whether the Prometheus endpoint is configured.
func (m MetricsConfig) Prometheus() bool { return m.ClassName == PrometheusMetricsProvider }

// HTTPAddr is the endpoint's host:port: metricsProvider.httpHost (every interface, IPv4 and IPv6, by
// default, as in ZooKeeper: the scraper is usually another machine) and
// metricsProvider.httpPort (7000).
func (m MetricsConfig) HTTPAddr() string {
	host, ok := m.Props["httpHost"]
	if !ok {
		host = DefaultMetricsHTTPHost
	}
	port, err := m.httpPort()
	if err != nil {
		port = DefaultMetricsHTTPPort
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func (m MetricsConfig) httpPort() (int, error) {
	v, ok := m.Props["httpPort"]
	if !ok {
		return DefaultMetricsHTTPPort, nil
	}
	p, err := javaParseInt(v)
	if err != nil {
		return 0, err
	}
	if p < 0 || p > 65535 {
		return 0, errors.New("port out of range")
	}
	return p, nil
}

// ExportJvmInfo is metricsProvider.exportJvmInfo, read with Java's Boolean.parseBoolean:
// true unless set, and then true only for "true" in any case.
func (m MetricsConfig) ExportJvmInfo() bool {
	v, ok := m.Props["exportJvmInfo"]
	return !ok || strings.EqualFold(v, "true")
}

// validate reports what would stop ZooKeeper at start-up: a provider class it cannot load,
// and, for the Prometheus provider, settings its configure() cannot parse. The provider's
// worker-thread settings are checked and otherwise unused: zkd's instruments need no
// reporting thread.
func (m MetricsConfig) validate(bad func(key string, value any, format string, args ...any)) {
	switch m.ClassName {
	case "", DefaultMetricsProvider:
		return
	case PrometheusMetricsProvider:
	default:
		bad("metricsProvider.className", m.ClassName, "metrics provider class was not found (zkd provides %s and %s)",
			DefaultMetricsProvider, PrometheusMetricsProvider)
		return
	}
	if _, err := m.httpPort(); err != nil {
		bad("metricsProvider.httpPort", m.Props["httpPort"], "%v", err)
	}
	for _, k := range []string{"numWorkerThreads", "maxQueueSize"} {
		if v, ok := m.Props[k]; ok {
			if n, err := javaParseInt(v); err != nil {
				bad("metricsProvider."+k, v, "%v", err)
			} else if k == "maxQueueSize" && n <= 0 {
				bad("metricsProvider."+k, v, "must be positive")
			}
		}
	}
	if v, ok := m.Props["workerShutdownTimeoutMs"]; ok {
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			bad("metricsProvider.workerShutdownTimeoutMs", v, "%v", numError(err))
		}
	}
}

// render writes the provider's settings for Config.String (the key table renders the class).
func (m MetricsConfig) render(kv func(k string, v any)) {
	for _, k := range slices.Sorted(maps.Keys(m.Props)) {
		kv(fmt.Sprintf("metricsProvider.%s", k), m.Props[k])
	}
}
