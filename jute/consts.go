package jute

import "fmt"

// Special xids.
const (
	XidNotification int32 = -1
	XidPing         int32 = -2
	XidAuth         int32 = -4
	XidSetWatches   int32 = -8
)

// Code is a ZooKeeper error code (ReplyHeader.err). A non-zero Code is an error and can be
// matched with errors.Is.
type Code int32

const (
	OK                          Code = 0
	ErrSystemError              Code = -1
	ErrRuntimeInconsistency     Code = -2
	ErrDataInconsistency        Code = -3
	ErrConnectionLoss           Code = -4
	ErrMarshallingError         Code = -5
	ErrUnimplemented            Code = -6
	ErrOperationTimeout         Code = -7
	ErrBadArguments             Code = -8
	ErrUnknownSession           Code = -12
	ErrNewConfigNoQuorum        Code = -13
	ErrReconfigInProgress       Code = -14
	ErrAPIError                 Code = -100
	ErrNoNode                   Code = -101
	ErrNoAuth                   Code = -102
	ErrBadVersion               Code = -103
	ErrNoChildrenForEphemerals  Code = -108
	ErrNodeExists               Code = -110
	ErrNotEmpty                 Code = -111
	ErrSessionExpired           Code = -112
	ErrInvalidCallback          Code = -113
	ErrInvalidACL               Code = -114
	ErrAuthFailed               Code = -115
	ErrSessionMoved             Code = -118
	ErrNotReadOnly              Code = -119
	ErrEphemeralOnLocalSession  Code = -120
	ErrNoWatcher                Code = -121
	ErrRequestTimeout           Code = -122
	ErrReconfigDisabled         Code = -123
	ErrSessionClosedRequireSASL Code = -124
	ErrQuotaExceeded            Code = -125
	ErrThrottled                Code = -127

	// ErrListViewExpired is zkd's (ext.PagedList): a listing's cursor names a view the
	// server no longer holds; the listing starts again. Outside ZooKeeper's codes.
	ErrListViewExpired Code = -1030
	// ErrWatchHistoryCompacted is zkd's watch-resume extension's answer to an addWatchSince
	// whose zxid the server's change history no longer covers (etcd's ErrCompacted): the
	// reply's body holds the oldest zxid a resume may still name. zkd's own codes are
	// -1000 and below, clear of ZooKeeper's KeeperException codes (-1..-127).
	ErrWatchHistoryCompacted Code = -1040
	// ErrReplyTooLarge is zkd's large-replies extension's answer instead of a reply longer
	// than the limit the client can read: to any request of a connection that negotiated a
	// limit (setMaxBuffer), and to an extension opcode's request on any connection. Stock
	// opcodes on other connections get ZooKeeper's behaviour (the reply is sent).
	ErrReplyTooLarge Code = -1050
)

var codeNames = map[Code]string{
	ErrListViewExpired: "listing view expired",
	OK:                 "ok", ErrSystemError: "system error", ErrRuntimeInconsistency: "runtime inconsistency",
	ErrDataInconsistency: "data inconsistency", ErrConnectionLoss: "connection loss",
	ErrMarshallingError: "marshalling error", ErrUnimplemented: "unimplemented",
	ErrOperationTimeout: "operation timeout", ErrBadArguments: "bad arguments",
	ErrUnknownSession: "unknown session", ErrNewConfigNoQuorum: "new config has no quorum",
	ErrReconfigInProgress: "reconfig in progress", ErrAPIError: "api error",
	ErrNoNode: "node does not exist", ErrNoAuth: "not authenticated", ErrBadVersion: "bad version",
	ErrNoChildrenForEphemerals: "ephemeral nodes may not have children",
	ErrNodeExists:              "node already exists", ErrNotEmpty: "node has children",
	ErrSessionExpired: "session expired", ErrInvalidCallback: "invalid callback",
	ErrInvalidACL: "invalid ACL", ErrAuthFailed: "authentication failed",
	ErrSessionMoved: "session moved", ErrNotReadOnly: "not a read-only call",
	ErrEphemeralOnLocalSession: "ephemeral on local session", ErrNoWatcher: "no such watcher",
	ErrRequestTimeout: "request timeout", ErrReconfigDisabled: "reconfig disabled",
	ErrSessionClosedRequireSASL: "session closed: SASL auth required",
	ErrQuotaExceeded:            "quota exceeded", ErrThrottled: "operation throttled",
	ErrWatchHistoryCompacted: "watch history compacted",
	ErrReplyTooLarge:         "reply too large for the client's limit",
}

func (c Code) Error() string {
	if s, ok := codeNames[c]; ok {
		return "zk: " + s
	}
	return fmt.Sprintf("zk: error %d", int32(c))
}

// Err returns nil for OK and c otherwise.
func (c Code) Err() error {
	if c == OK {
		return nil
	}
	return c
}

// EventType is WatcherEvent.type.
type EventType int32

const (
	EventNone                   EventType = -1
	EventNodeCreated            EventType = 1
	EventNodeDeleted            EventType = 2
	EventNodeDataChanged        EventType = 3
	EventNodeChildrenChanged    EventType = 4
	EventDataWatchRemoved       EventType = 5
	EventChildWatchRemoved      EventType = 6
	EventPersistentWatchRemoved EventType = 7
)

func (t EventType) String() string {
	switch t {
	case EventNone:
		return "None"
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case EventDataWatchRemoved:
		return "DataWatchRemoved"
	case EventChildWatchRemoved:
		return "ChildWatchRemoved"
	case EventPersistentWatchRemoved:
		return "PersistentWatchRemoved"
	}
	return fmt.Sprintf("EventType(%d)", int32(t))
}

// State is WatcherEvent.state (KeeperState).
type State int32

const (
	StateDisconnected      State = 0
	StateSyncConnected     State = 3
	StateAuthFailed        State = 4
	StateConnectedReadOnly State = 5
	StateSaslAuthenticated State = 6
	StateClosed            State = 7
	StateExpired           State = -112
)

// WatcherType is the type field of checkWatches / removeWatches.
type WatcherType int32

const (
	WatcherChildren            WatcherType = 1
	WatcherData                WatcherType = 2
	WatcherAny                 WatcherType = 3
	WatcherPersistent          WatcherType = 4
	WatcherPersistentRecursive WatcherType = 5
)

// AddWatch modes.
const (
	AddWatchPersistent          int32 = 0
	AddWatchPersistentRecursive int32 = 1
)

// Create flags (CreateRequest.flags).
const (
	FlagPersistent              int32 = 0
	FlagEphemeral               int32 = 1
	FlagPersistentSequential    int32 = 2
	FlagEphemeralSequential     int32 = 3
	FlagContainer               int32 = 4
	FlagPersistentWithTTL       int32 = 5
	FlagPersistentSequentialTTL int32 = 6
	// FlagPersistentSequential64 and FlagEphemeralSequential64 are zkd's 64-bit sequential
	// modes (the wide extension, docs/beyond.md): the name gets a 19-digit suffix that never
	// overflows. ZooKeeper's CreateMode.fromFlag knows 0-6 and answers any other value
	// BADARGUMENTS, and ClickHouse's client sends only 0-3; 1000 and up is zkd's range, as
	// for opcodes, with the low two bits kept as ZooKeeper's (1 ephemeral, 2 sequential).
	FlagPersistentSequential64 int32 = 1002
	FlagEphemeralSequential64  int32 = 1003
)

// Seq64Width is the width of a 64-bit sequential node's suffix, %019d: every non-negative
// int64 fits it.
const Seq64Width = 19

// Protocol versions (ConnectRequest.protocolVersion). ZooKeeper sends and answers 0 and
// ignores the value it is sent. ProtocolVersionXID64 is ClickHouse Keeper's
// ZOOKEEPER_PROTOCOL_VERSION_WITH_XID_64 (ClickHouse's src/Common/ZooKeeper/
// ZooKeeperConstants.h): the ConnectRequest carries a compression byte after the version,
// and every later header's xid is a long (RequestHeader64, ReplyHeader64). zkd serves it
// with the wide extension, without compression. ProtocolVersionCompressed is ClickHouse
// Keeper's ZOOKEEPER_PROTOCOL_VERSION_WITH_COMPRESSION: everything after the
// ConnectResponse goes both ways in ClickHouse's compressed blocks (internal/chcompress),
// the messages' layouts being ZooKeeper's; zkd serves it with the large-replies extension
// and answers the same version. ClickHouse's 12 (tracing) is not served.
const (
	ProtocolVersion           int32 = 0
	ProtocolVersionCompressed int32 = 10
	ProtocolVersionXID64      int32 = 11
)

// Permission bits.
const (
	PermRead   int32 = 1
	PermWrite  int32 = 2
	PermCreate int32 = 4
	PermDelete int32 = 8
	PermAdmin  int32 = 16
	PermAll    int32 = 31
)

// Well-known ACLs.
var (
	WorldAnyone   = ID{Scheme: "world", ID: "anyone"}
	OpenACLUnsafe = []ACL{{Perms: PermAll, ID: WorldAnyone}}
	CreatorAllACL = []ACL{{Perms: PermAll, ID: ID{Scheme: "auth", ID: ""}}}
	ReadACLUnsafe = []ACL{{Perms: PermRead, ID: WorldAnyone}}
)

// MaxTTL is the largest TTL in milliseconds (2^40-1).
const MaxTTL = int64(1)<<40 - 1
