package tlsconf

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
)

// ChainVerifier returns a check of a client certificate chain against the truststore, as
// the trust manager of ZooKeeper's X509AuthenticationProvider does when a certificate comes
// from elsewhere than the client port's own handshake (the AdminServer's HTTPS): the first
// certificate must chain to one of the truststore's CAs (the rest serve as intermediates),
// be valid now and allow client authentication. No host name is checked, as ZooKeeper
// builds that trust manager without client hostname verification. The truststore is reread
// when its files change, as for ServerConfig. A Settings without a truststore gives an
// error: ZooKeeper's provider then has no trust manager and authenticates nobody.
func (s Settings) ChainVerifier(logger *slog.Logger) (func(chain []*x509.Certificate) error, error) {
	if s.TrustStore.Location == "" {
		return nil, fmt.Errorf("%strustStore.location: x509 authentication needs a truststore", s.Prefix)
	}
	// Only the truststore matters here: a keystore that fails to load must not stop it.
	s.KeyStore = Store{}
	src, err := newSource(s, false, logger)
	if err != nil {
		return nil, err
	}
	return func(chain []*x509.Certificate) error {
		if len(chain) == 0 {
			return errors.New("tls: no client certificate")
		}
		m := src.get()
		opts := x509.VerifyOptions{
			Roots:         m.pool,
			Intermediates: x509.NewCertPool(),
			KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			CurrentTime:   src.now(),
		}
		for _, c := range chain[1:] {
			opts.Intermediates.AddCert(c)
		}
		if _, err := chain[0].Verify(opts); err != nil {
			return fmt.Errorf("tls: client certificate not trusted by %strustStore: %w", s.Prefix, err)
		}
		return nil
	}, nil
}
