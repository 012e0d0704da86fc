package config

import "strings"

// zkHandledKeys are the zoo.cfg keys ZooKeeper's QuorumPeerConfig.parseProperties reads
// itself (3.8 and 3.9 read the same); every other key it sets as the system property
// "zookeeper." + key.
var zkHandledKeys = map[string]bool{
	"dataDir": true, "dataLogDir": true, "clientPort": true, "localSessionsEnabled": true,
	"localSessionsUpgradingEnabled": true, "clientPortAddress": true, "secureClientPort": true,
	"secureClientPortAddress": true, "observerMasterPort": true, "clientPortListenBacklog": true,
	"tickTime": true, "maxClientCnxns": true, "minSessionTimeout": true, "maxSessionTimeout": true,
	"initLimit": true, "syncLimit": true, "connectToLearnerMasterLimit": true, "electionAlg": true,
	"quorumListenOnAllIPs": true, "peerType": true, "syncEnabled": true, "dynamicConfigFile": true,
	"autopurge.snapRetainCount": true, "autopurge.purgeInterval": true, "standaloneEnabled": true,
	"reconfigEnabled": true, "sslQuorum": true, "portUnification": true,
	"sslQuorumReloadCertFiles": true, "quorum.auth.enableSasl": true,
	"quorum.auth.serverRequireSasl": true, "quorum.auth.learnerRequireSasl": true,
	"quorum.auth.learner.saslLoginContext": true, "quorum.auth.server.saslLoginContext": true,
	"quorum.auth.kerberos.servicePrincipal": true, "quorum.cnxn.threads.size": true,
	"jvm.pause.info-threshold.ms": true, "jvm.pause.warn-threshold.ms": true,
	"jvm.pause.sleep.time.ms": true, "jvm.pause.monitor": true, "metricsProvider.className": true,
	"multiAddress.enabled": true, "multiAddress.reachabilityCheckTimeoutMs": true,
	"multiAddress.reachabilityCheckEnabled": true, "oraclePath": true,
}

// SystemProperties returns the Java system properties ZooKeeper sets from a zoo.cfg, as its
// AdminServer's system_properties command shows them: QuorumPeerConfig.parseProperties sets
// "zookeeper." + key to the (trimmed) value for every key it does not read itself (a key
// already named zookeeper.x becomes zookeeper.zookeeper.x, as there; server.N, group.N and
// weight.N too when no dynamic file is named), and configureSSLAuth, with a secure client
// port, names the x509 provider as zookeeper.authProvider.x509 unless set. Text that does
// not parse gives nil.
func SystemProperties(text []byte) map[string]string {
	props, err := parseProperties(text)
	if err != nil {
		return nil
	}
	all := make(map[string]string, len(props))
	for _, p := range props {
		all[p.Key] = p.Value // Properties keeps a repeated key's last value
	}
	m := map[string]string{}
	for k, v := range all {
		if zkHandledKeys[k] || strings.HasPrefix(k, "metricsProvider.") {
			continue
		}
		m["zookeeper."+k] = v
	}
	if all["secureClientPort"] != "" && all["secureClientPort"] != "0" {
		provider := "x509"
		if v, ok := m["zookeeper.ssl.authProvider"]; ok {
			provider = v
		}
		if _, ok := m["zookeeper.authProvider."+provider]; !ok && provider == "x509" {
			m["zookeeper.authProvider.x509"] = "org.apache.zookeeper.server.auth.X509AuthenticationProvider"
		}
	}
	return m
}
