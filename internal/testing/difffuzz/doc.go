// Package difffuzz is the differential fuzzer: it owns seeded programs of client operations
// (Generate), their text files (Program.Encode, Parse), the runner that plays a program on
// one server over raw connections (Run), the comparison of two servers' transcripts
// (Compare), which accepts a difference only where a row of internal/versiondiff explains
// it, and the shrinker (Pair.Shrink).
//
// A program runs under Root (/fz) on fresh sessions, after the runner's own super-user
// session has cleared every top-level node but /zookeeper; afterwards it clears them again
// and closes every session the program opened. Each step's outcome is what its session
// received, in order, up to a ping's pong sent once the reply arrived (or up to the close),
// then the notifications every other live session received before its own pong. Zxids are
// shown relative to the last zxid before the program (z+N), earlier ones as "old"; session
// ids by the session's name; times by how ctime and mtime relate.
//
// # Program files
//
// Text, one step per line; "#" starts a comment (the runner writes each step's decoded
// request there):
//
//	zkd-difffuzz 1                      format and version
//	seed 42                             the generator's seed (optional)
//	sessions a b c                      sessions opened before the first step
//	a create 000000032f667a...          a request: session, op name, body in hex ("-": none);
//	a auth@-4 0000000000000006...       the xid is the session's next unless @xid gives it
//	b batch 0000000f0026aef6...         length-prefixed request frames sent in one write
//	c raw 000f43540000006c...           one frame, header included (its length is computed)
//	c rawwire ffffffff...               bytes written as they are, length prefix included
//	a open | a reconnect | a drop       a new session under the name; the session on a
//	                                    new connection; the connection closed
//
// Op names are ZooKeeper's (create, getData, multi, setWatches2, ...), or op<N> for a code
// it does not define. An addWatchSince whose sinceZxid is ResumeSince (-2) is sent with the
// last zxid its session had seen before its latest reconnect step.
package difffuzz
