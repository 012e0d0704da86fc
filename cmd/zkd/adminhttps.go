package main

import (
	"fmt"
	"log/slog"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/tlsconf"
	"github.com/zkd-io/zkd/server"
)

// applyAdminTLS serves the AdminServer over HTTPS as ZooKeeper's JettyAdminServer does with
// admin.forceHttps or admin.portUnification: the ssl.quorum.* stores, client certificates
// per admin.needClientAuth, and x509 identities checked against the ssl.* truststore. A
// store that does not load stops start-up.
func applyAdminTLS(cfg *config.Config, sc *server.Config, logger *slog.Logger) error {
	if sc.AdminAddr == "" || !cfg.AdminTLS.Enabled() {
		return nil
	}
	quorum, err := tlsconf.Parse(cfg.Security.SSLQuorum, tlsconf.QuorumPrefix)
	if err != nil {
		return fmt.Errorf("admin server HTTPS: %w", err)
	}
	opts := server.AdminTLSOptions{
		Quorum:         quorum,
		ForceHTTPS:     cfg.AdminTLS.ForceHTTPS,
		NeedClientAuth: cfg.AdminNeedClientAuth,
		Logger:         logger,
	}
	if sc.AuthProviders.X509 {
		// X509AuthenticationProvider checks the certificate with the client port's
		// truststore (ClientX509Util's ssl.* keys), whether or not the client port is TLS.
		client, err := tlsconf.Parse(cfg.Security.SSL, "ssl.")
		if err != nil {
			return fmt.Errorf("admin server x509 authentication: %w", err)
		}
		opts.Client = &client
		switch {
		case client.TrustStore.Location == "":
			logger.Warn("admin server: no ssl.trustStore.location, so the x509 scheme authenticates nobody (as in ZooKeeper)")
		case !cfg.AdminNeedClientAuth:
			logger.Warn("admin server: admin.needClientAuth is not true, so HTTPS clients send no certificate and the x509 scheme authenticates nobody (as in ZooKeeper)")
		}
	}
	a, err := server.NewAdminTLS(opts)
	if err != nil {
		return err
	}
	sc.AdminTLS = a
	if !a.ForceHTTPS {
		logger.Warn("admin server: admin.portUnification serves plain HTTP beside HTTPS (set admin.forceHttps=true for HTTPS only)")
	}
	logger.Info("admin server HTTPS", "forceHttps", a.ForceHTTPS, "needClientAuth", cfg.AdminNeedClientAuth,
		"keyStore", quorum.KeyStore.Location, "trustStore", quorum.TrustStore.Location)
	return nil
}
