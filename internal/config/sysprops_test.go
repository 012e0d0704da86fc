package config

import (
	"maps"
	"testing"
)

// TestSystemProperties: the zookeeper.* properties QuorumPeerConfig.parseProperties and
// configureSSLAuth set from a zoo.cfg (ZooKeeper 3.8 and 3.9 source).
func TestSystemProperties(t *testing.T) {
	got := SystemProperties([]byte(`tickTime=2000
dataDir=/d
clientPort=2181
secureClientPort=2281
metricsProvider.httpPort=7000
4lw.commands.whitelist = srvr, mntr  
server.1=a:2888:3888
zookeeper.x=1
snapCount=10
snapCount=20
`))
	want := map[string]string{
		"zookeeper.4lw.commands.whitelist": "srvr, mntr",
		"zookeeper.server.1":               "a:2888:3888",
		"zookeeper.zookeeper.x":            "1",
		"zookeeper.snapCount":              "20",
		"zookeeper.authProvider.x509":      "org.apache.zookeeper.server.auth.X509AuthenticationProvider",
	}
	if !maps.Equal(got, want) {
		t.Errorf("SystemProperties:\n got %v\nwant %v", got, want)
	}
	if got := SystemProperties([]byte("secureClientPort=2281\nssl.authProvider=x509\nauthProvider.x509=my.Provider\n")); got["zookeeper.authProvider.x509"] != "my.Provider" {
		t.Errorf("a configured x509 provider was replaced: %v", got)
	}
}
