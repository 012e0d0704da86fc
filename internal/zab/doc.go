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
//	18 ACKEPOCH          L->Ld  learner's last logged zxid  int currentEpoch, or -1 when it
//	                                                        had already accepted newEpoch
//
// (Ld leader, L any learner, F follower, O observer.) COMMITANDACTIVATE (9) and
// INFORMANDACTIVATE (19, data: leader sid long, then txn bytes) commit reconfigurations;
// a reconfig-enabled zkd leader sends them, as ZooKeeper's does.
//
// LearnerInfo, the data of FOLLOWERINFO and OBSERVERINFO (20 bytes):
//
//	 0                         8                  12                          20
//	+-------------------------+------------------+---------------------------+
//	| serverId long (myid)    | protocol 0x10000 | configVersion long        |
//	+-------------------------+------------------+---------------------------+
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
package zab
