// Package peer owns the election-port transport between ensemble members: the TCP protocol of
// ZooKeeper's QuorumCnxManager (connection headers, the one-connection-per-pair rule,
// length-prefixed messages, per-peer send queues, reconnection), so that zkd and Apache ZooKeeper
// servers can hold leader elections together, and an in-memory twin with seeded fault
// injection for deterministic tests. It moves opaque payloads; internal/election gives them
// meaning.
//
// All integers are big-endian.
//
// # Connection header
//
// The connecting side first sends a header, with no length prefix, in one write
// (ZooKeeper reads the address with a single read and fails on a short one):
//
//	 0                              8                              16              20
//	+------------------------------+------------------------------+---------------+------------+
//	| protocol version long        | sid long                     | n int         | n bytes:   |
//	| ff ff ff ff ff ff 00 00 (v1) |                              | 1 .. 2048     | host:port  |
//	+------------------------------+------------------------------+---------------+------------+
//
// zkd sends version -65536 (ProtocolVersionV1, one address) unless configured for
// -65535 (ProtocolVersionV2, ZooKeeper's multiAddress.enabled: addresses joined with '|').
// It reads both, and the legacy form of old servers: a first long that is not negative is
// the sid itself and nothing follows. Wildcard addresses are ignored; an old observer
// without a sid sends ObserverID (Long.MAX_VALUE) and gets a fresh negative one.
//
// Each pair of servers keeps one connection, the one opened by the larger sid. A server
// that receives a header from a smaller sid closes that connection (and any it held to
// that peer) and connects back; a server with the smaller sid that wants to talk connects,
// sends its header and hangs up, and waits for the connection back.
//
// # Messages
//
// After the header, both directions carry jute's frames (jute/doc.go, "Framing"), one
// message each:
//
//	+-------------------+---------------------------+
//	| length int        | payload (length bytes)    |
//	| 1 .. 524288       |                           |
//	+-------------------+---------------------------+
//
// A length outside 1..MaxMessageSize (512 KiB) closes the connection. The payload is an
// election notification (internal/election). On a new connection the last message sent
// to that peer is sent again, since it may have been lost with the old one.
//
// # TLS (sslQuorum, portUnification)
//
// TLS (NewTLS from the ssl.quorum.* settings) secures the quorum's connections, those of
// this transport and the learners' connections to the leader's quorum port (server uses it
// too): with sslQuorum a dialer runs a TLS handshake before the header (or, on the quorum
// port, the first QuorumPacket); a listener requires one, or with portUnification looks at
// the first bytes and takes plaintext too, as ZooKeeper's UnifiedServerSocket does:
//
//	0x16  0x03  0x00..0x04  ...   a TLS handshake record            -> TLS
//	0xff  ...                     election header, protocol version -> plaintext
//	0x00  ...                     legacy election header (sid), or
//	                              a QuorumPacket's type             -> plaintext
//
// Both ends verify the other's certificate against the truststore; the dialer checks the
// listener's against the address it dialed, then the configured host name (ZKTrustManager),
// the listener the dialer's against its address (tlsconf's clientHostnameVerification).
// Handshakes run on the connection's goroutine with a deadline, never on a shared one.
//
// # Quorum SASL
//
// With quorum.auth.enableSasl (QuorumSASL, quorumauth.go), QuorumAuthPackets follow the
// header on the election port, and open the quorum port's stream before the learner's first
// QuorumPacket (the server package calls the same functions there):
//
//	+----------------------------+---------------+---------------+------------------+
//	| magic long                 | status int    | n int         | token (n bytes)  |
//	| 5f 24 35 01 35 01 ed cc    | 0 / 1 / -1    | -1 = null     |                  |
//	+----------------------------+---------------+---------------+------------------+
//
// The connecting side sends only when quorum.auth.learnerRequireSasl is set; the accepting
// side peeks at the first 8 bytes for the magic and, when absent, lets the peer in unless
// quorum.auth.serverRequireSasl is set.
package peer
