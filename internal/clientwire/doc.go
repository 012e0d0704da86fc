// Package clientwire owns a ZooKeeper client connection's frame loop, shared by the zk
// client, the web console's internal write session (server/console.go) and the test
// harnesses that speak the protocol themselves (internal/testing/nemesis): the handshake, a
// writer that sends whatever frames have queued in one writev and pings when nothing has
// been sent for a while, and a reader that reads frames under a liveness deadline and hands
// each to its caller. What a frame means (xids, pending requests, notifications, auth) is
// the caller's; so is the decision to end the connection, which Kill records with its
// cause.
//
// Frames are jute's (jute/doc.go, "Framing"):
//
//	+----------------+------------------------+
//	| length int (4) | payload (length bytes) |
//	+----------------+------------------------+
//
// Send takes a frame already framed (jute.StartFrame/EndFrame or jute.AppendFrame), so a
// caller that patches an xid into a prebuilt frame does so without a copy; ReadLoop hands
// over payloads, prefix stripped. The ConnectRequest and its response are the first frame
// each way and carry no header.
//
// A caller with one request at a time (the console's session, the nemesis's setup sessions)
// may use Handshake, WriteFrame and ReadFrame alone and never start the loops: nothing then
// runs beyond the caller's goroutine, and Kill closes the socket.
//
// zkbench (internal/bench) keeps its own loop: see its conn type for why.
package clientwire
