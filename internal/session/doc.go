// Package session owns session identity and liveness bookkeeping: ZooKeeper-compatible
// session ids and passwords, zkd's secret-keyed passwords, timeout negotiation, and the
// expiry tracker that decides when a silent session must be closed (SessionTrackerImpl and
// ExpiryQueue in ZooKeeper).
//
// It is pure: time is always an argument (milliseconds of a monotonic clock chosen by the
// caller), secrets are passed in as bytes, and nothing here reads a clock or a file, starts
// a goroutine or locks. Callers serialise access to an IDGenerator or Tracker.
//
// # Session passwords
//
// ZooKeeper derives a session's password from its id and a constant (Password), and the id
// is public (every ephemeral's ephemeralOwner), so anyone can take over any session. zkd
// keeps that derivation when no secret is configured, so mixed zkd/ZooKeeper ensembles agree
// on passwords. With an ensemble secret (Secrets, parsed from the file named by zoo.cfg's
// zkd.sessionSecretFile), a password is
//
//	HMAC-SHA256(key = secret line, msg = label ‖ id)[0:16]
//
//	msg: +-------------------------------------+-------------------------+
//	     | "zkd session password v1" 0x00 (24) | session id, int64 BE (8) |
//	     +-------------------------------------+-------------------------+
//
// sixteen bytes, as long as ZooKeeper's, so clients store and resend it unchanged. Every
// member computes the same password from the same secret file; none is stored.
//
// # Secret file
//
//	# comment lines and blank lines are skipped; other lines are trimmed
//	<secret that derives new sessions' passwords>     (first line)
//	<older secret, still accepted on reconnect>        (further lines)
//	zookeeper                                          (ZooKeeper's derivation; any line)
//
// Rotation is an overlap window: add the new secret as a second line on every member, move
// it first on every member, then drop the old line once the sessions made under it have
// reconnected or ended. A reconnect is answered with the first secret's password, which
// clients adopt, so sessions move to the new secret as they reconnect.
package session
