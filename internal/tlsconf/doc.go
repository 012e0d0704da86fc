// Package tlsconf owns zkd's TLS material and its use, read from ZooKeeper's ssl.* (client
// port) and ssl.quorum.* (quorum) keys: Parse turns those keys into Settings, failing closed
// on anything zkd cannot honour (revocation checks, Java SSLContext suppliers, BCFKS
// stores, unknown cipher suites or protocols); LoadKeyPair and LoadTrust read PEM, PKCS12 and
// JKS stores as ZooKeeper's X509Util does; ServerConfig and ClientConfig build tls.Configs
// that reread changed store files on a handshake (at most once a second, no goroutines);
// Unify serves TLS and plaintext on one port (ZooKeeper's port unification); PeerCertificates
// gives the client's certificate chain to the x509 auth provider.
//
// ZooKeeper's rules kept here:
//   - clientAuth defaults to need; want verifies a certificate only when one is given.
//   - protocol TLSv1.3 (the default) enables TLSv1.3 and TLSv1.2; TLSv1.2 enables TLSv1.2;
//     enabledProtocols, when set, is the list. TLSv1.1 and older are refused.
//   - hostnameVerification (default true): a client checks the server's certificate against
//     the server's name. clientHostnameVerification: a server checks a client's certificate
//     against the client's IP address, then its reverse-DNS names; default false on the client
//     port (ClientX509Util) and true on the quorum (QuorumX509Util), never without
//     hostnameVerification.
//   - No truststore: the system roots, as Java's default trust manager.
//   - The store type comes from keyStore.type / trustStore.type, else from the extension
//     (.jks, .pem, .p12; zkd adds .pfx). One password opens the store and its key;
//     *.passwordPath names a file whose content wins over *.password.
//   - A PEM keystore holds the private key (PKCS#8, encrypted with the password when one is
//     set) and the certificate chain in one file; a PEM truststore holds certificates.
//
// Port unification looks at the first three bytes a client sends:
//
//	TLS handshake record:  0x16  0x03  0x00..0x04  len(2)  ...   -> TLS
//	                       type  version
//	ZooKeeper request:     len(4, big-endian, < 2^24) ...        -> plaintext (first byte 0x00)
//	four-letter word:      'r' 'u' 'o' 'k'                       -> plaintext
//
// Passwords are never part of an error or a log line.
package tlsconf
