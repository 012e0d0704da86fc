package bench

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
)

// tlsFlags are the client TLS settings of run and wait: PEM files, as a TLS benchmark
// against both servers uses the same certificates.
type tlsFlags struct {
	ca, cert, key, serverName *string
}

func addTLSFlags(fs *flag.FlagSet) tlsFlags {
	return tlsFlags{
		ca:         fs.String("tls-ca", "", "PEM file of the CA that signed the server's certificate; setting it connects with TLS"),
		cert:       fs.String("tls-cert", "", "PEM client certificate (with --tls-key), for servers that ask for one"),
		key:        fs.String("tls-key", "", "PEM private key of --tls-cert"),
		serverName: fs.String("tls-server-name", "", "name to verify the server's certificate against (default: the host of each server address)"),
	}
}

// config returns the TLS configuration, nil when --tls-ca is not set.
func (f tlsFlags) config() (*tls.Config, error) {
	if *f.ca == "" {
		if *f.cert != "" || *f.key != "" {
			return nil, errors.New("--tls-cert and --tls-key need --tls-ca")
		}
		return nil, nil
	}
	pem, err := os.ReadFile(*f.ca)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca %s: no PEM certificate", *f.ca)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: *f.serverName}
	if *f.cert != "" || *f.key != "" {
		kp, err := tls.LoadX509KeyPair(*f.cert, *f.key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	return cfg, nil
}
