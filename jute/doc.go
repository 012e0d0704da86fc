// Package jute owns the byte encoding of every ZooKeeper record: the client protocol, the
// transaction records written to the log and the snapshot, and the quorum packets. It also
// defines the protocol's numeric vocabularies: error codes, event types, states, and the
// opcode table (ops.go), which holds per opcode its name, its request, response and txn
// records, whether it is a write, the ACL permission it needs and where it may appear. The
// table also holds the opcodes of zkd's extensions (OpInfo.Ext: ClickHouse Keeper's 500-503
// and zkd's createWithParents, 1500), each logged as one of ZooKeeper's txn types
// (OpInfo.LoggedAs), so no log or peer ever carries them.
//
// Encoding appends to a byte slice; decoding reads from one without copying buffers, so a
// decoded []byte aliases the input. Decoders never panic: a short or malformed input sets a
// sticky error reported by Decoder.Err.
//
// # Primitives
//
// Every integer is big-endian two's complement. A record is its fields in declaration
// order, with no tags, padding or length of its own.
//
//	int      4 bytes
//	long     8 bytes
//	boolean  1 byte: 0x00 or 0x01 written; any non-zero byte reads as true
//	buffer   int n, then n bytes; n = -1 is null (nil), 0 is empty
//	ustring  int n, then n bytes: UTF-8, except that a character above U+FFFF is written as
//	         its two UTF-16 surrogates, 3 bytes each (CESU-8), and malformed input reads as
//	         U+FFFD, as Java's jute does (ustring.go)
//	vector   int n, then n elements back to back; n = -1 is null (nil), n < -1 reads as empty
//	         (Java's reader does not check it: its index is done once n <= 0)
//
// Stat, as clients see it, and StatPersisted, as snapshots store it (offsets in bytes):
//
//	Stat (StatSize, 68 bytes)          StatPersisted (60 bytes)
//	 0  czxid           long            0  czxid           long
//	 8  mzxid           long            8  mzxid           long
//	16  ctime           long (ms)      16  ctime           long
//	24  mtime           long (ms)      24  mtime           long
//	32  version         int            32  version         int
//	36  cversion        int            36  cversion        int
//	40  aversion        int            40  aversion        int
//	44  ephemeralOwner  long           44  ephemeralOwner  long
//	52  dataLength      int            52  pzxid           long
//	56  numChildren     int
//	60  pzxid           long
//
// # Framing
//
// A client connection is a TCP stream of frames in both directions, and so is an election
// connection between servers (internal/peer, after its connection header); the stream
// between a leader and its learners is not framed, its QuorumPackets follow each other as
// plain records:
//
//	 0       1       2       3       4
//	+-------+-------+-------+-------+-------------------------------+
//	| length int, big-endian        | payload (length bytes) ...    |
//	+-------+-------+-------+-------+-------------------------------+
//
// length excludes its own four bytes (FrameHeaderSize). frame.go is the one reader and
// writer of this prefix: ReadFrame (ReadFrameInto) and FrameLen check it against the reader's limit and
// fail with a FrameSizeError (wrapping ErrFrameSize) when it is negative or above it;
// StartFrame/EndFrame write it around a payload encoded in place. A reader closes the one
// connection whose frame is out of range: there is no way to find the next frame. A
// server's limit is jute.maxbuffer (DefaultMaxBuffer, 0xfffff); a client's bounds what it
// will buffer. A first length that spells a four-letter word ("ruok" = 0x72756f6b) is not
// a frame: the server answers the word in plain text and closes.
//
// # Connect handshake
//
// The first frame each way has no header. The client sends a ConnectRequest, 45 bytes (44
// from clients older than 3.4, which leave out readOnly):
//
//	 0                   4                             12                  16
//	+-------------------+-----------------------------+-------------------+
//	| protocolVersion 0 | lastZxidSeen long           | timeOut int (ms)  |
//	+-------------------+-----------------------------+-------------------+
//	16                            24                  28                  44   45
//	+-----------------------------+-------------------+-------------------+----+
//	| sessionId long (0 = new)    | passwd length 16  | passwd 16 bytes   | ro |
//	+-----------------------------+-------------------+-------------------+----+
//
// The server answers with a ConnectResponse, 37 bytes (36 when the request had no readOnly
// byte: the answer mirrors the request):
//
//	 0                   4                   8                             16
//	+-------------------+-------------------+-----------------------------+
//	| protocolVersion 0 | timeOut int (ms)  | sessionId long              |
//	+-------------------+-------------------+-----------------------------+
//	16                  20                  36   37
//	+-------------------+-------------------+----+
//	| passwd length 16  | passwd 16 bytes   | ro |
//	+-------------------+-------------------+----+
//
// An expired or unknown session is refused with timeOut 0, sessionId 0 and sixteen zero
// password bytes, and the connection is closed.
//
// ZooKeeper ignores protocolVersion and answers 0. ClickHouse Keeper's version 11
// (ProtocolVersionXID64, served by zkd with the wide extension) puts a compression byte
// after the version (ConnectRequest.XID64, DecodeXID64), leaves it out of the frame's
// length (XID64ConnectUndercount), and answers 11; every later header's xid is then a long
// (RequestHeader64, ReplyHeader64).
//
// # Requests and replies
//
// Every later client frame is a RequestHeader and the body its opcode's row names
// (OpInfo.Request; none for ping, closeSession and whoAmI):
//
//	+-----------+-----------------+----------------------+
//	| xid int   | type int OpCode | request body ...     |
//	+-----------+-----------------+----------------------+
//
// Every later server frame is a ReplyHeader (ReplyHeaderSize, 16 bytes), then the reply
// body (OpInfo.Response) only when err is 0:
//
//	+-----------+-----------------+--------------+----------------------+
//	| xid int   | zxid long       | err int Code | reply body ...       |
//	+-----------+-----------------+--------------+----------------------+
//
// The xid is the client's, echoed. Negative xids are reserved: XidNotification (-1)
// marks a watch event (zxid -1, err 0, then a WatcherEvent: int type, int state, ustring
// path), XidPing (-2) a ping, XidAuth (-4) an auth packet and XidSetWatches (-8) the
// setWatches a client sends after reconnecting.
//
// # multi and multiRead
//
// The bodies of both requests and of their replies are a sequence of MultiHeaders, each
// followed by one op's record, ended by a header with done set:
//
//	+-------------+--------------+---------------+-----------------------+
//	| type int    | done boolean | err int       | op record ...         |  repeated
//	+-------------+--------------+---------------+-----------------------+
//	| -1          | 1            | -1            |                          end
//	+-------------+--------------+---------------+
//
// In a request the record is the op's request record and err is -1. In a reply of a multi
// that succeeded, err is 0 and the record is the op's response record (none for delete
// and check). When a multi fails, every result has type -1 (OpError), err the op's code (0
// before the failing op, RUNTIMEINCONSISTENCY after it) and an ErrorResponse (int err)
// holding the code again as its record; a multiRead reports each failed read this way.
//
// # Transactions and quorum packets
//
// A txn, as logged and as carried by a PROPOSAL, is a TxnHeader (TxnHeaderSize, 32 bytes:
// long clientId, int cxid, long zxid, long time, int type), the txn record of its type
// (OpInfo.Txn) and, since ZooKeeper 3.6, a TxnDigest (int version, long treeDigest: the tree
// digest once the txn is applied, version DigestVersion). ZooKeeper and zkd write it after
// every txn but error txns (unless zookeeper.digest.enabled=false); DecodeTxn reads a txn
// with or without it, and the records whose end is ambiguous (CreateTxnV0, a bodiless
// CloseSessionTxn) tell it by the 12 bytes it takes. internal/storage draws the log and
// snapshot files around them; internal/zab draws the QuorumPacket stream.
package jute
