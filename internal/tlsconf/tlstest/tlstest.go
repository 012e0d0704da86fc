// Package tlstest writes a throw-away PKI for tests: a CA, server and client certificates,
// and certificates that must be refused (expired, self-signed, from another CA, for another
// host), each as PEM files and as PKCS12 and JKS keystores that Java's keytool reads, plus
// the CA as PEM, PKCS12 and JKS truststores. Keys are ECDSA P-256 (quick to make).
package tlstest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Password protects every keystore, truststore and encrypted key New writes (Java's keytool
// wants at least 6 characters).
const Password = "test-secret-pw"

// Identity is one certificate with its key and the files holding them.
type Identity struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	TLS  tls.Certificate // key and chain, for Go tests

	CertPEM      string // the certificate chain alone
	PEM          string // PKCS#8 key and certificate chain in one file (a ZooKeeper PEM keystore)
	EncryptedPEM string // the same with the key encrypted (PBES2, AES-256-CBC) under Password
	PKCS12       string // .p12 keystore, Password
	JKS          string // .jks keystore, Password
}

// PKI is what New writes.
type PKI struct {
	Dir string
	CA  *Identity // self-signed root; its CertPEM is also TrustPEM
	// Truststores holding the CA: TrustPEM (no password), TrustPKCS12 and TrustJKS (Password).
	TrustPEM, TrustPKCS12, TrustJKS string

	Server *Identity // SANs 127.0.0.1, ::1, localhost; server and client auth usage
	// Client has subject CN=client,O=zkd-test,OU=clients and the loopback SANs.
	Client *Identity
	// Client2 has subject CN=other-client,O=zkd-test.
	Client2 *Identity

	Expired    *Identity // signed by CA, expired a day ago
	SelfSigned *Identity // not signed by CA
	OtherCA    *Identity // signed by another CA, OtherCARoot
	WrongHost  *Identity // signed by CA, for elsewhere.invalid only
	// OtherCARoot is the other CA (with its truststores).
	OtherCARoot *Identity
}

// New writes a PKI into dir (created if missing).
func New(tb testing.TB, dir string) *PKI {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	p := &PKI{Dir: dir}
	g := gen{tb: tb, dir: dir}
	now := time.Now()
	valid := func(t *x509.Certificate) {
		t.NotBefore, t.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
	}
	loopback := func(t *x509.Certificate) {
		t.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		t.DNSNames = []string{"localhost"}
	}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}

	p.CA = g.make("ca", nil, func(t *x509.Certificate) {
		valid(t)
		t.Subject = pkix.Name{CommonName: "zkd test CA", Organization: []string{"zkd-test"}}
		t.IsCA, t.BasicConstraintsValid = true, true
		t.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	})
	p.TrustPEM = p.CA.CertPEM
	p.TrustPKCS12, p.TrustJKS = g.truststores("ca-trust", p.CA.Cert)

	leaf := func(name string, signer *Identity, edit func(*x509.Certificate)) *Identity {
		return g.make(name, signer, func(t *x509.Certificate) {
			valid(t)
			t.KeyUsage = x509.KeyUsageDigitalSignature
			t.ExtKeyUsage = both
			loopback(t)
			edit(t)
		})
	}
	p.Server = leaf("server", p.CA, func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: "localhost", Organization: []string{"zkd-test"}}
	})
	p.Client = leaf("client", p.CA, func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: "client", Organization: []string{"zkd-test"}, OrganizationalUnit: []string{"clients"}}
	})
	p.Client2 = leaf("client2", p.CA, func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: "other-client", Organization: []string{"zkd-test"}}
	})
	p.Expired = leaf("expired", p.CA, func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: "expired", Organization: []string{"zkd-test"}}
		t.NotBefore, t.NotAfter = now.Add(-48*time.Hour), now.Add(-24*time.Hour)
	})
	p.SelfSigned = leaf("selfsigned", nil, func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: "selfsigned", Organization: []string{"zkd-test"}}
	})
	p.OtherCARoot = g.make("other-ca", nil, func(t *x509.Certificate) {
		valid(t)
		t.Subject = pkix.Name{CommonName: "other CA", Organization: []string{"elsewhere"}}
		t.IsCA, t.BasicConstraintsValid = true, true
		t.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	})
	p.OtherCA = leaf("otherca", p.OtherCARoot, func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: "client", Organization: []string{"zkd-test"}}
	})
	p.WrongHost = leaf("wronghost", p.CA, func(t *x509.Certificate) {
		t.Subject = pkix.Name{CommonName: "elsewhere", Organization: []string{"zkd-test"}}
		t.IPAddresses, t.DNSNames = nil, []string{"elsewhere.invalid"}
	})
	return p
}

type gen struct {
	tb     testing.TB
	dir    string
	serial int64
}

func (g *gen) fatal(err error) {
	g.tb.Helper()
	if err != nil {
		g.tb.Fatalf("tlstest: %v", err)
	}
}

// make creates a key and a certificate signed by signer (self-signed when nil) and writes
// its files.
func (g *gen) make(name string, signer *Identity, edit func(*x509.Certificate)) *Identity {
	g.tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.fatal(err)
	g.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano() + g.serial)}
	edit(tmpl)
	parent, parentKey := tmpl, key
	var chain []*x509.Certificate // the test PKI has no intermediates
	if signer != nil {
		parent, parentKey = signer.Cert, signer.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	g.fatal(err)
	cert, err := x509.ParseCertificate(der)
	g.fatal(err)
	id := &Identity{Cert: cert, Key: key}
	full := append([]*x509.Certificate{cert}, chain...)
	for _, c := range full {
		id.TLS.Certificate = append(id.TLS.Certificate, c.Raw)
	}
	id.TLS.PrivateKey, id.TLS.Leaf = key, cert

	var certPEM bytes.Buffer
	for _, c := range full {
		g.fatal(pem.Encode(&certPEM, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
	}
	p8, err := x509.MarshalPKCS8PrivateKey(key)
	g.fatal(err)
	enc, err := EncryptPKCS8(p8, Password)
	g.fatal(err)
	id.CertPEM = g.write(name+"-cert.pem", certPEM.Bytes())
	id.PEM = g.write(name+".pem", append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}), certPEM.Bytes()...))
	id.EncryptedPEM = g.write(name+"-encrypted.pem", append(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: enc}), certPEM.Bytes()...))

	p12, err := pkcs12.Modern2023.Encode(key, cert, chain, Password)
	g.fatal(err)
	id.PKCS12 = g.write(name+".p12", p12)

	ks := keystore.New()
	var jchain []keystore.Certificate
	for _, c := range full {
		jchain = append(jchain, keystore.Certificate{Type: "X509", Content: c.Raw})
	}
	g.fatal(ks.SetPrivateKeyEntry(name, keystore.PrivateKeyEntry{
		CreationTime: time.Now(), PrivateKey: p8, CertificateChain: jchain,
	}, []byte(Password)))
	var jks bytes.Buffer
	g.fatal(ks.Store(&jks, []byte(Password)))
	id.JKS = g.write(name+".jks", jks.Bytes())
	return id
}

// truststores writes certs as PKCS12 and JKS truststores.
func (g *gen) truststores(name string, certs ...*x509.Certificate) (p12Path, jksPath string) {
	g.tb.Helper()
	p12, err := pkcs12.Modern2023.EncodeTrustStore(certs, Password)
	g.fatal(err)
	ks := keystore.New()
	for i, c := range certs {
		g.fatal(ks.SetTrustedCertificateEntry(fmt.Sprintf("%s-%d", name, i), keystore.TrustedCertificateEntry{
			CreationTime: time.Now(), Certificate: keystore.Certificate{Type: "X509", Content: c.Raw},
		}))
	}
	var jks bytes.Buffer
	g.fatal(ks.Store(&jks, []byte(Password)))
	return g.write(name+".p12", p12), g.write(name+".jks", jks.Bytes())
}

// TrustStores writes PKCS12 and JKS truststores holding certs into dir, protected by
// Password, and returns their paths.
func TrustStores(tb testing.TB, dir, name string, certs ...*x509.Certificate) (p12Path, jksPath string) {
	tb.Helper()
	g := gen{tb: tb, dir: dir}
	return g.truststores(name, certs...)
}

func (g *gen) write(name string, data []byte) string {
	g.tb.Helper()
	path := filepath.Join(g.dir, name)
	g.fatal(os.WriteFile(path, data, 0o600))
	return path
}

// EncryptPKCS8 encrypts a PKCS#8 private key as `openssl pkcs8 -topk8 -v2 aes-256-cbc`
// does: PBES2 with PBKDF2-HMAC-SHA256 (2048 iterations) and AES-256-CBC.
func EncryptPKCS8(p8 []byte, password string) ([]byte, error) {
	salt := make([]byte, 16)
	iv := make([]byte, aes.BlockSize)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("salt: %w", err)
	}
	if _, err := rand.Read(iv); err != nil {
		return nil, fmt.Errorf("iv: %w", err)
	}
	const iterations = 2048
	key, err := pbkdf2.Key(sha256.New, password, salt, iterations, 32)
	if err != nil {
		return nil, fmt.Errorf("pbkdf2: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("aes: %w", err)
	}
	pad := aes.BlockSize - len(p8)%aes.BlockSize
	data := append(append([]byte(nil), p8...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(data, data)

	type algo struct {
		Algorithm  asn1.ObjectIdentifier
		Parameters asn1.RawValue `asn1:"optional"`
	}
	raw := func(v any) asn1.RawValue {
		b, err2 := asn1.Marshal(v)
		if err2 != nil {
			err = err2
		}
		return asn1.RawValue{FullBytes: b}
	}
	kdf := algo{asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}, raw(struct {
		Salt       []byte
		Iterations int
		PRF        algo
	}{salt, iterations, algo{asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}, asn1.RawValue{Tag: 5}}})}
	enc := algo{asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}, raw(iv)}
	params := raw(struct{ KDF, Enc algo }{kdf, enc})
	out, err2 := asn1.Marshal(struct {
		Algo algo
		Data []byte
	}{algo{asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}, params}, data})
	if err != nil {
		return nil, fmt.Errorf("asn1: %w", err)
	}
	if err2 != nil {
		return nil, fmt.Errorf("asn1: %w", err2)
	}
	return out, nil
}
