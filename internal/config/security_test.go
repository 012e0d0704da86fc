package config

import (
	"errors"
	"strings"
	"testing"
)

const baseCfg = "tickTime=2000\ndataDir=/tmp/zkd-sec\nclientPort=2181\n"

// TestSecurityKeysFailClosed: a key that asks for security zkd does not provide stops
// start-up with an error naming the key, whatever form (bare or zookeeper.-prefixed) it
// takes; passwords are not echoed.
func TestSecurityKeysFailClosed(t *testing.T) {
	for _, tc := range []struct{ line, key string }{
		{"secureClientPort=2281", "secureClientPort"},
		{"ssl.keyStore.location=/etc/zk/ks.p12", "ssl.*"},
		{"zookeeper.ssl.keyStore.password=hunter2", "ssl.*"},
		{"ssl.quorum.trustStore.location=/x", "ssl.quorum.*"},
		{"sslQuorum=true", "sslQuorum"},
		{"portUnification=true", "portUnification"},
		{"client.portUnification=true", "client.portUnification"},
		{"authProvider.1=com.example.MyAuthenticationProvider", "authProvider.*"},
		{"enforce.auth.enabled=true", "enforce.auth.enabled"},
		{"zookeeper.enforce.auth.enabled=true", "enforce.auth.enabled"},
		{"enforce.auth.schemes=sasl", "enforce.auth.schemes"},
		{"sessionRequireClientSASLAuth=true", "sessionRequireClientSASLAuth"},
		{"quorum.auth.enableSasl=true", "quorum.auth.enableSasl"},
		{"quorum.auth.learnerRequireSasl=true", "quorum.auth.learnerRequireSasl"},
		{"quorum.auth.serverRequireSasl=true", "quorum.auth.serverRequireSasl"},
		{"kerberos.removeHostFromPrincipal=true", "kerberos.removeHostFromPrincipal"},
		{"X509AuthenticationProvider.superUser=CN=admin", "X509AuthenticationProvider.superUser"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			if _, ok := notImplemented[tc.key]; !ok {
				t.Skipf("%s is implemented now", tc.key)
			}
			_, err := Parse(strings.NewReader(baseCfg + tc.line + "\n"))
			if err == nil {
				t.Fatalf("%s: start-up not refused", tc.line)
			}
			if !errors.Is(err, ErrNotImplemented) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("%s: error %v is not ErrNotImplemented and ErrInvalid", tc.line, err)
			}
			if !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("%s: error %q does not name %s", tc.line, err, tc.key)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error shows a password: %v", err)
			}
		})
	}
}

// TestSecurityKeysThatAskNothing: keys that turn a feature off, the built-in providers and
// serverCnxnFactory start as in ZooKeeper, and are not logged as unknown.
func TestSecurityKeysThatAskNothing(t *testing.T) {
	lines := []string{
		"sslQuorum=false", "portUnification=false", "client.portUnification=false",
		"enforce.auth.enabled=false", "sessionRequireClientSASLAuth=false",
		"quorum.auth.enableSasl=false", "quorum.auth.learnerRequireSasl=false",
		"quorum.auth.serverRequireSasl=false", "secureClientPort=0",
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"authProvider.2=" + DigestProviderClass, "authProvider.3=" + IPProviderClass,
	}
	c, err := Parse(strings.NewReader(baseCfg + strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	if len(c.Unknown) != 0 {
		t.Fatalf("logged as unknown: %v", c.Unknown)
	}
	if c.Security.ServerCnxnFactoryClass == "" || len(c.Security.AuthProviders) != 2 {
		t.Fatalf("keys not kept: %+v", c.Security)
	}
}

// TestSecurityKeysParsed: the values land in Security whether or not zkd implements them, so
// a part that implements a feature finds them there.
func TestSecurityKeysParsed(t *testing.T) {
	var s Security
	for _, kv := range [][2]string{
		{"secureClientPort", "2281"}, {"ssl.clientAuth", "need"},
		{"zookeeper.ssl.quorum.keyStore.type", "JKS"}, {"enforce.auth.schemes", " sasl, x509 ,"},
		{"zookeeper.superUser", "bob"},
	} {
		if ok, err := s.setSecurityKey(kv[0], kv[1]); !ok || err != nil {
			t.Fatalf("%s: handled %v, err %v", kv[0], ok, err)
		}
	}
	if s.SecureClientPort != 2281 || s.SSL["clientAuth"] != "need" || s.SSLQuorum["keyStore.type"] != "JKS" ||
		strings.Join(s.EnforceAuthSchemes, "|") != "sasl|x509" || s.SASLSuperUser != "bob" {
		t.Fatalf("parsed %+v", s)
	}
}

// TestEnforceAuthConfig: enforcement as ZooKeeper's AuthenticationHelper configures it.
func TestEnforceAuthConfig(t *testing.T) {
	for _, tc := range []struct {
		lines string
		want  string // EnforcedSchemes joined, or "error:<text>"
	}{
		{"enforce.auth.enabled=true\nenforce.auth.schemes=digest", "digest"},
		{"enforce.auth.enabled=false\nenforce.auth.schemes=digest", ""},
		{"enforce.auth.enabled=true", "error:enforce.auth.schemes must be configured"},
		{"zookeeper.enforce.auth.enabled=true\nzookeeper.enforce.auth.schemes= ip , digest", "ip,digest"},
		{"enforce.auth.enabled=true\nenforce.auth.schemes=kerberos", "error:authentication scheme kerberos is not available"},
		{"sessionRequireClientSASLAuth=true", "error:authentication scheme sasl is not available"},
	} {
		c, err := Parse(strings.NewReader(baseCfg + tc.lines + "\n"))
		if want, ok := strings.CutPrefix(tc.want, "error:"); ok {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%q: err %v, want one containing %q", tc.lines, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.lines, err)
			continue
		}
		if got := strings.Join(c.Security.EnforcedSchemes(), ","); got != tc.want {
			t.Errorf("%q: enforced %q, want %q", tc.lines, got, tc.want)
		}
	}
}

// TestQuorumSASLConfig: quorum SASL's keys as QuorumPeerConfig takes them: the requirements
// need quorum.auth.enableSasl, serverRequireSasl needs learnerRequireSasl, and Kerberos's
// service principal is still refused.
func TestQuorumSASLConfig(t *testing.T) {
	for _, tc := range []struct {
		lines string
		want  string // "" = accepted, else a substring of the error
	}{
		{"quorum.auth.enableSasl=true", ""},
		{"quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true", ""},
		{"quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\nquorum.auth.serverRequireSasl=true\n" +
			"quorum.auth.learner.saslLoginContext=L\nquorum.auth.server.saslLoginContext=S", ""},
		{"quorum.auth.learnerRequireSasl=true", "quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.learnerRequireSasl"},
		{"quorum.auth.enableSasl=false\nquorum.auth.serverRequireSasl=true\nquorum.auth.learnerRequireSasl=true",
			"quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.serverRequireSasl"},
		{"quorum.auth.enableSasl=true\nquorum.auth.serverRequireSasl=true",
			"quorum.auth.learnerRequireSasl is disabled, so cannot enable quorum.auth.serverRequireSasl"},
		{"quorum.auth.enableSasl=yes", "quorum.auth.enableSasl"},
		{"quorum.auth.enableSasl=true\nquorum.auth.kerberos.servicePrincipal=zkquorum/_HOST", "quorum.auth.kerberos.servicePrincipal"},
	} {
		_, err := Parse(strings.NewReader(baseCfg + tc.lines + "\n"))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.lines, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: err %v, want an ErrInvalid containing %q", tc.lines, err, tc.want)
		}
	}
	c, err := Parse(strings.NewReader(baseCfg + "quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\n" +
		"quorum.auth.serverRequireSasl=true\nquorum.auth.learner.saslLoginContext=L\nquorum.auth.server.saslLoginContext=S\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Security; !s.QuorumSASL || !s.QuorumLearnerRequireSASL || !s.QuorumServerRequireSASL ||
		s.QuorumLearnerLoginContext != "L" || s.QuorumServerLoginContext != "S" {
		t.Fatalf("parsed %+v", s)
	}
}
