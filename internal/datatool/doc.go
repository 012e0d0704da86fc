// Package datatool owns `zkd tool`: offline tools over a data directory's files, reading
// them through internal/storage's decoders.
//
//   - DumpLog prints a txn log as ZooKeeper's TxnLogToolkit (zkTxnLogToolkit.sh) does, or
//     as JSON lines; DumpSnapshot prints a snapshot as SnapshotFormatter
//     (zkSnapShotToolkit.sh) does, or as JSON lines; DumpNcdu is SnapshotFormatter -json.
//     The text is ZooKeeper's byte for byte (checked against ZooKeeper 3.8's own tools),
//     down to Java's date formats, jute's toString escaping and the iteration order of
//     Java's HashSet of children (javafmt.go), so scripts written for the Java tools work.
//     Every key of the JSON lines is lowerCamel, the records' fields included (path, acl,
//     parentCVersion, timeOut: jute's own names; jsonkeys.go).
//   - Verify checks every log (checksums, torn or corrupt tail, zxid in the name) and
//     snapshot (seals) in a directory; Repair cuts a log's bad tail after a backup, as a
//     server's recovery would, and can recompute mismatched checksums as the toolkit's
//     recovery mode does.
//   - Diff lists the znodes that differ between two snapshots; Summary gives node counts
//     and data bytes by subtree.
//
// Snapshots may be uncompressed, gzip or snappy (xerial framing), told apart by content.
package datatool
