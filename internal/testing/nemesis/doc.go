// Package nemesis owns the process-level fault-injection suite: a 3-member ensemble of real
// server processes on 127.0.0.1 (zkd, or Apache ZooKeeper 3.8 through internal/refzk for
// comparison), a client load that sees every reply in wire order, a seeded schedule of
// faults, and the checks of the history the clients recorded.
//
// The ensemble (Cluster) routes each member's quorum and election connections to each other
// member through its own internal/faultnet bridge, so one member can be cut off while
// clients still reach it. The load (Client) is K sessions, one TCP connection each at a
// time, speaking the wire protocol with jute and pipelining up to Depth requests: sync +
// getData pairs, setData with version -1 and unique values, version-checked setData (with
// the version last seen), exists and pings, over a few keys. A client whose connection
// breaks resumes its session (same id and password, its last zxid) on another member; the
// writes it had outstanding have unknown outcomes.
//
// Faults (Schedule) come one at a time from the seed, each after the ensemble serves with
// every member again: kill -9 of the leader or a follower with a restart a few seconds
// later, SIGSTOP for 4-8 s, isolating a member's quorum and election traffic, kill -9
// followed by damage to the tail of the newest txn log (TearLog) before the restart, kill -9
// followed by damage anywhere in the member's data (Damage: a bit flip in a log entry, a
// zeroed entry, an impossible length, a bit flip in the newest snapshot, a garbled epoch
// file), which a zkd member must survive by refilling from the leader, and a restart with a
// storage failpoint armed (ZKD_FAILPOINTS: EIO, ENOSPC or a torn write at a log, snapshot,
// epoch file or directory write, fsync or rename) for a few seconds, then a healthy one.
//
// The checks, each with unit tests feeding it bad histories:
//   - CheckFIFO: every reply on a connection answers its oldest unanswered request.
//   - CheckZxid: reply zxids never go back within a session, across its connections.
//   - CheckLinearizable: per key, CheckVersions (exact for operations that pin a version,
//     naming the two at fault), then porcupine with internal/linearize's register model.
//   - CheckNoLostWrites: after healing, a fresh session's sync + read of every key is at or
//     past every acknowledged write's version and holds a written value.
//
// Running it: TestNemesis runs the short CI profile (one 45 s run, every fault kind). Flags:
//
//	-nemesis.seed N          replay a run (0: random; every run prints its seed and schedule)
//	-nemesis.duration D      load per run (default 45s)
//	-nemesis.runs N          N consecutive runs on fresh ensembles, seeds N, N+1, ...
//	-nemesis.faults K,...    kill, pause, partition, torn-log, damage, disk-error, or none
//	-nemesis.target T        zkd (default) or zookeeper (comparison: violations are logged,
//	                         not failures; skipped when ZooKeeper is not installed)
//	-nemesis.check-timeout D porcupine's budget per key (a timeout is reported, not a failure)
//	-nemesis.keys N          registers shared by the clients (default 32)
//
// Long runs:
//
//	go test ./internal/testing/nemesis -run Nemesis -nemesis.duration 60s -nemesis.runs 20 -v
//
// A run with violations keeps the server logs, every connection's requests and replies
// (connections.txt), the operations given to porcupine (ops.txt) and porcupine's
// visualisation in $TMPDIR/zkd-nemesis-<target>-seed<N>.
package nemesis
