package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const baseCfg = "tickTime=2000\ndataDir=/tmp/zkd-sec\nclientPort=2181\n"

// TestSecurityKeysFailClosed: every security key is either honoured (its value lands where
// the server reads it, whatever form, bare or zookeeper.-prefixed, it takes) or refused at
// start-up with an error naming it; a refusal does not echo a password. What the server then
// does with an honoured key is tested where it is applied (cmd/zkd, server).
func TestSecurityKeysFailClosed(t *testing.T) {
	const (
		saslProvider = "authProvider.1=" + SASLProviderClass + "\n"
		x509Provider = "authProvider.2=" + X509ProviderClass + "\n"
	)
	for _, tc := range []struct {
		lines    string
		honoured func(*Config) bool // nil when the key is refused
		refused  error              // the error it is refused with
		key      string             // the key the error names
	}{
		{lines: "secureClientPort=2281", honoured: func(c *Config) bool { return c.Security.SecureClientPort == 2281 }},
		{lines: "secureClientPortAddress=10.0.0.1", honoured: func(c *Config) bool { return c.Security.SecureClientPortAddress == "10.0.0.1" }},
		{lines: "ssl.keyStore.location=/etc/zk/ks.p12", honoured: func(c *Config) bool { return c.Security.SSL["keyStore.location"] == "/etc/zk/ks.p12" }},
		{lines: "zookeeper.ssl.keyStore.password=hunter2", honoured: func(c *Config) bool { return c.Security.SSL["keyStore.password"] == "hunter2" }},
		{lines: "ssl.quorum.trustStore.location=/x", honoured: func(c *Config) bool { return c.Security.SSLQuorum["trustStore.location"] == "/x" }},
		{lines: "sslQuorum=true", honoured: func(c *Config) bool { return c.Security.QuorumTLS }},
		{lines: "portUnification=true", honoured: func(c *Config) bool { return c.Security.QuorumPortUnification }},
		{lines: "client.portUnification=true", honoured: func(c *Config) bool { return c.Security.ClientPortUnification }},
		{lines: "zookeeper.client.certReload=true", honoured: func(c *Config) bool { return c.Security.ClientCertReload }},
		{lines: "sslQuorumReloadCertFiles=TRUE", honoured: func(c *Config) bool { return c.Security.QuorumCertReload }},
		{lines: "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory", honoured: func(c *Config) bool { return c.Security.ServerCnxnFactoryClass != "" }},
		{lines: "authProvider.1=com.example.MyAuthenticationProvider", refused: ErrNotImplemented, key: "authProvider.*"},
		{lines: "zookeeper.authProvider.x=org.apache.zookeeper.server.auth.SASLAuthenticationProvidr", refused: ErrNotImplemented, key: "authProvider.*"},
		{lines: "authProvider.sasl=" + SASLProviderClass + "\nzookeeper.authProvider.77=" + X509ProviderClass,
			honoured: func(c *Config) bool { return strings.Join(c.Security.AuthSchemes(), ",") == "ip,digest,sasl,x509" }},
		{lines: "enforce.auth.enabled=true\nenforce.auth.schemes=digest", honoured: func(c *Config) bool { return slices.Equal(c.Security.EnforcedSchemes(), []string{"digest"}) }},
		{lines: "zookeeper.enforce.auth.enabled=true\nzookeeper.enforce.auth.schemes=sasl\n" + saslProvider,
			honoured: func(c *Config) bool { return slices.Equal(c.Security.EnforcedSchemes(), []string{"sasl"}) }},
		{lines: "enforce.auth.enabled=true", refused: ErrInvalid, key: "enforce.auth.schemes"},
		{lines: "enforce.auth.enabled=true\nenforce.auth.schemes=x509", refused: ErrInvalid, key: "enforce.auth.schemes"},
		{lines: "sessionRequireClientSASLAuth=true\n" + saslProvider, honoured: func(c *Config) bool { return slices.Equal(c.Security.EnforcedSchemes(), []string{"sasl"}) }},
		{lines: "sessionRequireClientSASLAuth=true", refused: ErrInvalid, key: "sessionRequireClientSASLAuth"},
		{lines: "allowSaslFailedClients=true", honoured: func(c *Config) bool { return c.Security.AllowSASLFailedClients }},
		{lines: "kerberos.removeHostFromPrincipal=true", honoured: func(c *Config) bool { return c.Security.KerberosRemoveHost }},
		{lines: "zookeeper.kerberos.removeRealmFromPrincipal=true", honoured: func(c *Config) bool { return c.Security.KerberosRemoveRealm }},
		{lines: "superUser=bob", honoured: func(c *Config) bool { return c.Security.SASLSuperUser == "bob" }},
		{lines: "X509AuthenticationProvider.superUser=CN=admin\n" + x509Provider, honoured: func(c *Config) bool { return c.Security.X509SuperUser == "CN=admin" }},
		{lines: "java.security.auth.login.config=/etc/zk/jaas.conf", honoured: func(c *Config) bool { return c.Security.JAASConfig == "/etc/zk/jaas.conf" }},
		{lines: "zookeeper.sasl.serverconfig=ZkServer", honoured: func(c *Config) bool { return c.Security.SASLServerSection == "ZkServer" }},
		{lines: "zookeeper.security.auth_to_local=RULE:[1:$1]", honoured: func(c *Config) bool { return c.Security.AuthToLocal == "RULE:[1:$1]" }},
		{lines: "SASLAuthenticationProvider.superPassword=hunter2", honoured: func(c *Config) bool { return c.Security.SASLSuperPassword == "hunter2" }},
		{lines: "quorum.auth.enableSasl=true", honoured: func(c *Config) bool { return c.Security.QuorumSASL }},
		{lines: "quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true", honoured: func(c *Config) bool { return c.Security.QuorumLearnerRequireSASL }},
		{lines: "quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\nquorum.auth.serverRequireSasl=true",
			honoured: func(c *Config) bool { return c.Security.QuorumServerRequireSASL }},
		{lines: "quorum.auth.serverRequireSasl=true", refused: ErrInvalid, key: "quorum.auth.serverRequireSasl"},
		{lines: "quorum.auth.learner.saslLoginContext=L", honoured: func(c *Config) bool { return c.Security.QuorumLearnerLoginContext == "L" }},
		{lines: "quorum.auth.server.saslLoginContext=S", honoured: func(c *Config) bool { return c.Security.QuorumServerLoginContext == "S" }},
		{lines: "quorum.auth.kerberos.servicePrincipal=zkquorum/_HOST", refused: ErrNotImplemented, key: "quorum.auth.kerberos.servicePrincipal"},
		{lines: "zookeeper.DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=", honoured: func(c *Config) bool { return strings.HasPrefix(c.SuperDigest, "super:") }},
		{lines: "admin.enableServer=true", honoured: func(c *Config) bool { return c.AdminEnableServer }},
		{lines: "zookeeper.admin.serverAddress=10.0.0.1", honoured: func(c *Config) bool { return c.AdminServerAddress == "10.0.0.1" }},
		{lines: "admin.snapshot.enabled=false", honoured: func(c *Config) bool { return c.AdminSnapshotDisabled }},
		{lines: "admin.restore.enabled=true", honoured: func(c *Config) bool { return c.AdminRestoreEnabled }},
		{lines: "admin.needClientAuth=true", honoured: func(c *Config) bool { return c.AdminNeedClientAuth }},
		{lines: "admin.enableServer=true\nadmin.needClientAuth=true", refused: ErrInvalid, key: "admin.needClientAuth"},
		{lines: "zookeeper.admin.forceHttps=true", honoured: func(c *Config) bool { return c.AdminTLS.ForceHTTPS }},
		{lines: "admin.portUnification=true", honoured: func(c *Config) bool { return c.AdminTLS.PortUnification }},
		{lines: "admin.enableServer=true\nadmin.forceHttps=true", refused: ErrInvalid, key: "admin.forceHttps"},
		{lines: SessionSecretKey + "=/etc/zkd/session.secret", honoured: func(c *Config) bool { return c.SessionSecretFile == "/etc/zkd/session.secret" }},
		{lines: SessionSecretKey + "=", refused: ErrInvalid, key: SessionSecretKey},
		{lines: "4lw.commands.whitelist=ruok", honoured: func(c *Config) bool { return !c.FourLetterAllowed("dump") && c.FourLetterAllowed("ruok") }},
	} {
		t.Run(tc.lines, func(t *testing.T) {
			c, err := Parse(strings.NewReader(baseCfg + tc.lines + "\n"))
			if tc.honoured != nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !tc.honoured(c) {
					t.Fatalf("parsed, but not where the server reads it: %+v", c.Security)
				}
				if len(c.Unknown) != 0 {
					t.Fatalf("logged as unknown: %v", c.Unknown)
				}
				return
			}
			if err == nil {
				t.Fatalf("start-up not refused")
			}
			if !errors.Is(err, tc.refused) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not %v and ErrInvalid", err, tc.refused)
			}
			if !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("error %q does not name %s", err, tc.key)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error shows a password: %v", err)
			}
		})
	}
}

// securityBooleans are the boolean security keys. ZooKeeper reads most of them with
// Boolean.parseBoolean or getBoolean (anything but "true" is false); zkd takes "true" or
// "false" in any case and refuses anything else.
var securityBooleans = []string{
	"sslQuorum", "portUnification", "client.portUnification", "zookeeper.client.portUnification",
	"client.certReload", "sslQuorumReloadCertFiles", "enforce.auth.enabled", "zookeeper.enforce.auth.enabled",
	"sessionRequireClientSASLAuth", "zookeeper.sessionRequireClientSASLAuth", "allowSaslFailedClients",
	"kerberos.removeHostFromPrincipal", "kerberos.removeRealmFromPrincipal",
	"quorum.auth.enableSasl", "quorum.auth.learnerRequireSasl", "quorum.auth.serverRequireSasl",
	"admin.enableServer", "zookeeper.admin.enableServer", "admin.needClientAuth", "admin.portUnification",
	"zookeeper.admin.forceHttps", "admin.snapshot.enabled", "admin.restore.enabled",
	"sasl.client", "zookeeper.sasl.client.canonicalize.hostname", FastElectionKey,
}

// TestSecurityBooleansStrict: a security boolean that is not true or false stops start-up
// with an error naming the key, where ZooKeeper would read it as false ("ture" turning
// enforcement off); TRUE and False are taken, as ZooKeeper's own parseBoolean takes them.
func TestSecurityBooleansStrict(t *testing.T) {
	for _, key := range securityBooleans {
		for _, v := range []string{"ture", "yes", "1", "on", ""} {
			_, err := Parse(strings.NewReader(baseCfg + key + "=" + v + "\n"))
			if !errors.Is(err, ErrNotBoolean) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), key+"=") {
				t.Errorf("%s=%s: err %v, want ErrNotBoolean naming the key", key, v, err)
			}
		}
		for _, v := range []string{"False", "FALSE", "false"} {
			if _, err := Parse(strings.NewReader(baseCfg + key + "=" + v + "\n")); err != nil {
				t.Errorf("%s=%s: %v", key, v, err)
			}
		}
	}
	// TRUE is true (keys that need others to be on are covered by TestSecurityKeysFailClosed).
	c := mustParse(t, baseCfg+"enforce.auth.enabled=TRUE\nenforce.auth.schemes=digest\nallowSaslFailedClients=True\n")
	if !c.Security.EnforceAuth || !c.Security.AllowSASLFailedClients {
		t.Fatalf("TRUE/True not read as true: %+v", c.Security)
	}
}

// TestUnknownSecurityKeys: under enforce.auth., authProvider., sasl, quorum.auth., admin. and
// zkd. a key that is neither zkd's nor one ZooKeeper 3.8/3.9 reads stops start-up (a typo must
// not drop a protection); the keys ZooKeeper reads there that zkd does not use start, listed as
// unknown, and every authProvider.X is a provider whatever X is.
func TestUnknownSecurityKeys(t *testing.T) {
	for _, line := range []string{
		"enforce.auth.enable=true", "zookeeper.enforce.auth.schemas=sasl", "enforce.auth.scheme=digest",
		"sasl.serverConfig=Server", "saslServerSection=Server", "zookeeper.sasl.clientconfg=Client",
		"quorum.auth.enableSASL=true", "quorum.auth.learnerRequiresSasl=true", "quorum.auth.server.loginContext=S",
		"zookeeper.quorum.auth.enableSasl=true", "zookeeper.quorum.auth.serverRequireSasl=false",
		"admin.enableserver=true", "admin.restore.enable=false", "zookeeper.admin.needClientAuthentication=true",
		"zkd.sesionSecretFile=/etc/zkd/session.secret", "zkd.fastElections=true", "zookeeper.zkd.fastElection=true",
	} {
		_, err := Parse(strings.NewReader(baseCfg + line + "\n"))
		key, _, _ := strings.Cut(line, "=")
		if !errors.Is(err, ErrUnknownSecurityKey) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), key+"=") {
			t.Errorf("%s: err %v, want ErrUnknownSecurityKey naming the key", line, err)
		}
	}
	unused := []string{
		"sasl.client=false", "zookeeper.sasl.client=true", "zookeeper.sasl.client.username=zookeeper",
		"zookeeper.sasl.clientconfig=Client", "sasl.client.canonicalize.hostname=false",
		"zookeeper.sasl.client.allowReverseDnsLookup=true", "admin.idleTimeout=30000", "zookeeper.admin.httpVersion=11",
	}
	c := mustParse(t, baseCfg+strings.Join(unused, "\n")+"\n")
	for _, line := range unused {
		key, value, _ := strings.Cut(line, "=")
		// ZooKeeper's own keys: recognised, not implemented (logged as such, not as typos).
		if !slices.ContainsFunc(c.NotImplemented, func(k IgnoredKey) bool { return k.Key == key && k.Value == value && k.Instead != "" }) {
			t.Errorf("%s not listed as not implemented (unused): %v", key, c.NotImplemented)
		}
	}
	if len(c.Unknown) != 0 {
		t.Errorf("ZooKeeper's keys listed as unknown: %v", c.Unknown)
	}
	c = mustParse(t, baseCfg+"authProvider.1="+DigestProviderClass+"\nauthProvider.zz_top="+IPProviderClass+
		"\nzookeeper.authProvider.2="+SASLProviderClass+"\nauthProvider.a.b="+X509ProviderClass+"\n")
	if len(c.Unknown) != 0 || len(c.Security.AuthProviders) != 4 {
		t.Fatalf("authProvider.X: providers %v, unknown %v", c.Security.AuthProviders, c.Unknown)
	}
	// Other keys ZooKeeper does not know are still only logged, as before.
	if c = mustParse(t, baseCfg+"someone.elses.key=1\n"); !slices.Equal(c.Unknown, []string{"someone.elses.key"}) {
		t.Fatalf("unknown: %v", c.Unknown)
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
	var c Config
	for _, kv := range [][2]string{
		{"secureClientPort", "2281"}, {"ssl.clientAuth", "need"},
		{"zookeeper.ssl.quorum.keyStore.type", "JKS"}, {"enforce.auth.schemes", " sasl, x509 ,"},
		{"zookeeper.superUser", "bob"},
	} {
		if err := c.set(kv[0], kv[1]); err != nil {
			t.Fatalf("%s: err %v", kv[0], err)
		}
	}
	s := c.Security
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

// TestX509ProviderRegistration: the x509 provider is registered as ZooKeeper's ProviderRegistry
// has it (QuorumPeerConfig.configureSSLAuth): by an authProvider.N naming its class, and by
// default with a secure client port unless authProvider.x509 names another class or
// ssl.authProvider another scheme; not by client.portUnification alone, whose default comes
// after the registry has been read. An ssl.authProvider under which no TLS client would be
// served stops start-up: ZooKeeper's own refusal for an unconfigured scheme on a secure port,
// zkd's for the rest (ZooKeeper starts and closes every TLS connection).
func TestX509ProviderRegistration(t *testing.T) {
	const (
		secure  = "secureClientPort=2281\n"
		unified = "client.portUnification=true\n"
	)
	for _, tc := range []struct {
		lines   string
		x509    bool   // X509Registered, and x509 among AuthSchemes
		refused string // the part of the error naming the reason ("" = starts)
	}{
		{lines: "", x509: false},
		{lines: secure, x509: true},
		{lines: secure + "ssl.clientAuth=need\nssl.authProvider= x509 ", x509: true},
		{lines: secure + unified, x509: true},
		{lines: unified, x509: false},
		{lines: "authProvider.2=" + X509ProviderClass, x509: true},
		{lines: unified + "zookeeper.authProvider.7=" + X509ProviderClass, x509: true},
		{lines: secure + "authProvider.1=" + X509ProviderClass, x509: true},
		{lines: secure + "authProvider.x509=" + X509ProviderClass, x509: true},
		// The property configureSSLAuth checks is set, to another class: no x509 provider.
		{lines: secure + "authProvider.x509=" + SASLProviderClass, x509: false},
		{lines: secure + "authProvider.x509=" + SASLProviderClass + "\nauthProvider.1=" + X509ProviderClass, x509: true},
		// With x509 there by default, enforce.auth.schemes=x509 starts, as in ZooKeeper.
		{lines: secure + "enforce.auth.enabled=true\nenforce.auth.schemes=x509", x509: true},
		{lines: unified + "enforce.auth.enabled=true\nenforce.auth.schemes=x509", refused: "authentication scheme x509 is not available"},
		// ssl.authProvider is read only where TLS clients are served.
		{lines: "ssl.authProvider=foo", x509: false},
		{lines: secure + "ssl.authProvider=foo", refused: "no auth provider configured for the SSL authentication scheme 'foo'"},
		{lines: unified + "ssl.authProvider=foo", refused: "no auth provider configured for the SSL authentication scheme 'foo'"},
		{lines: secure + "ssl.authProvider=foo\nauthProvider.foo=" + X509ProviderClass, refused: "not 'foo'"},
		{lines: secure + "ssl.authProvider=sasl\nauthProvider.sasl=" + SASLProviderClass, refused: "not 'sasl'"},
		{lines: unified + "ssl.authProvider=x509", refused: "client.portUnification without secureClientPort"},
		{lines: secure + "ssl.authProvider=x509\nauthProvider.x509=" + SASLProviderClass, refused: "authProvider.x509 names " + SASLProviderClass},
	} {
		t.Run(strings.ReplaceAll(tc.lines, "\n", ";"), func(t *testing.T) {
			c, err := Parse(strings.NewReader(baseCfg + tc.lines + "\n"))
			if tc.refused != "" {
				if err == nil {
					t.Fatalf("start-up not refused")
				}
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("error %q does not say %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := c.Security.X509Registered(); got != tc.x509 {
				t.Errorf("X509Registered = %v, want %v", got, tc.x509)
			}
			if got := slices.Contains(c.Security.AuthSchemes(), "x509"); got != tc.x509 {
				t.Errorf("AuthSchemes %v: x509 %v, want %v", c.Security.AuthSchemes(), got, tc.x509)
			}
		})
	}
}
