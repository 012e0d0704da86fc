package tlsconf

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// LoadKeyPair reads the certificate chain and private key of a keystore. The store's password
// decrypts the file and the key in it (ZooKeeper uses one password for both).
func LoadKeyPair(st Store) (tls.Certificate, error) {
	data, pw, err := st.read()
	if err != nil {
		return tls.Certificate{}, err
	}
	var key any
	var chain []*x509.Certificate
	switch st.Type {
	case StorePEM:
		if key, err = ParsePEMPrivateKey(data, pw); err != nil {
			return tls.Certificate{}, st.errorf("%w", err)
		}
		if chain, err = ParsePEMCertificates(data); err != nil {
			return tls.Certificate{}, st.errorf("%w", err)
		}
	case StorePKCS12:
		k, leaf, cas, err := pkcs12.DecodeChain(data, pw)
		if err != nil {
			return tls.Certificate{}, st.errorf("%w", scrub(err, pw))
		}
		key, chain = k, append([]*x509.Certificate{leaf}, cas...)
	case StoreJKS:
		if key, chain, err = jksKeyPair(data, pw); err != nil {
			return tls.Certificate{}, st.errorf("%w", scrub(err, pw))
		}
	default:
		return tls.Certificate{}, st.errorf("unknown store type %q", st.Type)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, st.errorf("the private key (%T) cannot sign", key)
	}
	// The leaf is the certificate of the key; Java's key managers find it whatever the order.
	i := slices.IndexFunc(chain, func(c *x509.Certificate) bool { return samePublicKey(c.PublicKey, signer.Public()) })
	if i < 0 {
		return tls.Certificate{}, st.errorf("no certificate for the private key (%d certificates)", len(chain))
	}
	chain[0], chain[i] = chain[i], chain[0]
	cert := tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}

// LoadTrust reads the certificates of a truststore: a PEM file's certificates, the trusted
// certificate entries of a PKCS12 or JKS store, and (as Java's trust managers do) the
// certificate of each private key entry.
func LoadTrust(st Store) ([]*x509.Certificate, error) {
	data, pw, err := st.read()
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	switch st.Type {
	case StorePEM:
		if certs, err = ParsePEMCertificates(data); err != nil {
			return nil, st.errorf("%w", err)
		}
	case StorePKCS12:
		certs, err = pkcs12.DecodeTrustStore(data, pw)
		if err != nil && !errors.Is(err, pkcs12.ErrIncorrectPassword) {
			// Not a Java truststore but a keystore: as Java's trust managers do, trust the
			// certificate of its key.
			if _, leaf, _, err2 := pkcs12.DecodeChain(data, pw); err2 == nil {
				certs, err = []*x509.Certificate{leaf}, nil
			}
		}
		if err != nil {
			return nil, st.errorf("%w", scrub(err, pw))
		}
	case StoreJKS:
		if certs, err = jksTrust(data, pw); err != nil {
			return nil, st.errorf("%w", scrub(err, pw))
		}
	default:
		return nil, st.errorf("unknown store type %q", st.Type)
	}
	if len(certs) == 0 {
		return nil, st.errorf("no certificates")
	}
	return certs, nil
}

func jksLoad(data []byte, pw string) (keystore.KeyStore, error) {
	ks := keystore.New(keystore.WithOrderedAliases())
	if err := ks.Load(bytes.NewReader(data), []byte(pw)); err != nil {
		if err.Error() == "got invalid digest" {
			return ks, errors.New("JKS integrity check failed: wrong password?")
		}
		return ks, fmt.Errorf("JKS: %w", err)
	}
	return ks, nil
}

func jksKeyPair(data []byte, pw string) (any, []*x509.Certificate, error) {
	ks, err := jksLoad(data, pw)
	if err != nil {
		return nil, nil, err
	}
	for _, alias := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		e, err := ks.GetPrivateKeyEntry(alias, []byte(pw))
		if err != nil {
			return nil, nil, fmt.Errorf("JKS entry %q: %w", alias, err)
		}
		key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
		if err != nil {
			return nil, nil, fmt.Errorf("JKS entry %q: %w", alias, err)
		}
		var chain []*x509.Certificate
		for _, c := range e.CertificateChain {
			xc, err := x509.ParseCertificate(c.Content)
			if err != nil {
				return nil, nil, fmt.Errorf("JKS entry %q: %w", alias, err)
			}
			chain = append(chain, xc)
		}
		return key, chain, nil
	}
	return nil, nil, errors.New("JKS: no private key entry")
}

func jksTrust(data []byte, pw string) ([]*x509.Certificate, error) {
	ks, err := jksLoad(data, pw)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for _, alias := range ks.Aliases() {
		var der []byte
		if ks.IsTrustedCertificateEntry(alias) {
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, fmt.Errorf("JKS entry %q: %w", alias, err)
			}
			der = e.Certificate.Content
		} else if chain, err := ks.GetPrivateKeyEntryCertificateChain(alias); err == nil && len(chain) > 0 {
			der = chain[0].Content
		} else {
			continue
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("JKS entry %q: %w", alias, err)
		}
		certs = append(certs, c)
	}
	return certs, nil
}

// read returns the store file's content and its password.
func (st Store) read() ([]byte, string, error) {
	pw, err := st.password()
	if err != nil {
		return nil, "", st.errorf("%w", err)
	}
	data, err := os.ReadFile(st.Location)
	if err != nil {
		return nil, "", fmt.Errorf("%s store: %w", st.Type, err)
	}
	return data, pw, nil
}

func (st Store) errorf(format string, args ...any) error {
	return fmt.Errorf("%s store %s: "+format, append([]any{st.Type, st.Location}, args...)...)
}

// scrub guards against a library error that quotes the password: such an error is replaced.
func scrub(err error, pw string) error {
	if pw != "" && bytes.Contains([]byte(err.Error()), []byte(pw)) {
		return errors.New("cannot read the store (error withheld: it named the password)")
	}
	return err
}

func samePublicKey(a, b crypto.PublicKey) bool {
	ak, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ak.Equal(b)
}
