package zk

import (
	"context"
	"fmt"
	"time"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/jute"
)

// Stat is a znode's metadata, as the server reports it.
type Stat = jute.Stat

// ACL is one access control entry: a permission mask granted to an ID.
type ACL = jute.ACL

// ID is an ACL identity: a scheme ("world", "digest", "ip", "auth", ...) and an id.
type ID = jute.ID

// ClientInfo is one identity of the session, as WhoAmI reports it.
type ClientInfo = jute.ClientInfo

// Permission bits of an ACL.
const (
	PermRead   int32 = jute.PermRead
	PermWrite  int32 = jute.PermWrite
	PermCreate int32 = jute.PermCreate
	PermDelete int32 = jute.PermDelete
	PermAdmin  int32 = jute.PermAdmin
	PermAll    int32 = jute.PermAll
)

// State is the state of a client's session, as ZooKeeper's clients define it. The numeric
// values of the states that ZooKeeper puts on the wire (KeeperState) are kept.
type State int32

const (
	// StateDisconnected: the connection to the server was lost; the client is trying to
	// reconnect and the session may still be alive.
	StateDisconnected State = 0
	// StateConnecting: no connection has been established yet.
	StateConnecting State = 1
	// StateConnected: connected to a server with a live session (KeeperState SyncConnected).
	StateConnected State = 3
	// StateAuthFailed: the server rejected an AddAuth or the SASL exchange failed (see
	// WithSASL); the client is unusable.
	StateAuthFailed State = 4
	// StateConnectedReadOnly: connected to a read-only server; writes fail with ErrNotReadOnly.
	StateConnectedReadOnly State = 5
	// StateClosed: Close was called.
	StateClosed State = 7
	// StateExpired: the server expired the session; the client is unusable.
	StateExpired State = -112
)

func (s State) String() string {
	switch s {
	case StateDisconnected:
		return "Disconnected"
	case StateConnecting:
		return "Connecting"
	case StateConnected:
		return "Connected"
	case StateAuthFailed:
		return "AuthFailed"
	case StateConnectedReadOnly:
		return "ConnectedReadOnly"
	case StateClosed:
		return "Closed"
	case StateExpired:
		return "Expired"
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// Connected reports whether the state has a usable connection.
func (s State) Connected() bool { return s == StateConnected || s == StateConnectedReadOnly }

// EventType says what an Event reports. The values 1-7 are ZooKeeper's; EventSession and
// EventNotWatching are the client's own.
type EventType int32

const (
	// EventSession is a session state change (ZooKeeper's EventType None).
	EventSession EventType = -1
	// EventNotWatching ends a watch that can no longer fire: Event.Err says why. The
	// session ended (ErrSessionExpired, ErrClosed or ErrAuthFailed), or the client could
	// not resume an AddWatchSince watch on a new connection (ErrWatchHistoryCompacted: events
	// may have been missed, re-read the state; ErrUnsupported: the new server lacks the
	// extension).
	EventNotWatching            EventType = -2
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
	case EventSession:
		return "Session"
	case EventNotWatching:
		return "NotWatching"
	}
	return jute.EventType(t).String()
}

// Event is a session state change or a watch notification.
type Event struct {
	Type  EventType
	State State
	// Path is the znode the event is about, relative to the chroot; "" for session events.
	Path string
	// Server is the server address for session events.
	Server string
	// Err is set for EventNotWatching and for the terminal session events (Expired,
	// AuthFailed, Closed).
	Err error
}

func (e Event) String() string {
	s := fmt.Sprintf("%v %v", e.Type, e.State)
	if e.Path != "" {
		s += " " + e.Path
	}
	if e.Server != "" {
		s += " server=" + e.Server
	}
	if e.Err != nil {
		s += " err=" + e.Err.Error()
	}
	return s
}

// CreateMode is a znode's kind, chosen at creation (CreateRequest.flags).
type CreateMode int32

const (
	ModePersistent              CreateMode = 0
	ModeEphemeral               CreateMode = 1
	ModePersistentSequential    CreateMode = 2
	ModeEphemeralSequential     CreateMode = 3
	ModeContainer               CreateMode = 4
	ModePersistentTTL           CreateMode = 5
	ModePersistentSequentialTTL CreateMode = 6

	// ModePersistentSequential64 and ModeEphemeralSequential64 are zkd's 64-bit sequential
	// modes (the wide extension): the server appends the zxid of the create, 19 digits
	// (%019d), which never wraps where ModePersistentSequential's 10-digit counter turns
	// negative past 2^31, and names under a parent only grow. A Multi may make one such node
	// per parent (the second fails with ErrBadArguments). Calls with them fail with an error
	// wrapping ErrUnsupported, before sending, on a server without the extension.
	ModePersistentSequential64 CreateMode = CreateMode(jute.FlagPersistentSequential64)
	ModeEphemeralSequential64  CreateMode = CreateMode(jute.FlagEphemeralSequential64)
)

// IsSequential reports whether the server appends a sequence number to the name.
func (m CreateMode) IsSequential() bool {
	return m == ModePersistentSequential || m == ModeEphemeralSequential || m == ModePersistentSequentialTTL || m.IsSequential64()
}

// IsSequential64 reports whether the mode is a 64-bit sequential one (the wide extension).
func (m CreateMode) IsSequential64() bool {
	return m == ModePersistentSequential64 || m == ModeEphemeralSequential64
}

// IsEphemeral reports whether the node is deleted with its session.
func (m CreateMode) IsEphemeral() bool {
	return m == ModeEphemeral || m == ModeEphemeralSequential || m == ModeEphemeralSequential64
}

// IsTTL reports whether the mode needs a TTL (CreateTTL).
func (m CreateMode) IsTTL() bool { return m == ModePersistentTTL || m == ModePersistentSequentialTTL }

func (m CreateMode) valid() bool {
	return m >= ModePersistent && m <= ModePersistentSequentialTTL || m.IsSequential64()
}

// requireMode checks that the server serves mode (the 64-bit sequential ones need wide).
func (c *Conn) requireMode(ctx context.Context, mode CreateMode) error {
	if mode.IsSequential64() {
		return c.require(ctx, ext.Wide)
	}
	return nil
}

// AddWatchMode is the mode of AddWatch.
type AddWatchMode int32

const (
	// AddWatchPersistent watches one node's data and children, and stays after firing.
	AddWatchPersistent AddWatchMode = AddWatchMode(jute.AddWatchPersistent)
	// AddWatchPersistentRecursive watches a node and all its descendants (not their child
	// lists), and stays after firing.
	AddWatchPersistentRecursive AddWatchMode = AddWatchMode(jute.AddWatchPersistentRecursive)
)

// WatcherType selects watches for CheckWatches and RemoveWatches.
type WatcherType int32

const (
	WatcherChildren            WatcherType = WatcherType(jute.WatcherChildren)
	WatcherData                WatcherType = WatcherType(jute.WatcherData)
	WatcherAny                 WatcherType = WatcherType(jute.WatcherAny)
	WatcherPersistent          WatcherType = WatcherType(jute.WatcherPersistent)
	WatcherPersistentRecursive WatcherType = WatcherType(jute.WatcherPersistentRecursive)
)

// AnyVersion matches any version in Delete, Set, SetACL and Check.
const AnyVersion int32 = -1

// DefaultPort is used for servers given without a port.
const DefaultPort = 2181

// DefaultSessionTimeout is the session timeout requested when no WithSessionTimeout is given.
const DefaultSessionTimeout = 10 * time.Second
