package tlsconf

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ClientAuth is ZooKeeper's ssl.clientAuth: whether a server asks TLS clients for a
// certificate.
type ClientAuth int

// The ssl.clientAuth values. ZooKeeper's default (no value) is need.
const (
	ClientAuthNeed ClientAuth = iota // a verified certificate is required
	ClientAuthWant                   // asked for; verified when given
	ClientAuthNone                   // not asked for
)

func (a ClientAuth) String() string {
	switch a {
	case ClientAuthNeed:
		return "need"
	case ClientAuthWant:
		return "want"
	case ClientAuthNone:
		return "none"
	}
	return "ClientAuth(" + strconv.Itoa(int(a)) + ")"
}

// StoreType is a keystore or truststore file format.
type StoreType string

// The store types zkd reads (ZooKeeper's KeyStoreFileType, without BCFKS).
const (
	StorePEM    StoreType = "PEM"
	StorePKCS12 StoreType = "PKCS12"
	StoreJKS    StoreType = "JKS"
)

// Store names a keystore or truststore file.
type Store struct {
	Location string
	// Password decrypts the store (and, for PEM, an encrypted private key). It is read from
	// PasswordPath at load time when that is set, as ZooKeeper reads *.passwordPath.
	Password     string
	PasswordPath string
	Type         StoreType // never empty when Location is set: inferred from the extension
}

// DefaultHandshakeDetectionTimeout is ZooKeeper's handshakeDetectionTimeoutMillis default.
const DefaultHandshakeDetectionTimeout = 5 * time.Second

// QuorumPrefix is the prefix of the quorum TLS keys; Parse treats a Settings read with it as
// the quorum side (both ends verify the peer's host name by default).
const QuorumPrefix = "ssl.quorum."

// Settings are the TLS settings of one side (client connections or the quorum), as the
// ssl.* or ssl.quorum.* keys give them.
type Settings struct {
	Prefix     string // "ssl." or "ssl.quorum.": names keys in errors
	KeyStore   Store  // Location "" = no certificate of our own
	TrustStore Store  // Location "" = the system roots, as Java's default trust manager
	ClientAuth ClientAuth
	MinVersion uint16 // from protocol / enabledProtocols
	MaxVersion uint16
	// CipherSuites are Go's ids for the TLS 1.2 suites of ciphersuites; nil = Go's defaults.
	// TLS 1.3 suites cannot be chosen in Go: Parse refuses a list that names only some of them.
	CipherSuites []uint16
	// HostnameVerification (ssl.hostnameVerification, default true): a client checks the
	// server's certificate against the name it dialled.
	HostnameVerification bool
	// ClientHostnameVerification: a server checks a client certificate against the client's
	// address (or its reverse-DNS names). ZooKeeper does that on the quorum side only, and
	// never without HostnameVerification.
	ClientHostnameVerification bool
	HandshakeDetectionTimeout  time.Duration
	// DisableReload stops the check for changed store files on handshakes.
	DisableReload bool
	// Now is the clock that paces the reload check (nil = time.Now); tests replace it.
	Now func() time.Time
}

// The keys Parse knows, by their name after the prefix.
var knownKeys = []string{
	"keyStore.location", "keyStore.password", "keyStore.passwordPath", "keyStore.type",
	"trustStore.location", "trustStore.password", "trustStore.passwordPath", "trustStore.type",
	"clientAuth", "protocol", "enabledProtocols", "ciphersuites", "hostnameVerification",
	"clientHostnameVerification", "handshakeDetectionTimeoutMillis", "crl", "ocsp",
	"context.supplier.class", "sslProvider", "authProvider",
}

// Parse reads the ssl keys of one side. props holds them by the name after prefix
// ("keyStore.location"); prefix ("ssl." or "ssl.quorum.") only names the keys in errors and
// picks the side's defaults. A key asking for what zkd cannot do is an error naming it.
// Passwords are never part of an error.
func Parse(props map[string]string, prefix string) (Settings, error) {
	s := Settings{
		Prefix:                    prefix,
		ClientAuth:                ClientAuthNeed,
		MinVersion:                tls.VersionTLS12,
		MaxVersion:                tls.VersionTLS13,
		HostnameVerification:      true,
		HandshakeDetectionTimeout: DefaultHandshakeDetectionTimeout,
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first error is the same on every run
	for _, k := range keys {
		if !slices.Contains(knownKeys, k) {
			return Settings{}, fmt.Errorf("%s%s: unknown TLS setting", prefix, k)
		}
	}
	get := func(k string) string { return strings.TrimSpace(props[k]) }
	bad := func(k, why string) error { return fmt.Errorf("%s%s=%q: %s", prefix, k, get(k), why) }
	boolKey := func(k string, def bool) (bool, error) {
		v, ok := props[k]
		if !ok || strings.TrimSpace(v) == "" {
			return def, nil
		}
		// Java's Boolean.parseBoolean: "true" in any case is true, anything else false.
		// zkd refuses anything but true/false so that a typo does not turn a check off.
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return false, bad(k, "want true or false")
	}

	var err error
	if s.KeyStore, err = parseStore(props, prefix, "keyStore"); err != nil {
		return Settings{}, err
	}
	if s.TrustStore, err = parseStore(props, prefix, "trustStore"); err != nil {
		return Settings{}, err
	}

	switch strings.ToLower(get("clientAuth")) {
	case "", "need":
		s.ClientAuth = ClientAuthNeed
	case "want":
		s.ClientAuth = ClientAuthWant
	case "none":
		s.ClientAuth = ClientAuthNone
	default:
		return Settings{}, bad("clientAuth", "want need, want or none")
	}

	// protocol names the SSLContext; Java enables TLSv1.3 and TLSv1.2 for a TLSv1.3 (or
	// "TLS") context and TLSv1.2 alone for a TLSv1.2 one.
	switch p := get("protocol"); p {
	case "", "TLSv1.3", "TLS":
	case "TLSv1.2":
		s.MinVersion, s.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	default:
		return Settings{}, bad("protocol", "zkd speaks TLSv1.2 and TLSv1.3")
	}
	if v := get("enabledProtocols"); v != "" {
		s.MinVersion, s.MaxVersion = 0, 0
		for p := range strings.SplitSeq(v, ",") {
			var ver uint16
			switch strings.TrimSpace(p) {
			case "TLSv1.2":
				ver = tls.VersionTLS12
			case "TLSv1.3":
				ver = tls.VersionTLS13
			default:
				return Settings{}, bad("enabledProtocols", fmt.Sprintf("%q: zkd speaks TLSv1.2 and TLSv1.3", strings.TrimSpace(p)))
			}
			if s.MinVersion == 0 || ver < s.MinVersion {
				s.MinVersion = ver
			}
			s.MaxVersion = max(s.MaxVersion, ver)
		}
	}
	if v := get("ciphersuites"); v != "" {
		suites, tls13, err := cipherSuites(v)
		if err != nil {
			return Settings{}, bad("ciphersuites", err.Error())
		}
		s.CipherSuites = suites
		if tls13 == 0 {
			// Java would not negotiate TLS 1.3 without one of its suites.
			if s.MinVersion == tls.VersionTLS13 {
				return Settings{}, bad("ciphersuites", "no TLS 1.3 suite, but only TLSv1.3 is enabled")
			}
			s.MaxVersion = tls.VersionTLS12
		} else if tls13 != len(tls13Suites) {
			return Settings{}, bad("ciphersuites", "Go cannot enable only some TLS 1.3 suites: name all of "+strings.Join(tls13Suites, ", ")+" or none")
		}
		if len(suites) == 0 {
			if s.MinVersion < tls.VersionTLS13 {
				// Only TLS 1.3 suites: TLS 1.2 would have none.
				s.MinVersion = tls.VersionTLS13
			}
			if s.MaxVersion < tls.VersionTLS13 {
				return Settings{}, bad("ciphersuites", "only TLS 1.3 suites, but TLSv1.3 is not enabled")
			}
		}
	}

	if s.HostnameVerification, err = boolKey("hostnameVerification", true); err != nil {
		return Settings{}, err
	}
	cv, err := boolKey("clientHostnameVerification", prefix == QuorumPrefix)
	if err != nil {
		return Settings{}, err
	}
	s.ClientHostnameVerification = s.HostnameVerification && cv

	if v := get("handshakeDetectionTimeoutMillis"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil {
			return Settings{}, bad("handshakeDetectionTimeoutMillis", "want a number of milliseconds")
		}
		// ZooKeeper takes the default for a value below 1 (an infinite wait could hold a
		// connection for ever).
		if ms >= 1 {
			s.HandshakeDetectionTimeout = time.Duration(ms) * time.Millisecond
		}
	}

	for _, k := range []string{"crl", "ocsp"} {
		on, err := boolKey(k, false)
		if err != nil {
			return Settings{}, err
		}
		if on {
			return Settings{}, bad(k, "zkd does not check certificate revocation")
		}
	}
	if get("context.supplier.class") != "" {
		return Settings{}, bad("context.supplier.class", "zkd cannot load a Java SSLContext supplier")
	}
	// sslProvider picks Netty's engine (JDK or OPENSSL); zkd has Go's, which does the same job.
	switch strings.ToUpper(get("sslProvider")) {
	case "", "JDK", "OPENSSL":
	default:
		return Settings{}, bad("sslProvider", "want JDK or OPENSSL")
	}
	// authProvider names the auth scheme that takes the certificate (default x509); the
	// zoo.cfg's checks (config.Security.SSLAuthScheme) hold it against the providers.
	return s, nil
}

func parseStore(props map[string]string, prefix, name string) (Store, error) {
	st := Store{
		Location:     strings.TrimSpace(props[name+".location"]),
		Password:     props[name+".password"],
		PasswordPath: strings.TrimSpace(props[name+".passwordPath"]),
	}
	typ := strings.TrimSpace(props[name+".type"])
	if st.Location == "" {
		if typ != "" {
			if _, err := storeType(typ); err != nil {
				return Store{}, fmt.Errorf("%s%s.type=%q: %w", prefix, name, typ, err)
			}
		}
		return st, nil
	}
	if typ == "" {
		t, err := storeTypeFromName(st.Location)
		if err != nil {
			return Store{}, fmt.Errorf("%s%s.location: %w (set %s%s.type)", prefix, name, err, prefix, name)
		}
		st.Type = t
		return st, nil
	}
	t, err := storeType(typ)
	if err != nil {
		return Store{}, fmt.Errorf("%s%s.type=%q: %w", prefix, name, typ, err)
	}
	st.Type = t
	return st, nil
}

func storeType(v string) (StoreType, error) {
	switch strings.ToUpper(v) {
	case "PEM":
		return StorePEM, nil
	case "PKCS12":
		return StorePKCS12, nil
	case "JKS":
		return StoreJKS, nil
	case "BCFKS":
		return "", fmt.Errorf("BCFKS (Bouncy Castle FIPS) keystores are not supported: convert it to PKCS12")
	}
	return "", fmt.Errorf("unknown keystore type: want PEM, PKCS12 or JKS")
}

// storeTypeFromName infers the type from the extension as ZooKeeper's
// KeyStoreFileType.fromFilename does (.jks, .pem, .p12), and .pfx as PKCS12 too.
func storeTypeFromName(name string) (StoreType, error) {
	switch ext := filepath.Ext(name); ext {
	case ".jks":
		return StoreJKS, nil
	case ".pem":
		return StorePEM, nil
	case ".p12", ".pfx":
		return StorePKCS12, nil
	case ".bcfks":
		return storeType("BCFKS")
	}
	return "", fmt.Errorf("cannot tell the store type from the file name %q", filepath.Base(name))
}

// password returns the store's password, read from PasswordPath when that is set (the file's
// content wins over Password, as in ZooKeeper; a trailing newline is not part of it).
func (st Store) password() (string, error) {
	if st.PasswordPath == "" {
		return st.Password, nil
	}
	b, err := os.ReadFile(st.PasswordPath)
	if err != nil {
		return "", fmt.Errorf("read password file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// tls13Suites are the TLS 1.3 suites by their Java (IANA) names; Go enables all of them.
var tls13Suites = []string{"TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256"}

// cipherSuites maps Java's suite names (the IANA names Go also uses) to Go's TLS 1.2 ids and
// counts the TLS 1.3 suites named. Go's insecure suites are refused like unknown ones.
func cipherSuites(list string) (ids []uint16, tls13 int, err error) {
	byName := map[string]uint16{}
	for _, cs := range tls.CipherSuites() {
		byName[cs.Name] = cs.ID
	}
	seen13 := map[string]bool{}
	for n := range strings.SplitSeq(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if slices.Contains(tls13Suites, n) {
			if !seen13[n] {
				seen13[n] = true
				tls13++
			}
			continue
		}
		id, ok := byName[n]
		if !ok {
			return nil, 0, fmt.Errorf("%q is not a cipher suite zkd offers", n)
		}
		ids = append(ids, id)
	}
	return ids, tls13, nil
}
