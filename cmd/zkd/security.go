package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	krb5config "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/peer"
	"github.com/zkd-io/zkd/internal/sasl"
	"github.com/zkd-io/zkd/internal/sasl/gssapi"
	"github.com/zkd-io/zkd/internal/tlsconf"
	"github.com/zkd-io/zkd/server"
)

// applySecurity turns the security keys (issue 12) into the server's settings: the TLS
// listeners, the authentication providers, SASL. Any setting it cannot honour is an error:
// zkd does not start without the security a zoo.cfg asks for.
func applySecurity(cfg *config.Config, sc *server.Config, logger *slog.Logger) error {
	sec := &cfg.Security
	schemes := sec.AuthSchemes()
	sc.AuthProviders.SASL = slices.Contains(schemes, "sasl")
	// x509 is there by default on a secure client port, as in ZooKeeper (X509Registered).
	sc.AuthProviders.X509 = slices.Contains(schemes, "x509")
	sc.AuthProviders.X509SuperUser = sec.X509SuperUser
	if err := applyClientTLS(sec, sc, logger); err != nil {
		return err
	}
	if err := applyQuorumTLS(sec, sc, logger); err != nil {
		return err
	}
	if err := applyQuorumSASL(sec, sc, logger, os.Getenv); err != nil { // quorumsasl.go
		return err
	}
	return applySASL(sec, sc, logger, os.Getenv)
}

// applyQuorumTLS secures the election and learner connections from sslQuorum,
// portUnification and the ssl.quorum.* keys, as ZooKeeper's QuorumPeer and QuorumX509Util
// do: with sslQuorum the dialers use TLS and the listeners serve TLS only; portUnification
// makes the listeners serve TLS and plaintext both (whatever sslQuorum says), which is the
// middle step of a rolling upgrade from plaintext to TLS.
func applyQuorumTLS(sec *config.Security, sc *server.Config, logger *slog.Logger) error {
	if !sec.QuorumTLS && !sec.QuorumPortUnification {
		if len(sec.SSLQuorum) > 0 {
			// Checked all the same (a typo, "hostnameVerification=ture"): the day TLS is
			// turned on must not be the day a key turns out to have been ignored.
			if _, err := tlsconf.Parse(sec.SSLQuorum, tlsconf.QuorumPrefix); err != nil {
				return err
			}
			logger.Warn("ssl.quorum.* keys are set but neither sslQuorum nor portUnification: the quorum runs without TLS, as ZooKeeper's does")
		}
		return nil
	}
	st, err := tlsconf.Parse(sec.SSLQuorum, tlsconf.QuorumPrefix)
	if err != nil {
		return err
	}
	// zkd rereads changed store files whether or not sslQuorumReloadCertFiles asks it to:
	// a handshake after a change picks up the new files, and nothing else is affected.
	qt, err := peer.NewTLS(st, sec.QuorumTLS, sec.QuorumPortUnification, logger)
	if err != nil {
		return err
	}
	sc.QuorumTLS = qt
	logger.Info("quorum TLS", "sslQuorum", sec.QuorumTLS, "portUnification", sec.QuorumPortUnification,
		"hostnameVerification", st.HostnameVerification, "clientHostnameVerification", st.ClientHostnameVerification)
	return nil
}

// jvmProperty finds -Dname=value in the JVM flags ZooKeeper's scripts pass
// (SERVER_JVMFLAGS, then JVMFLAGS), where operators set the JAAS file for ZooKeeper: a
// zoo.cfg and environment written for ZooKeeper configure zkd the same way.
func jvmProperty(getenv func(string) string, name string) string {
	for _, env := range []string{"SERVER_JVMFLAGS", "JVMFLAGS"} {
		for _, f := range strings.Fields(getenv(env)) {
			if v, ok := strings.CutPrefix(f, "-D"+name+"="); ok {
				return strings.Trim(v, `"'`)
			}
		}
	}
	return ""
}

// applySASL configures the client port's SASL server from the JAAS file's Server section
// (ZooKeeper's ServerCnxnFactory.configureSaslLogin): GSSAPI when the section has a
// Krb5LoginModule, DIGEST-MD5 with its user_NAME="password" entries otherwise.
func applySASL(sec *config.Security, sc *server.Config, logger *slog.Logger, getenv func(string) string) error {
	path := sec.JAASConfig
	if path == "" {
		path = jvmProperty(getenv, "java.security.auth.login.config")
	}
	section := sec.SASLServerSection
	if section == "" {
		section = jvmProperty(getenv, "zookeeper.sasl.serverconfig")
	}
	explicitSection := section != ""
	if section == "" {
		section = config.DefaultString("sasl.serverconfig")
	}
	if sec.SASLSuperUser != "" {
		sc.SASLSuperUsers = []string{sec.SASLSuperUser}
	}
	sc.AllowSASLFailedClients = sec.AllowSASLFailedClients
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("java.security.auth.login.config: %w", err)
	}
	j, err := sasl.ParseJAAS(data)
	if err != nil {
		return fmt.Errorf("java.security.auth.login.config %s: %w", path, err)
	}
	if _, err := j.Section(section); err != nil {
		if !explicitSection {
			// As ZooKeeper's configureSaslLogin: a JAAS file without the Server section (one
			// for quorum SASL only, say) means no SASL on the client port.
			logger.Warn("no SASL on the client port: the JAAS file has no section "+section, "jaas", path)
			return nil
		}
		return fmt.Errorf("java.security.auth.login.config %s: no JAAS configuration section named %q: %w", path, section, err)
	}
	names := sasl.KerberosNames{RemoveHost: sec.KerberosRemoveHost, RemoveRealm: sec.KerberosRemoveRealm}
	if sec.AuthToLocal != "" {
		if names.Rules, err = sasl.ParseRules(sec.AuthToLocal); err != nil {
			return fmt.Errorf("security.auth_to_local: %w", err)
		}
	}
	if j.HasModule(section, sasl.Krb5LoginModule) {
		opts, err := j.Krb5(section)
		if err != nil {
			return fmt.Errorf("java.security.auth.login.config %s: %w", path, err)
		}
		if !opts.UseKeyTab || opts.KeyTab == "" {
			return fmt.Errorf("java.security.auth.login.config %s: section %q: zkd's Kerberos login needs useKeyTab=true and keyTab", path, section)
		}
		kt, err := keytab.Load(opts.KeyTab)
		if err != nil {
			return fmt.Errorf("java.security.auth.login.config %s: keyTab %s: %w", path, opts.KeyTab, err)
		}
		principal := opts.Principal
		names.DefaultRealm = kerberosDefaultRealm(getenv, principal, logger)
		sc.NewSASLServer = func() (server.SASLServer, error) {
			g, err := gssapi.NewServer(gssapi.ServerConfig{Keytab: kt, Principal: principal})
			if err != nil {
				return nil, err
			}
			return &kerberosAuthz{Server: g, names: names}, nil
		}
		logger.Info("SASL", "mechanism", sasl.GSSAPI, "jaas", path, "section", section, "principal", principal)
		return nil
	}
	users, err := j.ServerUsers(section)
	if err != nil {
		return fmt.Errorf("java.security.auth.login.config %s: %w", path, err)
	}
	// SaslServerCallbackHandler: the property replaces super's password, only when the
	// section has a user_super entry.
	if _, ok := users["super"]; ok && sec.SASLSuperPassword != "" {
		users["super"] = sec.SASLSuperPassword
	}
	sc.NewSASLServer = func() (server.SASLServer, error) {
		return sasl.NewServer(sasl.DigestMD5, sasl.ServerConfig{Users: users, Authorize: names.Authorize})
	}
	logger.Info("SASL", "mechanism", sasl.DigestMD5, "jaas", path, "section", section, "users", len(users))
	return nil
}

// kerberosDefaultRealm is the realm whose principals the DEFAULT auth_to_local rule
// shortens (client@REALM to client). Java takes it from java.security.krb5.realm or the
// krb5.conf it reads (java.security.krb5.conf, else /etc/krb5.conf); zkd reads the same
// places, then KRB5_CONFIG as MIT tools do. Without any, Java has no default realm and no
// rule applies to any client, so ZooKeeper leaves the id the client asked for; zkd, which
// refuses a client no rule names, takes the realm of its own service principal instead.
func kerberosDefaultRealm(getenv func(string) string, principal string, logger *slog.Logger) string {
	if r := jvmProperty(getenv, "java.security.krb5.realm"); r != "" {
		return r
	}
	paths := []string{jvmProperty(getenv, "java.security.krb5.conf"), getenv("KRB5_CONFIG"), "/etc/krb5.conf"}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		// gokrb5 returns what it parsed along with an error for a directive it does not
		// support: the default realm is still good then.
		c, err := krb5config.Load(p)
		if err != nil {
			logger.Warn("reading krb5.conf for its default_realm", "path", p, "err", err)
		}
		if c != nil && c.LibDefaults.DefaultRealm != "" {
			return c.LibDefaults.DefaultRealm
		}
	}
	if _, realm, ok := strings.Cut(principal, "@"); ok {
		return realm
	}
	return ""
}

// kerberosAuthz maps a GSSAPI exchange's client principal to the sasl ACL id, as
// SaslServerCallbackHandler does (kerberos.removeHostFromPrincipal, removeRealmFromPrincipal).
type kerberosAuthz struct {
	*gssapi.Server
	names sasl.KerberosNames
	id    string
}

func (k *kerberosAuthz) Step(tok []byte) ([]byte, error) {
	out, err := k.Server.Step(tok)
	if err == nil && k.Server.Complete() {
		if k.id, err = k.names.AuthorizationID(k.Server.AuthorizationID()); err != nil {
			return nil, err
		}
	}
	return out, err
}

func (k *kerberosAuthz) AuthorizationID() string { return k.id }

// applyClientTLS configures the secure client port and client port unification from the
// ssl.* keys, as ZooKeeper's ClientX509Util reads them.
func applyClientTLS(sec *config.Security, sc *server.Config, logger *slog.Logger) error {
	if sec.SecureClientPort == 0 && !sec.ClientPortUnification {
		if len(sec.SSL) > 0 {
			// Checked all the same, as the ssl.quorum.* keys in applyQuorumTLS.
			if _, err := tlsconf.Parse(sec.SSL, "ssl."); err != nil {
				return err
			}
			logger.Warn("ssl.* keys are set but neither secureClientPort nor client.portUnification: clients are served without TLS, as ZooKeeper does")
		}
		return nil
	}
	st, err := tlsconf.Parse(sec.SSL, "ssl.")
	if err != nil {
		return err
	}
	// ssl.authProvider was checked with the zoo.cfg (config.Security.validateSSLAuth).
	tc, err := st.ServerConfig(logger)
	if err != nil {
		return err
	}
	sc.TLS = tc
	if sec.SecureClientPort != 0 {
		// secureClientPortAddress unset means every interface, as in ZooKeeper.
		sc.SecureListenAddr = net.JoinHostPort(sec.SecureClientPortAddress, strconv.Itoa(sec.SecureClientPort))
	}
	sc.ClientPortUnification = sec.ClientPortUnification
	sc.TLSDetectTimeout = st.HandshakeDetectionTimeout
	if st.ClientAuth != tlsconf.ClientAuthNone && !sc.AuthProviders.X509 {
		// Registered by default with a secure client port; not with client.portUnification
		// alone, or with authProvider.x509 naming another class (config.X509Registered).
		logger.Warn("ssl.clientAuth asks TLS clients for a certificate but there is no x509 auth provider " +
			"(set authProvider.x509=" + config.X509ProviderClass + "): as in ZooKeeper, a client that presents one is disconnected")
	}
	logger.Info("client TLS", "secureClientPort", sc.SecureListenAddr, "portUnification", sc.ClientPortUnification,
		"clientAuth", st.ClientAuth.String())
	return nil
}
