// Package election owns ZooKeeper's Fast Leader Election (FLE) as a pure state machine, so that
// zkd servers and Apache ZooKeeper 3.8 servers can elect a leader together. It owns the
// notification wire format, the vote order, the tallies (the current round's votes and the
// "out of election" votes of servers that already follow a leader), the finalize wait, the
// notification back-off, and the answers a server owes its peers while looking and after it
// decided.
//
// The package does no I/O and keeps no clock: the caller feeds it received notifications and the
// current time in milliseconds, and sends the notifications it returns (see internal/peer for
// the election-port transport). It follows ZooKeeper's FastLeaderElection.lookForLeader and
// its WorkerReceiver, with one thread of control instead of three.
//
// # Notification
//
// A notification is the payload of one election-port message (internal/peer frames it).
// Notification.Marshal writes the version 2 form, 44 bytes and the config text, all
// integers big-endian:
//
//	 0               4                              12                             20
//	+---------------+------------------------------+------------------------------+
//	| state int     | leader long                  | zxid long                    |
//	+---------------+------------------------------+------------------------------+
//	20                             28                             36              40
//	+------------------------------+------------------------------+---------------+
//	| electionEpoch long           | peerEpoch long               | version int 2 |
//	+------------------------------+------------------------------+---------------+
//	40              44
//	+---------------+----------------------------+
//	| n int         | config text (n bytes)      |
//	+---------------+----------------------------+
//
//	state          the sender's ServerState: LOOKING 0, FOLLOWING 1, LEADING 2, OBSERVING 3
//	leader         the sid the sender votes for
//	zxid           that candidate's last logged zxid
//	electionEpoch  the sender's logical clock (its round)
//	peerEpoch      that candidate's currentEpoch
//	config         the sender's dynamic config as ZooKeeper prints it ("server.N=..."
//	               lines, then "version=<hex>"), or empty (Config.ConfigText)
//
// The sender's sid is not in the payload: the transport knows it. Unmarshal reads as
// ZooKeeper's WorkerReceiver does: exactly 28 bytes is the oldest form (no peerEpoch: it
// is zxid>>32), exactly 40 has no version and no config, and a version of 1 or less has no
// config; trailing bytes are ignored.
package election
