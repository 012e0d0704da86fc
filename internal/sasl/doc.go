// Package sasl owns zkd's SASL machinery as ZooKeeper 3.8/3.9 uses it: the per-connection
// Server interface the client and quorum code drive one token at a time (as
// ZooKeeperServer.processSasl drives Java's SaslServer), the DIGEST-MD5 mechanism (RFC 2831)
// on both sides answering byte for byte as the JDK's com.sun.security.sasl.digest does, the
// JAAS login configuration files ZooKeeper reads its users and keytabs from, and the
// Kerberos principal rules (KerberosName, auth_to_local, kerberos.removeHostFromPrincipal /
// removeRealmFromPrincipal) that turn an authenticated name into the id of the "sasl" ACL
// scheme, with that scheme's matching.
//
// It does not speak ZooKeeper's wire protocol (the SASL tokens travel in
// GetSASLRequest/SetSASLResponse records the server packs) and does not read zoo.cfg; GSSAPI
// lives in internal/sasl/gssapi behind the same Server interface.
//
// # DIGEST-MD5 exchange on the client port
//
// ZooKeeper's client sends an empty token first; each later token answers the previous one:
//
//	client                                   server (service "zookeeper", host "zk-sasl-md5")
//	""                                   ->
//	                                     <-  realm="zk-sasl-md5",nonce="<40 base64>",
//	                                         charset=utf-8,algorithm=md5-sess
//	charset=utf-8,username="bob",realm="zk-sasl-md5",nonce="...",nc=00000001,
//	cnonce="<40 base64>",digest-uri="zookeeper/zk-sasl-md5",maxbuf=65536,
//	response=<32 hex>,qop=auth,authzid="bob"
//	                                     ->
//	                                     <-  rspauth=<32 hex>          (server complete)
//	(client checks rspauth: complete)
//
// A token is a comma-separated list of directives, key=value or key="quoted value" (a
// backslash escapes the next byte inside quotes), with optional linear white space around
// the separators. Keys are case-insensitive; unknown keys are ignored; a key given twice is
// an error (the server's challenge may list several realms). The server accepts responses
// of at most 4096 bytes, as the JDK does.
//
// The digests (H = MD5, HEX = lower-case hex, KD(k, s) = H(k ":" s)):
//
//	A1       = H(username ":" realm ":" password) ":" nonce ":" cnonce [":" authzid]
//	A2       = "AUTHENTICATE:" digest-uri            (rspauth: ":" digest-uri)
//	response = HEX(KD(HEX(H(A1)), nonce ":" nc ":" cnonce ":" qop ":" HEX(H(A2))))
//
// With charset=utf-8, username, realm and password enter A1 in ISO 8859-1 when every
// character fits, else in UTF-8 (RFC 2831 2.1.2.1, as the JDK).
//
// Only qop "auth" is offered and accepted: ZooKeeper never asks for a security layer, so
// "auth-int" and "auth-conf" responses are refused.
//
// Quorum SASL uses service "zookeeper-quorum" and host "zk-quorum-sasl-md5" and its own
// authorisation rule: ServerConfig carries both.
package sasl
