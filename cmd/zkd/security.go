package main

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/zkd-io/zkd/internal/config"
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
