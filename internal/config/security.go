package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The security part of the settings (issue 12): ZooKeeper's keys for client and quorum TLS,
// SASL, x509, enforced authentication and quorum SASL, read as ZooKeeper 3.8/3.9 reads them
// (zoo.cfg keys, or the same names as "zookeeper."-prefixed system properties).
//
// zkd fails closed: a key that asks for security zkd does not provide stops start-up with an
// error naming it, rather than being logged as unknown while the server runs without the
// protection the operator configured. notImplemented lists those keys; a part that implements
// a feature takes its keys out of it.

// Security holds the security keys. The zero value asks for nothing.
type Security struct {
	SecureClientPort        int    // secureClientPort; 0 = no TLS client port
	SecureClientPortAddress string // secureClientPortAddress; "" = all interfaces
	ClientPortUnification   bool   // client.portUnification: TLS and plaintext on clientPort
	ClientCertReload        bool   // client.certReload
	// SSL holds the client-side ssl.* keys by the name after "ssl." ("keyStore.location",
	// "clientAuth", ...); SSLQuorum the ssl.quorum.* keys by the name after "ssl.quorum.".
	SSL       map[string]string
	SSLQuorum map[string]string

	QuorumTLS              bool // sslQuorum
	QuorumPortUnification  bool // portUnification
	QuorumCertReload       bool // sslQuorumReloadCertFiles
	ServerCnxnFactoryClass string

	// AuthProviders maps the part after "authProvider." to the provider class
	// (authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider).
	AuthProviders                map[string]string
	EnforceAuth                  bool     // enforce.auth.enabled
	EnforceAuthSchemes           []string // enforce.auth.schemes, trimmed, in order
	SessionRequireClientSASLAuth bool     // sessionRequireClientSASLAuth
	AllowSASLFailedClients       bool     // allowSaslFailedClients
	KerberosRemoveHost           bool     // kerberos.removeHostFromPrincipal
	KerberosRemoveRealm          bool     // kerberos.removeRealmFromPrincipal
	SASLSuperUser                string   // superUser: a SASL id that is also super
	X509SuperUser                string   // X509AuthenticationProvider.superUser
	// JAASConfig is the JAAS login configuration file (Java's
	// java.security.auth.login.config system property); SASLServerSection the section of
	// it that configures the client-facing SASL server (sasl.serverconfig, "Server").
	JAASConfig        string
	SASLServerSection string
	// AuthToLocal is security.auth_to_local: Kerberos auth_to_local rules mapping
	// principals to sasl ids ("" = DEFAULT).
	AuthToLocal string
	// SASLSuperPassword is SASLAuthenticationProvider.superPassword: it replaces the
	// password of the JAAS Server section's user_super entry.
	SASLSuperPassword string

	QuorumSASL                bool   // quorum.auth.enableSasl
	QuorumLearnerRequireSASL  bool   // quorum.auth.learnerRequireSasl
	QuorumServerRequireSASL   bool   // quorum.auth.serverRequireSasl
	QuorumLearnerLoginContext string // quorum.auth.learner.saslLoginContext
	QuorumServerLoginContext  string // quorum.auth.server.saslLoginContext
	QuorumKerberosPrincipal   string // quorum.auth.kerberos.servicePrincipal

	// asked lists, in file order, the keys given with a value that asks for something.
	asked []askedKey
}

type askedKey struct{ key, value string }

// Provider classes ZooKeeper ships, for authProvider.N.
const (
	DigestProviderClass = "org.apache.zookeeper.server.auth.DigestAuthenticationProvider"
	IPProviderClass     = "org.apache.zookeeper.server.auth.IPAuthenticationProvider"
	SASLProviderClass   = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
	X509ProviderClass   = "org.apache.zookeeper.server.auth.X509AuthenticationProvider"
)

// notImplemented maps each security key zkd cannot yet honour to the feature it asks for. A
// key listed here and given with a value that asks for something stops start-up.
var notImplemented = map[string]string{
	"authProvider.*":                        "authentication providers other than ZooKeeper's (a Java class)",
	"quorum.auth.kerberos.servicePrincipal": "quorum SASL with Kerberos (zkd's quorum SASL is DIGEST-MD5)",
}

// setSecurityKey applies key (as the key table matched it, without a "zookeeper." prefix)
// when it is a security key; handled is false otherwise.
func (s *Security) setSecurityKey(bare, v string) (handled bool, err error) {
	ask := func(name string) { s.asked = append(s.asked, askedKey{name, v}) }
	askIf := func(name string, on bool) {
		if on {
			ask(name)
		}
	}
	if sub, ok := strings.CutPrefix(bare, "ssl.quorum."); ok {
		s.SSLQuorum = setMap(s.SSLQuorum, sub, v)
		ask("ssl.quorum.*")
		return true, nil
	}
	if sub, ok := strings.CutPrefix(bare, "ssl."); ok {
		s.SSL = setMap(s.SSL, sub, v)
		ask("ssl.*")
		return true, nil
	}
	if sub, ok := strings.CutPrefix(bare, "authProvider."); ok {
		s.AuthProviders = setMap(s.AuthProviders, sub, v)
		// ZooKeeper loads any class named here; zkd has ZooKeeper's four providers.
		switch v {
		case DigestProviderClass, IPProviderClass, SASLProviderClass, X509ProviderClass:
		default:
			ask("authProvider.*")
		}
		return true, nil
	}
	switch bare {
	case "secureClientPort":
		s.SecureClientPort, err = javaParseInt(v)
		askIf(bare, s.SecureClientPort != 0)
	case "secureClientPortAddress":
		s.SecureClientPortAddress = v
		ask(bare)
	case "client.portUnification":
		s.ClientPortUnification, err = strictBool(v)
		askIf(bare, s.ClientPortUnification)
	case "client.certReload":
		s.ClientCertReload, err = strictBool(v)
		askIf(bare, s.ClientCertReload)
	case "sslQuorum":
		s.QuorumTLS, err = parseBool(v)
		askIf(bare, s.QuorumTLS)
	case "portUnification":
		s.QuorumPortUnification, err = parseBool(v)
		askIf(bare, s.QuorumPortUnification)
	case "sslQuorumReloadCertFiles":
		s.QuorumCertReload, err = strictBool(v)
		askIf(bare, s.QuorumCertReload)
	case "serverCnxnFactory":
		// ZooKeeper's choice between NIO and Netty; zkd has one network layer, which does
		// what either does.
		s.ServerCnxnFactoryClass = v
	case "enforce.auth.enabled":
		s.EnforceAuth, err = strictBool(v)
		askIf(bare, s.EnforceAuth)
	case "enforce.auth.schemes":
		s.EnforceAuthSchemes = nil
		for scheme := range strings.SplitSeq(v, ",") {
			if scheme = javaTrim(scheme); scheme != "" {
				s.EnforceAuthSchemes = append(s.EnforceAuthSchemes, scheme)
			}
		}
		askIf(bare, len(s.EnforceAuthSchemes) > 0)
	case "sessionRequireClientSASLAuth":
		s.SessionRequireClientSASLAuth, err = strictBool(v)
		askIf(bare, s.SessionRequireClientSASLAuth)
	case "allowSaslFailedClients":
		s.AllowSASLFailedClients, err = strictBool(v)
		askIf(bare, s.AllowSASLFailedClients)
	case "kerberos.removeHostFromPrincipal":
		s.KerberosRemoveHost, err = strictBool(v)
		askIf(bare, s.KerberosRemoveHost)
	case "kerberos.removeRealmFromPrincipal":
		s.KerberosRemoveRealm, err = strictBool(v)
		askIf(bare, s.KerberosRemoveRealm)
	case "superUser":
		s.SASLSuperUser = v
		askIf(bare, v != "")
	case "X509AuthenticationProvider.superUser":
		s.X509SuperUser = v
		askIf(bare, v != "")
	case "java.security.auth.login.config":
		s.JAASConfig = v
		askIf(bare, v != "")
	case "security.auth_to_local":
		s.AuthToLocal = v
	case "SASLAuthenticationProvider.superPassword":
		s.SASLSuperPassword = v
	case "sasl.serverconfig":
		s.SASLServerSection = v
		askIf(bare, v != "")
	case "quorum.auth.enableSasl":
		s.QuorumSASL, err = parseBool(v)
		askIf(bare, s.QuorumSASL)
	case "quorum.auth.learnerRequireSasl":
		s.QuorumLearnerRequireSASL, err = parseBool(v)
		askIf(bare, s.QuorumLearnerRequireSASL)
	case "quorum.auth.serverRequireSasl":
		s.QuorumServerRequireSASL, err = parseBool(v)
		askIf(bare, s.QuorumServerRequireSASL)
	case "quorum.auth.learner.saslLoginContext":
		s.QuorumLearnerLoginContext = v
		ask(bare)
	case "quorum.auth.server.saslLoginContext":
		s.QuorumServerLoginContext = v
		ask(bare)
	case "quorum.auth.kerberos.servicePrincipal":
		s.QuorumKerberosPrincipal = v
		ask(bare)
	default:
		return false, nil
	}
	return true, err
}

func setMap(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = make(map[string]string)
	}
	m[k] = v
	return m
}

// strictBool reads a switch that ZooKeeper reads with Boolean.getBoolean or parseBoolean,
// where anything but "true" is false: "ture" there turns enforcement off without a word.
// zkd takes "true" or "false" (in any case, as QuorumPeerConfig.parseBoolean does for the
// keys it reads itself) and refuses anything else, so that a typo stops start-up instead.
func strictBool(v string) (bool, error) {
	b, err := parseBool(v)
	if err != nil {
		return false, fmt.Errorf("%w (ZooKeeper would read it as false; zkd refuses it so that a typo cannot switch security off)", err)
	}
	return b, nil
}

// ErrNotImplemented matches (with errors.Is) the error for a security key zkd cannot honour.
var ErrNotImplemented = errors.New("not implemented by zkd")

// AuthSchemes reports the authentication schemes with a provider, as ZooKeeper's
// ProviderRegistry has them: ip and digest always, sasl when an authProvider.N key names its
// provider class, x509 when X509Registered.
func (s *Security) AuthSchemes() []string {
	out := []string{"ip", "digest"}
	if slices.Contains(slices.Collect(maps.Values(s.AuthProviders)), SASLProviderClass) {
		out = append(out, "sasl")
	}
	if s.X509Registered() {
		out = append(out, "x509")
	}
	return out
}

// SSLAuthScheme is ssl.authProvider: the scheme whose provider authenticates a TLS client by
// its certificate, "x509" when unset (ClientX509Util's zookeeper.ssl.authProvider).
func (s *Security) SSLAuthScheme() string {
	if v := strings.TrimSpace(s.SSL["authProvider"]); v != "" {
		return v
	}
	return "x509"
}

// X509Registered reports whether ZooKeeper's ProviderRegistry has the x509 provider: when an
// authProvider.N key names X509AuthenticationProvider, and by default on a server with a
// secure client port. QuorumPeerConfig.configureSSLAuth, which parsing the zoo.cfg calls when
// secureClientPort is set, sets zookeeper.authProvider.x509 to X509AuthenticationProvider
// unless that property is set already (to any class: authProvider.x509 naming another class
// leaves no x509 provider) or ssl.authProvider names another scheme. With
// client.portUnification and no secureClientPort, NettyServerCnxnFactory's constructor makes
// the same call, but only after ProviderRegistry.initialize has read the properties, so there
// the default does not take (ZooKeeper 3.8 and 3.9 alike; 3.9 reloads the provider only when
// client.certReload sees a store change).
func (s *Security) X509Registered() bool {
	if slices.Contains(slices.Collect(maps.Values(s.AuthProviders)), X509ProviderClass) {
		return true
	}
	_, set := s.AuthProviders["x509"]
	return s.SecureClientPort != 0 && s.SSLAuthScheme() == "x509" && !set
}

// EnforcedSchemes is the schemes a connection must have authenticated with before any request
// other than auth and sasl is served, as ZooKeeper's AuthenticationHelper decides:
// sessionRequireClientSASLAuth means sasl alone, whatever enforce.auth.* say; otherwise
// enforce.auth.schemes when enforce.auth.enabled. nil means no enforcement.
func (s *Security) EnforcedSchemes() []string {
	switch {
	case s.SessionRequireClientSASLAuth:
		return []string{"sasl"}
	case s.EnforceAuth:
		return s.EnforceAuthSchemes
	}
	return nil
}

// validate reports each key that asks for security zkd does not provide.
func (s *Security) validate(bad func(key string, value any, format string, args ...any)) {
	if s.EnforceAuth && !s.SessionRequireClientSASLAuth {
		if len(s.EnforceAuthSchemes) == 0 {
			bad("enforce.auth.schemes", "", "enforce.auth.enabled is true: enforce.auth.schemes must be configured")
		}
	}
	// As QuorumPeerConfig: a requirement needs quorum SASL on, and a server that requires
	// learners to authenticate must authenticate as a learner itself, or it could not join.
	if !s.QuorumSASL && s.QuorumServerRequireSASL {
		bad("quorum.auth.serverRequireSasl", true, "quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.serverRequireSasl")
	}
	if !s.QuorumSASL && s.QuorumLearnerRequireSASL {
		bad("quorum.auth.learnerRequireSasl", true, "quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.learnerRequireSasl")
	}
	if !s.QuorumLearnerRequireSASL && s.QuorumServerRequireSASL {
		bad("quorum.auth.serverRequireSasl", true, "quorum.auth.learnerRequireSasl is disabled, so cannot enable quorum.auth.serverRequireSasl")
	}
	s.validateSSLAuth(bad)
	have := s.AuthSchemes()
	for _, scheme := range s.EnforcedSchemes() {
		if !slices.Contains(have, scheme) {
			key := "enforce.auth.schemes"
			if s.SessionRequireClientSASLAuth {
				key = "sessionRequireClientSASLAuth"
			}
			bad(key, scheme, "authentication scheme %s is not available (no authProvider.N names its provider)", scheme)
		}
	}
	seen := map[string]bool{}
	for _, a := range s.asked {
		feature, missing := notImplemented[a.key]
		if !missing || seen[a.key] {
			continue
		}
		seen[a.key] = true
		bad(a.key, s.value(a), "%w: zkd does not implement %s yet and will not start without the "+
			"security this key asks for (fail closed); remove the key to run without it", ErrNotImplemented, feature)
	}
}

// validateSSLAuth refuses an ssl.authProvider under which no TLS client would be served, on a
// server that serves TLS clients. ZooKeeper refuses to start for the first case below
// (QuorumPeerConfig.configureSSLAuth: "No auth provider configured for the SSL authentication
// scheme"); in the others it starts and closes every TLS connection (NettyServerCnxnFactory's
// initSSL finds no X509AuthenticationProvider under the scheme: "Auth provider not found"), or,
// for the first case with client.portUnification alone, serves plaintext only. zkd refuses
// all of them at start-up (row zkd-ssl-authprovider of docs/differences.md).
func (s *Security) validateSSLAuth(bad func(key string, value any, format string, args ...any)) {
	if s.SecureClientPort == 0 && !s.ClientPortUnification {
		return
	}
	scheme := s.SSLAuthScheme()
	_, configured := s.AuthProviders[scheme]
	switch {
	case scheme != "x509" && !configured:
		bad("ssl.authProvider", scheme, "no auth provider configured for the SSL authentication scheme '%s' "+
			"(no authProvider.%s key); ZooKeeper does not start either", scheme, scheme)
	case scheme != "x509":
		bad("ssl.authProvider", scheme, "TLS clients authenticate with X509AuthenticationProvider, whose scheme is x509, "+
			"not '%s': ZooKeeper would start and close every TLS connection (no X509AuthenticationProvider for scheme '%s'); "+
			"remove ssl.authProvider", scheme, scheme)
	case strings.TrimSpace(s.SSL["authProvider"]) != "" && !s.X509Registered():
		bad("ssl.authProvider", scheme, "no x509 auth provider is registered (%s), and ZooKeeper would close every "+
			"TLS connection (auth provider not found); set authProvider.x509=%s", s.x509Missing(), X509ProviderClass)
	}
}

// x509Missing says why X509Registered is false, for a message.
func (s *Security) x509Missing() string {
	if c, ok := s.AuthProviders["x509"]; ok {
		return "authProvider.x509 names " + c
	}
	return "client.portUnification without secureClientPort does not register it by default"
}

// value renders a key's setting for an error message; passwords are not shown.
func (s *Security) value(a askedKey) string {
	switch a.key {
	case "ssl.*":
		return strings.Join(redactedKeys("ssl.", s.SSL), ",")
	case "ssl.quorum.*":
		return strings.Join(redactedKeys("ssl.quorum.", s.SSLQuorum), ",")
	case "authProvider.*":
		var out []string
		for _, n := range slices.Sorted(maps.Keys(s.AuthProviders)) {
			out = append(out, fmt.Sprintf("authProvider.%s=%s", n, s.AuthProviders[n]))
		}
		return strings.Join(out, ",")
	}
	return a.value
}

func redactedKeys(prefix string, m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, prefix+k)
	}
	return out
}

// ErrUnknownSecurityKey matches (with errors.Is) the error for a key zkd does not know under
// one of guardedPrefixes.
var ErrUnknownSecurityKey = errors.New("unknown key where security is configured")

// guardedPrefixes are the key prefixes (after an optional "zookeeper.") under which a key zkd
// does not know stops start-up, as an unknown ssl.* key does: there a typo
// ("enforce.auth.enable", "zkd.sesionSecretFile") would otherwise leave the server running
// without the protection the operator wrote down, with a line in the log at most. Every
// authProvider.X is known (ZooKeeper takes any X), so that prefix guards the zookeeper.
// forms only through setSecurityKey.
var guardedPrefixes = []string{"enforce.auth.", "authProvider.", "sasl", "quorum.auth.", "admin.", "zkd."}

// checkUnknownKey is called for a key Config.set does not know: nil when the key may be
// ignored (logged as unknown), an error when it stops start-up.
func checkUnknownKey(key, v string) error {
	bare := strings.TrimPrefix(key, "zookeeper.")
	if !slices.ContainsFunc(guardedPrefixes, func(p string) bool { return strings.HasPrefix(bare, p) }) {
		return nil
	}
	if bare != key {
		// Known without the prefix: ZooKeeper reads it only from zoo.cfg itself (quorum.auth.*)
		// or zkd's own keys, so the prefixed form would be ignored by both.
		var scratch Config
		if err := scratch.set(bare, v); !errors.Is(err, errUnknownKey) {
			return fmt.Errorf("%w: ZooKeeper and zkd read this key without the zookeeper. prefix "+
				"(write %s); zkd will not start with a security setting it would ignore", ErrUnknownSecurityKey, bare)
		}
	}
	return fmt.Errorf("%w: no such key in ZooKeeper 3.8/3.9 or zkd (a typo?); zkd will not start with a "+
		"security setting it cannot read", ErrUnknownSecurityKey)
}
