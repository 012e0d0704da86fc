// Package gssapi owns the SASL GSSAPI mechanism (RFC 4752) over Kerberos V5 (RFC 4121): the
// server side that answers ZooKeeper's clients the way Java's GssKrb5Server (and so ZooKeeper's
// ZooKeeperSaslServer) does, and a matching client side for Go clients. Kerberos itself (ticket
// and authenticator decryption, checksums, the KDC exchanges) is github.com/jcmturner/gokrb5;
// this package owns the GSS-API token framing, the AP-REP, the Wrap tokens and the SASL
// security-layer negotiation.
//
// # Exchange
//
// Each arrow is one SASL message (for ZooKeeper, the token of a SetSASL request or reply):
//
//	client                                                server
//	InitialContextToken(AP-REQ)              ──▶          verify ticket + authenticator with the keytab
//	                                         ◀──          InitialContextToken(AP-REP)   only if mutual auth was asked
//	(empty)                                  ──▶          (only after an AP-REP)
//	                                         ◀──          Wrap([layers, maxsize])
//	Wrap([layer, maxsize, authzid])          ──▶          Complete; AuthorizationID = client principal
//	                                         ◀──          (no token)
//
// Mutual authentication is asked by the AP-REQ's mutual-required option or the GSS checksum's
// mutual flag; Java's ZooKeeper client asks for neither, so its exchange has three messages.
//
// # InitialContextToken (RFC 2743 section 3.1, RFC 4121 section 4.1)
//
//	0x60 <DER length of the rest>
//	0x06 0x09 2a 86 48 86 f7 12 01 02 02        OID 1.2.840.113554.1.2.2 (Kerberos V5)
//	TOK_ID (2 bytes)                            01 00 AP-REQ, 02 00 AP-REP, 03 00 KRB-ERROR
//	Kerberos message (DER, RFC 4120)
//
// The mechanism is the raw Kerberos V5 one, as Java's and Cyrus' GSSAPI SASL clients send it,
// not SPNEGO.
//
// # Wrap token (RFC 4121 section 4.2.6.2)
//
//	offset 0  05 04              TOK_ID
//	       2  flags              0x01 sent by acceptor, 0x02 sealed, 0x04 acceptor subkey
//	       3  ff                 filler
//	       4  EC (2, big-endian) checksum length, for tokens that are not sealed
//	       6  RRC (2)            right rotation count of the bytes from offset 16
//	       8  SND_SEQ (8)        sender's sequence number
//	      16  payload | checksum checksum = HMAC of payload | header with EC = RRC = 0
//
// Only tokens that are not sealed are made or accepted: the SASL negotiation never asks for
// confidentiality (Java wraps it with MessageProp(0, false)), and this package offers no
// security layer for the session afterwards. The checksum key is the acceptor's subkey when
// its AP-REP carried one, else the initiator's authenticator subkey, else the ticket's
// session key; its key usage is 22 for the acceptor's tokens and 24 for the initiator's.
//
// # Security layer negotiation (RFC 4752 section 3.1), inside Wrap tokens
//
//	server: [0] layers offered: 0x01 none, 0x02 integrity, 0x04 confidentiality
//	        [1..3] largest message the server accepts, big-endian
//	client: [0] the one layer chosen
//	        [1..3] largest message the client accepts
//	        [4..]  authorization id, UTF-8, may be empty
//
// The server offers only "none" (0x01, as GssKrb5Server with the default javax.security.sasl.qop
// "auth") with a maximum of 65536, Java's default. The authorization id must be empty or equal
// to the client principal ("client@EXAMPLE.COM"): AuthorizationID is always the authenticated
// principal. ZooKeeper's SaslServerCallbackHandler then shortens it according to
// zookeeper.kerberos.removeHostFromPrincipal and removeRealmFromPrincipal; that is left to the
// caller (Principal gives the parts).
package gssapi
