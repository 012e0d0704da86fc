package tlsconf

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"strings"
)

// ZooKeeper's PemReader patterns (org.apache.zookeeper.util.PemReader): lenient about the
// label and the dashes, case-insensitive, base64 body with line breaks.
var (
	pemCertRE = regexp.MustCompile(`(?i)-+BEGIN\s+.*CERTIFICATE[^-]*-+(?:\s|\r|\n)+` +
		`([a-z0-9+/=\r\n]+)-+END\s+.*CERTIFICATE[^-]*-+`)
	pemKeyRE = regexp.MustCompile(`(?i)-+BEGIN\s+(.*PRIVATE\s+KEY)[^-]*-+(?:\s|\r|\n)+` +
		`([a-z0-9+/=\r\n]+)-+END\s+.*PRIVATE\s+KEY[^-]*-+`)
)

// errNoPassword and errBadPassword say what went wrong with an encrypted key without
// repeating the password.
var (
	errNoPassword  = errors.New("the private key is encrypted and no password is set")
	errBadPassword = errors.New("cannot decrypt the private key: wrong password?")
)

// maxPBKDF2Iterations bounds the work a key file can ask for (OpenSSL writes 2048, Java
// 10000); a variable so that the fuzz test can make it small.
var maxPBKDF2Iterations = 10_000_000

// ParsePEMCertificates returns the certificates of a PEM file in order, read as ZooKeeper's
// PemReader.readCertificateChain reads them (text between the blocks is ignored).
func ParsePEMCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for i, m := range pemCertRE.FindAllSubmatch(data, -1) {
		der, err := pemBase64(m[1])
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", i+1, err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", i+1, err)
		}
		certs = append(certs, c)
	}
	return certs, nil
}

// ParsePEMPrivateKey returns the first private key of a PEM file. "ENCRYPTED PRIVATE KEY" is
// PKCS#8 encrypted with PBES2 (PBKDF2 and AES-CBC or 3DES-CBC, as `openssl pkcs8 -topk8`
// writes it) under password. Otherwise the key is PKCS#8, or PKCS#1 ("RSA PRIVATE KEY") or
// SEC 1 ("EC PRIVATE KEY"), which ZooKeeper refuses but which say unambiguously what they
// hold. As in ZooKeeper, a key given a password is decrypted with it.
func ParsePEMPrivateKey(data []byte, password string) (any, error) {
	m := pemKeyRE.FindSubmatch(data)
	if m == nil {
		return nil, errors.New("no private key found")
	}
	label := strings.ToUpper(strings.Join(strings.Fields(string(m[1])), " "))
	der, err := pemBase64(m[2])
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	encrypted := strings.Contains(label, "ENCRYPTED")
	if !encrypted && password != "" {
		// ZooKeeper decrypts whenever a password is set; a plain key still loads here.
		if _, err := parseEncryptedPKCS8(der); err == nil {
			encrypted = true
		}
	}
	if encrypted {
		if password == "" {
			return nil, errNoPassword
		}
		if der, err = decryptPKCS8(der, password); err != nil {
			return nil, err
		}
		label = "PRIVATE KEY"
	}
	var key any
	switch {
	case strings.HasSuffix(label, "RSA PRIVATE KEY"):
		key, err = x509.ParsePKCS1PrivateKey(der)
	case strings.HasSuffix(label, "EC PRIVATE KEY"):
		key, err = x509.ParseECPrivateKey(der)
	default:
		key, err = x509.ParsePKCS8PrivateKey(der)
	}
	if err != nil {
		if encrypted {
			// Garbage after decryption: almost always a wrong password.
			return nil, errBadPassword
		}
		return nil, fmt.Errorf("private key: %w", err)
	}
	return key, nil
}

// pemBase64 decodes a base64 body, skipping the line breaks (as Java's MIME decoder does).
func pemBase64(b []byte) ([]byte, error) {
	s := strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, string(b))
	out, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		// Some writers leave out the padding.
		if out, err2 := base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "=")); err2 == nil {
			return out, nil
		}
		return nil, fmt.Errorf("base64: %w", err)
	}
	return out, nil
}

// Encrypted PKCS#8 (RFC 5958, RFC 8018):
//
//	EncryptedPrivateKeyInfo ::= SEQUENCE {
//	    encryptionAlgorithm  AlgorithmIdentifier,  -- PBES2 {keyDerivationFunc, encryptionScheme}
//	    encryptedData        OCTET STRING }
//	PBKDF2-params ::= SEQUENCE {
//	    salt OCTET STRING, iterationCount INTEGER, keyLength INTEGER OPTIONAL,
//	    prf AlgorithmIdentifier DEFAULT hmacWithSHA1 }
//	encryptionScheme: aes{128,192,256}-CBC or des-ede3-cbc, parameters = the IV (OCTET STRING)
type encryptedPrivateKeyInfo struct {
	Algo pkix.AlgorithmIdentifier
	Data []byte
}

type pbes2Params struct {
	KDF pkix.AlgorithmIdentifier
	Enc pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// OIDs of PBES2 and the algorithms within it that ParsePEMPrivateKey decrypts.
var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA224 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 8}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

func parseEncryptedPKCS8(der []byte) (encryptedPrivateKeyInfo, error) {
	var info encryptedPrivateKeyInfo
	rest, err := asn1.Unmarshal(der, &info)
	if err != nil {
		return info, fmt.Errorf("encrypted private key: %w", err)
	}
	if len(rest) != 0 {
		return info, errors.New("encrypted private key: trailing data")
	}
	return info, nil
}

func decryptPKCS8(der []byte, password string) ([]byte, error) {
	info, err := parseEncryptedPKCS8(der)
	if err != nil {
		return nil, err
	}
	if !info.Algo.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("private key encrypted with %v: zkd decrypts PBES2 (openssl pkcs8 -topk8 -v2 aes-256-cbc)", info.Algo.Algorithm)
	}
	var p pbes2Params
	if rest, err := asn1.Unmarshal(info.Algo.Parameters.FullBytes, &p); err != nil || len(rest) != 0 {
		return nil, errors.New("encrypted private key: bad PBES2 parameters")
	}
	if !p.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("encrypted private key: key derivation %v is not PBKDF2", p.KDF.Algorithm)
	}
	var kp pbkdf2Params
	if rest, err := asn1.Unmarshal(p.KDF.Parameters.FullBytes, &kp); err != nil || len(rest) != 0 {
		return nil, errors.New("encrypted private key: bad PBKDF2 parameters")
	}
	if kp.Iterations < 1 || kp.Iterations > maxPBKDF2Iterations {
		return nil, fmt.Errorf("encrypted private key: %d PBKDF2 iterations", kp.Iterations)
	}
	var prf func() hash.Hash
	switch a := kp.PRF.Algorithm; {
	case len(a) == 0 || a.Equal(oidHMACSHA1):
		prf = sha1.New
	case a.Equal(oidHMACSHA224):
		prf = sha256.New224
	case a.Equal(oidHMACSHA256):
		prf = sha256.New
	case a.Equal(oidHMACSHA384):
		prf = sha512.New384
	case a.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("encrypted private key: PBKDF2 PRF %v not supported", a)
	}
	var keyLen int
	var newCipher func([]byte) (cipher.Block, error)
	switch a := p.Enc.Algorithm; {
	case a.Equal(oidAES128CBC):
		keyLen, newCipher = 16, aes.NewCipher
	case a.Equal(oidAES192CBC):
		keyLen, newCipher = 24, aes.NewCipher
	case a.Equal(oidAES256CBC):
		keyLen, newCipher = 32, aes.NewCipher
	case a.Equal(oidDESEDE3CBC):
		keyLen, newCipher = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("encrypted private key: cipher %v not supported (want AES-CBC or DES-EDE3-CBC)", a)
	}
	if kp.KeyLength != 0 && kp.KeyLength != keyLen {
		return nil, errors.New("encrypted private key: PBKDF2 key length does not fit the cipher")
	}
	var iv []byte
	if rest, err := asn1.Unmarshal(p.Enc.Parameters.FullBytes, &iv); err != nil || len(rest) != 0 {
		return nil, errors.New("encrypted private key: bad IV")
	}
	key, err := pbkdf2.Key(prf, password, kp.Salt, kp.Iterations, keyLen)
	if err != nil {
		return nil, fmt.Errorf("encrypted private key: %w", err)
	}
	block, err := newCipher(key)
	if err != nil {
		return nil, fmt.Errorf("encrypted private key: %w", err)
	}
	bs := block.BlockSize()
	if len(iv) != bs {
		return nil, errors.New("encrypted private key: bad IV length")
	}
	if len(info.Data) == 0 || len(info.Data)%bs != 0 {
		return nil, errors.New("encrypted private key: data is not whole blocks")
	}
	out := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, info.Data)
	// PKCS#7 padding; wrong padding means a wrong password.
	n := int(out[len(out)-1])
	if n == 0 || n > bs {
		return nil, errBadPassword
	}
	for _, b := range out[len(out)-n:] {
		if int(b) != n {
			return nil, errBadPassword
		}
	}
	return out[:len(out)-n], nil
}
