package main

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/peer"
	"github.com/zkd-io/zkd/internal/tlsconf"
	"github.com/zkd-io/zkd/server"
)

// applySecurity turns the security keys (issue 12) into the server's settings: the TLS
// listeners, the authentication providers, SASL. Any setting it cannot honour is an error:
// zkd does not start without the security a zoo.cfg asks for.
func applySecurity(cfg *config.Config, sc *server.Config, logger *slog.Logger) error {
	sec := &cfg.Security
	for _, class := range sec.AuthProviders {
		switch class {
		case config.SASLProviderClass:
			sc.AuthProviders.SASL = true
		case config.X509ProviderClass:
			sc.AuthProviders.X509 = true
		}
	}
	sc.AuthProviders.X509SuperUser = sec.X509SuperUser
	if err := applyClientTLS(sec, sc, logger); err != nil {
		return err
	}
	if err := applyQuorumTLS(sec, sc, logger); err != nil {
		return err
	}
	return nil
}

// applyQuorumTLS secures the election and learner connections from sslQuorum,
// portUnification and the ssl.quorum.* keys, as ZooKeeper's QuorumPeer and QuorumX509Util
// do: with sslQuorum the dialers use TLS and the listeners serve TLS only; portUnification
// makes the listeners serve TLS and plaintext both (whatever sslQuorum says), which is the
// middle step of a rolling upgrade from plaintext to TLS.
func applyQuorumTLS(sec *config.Security, sc *server.Config, logger *slog.Logger) error {
	if !sec.QuorumTLS && !sec.QuorumPortUnification {
		if len(sec.SSLQuorum) > 0 {
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

// applyClientTLS configures the secure client port and client port unification from the
// ssl.* keys, as ZooKeeper's ClientX509Util reads them.
func applyClientTLS(sec *config.Security, sc *server.Config, logger *slog.Logger) error {
	if sec.SecureClientPort == 0 && !sec.ClientPortUnification {
		if len(sec.SSL) > 0 {
			logger.Warn("ssl.* keys are set but neither secureClientPort nor client.portUnification: clients are served without TLS, as ZooKeeper does")
		}
		return nil
	}
	st, err := tlsconf.Parse(sec.SSL, "ssl.")
	if err != nil {
		return err
	}
	if p := tlsconf.AuthProvider(sec.SSL); p != "x509" {
		return fmt.Errorf("ssl.authProvider=%q: zkd authenticates TLS clients with the x509 provider only", p)
	}
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
		logger.Warn("ssl.clientAuth asks TLS clients for a certificate but no authProvider.N names " +
			config.X509ProviderClass + ": as in ZooKeeper, a client that presents one is disconnected")
	}
	logger.Info("client TLS", "secureClientPort", sc.SecureListenAddr, "portUnification", sc.ClientPortUnification,
		"clientAuth", st.ClientAuth.String())
	return nil
}
