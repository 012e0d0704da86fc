// Package versiondiff owns the table of the places where Apache ZooKeeper 3.8.0 (the reference
// server the differential tests and the fuzzer run), ZooKeeper 3.9 (the behaviour zkd
// targets) and zkd answer differently: one row per ZooKeeper change, with its JIRA id, and
// per choice of zkd's own. The differential tests (internal/compat) and the differential
// fuzzer (internal/difffuzz) accept a difference from 3.8.0 only where a row explains it.
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
		ZK380: "delivered",
		ZK39:  "dropped (3.8.4, 3.9.2: ZooKeeperServer checks READ before sending persistent-watch events)",
		Zkd:   "delivered",
		Why:   "not done yet (README: not supported yet)",
	},
	{
		ID:    "ZOOKEEPER-1675",
		What:  "sync on a leader that lost its quorum without noticing yet",
		ZK380: "answered at once: a sync + read can be stale",
		ZK39:  "the same",
		Zkd:   "answered only after a quorum acknowledged a ping sent after the sync; a session's later requests wait for it",
		Why:   "sync + read linearizable under partitions (README: Ensembles)",
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
		What:  "a create inside a multi whose opcode and flags disagree (opcode 1 with CONTAINER, 15, 19 without it)",
		ZK380: "the flags decide: CONTAINER is a container create (with a Stat); create2 and createContainer without it are plain creates",
		ZK39:  "the opcode is kept (create2 answers with a Stat; createContainer without the flag makes a container); CONTAINER and TTL flags still decide those (3.9.0: MultiOperationRecord)",
		Zkd:   "as 3.8.0",
		Why:   "not moved to 3.9 yet (issue 17)",
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
		ZK380: "one mode per session and path: the later registration replaces the earlier",
		ZK39:  "the modes coexist; a firing consumes only the one-shot watch; checkWatches and removeWatches address each mode (3.9.0: WatchManager, WatchStats)",
		Zkd:   "as 3.9",
		Why:   "follows 3.9",
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
		ZK380: "passes PrepRequestProcessor's checks (validateTTL allows ttl < 0 for a non-TTL mode), then EphemeralType.TTL.toEphemeralOwner throws on the commit path and the server exits",
		ZK39:  "the same (3.9.4's PrepRequestProcessor.validateCreateRequest and DataTree.processTxn)",
		Zkd:   "BADARGUMENTS, with an error txn (a zxid), as for the other TTL values ZooKeeper refuses",
		Why:   "a client must not be able to stop the server; BADARGUMENTS is what ZOOKEEPER-2797 gives the bad TTLs it catches",
	},
	{
		ID:    "zkd-internal-ops",
		What:  "a client request with opcode createSession (-10) or deleteContainer (20), the server's own requests",
		ZK380: "served: createSession makes a new session over the live connection and answers with a ConnectResponse (and a zxid); deleteContainer deletes any empty node that is not a plain persistent one (containers, TTL nodes), with no ACL check (BADVERSION for a plain node, NOTEMPTY)",
		ZK39:  "the same (Request.isValid lists both)",
		Zkd:   "UNIMPLEMENTED, zxid -1, connection closed, as for an unknown opcode",
		Why:   "serving them lets any client delete another's containers without an ACL check and open sessions that skip the handshake's checks; no client library sends them",
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
