package config

// AdminServer HTTPS (issues 12 and 14): ZooKeeper 3.9's JettyAdminServer reads
// zookeeper.admin.portUnification, zookeeper.admin.forceHttps and
// zookeeper.admin.needClientAuth with Boolean.getBoolean (only "true", in any case, is
// true; zkd takes "true" or "false" and refuses anything else, see strictBool), and takes its
// key and trust stores from the ssl.quorum.* keys (QuorumX509Util).
// zkd fails closed where ZooKeeper would quietly serve less than asked: HTTPS without both
// stores stops start-up (ZooKeeper logs the failure and serves no AdminServer), and so does
// admin.needClientAuth on an AdminServer that serves plain HTTP only (ZooKeeper ignores it
// there, serving every client without a certificate).

// AdminTLSKeys are the AdminServer's HTTPS switches.
type AdminTLSKeys struct {
	PortUnification bool // admin.portUnification: HTTP and HTTPS on admin.serverPort
	ForceHTTPS      bool // admin.forceHttps: HTTPS only (wins over portUnification)
}

// Enabled reports whether the AdminServer speaks HTTPS.
func (a AdminTLSKeys) Enabled() bool { return a.PortUnification || a.ForceHTTPS }

// validateAdminTLS checks the AdminServer's HTTPS keys; they matter only when it is served.
func (c *Config) validateAdminTLS(bad func(key string, value any, format string, args ...any)) {
	if !c.AdminEnableServer {
		return
	}
	if !c.AdminTLS.Enabled() {
		if c.AdminNeedClientAuth {
			bad("admin.needClientAuth", true, "client certificates need HTTPS: set admin.forceHttps=true "+
				"(or admin.portUnification=true) with the ssl.quorum.* stores, or remove the key")
		}
		return
	}
	key := "admin.forceHttps"
	if !c.AdminTLS.ForceHTTPS {
		key = "admin.portUnification"
	}
	for _, store := range []string{"keyStore.location", "trustStore.location"} {
		if c.Security.SSLQuorum[store] == "" {
			bad(key, true, "the AdminServer's HTTPS needs ssl.quorum.%s, as ZooKeeper's does", store)
		}
	}
}
