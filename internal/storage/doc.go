// Package storage owns zkd's on-disk state in Apache ZooKeeper's formats, byte for byte:
// the transaction log (version-2/log.<zxid>), snapshots (version-2/snapshot.<zxid>), the
// SNAP stream a leader sends to a learner, and autopurge of old files.
//
// Every file operation goes through the FS interface so tests can run the same code against
// MemFS, an in-memory file system that remembers what was fsynced and can simulate a crash.
//
// All integers below are big-endian; ustring, buffer and vector are jute's (an int length
// or count, -1 for null, then the bytes or elements). File names carry a zxid in lowercase
// hex without 0x or padding (log.1, snapshot.3c, snapshot.100000000).
//
// # Txn log file
//
// A log file is named after the zxid of its first txn; a new one starts after every
// snapshot (Log.Roll), after a TRUNC and at every start. A file holds a header, then one
// entry per Log.Append:
//
//	 0              4              8                              16
//	+--------------+--------------+-------------------------------+
//	| "ZKLG"       | version 2    | dbid 0                        |  FileHeader
//	| 5a 4b 4c 47  | 00 00 00 02  | 00 00 00 00 00 00 00 00       |
//	+--------------+--------------+-------------------------------+
//	+-----------------------------+--------------+----------------------+------+
//	| checksum long               | length int   | txn (length bytes)   | 0x42 |  entry,
//	+-----------------------------+--------------+----------------------+------+  repeated
//	| 00 00 00 ... zeros up to the preallocated size                           |
//	+--------------------------------------------------------------------------+
//
//	txn = TxnHeader, 32 bytes:   long clientId, int cxid, long zxid, long time, int type
//	    + the record of type:    jute.NewTxnBody (a MultiTxn holds int count, then
//	                             count x {int type, buffer record})
//	    + [TxnDigest, 12 bytes]: int version (2), long treeDigest: the tree digest once
//	                             the txn is applied. ZooKeeper 3.6+ and zkd append it to
//	                             every txn but error txns (none with
//	                             zookeeper.digest.enabled=false); zkd reads logs with or
//	                             without it
//
// checksum is the Adler32 of the txn bytes alone (not of length or the marker), held in a
// long whose upper 32 bits are zero. 0x42 ('B') ends every entry. An entry is 8+4+1 bytes
// longer than its txn (entryOverhead).
//
// Preallocation (ZooKeeper's FilePadding): before a write that starts within 4 KiB
// (padSlack) of the allocated end, the file is extended by LogOptions.PreAllocSize (default
// 64 MiB; to a multiple of it when the write starts past the end) by writing one zero byte
// at the new end, so a fresh log is 16 bytes + 64 MiB long and
// mostly zeros. A reader therefore ends a file at EOF or at an entry whose length is 0.
//
// Recovery (OpenLog) reads, in zxid order, the files replay needs (from the newest whose
// first zxid is at most the snapshot's). A crash tears only the last write, so a short
// header, a short entry, a missing 0x42, a bad checksum or an impossible length with
// nothing valid after it is a torn write: the file is cut there and reading goes on with
// the next file. The same problems with a valid entry anywhere after them (found by a
// byte-by-byte search: a checksum long with zero upper half, a length that fits, the 0x42,
// a matching Adler-32 and a higher zxid), zeros in the middle of a file with entries after
// them, or a later file that starts past the next zxid of the same epoch, are damage:
// OpenLog returns a DamageError naming the file, offset and zxids at stake and changes
// nothing. So is a whole entry (its length fits, its 0x42 is there) whose checksum fails,
// even last: a crash that loses a sector of a write leaves zeros there, so unless the
// entry's bytes in some sector before its marker's are all zeros, it was written whole and
// changed since (ZooKeeper refuses it too). CutAtDamage cuts there when told to, first renaming every file it changes to
// damaged.<tag>.<name>. Appends are buffered and written at Sync, which fsyncs the file
// (and, for a new file, its directory): one fsync per group of entries.
//
// A log directory may hold zkd.damaged ("highestZxid=0x<hex>\n"): the server lost txns up
// to that zxid to damage and must not vote on its log until it has synced with a leader.
//
// # Snapshot file
//
// A snapshot is named after the last zxid applied when it started; it is fuzzy (txns
// applied while it was written may be in it too), so restoring replays the log from that
// zxid on. SnapshotWriter spools the nodes to tmp.snapshot.<zxid>.nodes, writes the file
// as tmp.snapshot.<zxid>[.gz|.snappy], fsyncs it, renames it to snapshot.<zxid>[.gz|.snappy]
// and fsyncs the directory; CleanTemp removes leftovers of a crash.
//
//	 0              4              8                              16
//	+--------------+--------------+-------------------------------+
//	| "ZKSN"       | version 2    | dbid -1                       |  FileHeader
//	| 5a 4b 53 4e  | 00 00 00 02  | ff ff ff ff ff ff ff ff       |
//	+--------------+--------------+-------------------------------+
//	| count int    | count x {sessionId long, timeOut int}       |  sessions
//	+--------------+----------------------------------------------+
//	| count int    | count x {key long, vector<ACL>}              |  ACL cache
//	+--------------+-------------+-------------+------------------+
//	| path ustring | data buffer | aclKey long | StatPersisted 60 |  node, repeated
//	+--------------+-------------+-------------+------------------+
//	| "/" as a ustring: 00 00 00 01 2f                            |  end of nodes
//	+------------------------------+------------------------------+
//	| checksum long                | "/" as a ustring             |  seal 1
//	+------------------------------+--------------+---------------+
//	| zxid long                    | version 2    | digest long   |  digest (3.6+)
//	+------------------------------+--------------+---------------+
//	| checksum long                | "/" as a ustring             |  seal 2
//	+------------------------------+------------------------------+
//
// Sessions come in the order given, ACL lists by ascending key, and nodes in pre-order from
// the root, whose path is written as "", so parents precede their children. The digest
// section is long zxid, int version (2) and long digest: the tree digest as of that zxid.
//
// Each seal's checksum is the Adler32 of every byte before it, from the magic on (seal 2
// covers seal 1), in a long whose upper 32 bits are zero. aclKey -1 is world:anyone with
// all permissions and has no entry in the ACL cache; an ACL list is written as an empty
// vector, never null, since ZooKeeper's reader refuses null. Passwords are not stored:
// they derive from the session id.
//
// A snapshot may be compressed, as ZooKeeper's zookeeper.snapshot.compression.method
// selects (SnapCompression): with gzip as snapshot.<zxid>.gz, with snappy in xerial's
// SnappyOutputStream framing as snapshot.<zxid>.snappy (see snappy.go). The whole file
// above is the compressed stream, and the seals cover the uncompressed bytes. zkd writes
// all three (NewCompressedSnapshotWriter) and reads whichever the name says.
//
// Reading also accepts what zkd does not write: a digest before version 2 (a ustring of
// hex instead of the long), a ZooKeeper 3.9 section after seal 2 (lastProcessedZxid long,
// then seal 3) and the end of the file where an optional section would start. The quick
// validity check, as ZooKeeper's, wants an uncompressed file of at least 10 bytes ending
// in 00 00 00 01 2f, and a compressed one to start with its format's magic bytes.
//
// # SNAP stream
//
// After a SNAP quorum packet the leader sends the same sessions, ACL cache and nodes, and
// the "/" end marker, with no FileHeader and no seals, then the ustring "BenWasHere"
// (SnapStreamWriter); the quorum packets go on after it.
package storage
