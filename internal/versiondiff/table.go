// Package versiondiff owns the table of the places where Apache ZooKeeper 3.8.0 (the reference
// server the differential tests and the fuzzer run), ZooKeeper 3.9 (the behaviour zkd
// targets) and zkd answer differently: one row per ZooKeeper change, with its JIRA id, and
// per choice of zkd's own. The differential tests (internal/testing/compat) and the
// differential fuzzer (internal/testing/difffuzz) accept a difference from 3.8.0 only where a
// row explains it, and the manual's docs/differences.md shows the table (Markdown), so a
// reader sees the same list the tests accept.
package versiondiff

// Row is one change ZooKeeper made between 3.8.0 (the reference server here) and
// 3.9 (the behaviour zkd targets), or one place where zkd answers otherwise on purpose: what
// each answers, and why zkd answers as it does. The differential tests may accept a
// difference from 3.8.0 only where a row explains it (their zkdDiffers steps name the row's
// ID); anything else is a zkd bug or a missing row.
type Row struct {
	ID    string // the JIRA (or CVE) id, or "zkd" for a choice of zkd's own
	What  string // the request or situation
	ZK380 string // what Apache ZooKeeper 3.8.0 answers
	ZK39  string // what 3.9 answers, from its source (the release that changed it)
	Zkd   string // what zkd answers
	Why   string // why zkd answers that
}

// Table is the table. Keep it in the order of the ids.
var Table = []Row{
	{
		ID:    "CVE-2024-23944",
		What:  "watch event for a watcher without READ on the node",
		ZK380: "delivered by upstream 3.8.0; dropped by Debian's 3.8.0-11+deb12u2, the reference server here, which carries the fix",
		ZK39:  "dropped, for every watch mode (3.8.4, 3.9.2, ZOOKEEPER-4799: ServerCnxn.process checks READ with the connection's ids against the node's ACL at the change, the parent's for NodeChildrenChanged, the deleted node's for NodeDeleted; super and skipACL pass; a one-shot watch is consumed anyway; setWatches' immediate events are not checked)",
		Zkd:   "as 3.9",
		Why:   "follows 3.9 (and the reference)",
	},
	{
		ID:    "ZOOKEEPER-1675",
		What:  "sync on a leader that lost its quorum without noticing yet",
		ZK380: "answered at once: a sync + read can be stale",
		ZK39:  "the same",
		Zkd:   "answered only after a quorum acknowledged a ping sent after the sync; a session's later requests wait for it",
		Why:   "sync + read linearizable under partitions (docs/ensembles.md)",
	},
	{
		ID:    "ZOOKEEPER-2590",
		What:  "exists on a node the client may not READ",
		ZK380: "answered with the Stat, no ACL check",
		ZK39:  "NOAUTH (3.8.4, 3.9.2: FinalRequestProcessor checks READ)",
		Zkd:   "NOAUTH",
		Why:   "follows 3.9",
	},
	{
		ID:    "ZOOKEEPER-2623",
		What:  "a check op (13) outside a multi",
		ZK380: "no reply; takes a zxid and logs a txn 3.8.0 cannot read back (the server exits at its next start)",
		ZK39:  "UNIMPLEMENTED, zxid -1, connection closed, no zxid (3.8.5, 3.9.3: Request.isValid)",
		Zkd:   "UNIMPLEMENTED, zxid -1, connection closed, no zxid",
		Why:   "follows 3.9.3",
	},
	{
		ID:    "ZOOKEEPER-4026",
		What:  "a create inside a multi (opcodes 1, 15, 19, 21 with flags 0-7, -1), or a multiRead holding one",
		ZK380: "the flags decide (MultiOperationRecord, Op.create(flags)): CONTAINER makes a createContainer (answered with a Stat) whatever the opcode; create2 and createContainer without it are plain creates (path only; createContainer with flags 1 or 3 makes an ephemeral); flags 5/6 on 1/15/19 give MARSHALLINGERROR for the whole multi when that op is reached (an earlier failed op answers first); 7/-1 fail that op with BADARGUMENTS; a multiRead holding such a create gets MARSHALLINGERROR",
		ZK39:  "3.9.0 (also 3.8.2, 3.7.2; MultiOperationRecord, Op.Create.getOpcode, DataTree), unchanged to 3.9.5: the opcode is kept unless the flags imply createContainer or createTTL; create2 answers with the Stat and is logged as sub-txn 15; createContainer with flags 0-3 makes a container with a Stat (sequential flags still name it); flags 5/6/7/-1 on 1/15/19 fail decoding: MARSHALLINGERROR for the whole request, a zxid, no body (multiRead too); createTTL unchanged",
		Zkd:   "as 3.9, except that a create2 is logged as sub-txn type 1 (the same CreateTxn body) and answered as create2 from the request",
		Why:   "follows 3.9; 3.8.0 and 3.8.1 cannot apply a create2 sub-txn (the rest of the multi is silently skipped), so zkd keeps its logs and proposals readable by them (mixed ensembles, data directories)",
	},
	{
		ID:    "ZOOKEEPER-4240",
		What:  "an ip ACL with an IPv6 address (ip:::1, ::1/128)",
		ZK380: "INVALIDACL, before the parent is looked up, with a zxid",
		ZK39:  "INVALIDACL up to 3.9.3; accepted from 3.9.4 (IPAuthenticationProvider.parseV6addr), invalid ones still INVALIDACL first",
		Zkd:   "accepted, as 3.9.4 parses it",
		Why:   "follows 3.9.4",
	},
	{
		ID:    "ZOOKEEPER-4466",
		What:  "a standard and a persistent (or recursive) watch on one path of one session, and their removal (also ZOOKEEPER-4471, -4472)",
		ZK380: "one mode per session and path: the later registration replaces the earlier (getData after addWatch makes the data half one-shot; a recursive addWatch replaces a persistent one in the child table); removeWatches DATA/CHILDREN remove the path's entry in that table whatever its mode; watcher types 4 and 5 answer MARSHALLINGERROR (-5); checkWatches finds other connections' watches too; checkWatches and removeWatches of a path without a leading slash answer MARSHALLINGERROR",
		ZK39:  "the modes coexist; a firing consumes only the standard watch; checkWatches/removeWatches DATA and CHILDREN address only standard watches, PERSISTENT (4) and PERSISTENT_RECURSIVE (5) their own mode, ANY all; NOWATCHER (-121) when none (3.9.0: WatchManager, WatchStats, DataTree.containsWatcher/removeWatch)",
		Zkd:   "as 3.9",
		Why:   "follows 3.9",
	},
	{
		ID:    "ZOOKEEPER-4575",
		What:  "a write whose body does not decode (MARSHALLINGERROR)",
		ZK380: "create, delete, setData, setACL, createTTL and multi take a zxid and log an error txn with it; reconfig reads its body first: the current zxid, no txn",
		ZK39:  "every write but multi reads its body before taking a zxid (3.9.0, PrepRequestProcessor.pRequestHelper after ZOOKEEPER-4575): the reply has the current zxid, and the error txn is logged under that same zxid, a second txn with it; multi takes a new one",
		Zkd:   "as 3.8.0: a new zxid and an error txn, reconfig none",
		Why:   "3.9 logs two txns under one zxid, a side effect of a refactor that replicas and log readers expecting increasing zxids do not handle; the answer code is the same",
	},
	{
		ID:    "ZOOKEEPER-4655",
		What:  "the zxid in a watch notification's reply header",
		ZK380: "-1",
		ZK39:  "the zxid of the txn that fired it (all of a multi's events carry the multi's); -1 for setWatches' immediate events (3.9.0: WatchedEvent.getZxid, ServerCnxn.process)",
		Zkd:   "as 3.9",
		Why:   "follows 3.9; clients that ignore it (3.8's, go-zookeeper, zkd's) are unaffected",
	},
	{
		ID:    "zkd-admin-host-check",
		What:  "an AdminServer request (any command, the console) whose Host, or Origin, names neither a loopback name or address nor a name zkd.admin.allowedHosts lists, on an admin port bound to loopback (or with the key set)",
		ZK380: "served: Jetty checks no Host (3.8.0 has no snapshot or restore to reach)",
		ZK39:  "served: a DNS-rebinding page reaches every command, restore included (3.9.5 JettyAdminServer)",
		Zkd:   "403 before anything is read",
		Why:   "issue 26: a web page the operator's browser opens must not read or wipe the tree through a loopback-bound port",
	},
	{
		ID:    "zkd-admin-restore",
		What:  "the AdminServer's restore command with no admin.restore.enabled in the configuration; a restore body that is very large or stalls; request headers over 8 KiB",
		ZK380: "no restore command; 431 over 8 KiB of headers (Jetty's requestHeaderSize)",
		ZK39:  "restore on by default (ZOOKEEPER-4571, zookeeper.admin.restore.enabled=true); the body read whole, with no size limit or deadline; 431 over 8 KiB",
		Zkd:   "503 (off) unless admin.restore.enabled=true; a body over zkd.admin.restoreMaxBytes (1 GiB) 413, one silent for zkd.admin.restoreReadTimeoutMs (30 s) 408 and the connection closed; 431 over 8 KiB",
		Why:   "replacing the tree is not something a port should offer until asked; an unbounded body let a caller grow the server's memory and hold its connection forever",
	},
	{
		ID:    "zkd-admin-snapshot-auth",
		What:  "the AdminServer's snapshot or restore (or a console write) with Authorization: digest of a user / 's ACL does not name with ADMIN, or ip, while / grants every bit through world:anyone (its default) or an ip entry",
		ZK380: "no snapshot or restore command (3.8.0 reads and writes no tree over HTTP)",
		ZK39:  "allowed: Commands.handleAuthorization checks each bit of ALL on / with checkACL, and world:anyone passes any id (ZOOKEEPER-4639; a made-up digest user streams every znode, ACL-protected ones included, or replaces the tree)",
		Zkd:   "403 with how to enable the commands: the caller must also be the super user, hold an x509 certificate the truststore accepted, or be a digest user / 's ACL names with ADMIN; refusals 3.9 makes too keep its 403 Not authorized",
		Why:   "issue 26: the admin port must not hand a stranger what the client port refuses him",
	},
	{
		ID:    "zkd-close-order",
		What:  "the order of the NodeDeleted events of a closed session's ephemerals",
		ZK380: "the iteration order of a java.util.HashSet of the paths (JDK-dependent)",
		ZK39:  "the same",
		Zkd:   "JDK 17's HashSet order, computed (internal/prep closeOrder)",
		Why:   "watchers see the order ZooKeeper on Debian's JDK 17 gives; newer JDKs size the set differently",
	},
	{
		ID:    "zkd-createttl-mode",
		What:  "createTTL (21) whose flags are not a TTL mode (persistent, ephemeral, sequential, container) with a negative ttl",
		ZK380: "passes PrepRequestProcessor (validateTTL allows ttl < 0 for a non-TTL mode) and logs a CreateTTLTxn; applying it, EphemeralType.TTL.toEphemeralOwner throws: no reply, the connection closed, the server exits, and its log cannot be replayed",
		ZK39:  "the same (3.9.4's PrepRequestProcessor.validateCreateRequest and DataTree.processTxn)",
		Zkd:   "BADARGUMENTS, with an error txn (a zxid), as for the other TTL values ZooKeeper refuses",
		Why:   "a client must not be able to stop the server; BADARGUMENTS is what ZOOKEEPER-2797 gives the bad TTLs it catches",
	},
	{
		ID:    "zkd-damaged-data",
		What:  "start-up on a damaged data directory: a log entry zeroed, or its checksum or length broken, with valid entries after it; the last entry whole with a bad checksum; an ensemble member's log, snapshots or epoch files damaged",
		ZK380: "refuses on a checksum (\"CRC check failed\") or impossible length (\"Unreasonable length\"); serves on a zeroed entry, dropping every txn after it; an ensemble member refuses to start",
		ZK39:  "the same",
		Zkd:   "a standalone server refuses every one, naming the file, the offset and the zxids at stake, and changes nothing (zkd tool repair DIR cuts, keeping the originals); an ensemble member sets the damage aside, votes with zxid -1 until a leader elected without it has refilled it, then votes again",
		Why:   "issue 25: a damaged file must never cost an acknowledged write; a member that lost txns must not help elect a leader that lacks them",
	},
	{
		ID:    "zkd-data-dir-lock",
		What:  "a second server started on a live server's dataDir or dataLogDir",
		ZK380: "runs (no lock) and writes into it",
		ZK39:  "the same",
		Zkd:   "refuses to start, naming the holder's pid (an flock on zkd.lock, released by the kernel when the holder dies)",
		Why:   "issue 25: one process per data directory, as etcd and pebble",
	},
	{
		ID:    "zkd-internal-ops",
		What:  "a client request with opcode createSession (-10) or deleteContainer (20), the server's own requests",
		ZK380: "served: createSession makes a new session over the live connection and answers with a ConnectResponse (and a zxid); deleteContainer deletes any empty node that is not a plain persistent one (containers, TTL nodes), with no ACL check (BADVERSION for a plain node, NOTEMPTY)",
		ZK39:  "the same (Request.isValid lists both)",
		Zkd:   "UNIMPLEMENTED, zxid -1, connection closed, as for an unknown opcode",
		Why:   "serving them lets any client delete another's containers without an ACL check and open sessions that skip the handshake's checks; no client library sends them",
	},
	{
		ID:    "zkd-sasl-unconfigured",
		What:  "a SASL request (102) to a server with no SASL configured",
		ZK380: "OK with an empty token, connection kept (the connection has no SaslServer: processSasl's NullPointerException is caught); a SASL client answers and is answered again, forever",
		ZK39:  "the same (3.9.4 ZooKeeperServer.processSasl)",
		Zkd:   "AUTHFAILED with an empty token, then the connection closed, as ZooKeeper ends a failed SASL exchange",
		Why:   "issue 12: kazoo's SASL login against a server without SASL spun at thousands of packets a second instead of failing",
	},
	{
		ID:    "zkd-security-config",
		What:  "a zoo.cfg security boolean that is neither true nor false (enforce.auth.enabled=ture, sessionRequireClientSASLAuth=yes, admin.forceHttps=1), or an unknown key under enforce.auth., authProvider., sasl, quorum.auth., admin. or zkd.",
		ZK380: "the boolean read as false by Boolean.parseBoolean/getBoolean (QuorumPeerConfig's own keys, sslQuorum, quorum.auth.*, refuse it); the unknown key set as an unused zookeeper.* system property; the server runs without the protection asked for",
		ZK39:  "the same (3.9.5 AuthenticationHelper, ZooKeeperServer, JettyAdminServer, QuorumPeerConfig)",
		Zkd:   "start-up refused with an error naming the key; true and false are taken in any case; the keys ZooKeeper reads under those prefixes (authProvider.X for any X, the client's zookeeper.sasl.*, admin.idleTimeout, admin.httpVersion) start as in ZooKeeper",
		Why:   "issue 26: a typo must not switch security off without a word (docs/security.md)",
	},
	{
		ID:    "zkd-setacl-outstanding",
		What:  "a request prepared while a setACL of its node (or, for creates and deletes, its parent) is still outstanding, e.g. pipelined behind it",
		ZK380: "checked against the old ACL: the ChangeRecord setACL adds to the outstanding changes keeps the node's previous ACL, so a pipelined write passes or fails by timing",
		ZK39:  "the same (3.9.4 PrepRequestProcessor, case OpCode.setACL)",
		Zkd:   "checked against the ACL the setACL sets",
		Why:   "a session's writes are ordered: one sent after a setACL must be judged by it, whatever the timing",
	},
	{
		ID:    "zkd-ssl-authprovider",
		What:  "ssl.authProvider naming a scheme other than x509, or set to x509 while no x509 provider is registered (authProvider.x509 naming another class, or client.portUnification without secureClientPort), on a server that serves TLS clients",
		ZK380: "no authProvider.SCHEME for the scheme: start-up refused with a secureClientPort (QuorumPeerConfig.configureSSLAuth: \"No auth provider configured for the SSL authentication scheme\"), port unification turned off (plaintext only, an error logged) with client.portUnification alone; otherwise the server starts and closes every TLS connection (NettyServerCnxnFactory.initSSL: \"Auth provider not found\", or a ClassCastException for a provider that is not X509AuthenticationProvider)",
		ZK39:  "the same (3.9.5 QuorumPeerConfig.configureSSLAuth, NettyServerCnxnFactory.initSSL)",
		Zkd:   "start-up refused with an error naming ssl.authProvider, ZooKeeper's message where ZooKeeper refuses too",
		Why:   "a server that can serve no TLS client, or serves plaintext where TLS was asked for, is a configuration error; zkd fails closed at start-up (docs/security.md)",
	},
}

// Lookup returns the row with id, and whether there is one.
func Lookup(id string) (Row, bool) {
	for _, r := range Table {
		if r.ID == id {
			return r, true
		}
	}
	return Row{}, false
}
