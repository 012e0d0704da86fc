// Package zab owns the replication protocol's decisions, as ZooKeeper's Zab implementation
// makes them: which zxids are committed (a quorum of acks, in order), and how a learner that
// joins a leader is brought up to date (DIFF, TRUNC or SNAP). It is pure: packets and time
// come in as values, packets and actions go out; the server does the I/O.
//
// Zab decides what each packet carries; jute.QuorumPacket encodes it, and the server's
// quorum connection writes the packets back to back on the quorum port's TCP stream, with
// no length prefix and no connection header (quorum SASL is not supported). All integers
// are big-endian.
//
// # QuorumPacket
//
//	+----------+-----------+------------------------+---------------------------------+
//	| type int | zxid long | data: int n, n bytes   | authinfo: int count, count x    |
//	|          |           | (n = -1: null)         | {ustring scheme, ustring id}    |
//	+----------+-----------+------------------------+---------------------------------+
//
// authinfo is null (count -1) except in REQUEST. A zxid is epoch<<32 | counter
// (MakeZxid).
//
// # Packets as zkd sends them
//
//	type                 dir    zxid                        data
//	 1 REQUEST           L->Ld  -1                          session long, cxid int, type int,
//	                                                        the request body as received;
//	                                                        authinfo: the session's ids
//	 2 PROPOSAL          Ld->F  the txn's zxid              txn bytes (see below)
//	 3 ACK               F->Ld  the acked zxid              null
//	 4 COMMIT            Ld->F  the committed zxid          null
//	 5 PING              Ld->L  last proposed zxid          null
//	 5 PING (reply)      L->Ld  the PING's zxid             {session long, timeout int} per
//	                                                        session touched since the last
//	                                                        PING, no count; empty, not null
//	 6 REVALIDATE        L->Ld  -1                          session long, timeout int
//	 6 REVALIDATE        Ld->L  -1                          session long, valid boolean
//	 7 SYNC              Ld->L  0                           null: answers a forwarded sync
//	 8 INFORM            Ld->O  the committed zxid          txn bytes (PROPOSAL and COMMIT
//	                                                        in one, for observers)
//	10 NEWLEADER         Ld->L  newEpoch<<32                the leader's config text
//	11 FOLLOWERINFO      F->Ld  acceptedEpoch<<32           LearnerInfo (below)
//	12 UPTODATE          Ld->L  -1                          null
//	13 DIFF              Ld->L  the zxid the learner will   null
//	                            reach (its own if nothing
//	                            follows)
//	14 TRUNC             Ld->L  zxid to truncate back to    null
//	15 SNAP              Ld->L  leader's last committed     null; the SNAP stream follows on
//	                            zxid                        the socket (internal/storage)
//	16 OBSERVERINFO      O->Ld  acceptedEpoch<<32           LearnerInfo (below)
//	17 LEADERINFO        Ld->L  newEpoch<<32                int protocol version 0x10000
//	                                                        [, wide advertisement: below]
//	18 ACKEPOCH          L->Ld  learner's last logged zxid  int currentEpoch, or -1 when it
//	                                                        had already accepted newEpoch
//
// (Ld leader, L any learner, F follower, O observer.) COMMITANDACTIVATE (9) and
// INFORMANDACTIVATE (19, data: leader sid long, then txn bytes) commit reconfigurations;
// a reconfig-enabled zkd leader sends them, as ZooKeeper's does.
//
// LearnerInfo, the data of FOLLOWERINFO and OBSERVERINFO (20 bytes, then the wide
// advertisement when the learner runs with ext.Wide):
//
//	 0                         8                  12                          20
//	+-------------------------+------------------+---------------------------+
//	| serverId long (myid)    | protocol 0x10000 | configVersion long        |
//	+-------------------------+------------------+---------------------------+
//
// With ext.Wide on (zkd.extensions), a zkd learner appends 8 bytes to LearnerInfo, and a
// zkd leader with wide on answers a learner that did so with the same 8 bytes after
// LEADERINFO's protocol version:
//
//	+------------------------+---------------------------+
//	| magic int 0x7a6b6457   | features int (1: in-place |
//	| ("zkdW")               | zxid rollover)            |
//	+------------------------+---------------------------+
//
// ZooKeeper's LearnerHandler reads LearnerInfo field by field from a ByteBuffer and stops
// after configVersion, so a ZooKeeper leader ignores them; a ZooKeeper learner never sends
// them and so never gets them back (its Learner reads one int of LEADERINFO anyway).
//
// txn bytes, in PROPOSAL and INFORM, are exactly a log entry's txn: TxnHeader (32 bytes),
// the txn record, [TxnDigest]; the header's zxid must equal the packet's.
//
// # A learner joining
//
//	learner                                   leader
//	FOLLOWERINFO(acceptedEpoch<<32, info) ->
//	                                       <- LEADERINFO(newEpoch<<32, 0x10000)
//	ACKEPOCH(lastLogged, currentEpoch|-1) ->
//	                                       <- DIFF | TRUNC | SNAP + SNAP stream
//	                                       <- PROPOSAL, COMMIT ... (DIFF: committed txns)
//	                                       <- PROPOSAL ... (outstanding, not committed yet)
//	                                       <- NEWLEADER(newEpoch<<32, config)
//	ACK(newEpoch<<32), then an ACK per    ->
//	  proposal received (followers only)
//	                                       <- UPTODATE(-1), once a quorum acked NEWLEADER
//	ACK(newEpoch<<32)                     ->
//	                                          broadcast: PROPOSAL, ACK, COMMIT, PING ...
//
// # Observers syncing from a follower (observerMasterPort)
//
// With observerMasterPort set, a synced follower listens on that port (on its quorum
// address's host) and runs an ObserverMaster: observers connect to it, not to the leader,
// and it speaks the leader's side of the same packets, with these differences:
//
//	observer                                  follower (ObserverMaster)
//	OBSERVERINFO(acceptedEpoch<<32, info) ->  (FOLLOWERINFO: dropped)
//	                                       <- LEADERINFO(epoch<<32, 0x10000): the follower's
//	                                          current epoch, the leader's
//	ACKEPOCH(lastLogged, ...)             ->
//	                                       <- DIFF | TRUNC | SNAP from the follower's own
//	                                          committed history (its log, read by the
//	                                          owner, when the observer is behind what
//	                                          it keeps in memory) and tree
//	                                       <- NEWLEADER(epoch<<32, last seen config text)
//	ACK(epoch<<32)                        ->
//	                                       <- UPTODATE(-1) at once (the follower is
//	                                          established)
//	                                       <- INFORM | INFORMANDACTIVATE per txn the
//	                                          follower applies (from NEWLEADER on), PING
//	                                          every half tick (zxid: the last informed)
//	REQUEST, REVALIDATE                   ->  sent up unchanged on the follower's own
//	                                          connection; the leader's SYNC and REVALIDATE
//	                                          answers come back in order and go to the
//	                                          observer that asked (REVALIDATE by the
//	                                          oldest pending ask's session)
//	PING reply                            ->  its sessions are touched at the follower and
//	                                          reach the leader with the follower's PING
//	                                          reply
//
// # Rolling the epoch over without an election (ext.Wide)
//
// A zxid's counter has 32 bits. ZooKeeper's leader shuts down when it would reach
// 0xffffffff (ZOOKEEPER-1277) and an election starts the next epoch; zkd does the same
// (NextZxid fails, the server steps down) unless the leader runs with wide and every member
// of the current configuration, voters and observers (the configuration text's server.N
// lines), is connected to it, synced, and advertised wide, with no reconfiguration pending.
// Then, within epoch e:
//
//	leader                                     followers (observers)
//	persist acceptedEpoch = e+1
//	log PROPOSAL(e<<32|0xffffffff, bump)    -> isBump: persist acceptedEpoch = e+1,
//	                                           then log it, then ACK
//	  (commits once a quorum of the learners
//	  synced and wide when it was proposed,
//	  and the leader, logged it)
//	persist currentEpoch = e+1              -> COMMIT (INFORM: the bump committed; both
//	                                           epochs before it is logged)
//	                                           persist currentEpoch = e+1, apply
//	drop every learner that did not take part
//	PROPOSAL((e+1)<<32 | first) ...         -> logged after currentEpoch = e+1
//
// The bump is an error txn (TxnHeader type -1, ErrorTxn err BumpErr) at counter 0xffffffff,
// a counter no leader hands out otherwise; every server's tree applies it as the nothing
// ZooKeeper applies an error txn as, so the logs and snapshots stay ZooKeeper's (a
// ZooKeeper server reading them sees an error txn and then epoch e+1, with currentEpoch
// e+1). The zxids the server asks for meanwhile are the next epoch's; their proposals wait
// in the leader until the bump commits, and go out in a Ready after the one that persists
// currentEpoch (Ready.After), so no log holds a txn of an epoch newer than its
// currentEpoch. Clients, sessions, watches and the commit pipeline see nothing but zxids
// whose epoch moved.
//
// Why it is safe. Zab needs that no two leaders ever propose in the same epoch, which
// elections ensure by choosing an epoch past every acceptedEpoch of a quorum, and that a
// new leader's history holds everything committed. The bump makes the leader of e the
// leader of e+1 without an election, so it must be that no election ever picks e+1:
//
//   - the bump commits only once a quorum Q1 logged it, and each member of Q1 persisted
//     acceptedEpoch = e+1 before logging it. A learner takes a bump only in broadcast, from
//     a leader of its own epoch e that advertised wide, with acceptedEpoch still e; its
//     ack counts only if its connection was synced and wide when the bump was proposed (a
//     learner that registered later accepted only e: its acks stop before the bump, and
//     the leader drops it when the bump commits). Nothing of epoch e+1 is proposed before
//     the bump commits.
//   - any leader elected later takes its epoch past the acceptedEpochs of a quorum Q2,
//     which meets Q1, so it picks e+2 or more. An election that ran while the bump was
//     outstanding could pick e+1 only with a quorum Q2 of learners whose acceptedEpoch was
//     below e+1 when they acked that epoch; a member of both would have had to accept e+1
//     twice, and either order fails (the bump needs acceptedEpoch e; a new leader's epoch
//     e+1 is then "already accepted", answered with -1, which does not count). So at most
//     one of them gets its quorum, and the leader without it steps down on its own (no
//     quorum synced within syncLimit).
//   - the bump is an ordinary proposal of epoch e: if the leader fails before it commits,
//     the next leader commits or truncates it like any other txn, and its txns of e+1 were
//     never proposed. A learner treats the bump as a bump only in broadcast; during a
//     sync (DIFF, TRUNC, SNAP, from a leader already in e+1 or from a new leader), its
//     epochs come from LEADERINFO and NEWLEADER as after any election.
//
// A member that is not wide (a ZooKeeper server, or zkd without the extension), not
// connected, still syncing, or behind an observer master keeps the rollover an election.
package zab
